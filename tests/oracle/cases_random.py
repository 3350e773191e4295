"""Randomly generated chains of 2-8 view operations on inputs of random shapes
(1-5 dims, sizes 1-6, any dtype). Reproducible: the generator is seeded. Each
step is proposed from the current shape and kept only if PyTorch accepts it
(the candidate graph is evaluated by the reference), so e.g. `view` is used
only where a view exists."""

import random

DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"]
N_CHAINS = 120
MAX_DIMS = 6  # tgc allows rank <= 8 (intermediates included); PyTorch more


def _factor_shape(rng, numel):
    """A random shape with the given number of elements."""
    parts = []
    n = numel
    k = rng.randint(1, 4)
    for _ in range(k - 1):
        divs = [d for d in range(1, n + 1) if n % d == 0] or [1]
        d = rng.choice(divs)
        parts.append(d)
        n //= d
    parts.append(n)
    rng.shuffle(parts)
    if rng.random() < 0.3:
        parts.insert(rng.randint(0, len(parts)), 1)
    if rng.random() < 0.4:
        parts[rng.randrange(len(parts))] = -1
    return parts


def _slice(rng, size):
    def bound():
        r = rng.random()
        if r < 0.35:
            return ""
        if r < 0.5:
            return str(rng.choice([-size - 3, size + 3, -1]))
        return str(rng.randint(-size, size))
    s = bound() + ":" + bound()
    step = rng.choice([None, None, 1, 2, 3])
    if step:
        s += ":" + str(step)
    return s


def _index(rng, shape):
    items = []
    dims = list(shape)
    pos = 0
    used_ellipsis = False
    for _ in range(rng.randint(1, len(shape) + 1)):
        r = rng.random()
        if r < 0.15:
            items.append("None")
        elif r < 0.25 and not used_ellipsis:
            items.append("...")
            used_ellipsis = True
            pos = max(pos, len(dims) - 1)
        elif pos < len(dims):
            size = dims[pos]
            if r < 0.5 and size > 0:
                items.append(str(rng.randint(-size, size - 1)))
            else:
                items.append(_slice(rng, size))
            pos += 1
    return "[" + ", ".join(items) + "]"


