"""Randomly generated graphs: seeded chains of elementwise, reduction,
normalisation, matrix-product and view operations over 1-4-d tensors.

Reproducible (fixed seed). Shapes are tracked here, so every graph is valid
by construction. Values stay O(1) and inside every op's domain: unbounded
functions are guarded (exp of a clamped value, log and sqrt of |x| + c,
division by |x| + 1), and nothing discontinuous (floor, round, comparisons
feeding arithmetic) is applied to computed values, where a last-bit
difference could flip a result. Binary operands are earlier values or new
inputs whose shapes broadcast against the first operand (dims set to 1 or
dropped on the left).
"""

import random

N_GRAPHS = 56
SEED = 20240611

UNARY = [
    "tanh({a})", "sigmoid({a})", "sin({a})", "cos({a})", "relu({a})", "gelu({a})",
    "gelu({a}, approximate = \"tanh\")", "silu({a})", "erf({a})", "abs({a})", "-{a}",
    "exp({a}.clamp(-4, 4))", "log({a}.abs() + 1)", "sqrt({a}.abs() + 0.5)",
    "rsqrt({a}.abs() + 1)", "{a}.clamp(-1, 1)", "({a} * 0.5).square()", "{a} * 2 - 1",
    "expm1({a}.clamp(-2, 2))", "log1p({a}.abs())", "reciprocal({a}.abs() + 1)",
]
BINARY = [
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "maximum({a}, {b})", "minimum({a}, {b})",
    "{a} / ({b}.abs() + 1)", "where({a} > {b}, {a}, {b})", "{a} * 0.5 + {b}",
    "({a} - {b}) * ({a} + {b})",
]


def _numel(s):
    n = 1
    for d in s:
        n *= d
    return n


def _bcast_ok(a, b):
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def _bcast(a, b):
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    return [max(x, y) for x, y in zip(a, b)]