def _propose(rng, cur, shape, dt):
    """One candidate statement's right-hand side (or a tuple op)."""
    n = len(shape)
    numel = 1
    for s in shape:
        numel *= s
    d = lambda: rng.randint(-max(n, 1), max(n, 1) - 1)  # noqa: E731  (0-d: -1..0)
    ops = ["view", "reshape", "flatten", "transpose", "permute", "squeeze",
           "unsqueeze", "expand", "narrow", "select", "chunk", "split",
           "unflatten", "diagonal", "index", "index", "index", "misc", "T"]
    op = rng.choice(ops)
    if op in ("view", "reshape"):
        shp = _factor_shape(rng, numel) if numel > 0 else [0]
        if rng.random() < 0.3:
            return "%s(%s, [%s])" % (op, cur, ", ".join(map(str, shp)))
        return "%s.%s(%s)" % (cur, op, ", ".join(map(str, shp)))
    if op == "flatten":
        if n == 0 or rng.random() < 0.2:
            return "%s.flatten()" % cur
        a, b = sorted([rng.randrange(n), rng.randrange(n)])
        if rng.random() < 0.5:
            a -= n
        return "%s.flatten(%d, %d)" % (cur, a, b)
    if op == "transpose":
        return "%s.%s(%d, %d)" % (cur, rng.choice(["transpose", "swapaxes"]), d(), d())
    if op == "permute":
        p = list(range(n))
        rng.shuffle(p)
        return "%s.permute(%s)" % (cur, ", ".join(map(str, p)))
    if op == "squeeze":
        if rng.random() < 0.3:
            return "%s.squeeze()" % cur
        return "%s.squeeze(%d)" % (cur, d())
    if op == "unsqueeze":
        return "%s.unsqueeze(%d)" % (cur, rng.randint(-n - 1, n))
    if op == "expand":
        sizes = [rng.randint(2, 4) if s == 1 and rng.random() < 0.7 else
                 (-1 if rng.random() < 0.5 else s) for s in shape]
        if rng.random() < 0.3:
            sizes.insert(0, rng.randint(1, 3))
        return "%s.expand(%s)" % (cur, ", ".join(map(str, sizes)))
    if op == "narrow":
        if n == 0:
            return None
        k = rng.randrange(n)
        size = shape[k]
        start = rng.randint(0, size)
        length = rng.randint(0, size - start) if rng.random() < 0.2 else rng.randint(min(1, size - start), size - start)
        if rng.random() < 0.2 and start > 0:
            start -= size
        return "%s.narrow(%d, %d, %d)" % (cur, k, start, length)
    if op == "select":
        if n == 0:
            return None
        k = rng.randrange(n)
        size = shape[k]
        if size == 0:
            return None
        return "%s.select(%d, %d)" % (cur, k - n if rng.random() < 0.3 else k,
                                      rng.randint(-size, size - 1))
    if op in ("chunk", "split"):
        if n == 0:
            return None
        k = rng.randrange(n)
        if op == "chunk":
            return ("tuple", "%s.chunk(%d, dim=%d)" % (cur, rng.randint(1, 4), k))
        size = shape[k]
        if rng.random() < 0.5 or size < 2:
            return ("tuple", "%s.split(%d, dim=%d)" % (cur, rng.randint(1, max(1, size)), k))
        a = rng.randint(1, size - 1)
        return ("tuple", "%s.split([%d, %d], dim=%d)" % (cur, a, size - a, k))
    if op == "unflatten":
        if n == 0:
            return None
        k = rng.randrange(n)
        size = shape[k]
        divs = [x for x in range(1, size + 1) if size % x == 0]
        if not divs:
            return None
        a = rng.choice(divs)
        parts = [a, size // a]
        if rng.random() < 0.4:
            parts[rng.randrange(2)] = -1
        return "%s.unflatten(%d, [%d, %d])" % (cur, k - n if rng.random() < 0.3 else k, parts[0], parts[1])
    if op == "diagonal":
        if n < 2:
            return None
        a, b = rng.sample(range(n), 2)
        return "%s.diagonal(%d, %d, %d)" % (cur, rng.randint(-2, 2), a, b)
    if op == "index":
        return cur + _index(rng, shape)
    if op == "T":
        return ("%s.T" % cur) if n == 2 else ("%s.mT" % cur if n > 2 else None)
    # misc: contiguous, to(own dtype), detach
    return rng.choice(["%s.contiguous()" % cur, "%s.to(%s)" % (cur, dt),
                       "%s.detach()" % cur, "dropout(%s, p=0.5)" % cur])


def random_cases(Case, seed, evaluate, RefError):
    rng = random.Random(seed)
    out = []
    for ci in range(N_CHAINS):
        nd = rng.randint(1, 5)
        shape = [rng.randint(1, 6) for _ in range(nd)]
        dt = rng.choice(DTYPES)
        lines = ["input x : %s[%s]" % (dt, ", ".join(map(str, shape)))]
        header = "graph chain%d" % ci
        target = rng.randint(2, 8)
        cur, cur_shape, steps, tries = "x", shape, 0, 0
        while steps < target and tries < 200:
            tries += 1
            prop = _propose(rng, cur, cur_shape, dt)
            if prop is None:
                continue
            name = "v%d" % (steps + 1)
            if isinstance(prop, tuple):
                # bind every piece (the count comes from PyTorch)
                count = _count_pieces(prop[1], cur_shape)
                if count is None or count > 6:
                    continue
                names = ["%s_%d" % (name, i) for i in range(count)]
                line = "%s = %s" % (", ".join(names), prop[1])
                pick = rng.choice(names)
            else:
                line = "%s = %s" % (name, prop)
                pick = name
            cand = lines + [line]
            try:
                _, _, recs = evaluate("\n".join([header] + cand) + "\n")
            except RefError:
                continue
            rec = {r["name"]: r for r in recs}[pick]
            if any(len(r["shape"]) > MAX_DIMS for r in recs):
                continue
            if 0 in rec["shape"] and rng.random() < 0.8:
                continue  # keep empty tensors rare
            lines = cand
            cur, cur_shape = pick, rec["shape"]
            steps += 1
        out.append(Case("random_chain_%02d" % ci, header + "\n" + "\n".join(lines), group="random"))
    return out


def _count_pieces(expr, shape):
    """Number of tensors chunk/split returns, computed with PyTorch itself."""
    import torch
    t = torch.zeros(shape)
    body = expr[expr.index("."):]
    try:
        return len(eval("t" + body, {"t": t, "__builtins__": {}}))
    except Exception:
        return None