class Gen:
    def __init__(self, rng, dt):
        self.rng, self.dt = rng, dt
        self.decls, self.stmts, self.vals = [], [], []  # vals: (name, shape)
        self.n = 0

    def fresh(self, prefix="v"):
        self.n += 1
        return "%s%d" % (prefix, self.n)

    def new_input(self, shape, kind="input"):
        name = self.fresh("x" if kind == "input" else "w")
        self.decls.append("%s %s : %s[%s]" % (kind, name, self.dt, ", ".join(map(str, shape))))
        self.vals.append((name, list(shape)))
        return name

    def let(self, expr, shape):
        name = self.fresh()
        self.stmts.append("%s = %s" % (name, expr))
        self.vals.append((name, list(shape)))
        return name, list(shape)

    def partner(self, a, shape):
        """A value whose shape broadcasts against shape (maybe a new input)."""
        rng = self.rng
        cands = [(n, s) for n, s in self.vals
                 if n != a and _bcast_ok(shape, s) and _bcast(shape, s) == list(shape)]
        if cands and rng.random() < 0.5:
            return rng.choice(cands)
        s = list(shape)
        if s and rng.random() < 0.3:
            s = s[rng.randint(0, len(s)):]  # drop leading dims
        s = [1 if rng.random() < 0.3 else d for d in s]
        return self.new_input(s), s

    def step(self, a, shape):
        rng = self.rng
        r = rng.random()
        rank = len(shape)
        if r < 0.3:
            return self.let(rng.choice(UNARY).format(a=a), shape)
        if r < 0.55:
            b, bs = self.partner(a, shape)
            return self.let(rng.choice(BINARY).format(a=a, b=b), _bcast(shape, bs))
        if r < 0.65 and rank >= 1:
            d = rng.randrange(rank)
            keep = rng.random() < 0.4
            op = rng.choice(["sum", "mean", "amax", "amin", "logsumexp", "var"])
            if op == "var" and shape[d] < 2:
                op = "mean"
            ns = list(shape)
            if keep:
                ns[d] = 1
            else:
                del ns[d]
            expr = "%s.%s(dim = %d%s)" % (a, op, d - rank if rng.random() < 0.5 else d,
                                           ", keepdim = true" if keep else "")
            return self.let(expr, ns)
        if r < 0.72 and rank >= 1 and shape[-1] >= 2:
            if rng.random() < 0.5:
                return self.let("softmax(%s, dim = %d)" % (a, rng.randrange(rank)), shape)
            return self.let("layer_norm(%s, [%d])" % (a, shape[-1]), shape)
        if r < 0.8 and rank >= 1:
            k = rng.randint(1, 9)
            ns = shape[:-1] + [k] if rank >= 2 else [k]
            if rng.random() < 0.5 or rank == 1:
                w = self.new_input([shape[-1], k], "param")
                return self.let("%s @ %s" % (a, w), ns)
            # the same product through a weight stored [out, in]
            w = self.new_input([k, shape[-1]], "param")
            return self.let("linear(%s, %s)" % (a, w), ns)
        return self.view(a, shape)

    def view(self, a, shape):
        rng = self.rng
        rank = len(shape)
        opts = ["unsqueeze"]
        if rank >= 2:
            opts += ["transpose", "permute", "select", "flatten"]
        if rank >= 1:
            opts += ["slice", "narrow", "flip", "expand"]
        op = rng.choice(opts)
        if op == "transpose":
            i, j = rng.sample(range(rank), 2)
            s = list(shape)
            s[i], s[j] = s[j], s[i]
            return self.let("%s.transpose(%d, %d)" % (a, i, j), s)
        if op == "permute":
            p = list(range(rank))
            rng.shuffle(p)
            return self.let("%s.permute(%s)" % (a, ", ".join(map(str, p))), [shape[i] for i in p])
        if op == "select":
            d = rng.randrange(rank)
            i = rng.randrange(shape[d])
            return self.let("%s.select(%d, %d)" % (a, d, i), shape[:d] + shape[d + 1:])
        if op == "flatten":
            d = rng.randrange(rank - 1)
            s = shape[:d] + [shape[d] * shape[d + 1]] + shape[d + 2:]
            return self.let("%s.flatten(%d, %d)" % (a, d, d + 1), s)
        if op == "slice":
            d = rng.randrange(rank)
            n = shape[d]
            lo = rng.randint(0, max(0, n - 1))
            st = rng.choice([1, 1, 2, 3])
            hi = rng.randint(lo + 1, n)
            idx = ["0:%d" % s for s in shape]
            idx = [":"] * rank
            idx[d] = "%d:%d:%d" % (lo, hi, st)
            m = len(range(lo, hi, st))
            return self.let("%s[%s]" % (a, ", ".join(idx)), shape[:d] + [m] + shape[d + 1:])
        if op == "narrow":
            d = rng.randrange(rank)
            n = shape[d]
            start = rng.randrange(n)
            ln = rng.randint(1, n - start)
            return self.let("%s.narrow(%d, %d, %d)" % (a, d, start, ln),
                            shape[:d] + [ln] + shape[d + 1:])
        if op == "flip":
            d = rng.randrange(rank)
            return self.let("%s.flip([%d])" % (a, d), shape)
        if op == "expand":
            if 1 in shape:
                d = shape.index(1)
                s = list(shape)
                s[d] = rng.randint(2, 4)
                return self.let("%s.expand(%s)" % (a, ", ".join(map(str, s))), s)
            k = rng.randint(2, 3)
            return self.let("%s.unsqueeze(0).expand(%s)" % (a, ", ".join(map(str, [k] + shape))),
                            [k] + shape)
        if len(shape) >= 4:
            return self.let("%s * 1" % a, shape)
        d = rng.randint(0, rank)
        return self.let("%s.unsqueeze(%d)" % (a, d), shape[:d] + [1] + shape[d:])


def make_graph(rng, i):
    dt = rng.choice(["f32"] * 6 + ["f64"] * 2 + ["f16", "bf16"])
    rank = rng.randint(1, 4)
    shape = [rng.randint(1, 9) for _ in range(rank)]
    if _numel(shape) < 4:
        shape[-1] = rng.randint(4, 12)
    g = Gen(rng, dt)
    a = g.new_input(shape)
    outputs = []
    nsteps = rng.randint(3, 10) if dt in ("f32", "f64") else rng.randint(2, 6)
    cur, cs = a, shape
    for _ in range(nsteps):
        if len(cs) > 5 or _numel(cs) > 4096:
            cur, cs = g.let("%s.sum(dim = 0)" % cur, cs[1:])
            continue
        cur, cs = g.step(cur, cs)
        if rng.random() < 0.12 and cur not in outputs:
            outputs.append(cur)
    if cur not in outputs:
        outputs.append(cur)
    # every output must be a fresh computation or a view; all are fine
    src = "\n".join(g.decls + g.stmts + ["output %s" % o for o in outputs]) + "\n"
    return "random_%02d_%s" % (i, dt), src, dt


def cases(Case):
    rng = random.Random(SEED)
    out = []
    for i in range(N_GRAPHS):
        name, src, dt = make_graph(rng, i)
        inputs = {}
        for line in src.splitlines():
            if line.startswith("param"):
                inputs[line.split()[1]] = "randn:0.4"
        out.append(Case(name, src, inputs=inputs, tol="chain", add_outputs=False,
                        asan=i % 8 == 0, group="random"))
    return out
