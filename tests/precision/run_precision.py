#!/usr/bin/python3
"""Precision suite: `--precision`, `--precision-io` and `--quantize` against
PyTorch 1.13 (run as /usr/bin/python3).

What is checked
---------------
1. values: a corpus of graphs (one per op family: elementwise arithmetic,
   transcendental elementwise, reductions, softmax / log_softmax,
   layer_norm / rms_norm, matrix products, data movement, creation ops,
   casts) and the examples/*.tg graphs at small sizes (-D), under every
   policy (f32, bf16, f16, mixed-bf16, mixed-f16), a few also with
   --precision-io and through `tgc build` + the executable; every output is
   compared value by value with the reference below, its dtype and shape
   must be the declared ones (or --precision-io's), and an output whose
   value is stored in f16/bf16 before the final cast must lie on that
   dtype's grid.
2. quantization: int8 and int4 (group 128, 32, and k not divisible by the
   group) of linear weights [n, k], matmul right operands [k, n] and `w.T`,
   under f32 and mixed-bf16: bit-exact `identity @ W` checks (the output is
   q * scale, exactly), value checks on random inputs against a PyTorch
   reference that quantizes the same way, and params that must NOT be
   quantized (also used elsewhere, read both ways, an output, an embedding,
   a left operand) keep their float dtype in `tgc show --json`.
3. report figures: for each policy and quantize option, `tgc report --json`
   params.bytes and activations.arena_bytes equal what the object built by
   `tgc compile` reports (NAME_arena_bytes(), and the params' storage bytes
   read through rt_context_program() of a context created from it), and
   the params bytes computed here from the declarations; the report's
   by_dtype rows agree with the reports of those choices.
4. errors: bad flag values and combinations, --quantize without weights, a
   quantized weight holding NaN / inf: exit 1 with a message naming the
   flag or tensor, never a crash.
5. autocast: a few mixed-bf16 graphs (matmul + bias + relu chains) against
   real torch.autocast("cpu", dtype=torch.bfloat16) with the params
   pre-rounded to bf16 (looser tolerance: PyTorch's bf16 kernels round
   where the policy does not).

The reference
-------------
The graph text is evaluated by PyTorch statement by statement (a small
evaluator below) under a torch.overrides.TorchFunctionMode that applies the
policy, exactly as the brief states it:
  - uniform f32/bf16/f16 (P): params converted from the f32 weights file to
    P (round to nearest even), float inputs converted to P, creation ops and
    explicit float casts give P; every op is computed in f32 on the P values
    and its floating result rounded to P once;
  - mixed-bf16/mixed-f16 (low L): params stored in L; linear, matmul, @,
    mm, bmm, mv, einsum cast float operands to L, compute in f32, round to
    L; pow, exp, log, log1p, expm1, rsqrt, reciprocal, sum, mean, prod,
    var, std, logsumexp, softmax, log_softmax, layer_norm, rms_norm compute
    in f32 and return f32; every other op returns PyTorch's promoted dtype of
    its operands (dimensioned tensors before 0-d ones, number literals weak;
    f16 with bf16 gives f32), computed in f32 and rounded once;
  - quantized params are q * scale in f32 (never rounded to L or P), with q
    and scale computed as the brief says (torch.round, f32 arithmetic);
  - outputs are cast to their declared dtype (or --precision-io's).
Computing every f16/bf16 op in f32 and rounding once is also what makes the
reference possible at all: PyTorch 1.13 has no CPU kernel for many ops at
f16 (matmul, addmm, layer_norm...) and some at bf16.

Tolerances (the one table: TOLERANCE x FACTOR)
----------------------------------------------
Floats pass when |got - ref| <= FACTOR[category] * (rtol * |ref| +
mtol * max|ref|) per element, (rtol, mtol) = TOLERANCE[dtype], where dtype is
the lowest precision the value went through (an f32 output computed from a
bf16 matrix product is held to bf16's tolerance); NaN must meet NaN and an
infinity the same infinity. The `exact` category (casts, copies, gathers,
creation, products of two low-precision values) compares bit for bit.
Integers and bools are always exact.

Usage: run_precision.py --tgc build/tgc [--rtlib build/runtime/libtgcrt.a]
         [--rtinc runtime] [--cc cc] [--sanitize-flags "..."] [--subset asan]
         [-k SUBSTRING] [--jobs N] [--keep DIR] [-v]
One line per failing check (-v: every message, and for every value check
its worst element in units of its tolerance); last line
`precision: N passed, M failed`
(expected failures, if any are marked in XFAIL, are counted apart); exit
status 1 when M > 0.
"""

import argparse
import importlib.util
import json
import math
import multiprocessing
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
import zlib

warnings.filterwarnings("ignore")
sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.append(os.path.join(HERE, ".."))  # link_line.py
from link_line import link_libs  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "tensorio", os.path.join(ROOT, "tests", "diff", "tensorio.py"))
tensorio = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tensorio)

# --------------------------------------------------------------------------
# Tolerances: the one place they are set.
# --------------------------------------------------------------------------

BF16_EPS = 2.0 ** -7   # one bf16 ulp at 1.0 (8 significant bits)
F16_EPS = 2.0 ** -10   # one f16 ulp at 1.0 (11 significant bits)
# dtype -> (rtol, mtol): rtol per element, mtol times the output's max |ref|.
TOLERANCE = {
    "f32": (1e-5, 1e-6),
    "f16": (2 * F16_EPS, F16_EPS),    # 2 ulps; 1 ulp of the largest value (cancellation)
    "bf16": (2 * BF16_EPS, BF16_EPS),  # likewise
}
# Category multipliers, and why each is looser than "elementwise".
FACTOR = {
    "exact": 0,           # casts, copies, gathers, creation, exact products: bit for bit
    "elementwise": 1,     # one op, computed in f32 and rounded once on both sides
    "transcendental": 2,  # tgc's exp/log/tanh/erf polynomials vs libm/SLEEF (a few f32 ulps)
    "reduction": 2,       # f32 accumulation in another order; a 1-ulp flip of a rounding
    "product": 2,         # matrix products: same, k terms
    "model": 4,           # whole models: flips propagate through several layers
}
# (Measured with -v on the development machine: the worst element of every
# value check used at most 0.31 of its unit tolerance; most low-precision
# results, whole models included, match the reference bit for bit.)
# Real torch.autocast (bf16 kernels that may round twice: product, then bias):
AUTOCAST_TOL = (4 * BF16_EPS, 2 * BF16_EPS)

POLICIES = ["f32", "bf16", "f16", "mixed-bf16", "mixed-f16"]
TIMEOUT = 300  # seconds per tgc / executable / cc call (sanitizer builds are slow)

TD = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
      "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8,
      "u8": torch.uint8, "bool": torch.bool}
ALIASES = {"float32": "f32", "float": "f32", "float16": "f16", "half": "f16",
           "bfloat16": "bf16", "float64": "f64", "double": "f64", "int64": "i64",
           "long": "i64", "int32": "i32", "int": "i32", "int16": "i16", "int8": "i8",
           "uint8": "u8"}
TGN = {v: k for k, v in TD.items()}
LOWP = (torch.float16, torch.bfloat16)
# Lower rank: less precise. Taint keeps the least precise dtype a value went through.
PREC_RANK = {torch.bfloat16: 0, torch.float16: 1, torch.float32: 2, torch.float64: 3}

# Expected failures: case name -> reason (empty: every failure is reported).
XFAIL = {}

# --------------------------------------------------------------------------
# The policy as a TorchFunctionMode
# --------------------------------------------------------------------------

AMP_LOW = {"linear", "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "mv", "einsum"}
AMP_F32 = {"pow", "__pow__", "__rpow__", "pow_", "exp", "log", "log1p", "expm1", "rsqrt",
           "reciprocal", "sum", "mean", "prod", "var", "std", "logsumexp", "softmax",
           "log_softmax", "layer_norm", "rms_norm"}
VIEWS = {"__get__", "view", "reshape", "transpose", "t", "permute", "split", "chunk",
         "unsqueeze", "squeeze", "flatten", "expand", "contiguous", "__getitem__", "narrow",
         "select", "unbind", "movedim", "swapaxes", "unflatten", "view_as", "reshape_as",
         "expand_as", "size", "dim", "numel", "__len__", "clone", "detach", "tril", "triu",
         "__setstate__", "__repr__", "__format__"}
# Ops whose number-literal operands PyTorch converts to the op's dtype.
SCALAR_OPS = {"add", "sub", "mul", "div", "true_divide", "rsub", "__add__", "__radd__",
              "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__div__", "__rdiv__", "where", "masked_fill", "maximum", "minimum", "clamp",
              "clip", "gt", "lt", "ge", "le", "eq", "ne", "__gt__", "__lt__", "__ge__",
              "__le__", "__eq__", "__ne__", "fmod", "remainder", "__mod__", "__rmod__",
              "floor_divide", "__floordiv__", "lerp"}
CAST_METHODS = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16,
                "double": torch.float64, "long": torch.int64, "int": torch.int32,
                "short": torch.int16, "bool": torch.bool, "byte": torch.uint8,
                "char": torch.int8}


class Policy:
    def __init__(self, name):
        self.name = name  # None: the declared dtypes (PyTorch's own promotion)
        self.mixed = bool(name) and name.startswith("mixed-")
        self.low = {None: None, "f32": torch.float32, "bf16": torch.bfloat16,
                    "f16": torch.float16, "mixed-bf16": torch.bfloat16,
                    "mixed-f16": torch.float16}[name]
        self.uniform = bool(name) and not self.mixed


def _walk(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, torch.Size):
        return obj
    if isinstance(obj, tuple):
        return tuple(_walk(o, fn) for o in obj)
    if isinstance(obj, list):
        return [_walk(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: _walk(v, fn) for k, v in obj.items()}
    return obj


def _tensors(obj):
    out = []
    _walk(obj, lambda t: out.append(t) or t)
    return out


def promote(ts):
    """PyTorch's floating result dtype of operands ts (tensors), or None when
    none is floating: dimensioned tensors take priority over 0-d ones."""
    fl = [t for t in ts if t.is_floating_point()]
    if not fl:
        return None
    dimf = [t for t in fl if t.dim() > 0]
    group = dimf or fl
    d = group[0].dtype
    for t in group[1:]:
        d = torch.promote_types(d, t.dtype)
    return d


def _taint_of(ts):
    best = None
    for t in ts:
        for d in (getattr(t, "_lp", None), t.dtype if t.dtype in LOWP else None):
            if d is not None and (best is None or PREC_RANK[d] < PREC_RANK[best]):
                best = d
    return best


def _mark(out, taint, q=False):
    def f(t):
        d = taint
        if t.dtype in LOWP and (d is None or PREC_RANK[t.dtype] < PREC_RANK[d]):
            d = t.dtype
        if d is not None and t.is_floating_point():
            t._lp = d
        if q:
            t._q = True
        return t
    return _walk(out, f)


class PolicyMode(TorchFunctionMode):
    """Applies a Policy to every torch call (see the module docstring)."""

    def __init__(self, pol):
        super().__init__()
        self.pol = pol
        self.depth = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.depth:
            return func(*args, **kwargs)
        self.depth += 1
        try:
            return self._apply(func, args, kwargs)
        finally:
            self.depth -= 1

    def _apply(self, func, args, kwargs):
        name = getattr(func, "__name__", "")
        pol = self.pol
        ins = _tensors((args, kwargs))
        taint = _taint_of(ins)
        if name in VIEWS:
            out = func(*args, **kwargs)
            return _mark(out, taint, q=any(getattr(t, "_q", False) for t in ins))
        if name in CAST_METHODS or name in ("to", "type"):
            x = args[0]
            if name in CAST_METHODS:
                target = CAST_METHODS[name]
            else:
                target = kwargs.get("dtype")
                for a in args[1:]:
                    if isinstance(a, torch.dtype):
                        target = a
                    elif isinstance(a, torch.Tensor):
                        target = a.dtype
                if target is None:
                    return _mark(func(*args, **kwargs), taint)
            if pol.uniform and target.is_floating_point:
                target = pol.low
            return _mark(x.to(target), taint)
        if not ins:  # creation
            out = func(*args, **kwargs)
            if pol.uniform:
                out = _walk(out, lambda t: t.to(pol.low) if t.is_floating_point() else t)
            return _mark(out, taint)
        if pol.uniform:
            target = pol.low
        elif pol.mixed and name in AMP_LOW:
            target = pol.low
        elif pol.mixed and name in AMP_F32:
            target = torch.float32
        else:
            target = promote(ins)

        # Operands are first converted to the op's dtype, as PyTorch's
        # TensorIterator does (a 0-d f32 tensor or a number literal meeting a
        # bf16 tensor is rounded to bf16), except quantized weights (f32).
        def up(t):
            if not t.is_floating_point():
                return t
            if target is not None and not getattr(t, "_q", False) and t.dtype != target:
                t = t.to(target)
            return t.to(torch.float32) if t.dtype in LOWP else t
        if target in LOWP and (taint is None or PREC_RANK[target] < PREC_RANK[taint]):
            taint = target
        if target is not None and name in SCALAR_OPS:
            def rnd(a):
                if isinstance(a, float):
                    return float(torch.tensor(a, dtype=torch.float64).to(torch.float32)
                                 .to(target).to(torch.float64))
                return a
            args = tuple(rnd(a) for a in args)
            kwargs = {k: rnd(v) for k, v in kwargs.items()}
        out = func(*_walk(args, up), **_walk(kwargs, up))
        if target is not None:
            out = _walk(out, lambda t: t.to(target) if t.is_floating_point() else t)
        return _mark(out, taint)


def _rms_norm_fn(mode):
    def rms_norm(x, weight=None, eps=1e-6):
        pol = mode.pol
        ts = [x] + ([weight] if weight is not None else [])
        target = pol.low if pol.uniform else torch.float32 if pol.mixed else promote(ts)
        mode.depth += 1
        try:
            x32 = x.to(torch.float32)
            r = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
            if weight is not None:
                r = r * weight.to(torch.float32)
            r = r.to(target)
        finally:
            mode.depth -= 1
        return _mark(r, _taint_of(ts))
    return rms_norm


# --------------------------------------------------------------------------
# A small evaluator of the .tg text (the subset the cases and examples use)
# --------------------------------------------------------------------------

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
RE_GRAPH = re.compile(r"^graph\s+(%s)\s*(?:\((.*)\))?$" % IDENT)
RE_DECL = re.compile(r"^(input|param)\s+(%s)\s*:\s*(%s)\s*\[(.*?)\]\s*(?:=(.*))?$" % (IDENT, IDENT))
RE_OUTPUT = re.compile(r"^output\s+(%s)\s*(?:=(.*))?$" % IDENT)
RE_LET = re.compile(r"^(%s(?:\s*,\s*%s)*)\s*=(?!=)(.*)$" % (IDENT, IDENT))


def _strip_comment(line):
    out, q = [], None
    for ch in line:
        if q:
            if ch == q:
                q = None
        elif ch in "\"'":
            q = ch
        elif ch == "#":
            break
        out.append(ch)
    return "".join(out)


def statements(src):
    stmts, buf, depth = [], "", 0
    for raw in src.splitlines():
        line = _strip_comment(raw)
        if line.rstrip().endswith("\\"):
            buf += " " + line.rstrip()[:-1]
            continue
        buf += " " + line
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        if depth <= 0:
            if buf.strip():
                stmts.append(buf.strip())
            buf, depth = "", 0
    if buf.strip():
        stmts.append(buf.strip())
    return stmts


def graph_dims(src, defines):
    for st in statements(src):
        m = RE_GRAPH.match(st)
        if m:
            dims = {}
            if m.group(2):
                for part in m.group(2).split(","):
                    k, v = part.split("=")
                    dims[k.strip()] = int(defines.get(k.strip(), int(v)))
            return m.group(1), dims
    raise ValueError("no graph line")


def declarations(src, defines):
    """[(kind, name, dtype, shape, init)] in file order."""
    _, dims = graph_dims(src, defines)
    out = []
    for st in statements(src):
        m = RE_DECL.match(st)
        if m:
            kind, name, dt, dimtxt, init = m.groups()
            env = dict(dims)
            env["__builtins__"] = {}
            shape = [int(d) for d in eval("[" + dimtxt + "]", env)] if dimtxt.strip() else []
            out.append((kind, name, ALIASES.get(dt, dt), shape, (init or "").strip()))
    return out


def output_names(src):
    return [RE_OUTPUT.match(st).group(1) for st in statements(src) if st.startswith("output")]


class Env(dict):
    def __missing__(self, name):
        if hasattr(torch, name):
            return getattr(torch, name)
        if hasattr(F, name):
            return getattr(F, name)
        if hasattr(torch.Tensor, name):
            return lambda t, *a, **k: getattr(t, name)(*a, **k)
        raise NameError(name)


def evaluate(src, defines, feed, pol):
    """Outputs {name: tensor} of src evaluated under Policy pol; feed:
    {declared name: tensor} (already converted as the policy stores it)."""
    _, dims = graph_dims(src, defines)
    mode = PolicyMode(pol)
    env = Env()
    env["__builtins__"] = {}
    env.update({"true": True, "false": False, "True": True, "False": False, "None": None,
                "inf": float("inf"), "nan": float("nan")})
    for k, v in TD.items():
        env[k] = v
    for k, v in ALIASES.items():
        env[k] = TD[v]
    env.update({"linear": F.linear, "layer_norm": F.layer_norm, "gelu": F.gelu, "silu": F.silu,
                "embedding": F.embedding, "rms_norm": _rms_norm_fn(mode),
                "softmax": torch.softmax, "log_softmax": torch.log_softmax})
    env.update(dims)
    env.update(feed)
    outs = {}
    with mode:
        for st in statements(src):
            if RE_GRAPH.match(st) or RE_DECL.match(st):
                continue
            m = RE_OUTPUT.match(st)
            if m and m.group(2) is None:
                outs[m.group(1)] = env[m.group(1)]
                continue
            if m:
                names, expr = [m.group(1)], m.group(2)
            else:
                m = RE_LET.match(st)
                if not m:
                    raise ValueError("cannot parse %r" % st)
                names, expr = [n.strip() for n in m.group(1).split(",")], m.group(2)
            val = eval(expr.strip(), env)
            vals = list(val) if len(names) > 1 else [val]
            for n, v in zip(names, vals):
                env[n] = v
            if st.startswith("output"):
                outs[names[0]] = vals[0]
    return outs


# --------------------------------------------------------------------------
# Inputs, weights, quantization
# --------------------------------------------------------------------------

def gen(spec, dt, shape, rng):
    n = int(np.prod(shape)) if shape else 1
    kind, _, arg = spec.partition(":")
    if kind == "randn":
        a = rng.standard_normal(n) * (float(arg) if arg else 1.0)
    elif kind == "pos":
        a = rng.uniform(0.2, 3.0, n)
    elif kind == "unit":
        a = rng.uniform(-1.0, 1.0, n)
    elif kind == "gain":
        a = rng.uniform(0.5, 1.5, n)
    elif kind == "idx":
        a = rng.integers(0, int(arg), n).astype(np.float64)
    elif kind == "bool":
        a = (rng.random(n) < 0.5).astype(np.float64)
    elif kind == "eye":
        a = np.eye(shape[-2], shape[-1]).reshape(-1)
    elif kind == "onehot":  # rows selecting columns 0, last, then spread
        rows, cols = shape[-2], shape[-1]
        a = np.zeros((rows, cols))
        for r in range(rows):
            a[r, [0, cols - 1, (r * 37 + 5) % cols, (cols // 2 + r) % cols][r % 4]] = 1.0
        a = a.reshape(-1)
    elif kind == "halves":  # +V then -V along the last dim, plus 0, 1, 2: exact sums
        last = shape[-1]
        j = np.arange(n) % last
        a = np.where(j < last // 2, float(arg), -float(arg)) + (j % 3)
    elif kind == "const":
        a = np.full(n, float(arg))
    elif kind == "special":  # wide range, zeros, a whole zero row pattern
        a = rng.standard_normal(n) * np.exp(rng.uniform(-6, 6, n))
        a[::7] = 0.0
        if len(shape) == 2 and shape[0] > 2 and shape[1] > 2:  # channel 1 all zero: scale 0
            a = a.reshape(shape)
            a[1, :] = 0.0
            a[:, 1] = 0.0
            a = a.reshape(-1)
    else:
        raise ValueError(spec)
    td = TD[dt]
    if dt == "bool":
        return torch.tensor(a != 0).reshape(shape)
    if td.is_floating_point:
        return torch.tensor(a, dtype=torch.float64).to(torch.float32).to(td).reshape(shape)
    return torch.tensor(a.astype(np.int64)).to(td).reshape(shape)


def init_spec(init):
    m = re.match(r"randn\s*\((.*)\)", init or "")
    if m:
        s = re.search(r"std\s*=\s*([0-9.eE+-]+)", m.group(1))
        return "randn:%s" % (s.group(1) if s else "1.0")
    if init and init.startswith("ones"):
        return "gain"
    return "randn:0.1"


def quantize(w, bits, group):
    """(q, scale, deq) of w [n, k] (f32) as the brief states it: per row,
    groups of `group` k-elements (the last one shorter), scale = amax / qmax,
    q = clamp(round(w / scale)) (0 where scale is 0), deq = q * scale."""
    n, k = w.shape
    g = min(group, k) if group else k
    qmax = 127 if bits == 8 else 7
    ng = (k + g - 1) // g
    q = torch.zeros_like(w)
    scale = torch.zeros(n, ng, dtype=torch.float32)
    for gi in range(ng):
        j0, j1 = gi * g, min(k, gi * g + g)
        blk = w[:, j0:j1]
        s = blk.abs().amax(dim=1) / torch.tensor(float(qmax), dtype=torch.float32)
        safe = torch.where(s > 0, s, torch.ones_like(s))
        qb = torch.round(blk / safe[:, None]).clamp(-qmax - 1, qmax)
        q[:, j0:j1] = torch.where(s[:, None] > 0, qb, torch.zeros_like(qb))
        scale[:, gi] = s
    deq = q * scale.repeat_interleave(g, dim=1)[:, :k]
    return q, scale, deq


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

def on_grid(got, low):
    g = torch.from_numpy(np.ascontiguousarray(got.astype(np.float32)))
    fin = torch.isfinite(g)
    back = g.to(low).to(torch.float32)
    bad = fin & (back != g)
    if bool(bad.any()):
        i = tuple(int(x) for x in torch.nonzero(bad)[0])
        return "value %r at %s is not a %s value" % (float(g[i]), list(i), TGN[low])
    return None


NEEDED = None  # -v: [(worst error in units of the tolerance, output)] of the current check


def compare(name, ref, got, tol_dt, factor, tol=None):
    """None when got (np.ndarray) matches ref (torch.Tensor), else a message."""
    exp = tensorio.to_numpy(ref)
    if got.dtype != exp.dtype:
        return "%s: dtype %s, expected %s (%s)" % (name, got.dtype, exp.dtype, TGN[ref.dtype])
    if got.shape != exp.shape:
        return "%s: shape %s, expected %s" % (name, list(got.shape), list(exp.shape))
    if got.size == 0:
        return None
    if exp.dtype.kind != "f":
        diff = got != exp
        if diff.any():
            i = tuple(np.argwhere(diff)[0])
            return "%s: %d of %d elements differ; first at %s: got %r, expected %r" % (
                name, int(diff.sum()), got.size, [int(x) for x in i], got[i].item(), exp[i].item())
        return None
    g, e = got.astype(np.float64), exp.astype(np.float64)
    gn, en = np.isnan(g), np.isnan(e)
    fin = np.isfinite(e) & np.isfinite(g)
    special_bad = (gn != en) | (~fin & ~gn & ~en & (g != e))
    rtol, mtol = tol or TOLERANCE[tol_dt]
    fe = np.abs(e[np.isfinite(e)])
    scale = float(fe.max()) if fe.size else 0.0
    unit = rtol * np.abs(e) + mtol * scale
    allowed = factor * unit
    err = np.where(fin, np.abs(g - e), 0.0)
    if NEEDED is not None and fin.any():
        NEEDED.append((float(np.max(np.where(fin, err / np.maximum(unit, 1e-300), 0.0))), name,
                       factor))
    bad = (fin & (err > allowed)) | special_bad
    if not bad.any():
        return None
    if special_bad.any():
        i = tuple(np.argwhere(special_bad)[0])
    else:
        ratio = np.where(bad, err / np.where(allowed > 0, allowed, 1e-300), -1)
        i = np.unravel_index(int(np.argmax(ratio)), g.shape)
    return ("%s: %d of %d elements differ; worst at %s: got %r, expected %r "
            "(|diff| %.3g, allowed %.3g: %s tolerance x%g)") % (
        name, int(bad.sum()), got.size, [int(x) for x in i], got[i].item(), exp[i].item(),
        abs(g[i] - e[i]) if np.isfinite(g[i] - e[i]) else float("nan"), allowed[i],
        tol_dt if tol is None else "autocast", factor)


# --------------------------------------------------------------------------
# Running tools
# --------------------------------------------------------------------------

def run(cmd, cwd=None, env=None):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                           cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        return None, "", "timeout after %d s" % TIMEOUT
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def oneline(text, cap=500):
    t = " | ".join(ln.strip() for ln in text.strip().splitlines() if ln.strip())
    return t if len(t) <= cap else t[:cap] + "..."


def rcs(rc):
    return "timed out" if rc is None else ("died of signal %d" % -rc if rc < 0 else "exited %d" % rc)


def sanitizer_report(err):
    return any(s in err for s in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                  "runtime error:"))


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

class Case:
    """A graph compared value by value. inputs: {name: gen spec} (default
    randn, params by their initialiser); cat: a FACTOR key, or a dict
    {output: key} with "*" the default; policies; io: --precision-io; mode:
    run | build (tgc build, the executable with --weights); quant: None or
    (bits, group, {param: "nk" | "kn"}): the params expected quantized and
    how the product reads them; exact: every output must equal the
    reference bit for bit; wdtype: the params' dtype in the weights file."""

    def __init__(self, name, src, inputs=None, cat="elementwise", defines=None,
                 policies=POLICIES, io=None, mode="run", quant=None, asan=False,
                 exact=False, wdtype=None):
        self.name, self.src, self.inputs = name, src.strip() + "\n", dict(inputs or {})
        self.cat = cat if isinstance(cat, dict) else {"*": cat}
        self.defines, self.policies, self.io = dict(defines or {}), list(policies), io
        self.mode, self.quant, self.asan, self.exact = mode, quant, asan, exact
        self.wdtype = wdtype  # the params' dtype in the weights file (None: declared)

    def factor_key(self, out):
        return self.cat.get(out, self.cat["*"])


CORPUS = [
    Case("ew_arith", """
graph ew_arith(n = 16)
input x : f32[4, n]
input y : f32[4, n]
input p : f32[4, n]
param a : f32[n]
output o_add = x + y
output o_bias = x + a
output o_mul = x * y * 0.75
output o_sub = 1.5 - x
output o_div = x / p
output o_relu = relu(x - a)
output o_max = maximum(x, y)
output o_clamp = clamp(x, -0.5, 0.5)
output o_abs = abs(x) * 2.0
output o_neg = -x
output o_sqrt = sqrt(p)
output o_cmp = x > y
output o_pp = a * a + a
output o_lit = x * 0.1 + 0.3
output o_litc = x > 0.3
output o_sel = where(x > 0.0, x, y * a)
""", inputs={"p": "pos"}, cat="exact", asan=True),
    Case("ew_transc", """
graph ew_transc(n = 16)
input x : f32[4, n]
input y : f32[4, n]
input p : f32[4, n]
param a : f32[n]
output o_exp = exp(x)
output o_log = log(p)
output o_pow = pow(p, 1.5)
output o_sq = x ** 2
output o_powt = p ** y
output o_gelu = gelu(x)
output o_gelut = gelu(x, approximate = "tanh")
output o_silu = silu(x)
output o_tanh = tanh(x)
output o_sig = sigmoid(x)
output o_rsqrt = rsqrt(p)
output o_recip = reciprocal(p)
output o_log1p = log1p(p)
output o_expm1 = expm1(x)
output o_erf = erf(x)
output o_pexp = exp(a * 2.0)
output o_chain = exp(x * a) + log(p) * tanh(y)
""", inputs={"p": "pos", "y": "unit"}, cat="transcendental", asan=True),
    Case("reductions", """
graph reductions(n = 24)
input x : f32[3, 5, n]
param a : f32[n]
param m : f32[5, n]
h = x * a
output r_sum = x.sum()
output r_sumd = sum(h, dim = -1)
output r_mean = x.mean(dim = 1)
output r_meank = mean(x, dim = [0, 2], keepdim = true)
output r_var = x.var(dim = -1)
output r_std = x.std(dim = 1)
output r_amax = x.amax(dim = -1)
output r_amin = amin(h, dim = 0)
output r_argmax = x.argmax(dim = -1)
output r_lse = logsumexp(x, dim = -1)
output r_prod = (1.0 + 0.1 * x).prod(dim = 1)
output r_psum = m.sum(dim = -1)
output r_pmax = (m * 2.0).amax(dim = 0)
output r_pmean = m.mean()
output r_pvar = (m + m).var(dim = 0)
""", cat={"*": "reduction", "r_amax": "exact", "r_amin": "exact", "r_pmax": "exact"}),
    Case("softmax", """
graph softmax(n = 20)
input x : f32[2, 3, n]
param m : f32[3, n]
output s1 = softmax(x, dim = -1)
output s2 = softmax(x * 3.0, dim = 1)
output s3 = log_softmax(x, dim = -1)
output s4 = softmax(m * 4.0, dim = -1)
output s5 = log_softmax(x + m, dim = 0)
""", cat="reduction", asan=True),
    Case("norms", """
graph norms(d = 32)
input x : f32[2, 5, d]
param w : f32[d] = ones
param b : f32[d] = zeros
param g : f32[d] = ones
output n1 = layer_norm(x, [d], w, b)
output n2 = layer_norm(x, [d], eps = 1e-3)
output n3 = layer_norm(x * 2.0 + 1.0, [5, d])
output n4 = rms_norm(x, g)
output n5 = rms_norm(x, g, eps = 1e-5) * 2.0
""", inputs={"b": "randn:0.3"}, cat="reduction", asan=True),
    Case("products", """
graph products(m = 5, k = 48, n = 24)
input x : f32[m, k]
input xb : f32[2, m, k]
input yb : f32[2, k, n]
input v : f32[k]
param w : f32[n, k]
param b : f32[n]
param u : f32[k, n]
output p_lin = linear(x, w, b)
output p_linnb = linear(xb, w)
output p_mm = x @ u
output p_mmT = x @ w.T
output p_matmul = matmul(xb, u)
output p_mmfn = mm(x, u)
output p_bmm = bmm(xb, yb)
output p_ein = einsum("bmk,bkn->bmn", xb, yb)
output p_ein2 = einsum("mk,nk->mn", x, w)
output p_mv = mv(w, v)
output p_chain = relu(linear(x, w, b)) @ u.T
""", cat="product", asan=True),
    Case("data", """
graph data(n = 8, v = 10)
input x : f32[3, n]
input y : f32[2, n]
input ids : i64[4]
input c : bool[3, n]
param e : f32[v, n]
param a : f32[n]
output d_cat = cat([x, y], dim = 0)
output d_cat2 = cat([x, a.unsqueeze(0)], dim = 0)
output d_cat3 = cat([e, e * 2.0], dim = 1)
output d_where = where(c, x, a)
output d_where2 = where(c, x, 0.0)
output d_emb = embedding(ids, e)
output d_mf = x.masked_fill(c, -1.0)
output d_tr = x.transpose(0, 1).contiguous()
output d_sel = index_select(e, 0, ids)
output d_slice = e[1:4, ::2]
output d_gidx = e[ids]
""", inputs={"ids": "idx:10"}, cat="exact", asan=True),
    Case("creation", """
graph creation(n = 6)
input x : f32[3, n]
output c_z = zeros([3, n]) + x
output c_o = x * ones([3, n])
output c_full = full([3, n], 0.1) * x
output c_ar = arange(0, n).to(f32) * 0.5
output c_arf = arange(0.0, 3.0, 0.5)
output c_eye = eye(n) * 2.0
output c_tri = tril(ones([n, n]))
output c_third = full([2, 2], 1.0 / 3.0)
output c_zl = zeros_like(x) + 1.0
""", cat="exact"),
    Case("casts", """
graph casts(n = 8)
input x : f32[3, n]
input i : i32[3, n]
input hb : bf16[3, n]
input hf : f16[3, n]
param a : f32[n]
output t_f32 = (x * a).to(f32)
output t_f16 = x.to(f16) * 2.0
output t_bf16 = x.to(bf16) + 1.0
output t_int = (x * 10.0).to(i32)
output t_fromint = i.to(f32) * 0.5
output t_float = hb.float() + hf.float()
output t_mix = hb * hf
output t_half = a.half()
output t_prod = linear(x, a.unsqueeze(0)).to(f32)
""", inputs={"i": "idx:100"}, cat={"*": "exact", "t_bf16": "elementwise",
                                    "t_float": "elementwise", "t_prod": "product"}),
    Case("promotion", """
graph promotion(n = 8)
input x : f32[3, n]
input c : bool[3, n]
input idx : i64[3, 2]
param a : f32[n]
param m : f32[3, n]
s = x.sum()
mb = m * 2.0
output p_0d = mb * s
output p_where0d = where(c, mb, s)
output p_mf0d = mb.masked_fill(c, s)
output p_stack = stack([x, m], dim = 0)
output p_cat = cat([mb, x], dim = 1)
output p_outer = outer(a, x[0])
output p_gather = gather(m, 1, idx)
output p_cmp = mb > x
output p_maxi = maximum(mb, x)
output p_pp = mb + a
""", inputs={"idx": "idx:8"}, cat={"*": "exact", "p_outer": "product", "p_0d": "reduction",
                                    "p_where0d": "reduction", "p_mf0d": "reduction"}),
    Case("f16_range", """
graph f16_range(k = 1024)
input a : f32[2, k]
param w : f32[k, 4] = ones
param g : f32[k] = ones
output f_sum = a.sum(dim = -1)
output f_mean = a.mean(dim = -1)
output f_var = a.var(dim = -1)
output f_mm = a @ w
output f_ln = layer_norm(a, [k])
output f_rms = rms_norm(a, g)
output f_sm = softmax(a, dim = -1)
""", inputs={"a": "halves:200", "w": "const:1", "g": "const:1"}, cat="reduction"),
    Case("int_div", """
graph int_div(n = 8)
input i : i32[3, n]
output q = i / 3
""", inputs={"i": "idx:1000"}, cat="exact"),
]

IO_CASES = [
    Case("io_bf16_ew", CORPUS[0].src, inputs=CORPUS[0].inputs, io="bf16",
         policies=["bf16", "mixed-bf16", "f32"]),
    Case("io_f16_products", CORPUS[5].src, cat="product", io="f16",
         policies=["f16", "mixed-f16", "f32"], asan=True),
    Case("io_f32_products", CORPUS[5].src, cat="product", io="f32", policies=["bf16"]),
    Case("build_norms", CORPUS[4].src, inputs=CORPUS[4].inputs, cat="reduction", mode="build",
         policies=["bf16", "mixed-f16"]),
]

# Small symbolic dimensions of examples/*.tg, index inputs.
EXAMPLE_DIMS = {
    "embedding_classifier": {"batch": 3, "seq": 5, "vocab": 50},
    "gated_mlp": {"batch": 1, "seq": 3},
    "mlp": {"batch": 3},
    "rms_attention": {"batch": 1, "seq": 7},
    "transformer_block": {"batch": 1, "seq": 8},
}
EXAMPLE_INPUTS = {"embedding_classifier": {"ids": "idx:50"}}
# The params each example's --quantize must quantize, and how ("nk": [n, k]
# as linear reads it; "kn": [k, n], the right operand of x @ w).
EXAMPLE_QUANT = {
    "mlp": {"w1": "kn", "w2": "nk"},
    "transformer_block": {"w_qkv": "nk", "w_o": "nk", "w_fc": "nk", "w_proj": "nk"},
    "gated_mlp": {"w_gate_up": "nk", "w_down": "nk"},
    "rms_attention": {"wq": "nk", "wk": "nk", "wv": "nk", "wo": "nk"},
    "embedding_classifier": {"w": "nk"},
}


def example_src(name):
    with open(os.path.join(ROOT, "examples", name + ".tg")) as f:
        return f.read()


def example_inputs(name, src):
    sp = {}
    for m in re.finditer(r"^param\s+(\w+)\s*:[^=\n]*(?:=(.*))?$", src, re.M):
        sp[m.group(1)] = init_spec((m.group(2) or "").strip())
    sp.update(EXAMPLE_INPUTS.get(name, {}))
    return sp


def example_cases():
    out = []
    d = os.path.join(ROOT, "examples")
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".tg"):
            continue
        name = fn[:-3]
        # whole models: tests/models runs them; the generating ones: tests/generate
        if name in ("gpt2", "llama", "resnet18", "resnet50", "mobilenet_v3", "kws_conv1d",
                    "gpt2_generate", "llama_generate"):
            continue
        src = example_src(name)
        out.append(Case("example_" + name, src, inputs=example_inputs(name, src), cat="model",
                        defines=EXAMPLE_DIMS.get(name, {}), mode="build",
                        asan=name in ("mlp", "transformer_block")))
    return out


# Quantization graphs: k, n chosen so that groups 128 / 32 and a short last group occur.
def q_ident_src(form, n, k, m):
    if form == "linear":
        return ("graph qid(m = %d)\ninput x : f32[m, %d]\nparam w : f32[%d, %d]\n"
                "output y = linear(x, w)\n" % (m, k, n, k), {"w": "nk"})
    if form == "matmul":
        return ("graph qid(m = %d)\ninput x : f32[m, %d]\nparam w : f32[%d, %d]\n"
                "output y = x @ w\n" % (m, k, k, n), {"w": "kn"})
    return ("graph qid(m = %d)\ninput x : f32[m, %d]\nparam w : f32[%d, %d]\n"
            "output y = x @ w.T\n" % (m, k, n, k), {"w": "nk"})


def quant_cases():
    out = []
    combos = [  # (bits, group, k, n)
        (8, None, 96, 40), (8, 32, 100, 24), (4, None, 256, 24), (4, 32, 96, 24),
        (4, None, 300, 16), (4, 64, 200, 8), (4, None, 75, 8), (4, 32, 97, 8),
    ]
    forms = ["linear", "matmul", "T"]
    for ci, (bits, group, k, n) in enumerate(combos):
        for fi, form in enumerate(forms):
            for pol in ("f32", "mixed-bf16"):
                # identity: m = k rows (the sgemm path); one-hot: 3 rows (the GEMV path)
                for kind, m in (("eye", k), ("onehot", 3)):
                    if (ci + fi + (kind == "onehot")) % 2 and pol == "mixed-bf16":
                        continue  # mixed-bf16: half of the combinations suffice
                    src, qp = q_ident_src(form, n, k, m)
                    name = "q_ident_int%d_g%s_k%d_%s_%s_%s" % (bits, group or "def", k, form,
                                                               kind, pol)
                    out.append(Case(name, src, inputs={"x": kind, "w": "special"},
                                    policies=[pol], mode="build", quant=(bits, group, qp),
                                    exact=True,
                                    asan=(ci in (0, 2) and fi == 0 and
                                          (pol == "f32" or kind == "eye"))))
    qsrc = """
graph qval(b = 2, s = 3, k = 160, h = 72, n = 40)
input x : f32[b, s, k]
param w1 : f32[h, k]
param b1 : f32[h]
param w2 : f32[h, n]
param w3 : f32[n, h]
h1 = relu(linear(x, w1, b1))
output y = h1 @ w2 + h1 @ w3.T
output z = linear(x[0], w1)
"""
    for bits, group in ((8, None), (8, 64), (4, None), (4, 32)):
        for pol in ("f32", "mixed-bf16", "bf16"):
            if pol == "bf16" and (bits, group) != (4, 32):
                continue
            out.append(Case("q_values_int%d_g%s_%s" % (bits, group or "def", pol), qsrc,
                            cat="product", policies=[pol], mode="build",
                            quant=(bits, group, {"w1": "nk", "w2": "kn", "w3": "nk"}),
                            asan=(bits == 8 and group is None and pol == "f32")))
    # weights files in other dtypes: quantized from the converted values
    for wdt, bits in (("bf16", 8), ("f16", 4), ("f64", 8)):
        src, qp = q_ident_src("linear", 24, 160, 160)
        out.append(Case("q_ident_int%d_file_%s" % (bits, wdt), src,
                        inputs={"x": "eye", "w": "special"}, policies=["f32"], mode="build",
                        quant=(bits, None, qp), exact=True, wdtype=wdt))
    # every way of writing the weight of a product
    fsrc = """
graph qforms(m = 4, k = 64, n = 24)
input x : f32[m, k]
input xb : f32[2, m, k]
input v : f32[k]
param wa : f32[n, k]
param wb : f32[n, k]
param wc : f32[n, k]
param wd : f32[k, n]
param we : f32[k, n]
param wf : f32[n, k]
param wg : f32[n, k]
output ya = x @ wa.transpose(1, 0)
output yb = x @ wb.transpose(0, 1)
output yc = matmul(xb, wc.transpose(-1, -2))
output yd = mm(x, wd)
output ye = v @ we
output yf = mm(x, wf.T)
output yg = xb @ wg.permute(1, 0)
"""
    for bits, pol in ((8, "f32"), (4, "mixed-bf16")):
        out.append(Case("q_forms_int%d_%s" % (bits, pol), fsrc, cat="product", policies=[pol],
                        mode="build", quant=(bits, 32 if bits == 4 else None,
                                             {"wa": "nk", "wb": "nk", "wc": "nk", "wd": "kn",
                                              "we": "kn", "wf": "nk", "wg": "nk"})))
    # `tgc run` with --quantize (builds with the weights too)
    out.append(Case("q_values_run_int8", qsrc, cat="product", policies=["mixed-f16"],
                    mode="run", quant=(8, None, {"w1": "nk", "w2": "kn", "w3": "nk"})))
    # params that must stay float: used elsewhere, read both ways, an output, an
    # embedding, a left operand; w2 is read twice as [n, k] (quantized).
    nsrc = """
graph qnot(m = 3, k = 64, n = 32)
input x : f32[m, k]
input ids : i64[m]
param wa : f32[n, k]
param wb : f32[k, k]
param wc : f32[n, k]
param we : f32[10, k]
param wl : f32[n, m]
param w2 : f32[n, k]
param wt : f32[k, n]
output y1 = linear(x, wa) + wa.sum(dim = 1)
output y2 = linear(x, wb) + x @ wb
output wc
output y3 = linear(x, wc)
output y4 = embedding(ids, we) + linear(x, we).sum()
output y5 = wl @ x
output y6 = linear(x, w2) + x @ w2.T
output y7 = x @ wt + wt.T.sum(dim = 1)
"""
    for bits, pol in ((8, "f32"), (4, "mixed-bf16")):
        out.append(Case("q_not_quantized_int%d_%s" % (bits, pol), nsrc, cat="product",
                        inputs={"ids": "idx:10"}, policies=[pol], mode="build",
                        quant=(bits, 32 if bits == 4 else None, {"w2": "nk"}),
                        asan=(bits == 8)))
    return out


AUTOCAST_GRAPHS = [
    ("ac_mlp", """
graph ac_mlp(m = 6, k = 64, h = 96, n = 32)
input x : f32[m, k]
param w1 : f32[h, k]
param b1 : f32[h]
param w2 : f32[n, h]
param b2 : f32[n]
output y = linear(relu(linear(x, w1, b1)), w2, b2)
"""),
    ("ac_matmul", """
graph ac_matmul(m = 4, k = 48, h = 64, n = 40)
input x : f32[2, m, k]
param w1 : f32[k, h]
param b1 : f32[h]
param w2 : f32[h, n]
param b2 : f32[n]
output y = relu(relu(x @ w1 + b1) @ w2 + b2)
"""),
    ("ac_mm3", """
graph ac_mm3(m = 5, k = 32)
input x : f32[m, k]
param w1 : f32[k, k]
param w2 : f32[k, k]
param w3 : f32[k, k]
param b : f32[k]
output y = relu(mm(relu(mm(x, w1) + b), w2)) @ w3.T
"""),
]


# --------------------------------------------------------------------------
# Value cases
# --------------------------------------------------------------------------

def tie_row(k, bits):
    """A weight row whose every group's amax is qmax (so scale = 1 exactly)
    and whose other elements are exact ties m + 0.5: round half to even."""
    qmax = 127 if bits == 8 else 7
    ties = [m + 0.5 for m in range(-qmax - 1, qmax)]
    return torch.tensor([float(qmax) if j % 8 == 0 else ties[(j * 5) % len(ties)]
                         for j in range(k)], dtype=torch.float32)


def make_data(case):
    """({name: tensor} for every declaration (the same for every policy),
    {param: the tensor the weights file holds})."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    data, files = {}, {}
    for kind, name, dt, shape, init in declarations(case.src, case.defines):
        spec = case.inputs.get(name)
        if spec is None:
            spec = init_spec(init) if kind == "param" else ("bool" if dt == "bool" else "randn")
        t = gen(spec, dt, shape, rng)
        if case.quant and case.exact and name in case.quant[2] and t.shape[0] > 2 \
                and t.shape[1] > 2:
            if case.quant[2][name] == "kn":
                t[:, 2] = tie_row(t.shape[0], case.quant[0])
            else:
                t[2, :] = tie_row(t.shape[1], case.quant[0])
        if kind == "param" and case.wdtype and t.is_floating_point():
            if case.wdtype == "f64":  # values between f32 ones: converted at load
                f = t.to(torch.float64) * (1 + 2.0 ** -30)
            else:
                f = t.to(TD[case.wdtype])
            files[name] = f
            t = f.to(t.dtype)
        data[name] = t
    return data, files


def reference(case, pol_name, data):
    """(declared outputs {name: tensor}, policy outputs, expected {name:
    (tensor in the output dtype, storage dtype, tolerance dtype)})."""
    decls = declarations(case.src, case.defines)
    declared = evaluate(case.src, case.defines, dict(data), Policy(None))
    pol = Policy(pol_name)
    io = TD[case.io] if case.io else None
    qinfo = case.quant
    feed = {}
    for kind, name, dt, shape, init in decls:
        t = data[name]
        if t.is_floating_point():
            if kind == "input" and io is not None:
                t = t.to(io)
            if qinfo and name in qinfo[2]:
                w = t.to(torch.float32)
                if qinfo[2][name] == "kn":
                    w = w.T.contiguous()
                _, _, deq = quantize(w, qinfo[0], qinfo[1] if qinfo[1] else
                                     (128 if qinfo[0] == 4 else None))
                t = deq.T.contiguous() if qinfo[2][name] == "kn" else deq
                t._q = True
            elif pol.uniform:
                t = t.to(pol.low)
            elif pol.mixed and kind == "param":
                t = t.to(pol.low)
        feed[name] = t
    got = evaluate(case.src, case.defines, feed, pol)
    exp = {}
    for n, d in declared.items():
        v = got[n]
        want = d.dtype
        if want.is_floating_point and io is not None:
            want = io
        taint = getattr(v, "_lp", None)
        tol = v.dtype if v.is_floating_point() else None
        if taint is not None and tol is not None and PREC_RANK[taint] < PREC_RANK[tol]:
            tol = taint
        if want.is_floating_point and PREC_RANK[want] < PREC_RANK.get(tol, 9):
            tol = want
        with torch.no_grad():
            exp[n] = (v.to(want), v.dtype, tol)
    return exp


def tgc_quant_flags(q):
    if not q:
        return []
    f = ["--quantize", "int%d" % q[0]]
    if q[1]:
        f += ["--group-size", str(q[1])]
    return f


def check_quantized_params(tgc, tg, flags, quant, pol_name, d):
    """The params `tgc show --json` quantizes must be exactly quant's; the
    others keep the policy's float dtype. Returns messages."""
    rc, out, err = run([tgc, "show", tg, "--json"] + flags)
    if rc != 0:
        return ["tgc show --json %s: %s" % (rcs(rc), oneline(err))]
    vals = {v["name"]: v for v in json.loads(out)["values"] if "name" in v}
    msgs = []
    bits = quant[0]
    for kind, name, dt, shape, init in declarations(open(tg).read(), {}):
        if kind != "param":
            continue
        v = vals.get(name)
        if v is None:
            msgs.append("show: param %s missing" % name)
            continue
        if name in quant[2]:
            want = "i8" if bits == 8 else "u8"
            tr = quant[2][name] == "kn"
            nn, kk = (shape[1], shape[0]) if tr else (shape[0], shape[1])
            g = min(quant[1] or (128 if bits == 4 else kk), kk)
            wshape = [nn, kk if bits == 8 else (kk + 1) // 2]
            s = vals.get(name + ".scales")
            if v["dtype"] != want or v["shape"] != wshape:
                msgs.append("show: %s is %s%s, expected quantized %s%s" % (
                    name, v["dtype"], v["shape"], want, wshape))
            if s is None or s["dtype"] != "f32" or s["shape"] != [nn, (kk + g - 1) // g]:
                msgs.append("show: %s.scales is %s, expected f32[%d, %d]" % (
                    name, s and "%s%s" % (s["dtype"], s["shape"]), nn, (kk + g - 1) // g))
        else:
            want = TGN[Policy(pol_name).low] if dt in ("f32", "f16", "bf16") else dt
            if v["dtype"] != want or name + ".scales" in vals:
                msgs.append("show: %s is %s%s (scales %s), expected %s (not quantized)" % (
                    name, v["dtype"], v["shape"], name + ".scales" in vals, want))
    return msgs


def value_job(case, pol_name, tgc, work):
    d = os.path.join(work, re.sub(r"\W", "_", "%s_%s" % (case.name, pol_name)))
    os.makedirs(d, exist_ok=True)
    data, files = make_data(case)
    exp = reference(case, pol_name, data)
    tg = os.path.join(d, "graph.tg")
    with open(tg, "w") as f:
        f.write(case.src)
    in_args, weights = [], []
    io = TD[case.io] if case.io else None
    for kind, name, dt, shape, init in declarations(case.src, case.defines):
        t = data[name]
        if kind == "input":
            if io is not None and t.is_floating_point():
                t = t.to(io)
            p = os.path.join(d, "in_%s.npy" % name)
            tensorio.write_npy(p, t)
            in_args += ["--input", "%s=%s" % (name, p)]
        else:
            weights.append((name, files.get(name, t)))
    wpath = os.path.join(d, "weights.safetensors")
    tensorio.write_safetensors(wpath, weights)
    flags = ["--precision", pol_name]
    for k, v in case.defines.items():
        flags += ["-D", "%s=%s" % (k, v)]
    if case.io:
        flags += ["--precision-io", case.io]
    flags += tgc_quant_flags(case.quant)
    msgs = []
    if case.quant:
        msgs += check_quantized_params(tgc, tg, flags, case.quant, pol_name, d)
    od = os.path.join(d, "out")
    os.makedirs(od, exist_ok=True)
    if case.mode == "run":
        rc, out, err = run([tgc, "run", tg, "--weights", wpath, "--output-dir", od]
                           + in_args + flags)
        if rc != 0:
            return msgs + ["tgc run %s: %s" % (rcs(rc), oneline(err))]
    else:
        exe = os.path.join(d, "graph.exe")
        rc, out, err = run([tgc, "build", tg, "-o", exe, "--weights", wpath] + flags)
        if rc != 0:
            return msgs + ["tgc build %s: %s" % (rcs(rc), oneline(err))]
        # quantized programs embed their weights; the others read the file
        w = [] if case.quant else ["--weights", wpath]
        rc, out, err = run([exe, "--output-dir", od] + w + in_args)
        if rc != 0 or out.strip() or err.strip():
            return msgs + ["executable %s: %s" % (rcs(rc), oneline(out + err))]
    for n, (ref, storage, tol_dt) in exp.items():
        p = os.path.join(od, n + ".npy")
        if not os.path.exists(p):
            msgs.append("output %s.npy was not written" % n)
            continue
        got = np.load(p, allow_pickle=False)
        key = "exact" if case.exact else case.factor_key(n)
        m = compare(n, ref, got, TGN.get(tol_dt, "f32"), FACTOR[key])
        if m is None and storage in LOWP and ref.dtype not in LOWP and ref.is_floating_point():
            g = on_grid(got, storage)
            if g:
                m = "%s: stored as %s under --precision %s, but %s" % (n, TGN[storage],
                                                                        pol_name, g)
        if m:
            msgs.append(m)
    return msgs


# --------------------------------------------------------------------------
# Autocast cross-check
# --------------------------------------------------------------------------

def autocast_job(name, src, tgc, work):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    case = Case(name, src)
    data, _ = make_data(case)
    for k in list(data):
        if k.startswith("w"):
            data[k] = data[k] * (1.0 / math.sqrt(data[k].shape[0]))
    feed = {}
    for kind, n, dt, shape, init in declarations(src, {}):
        feed[n] = data[n].to(torch.bfloat16).to(torch.float32) if kind == "param" else data[n]
    env = Env()
    env["__builtins__"] = {}
    env.update({"linear": F.linear, "relu": torch.relu})
    env.update(graph_dims(src, {})[1])
    env.update(feed)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = eval(re.search(r"^output y = (.*)$", src, re.M).group(1), env).float()
    tg = os.path.join(d, "graph.tg")
    with open(tg, "w") as f:
        f.write(src.strip() + "\n")
    wpath = os.path.join(d, "w.safetensors")
    tensorio.write_safetensors(wpath, [(n, data[n]) for kind, n, *_ in declarations(src, {})
                                       if kind == "param"])
    xp = os.path.join(d, "x.npy")
    tensorio.write_npy(xp, data["x"])
    od = os.path.join(d, "out")
    os.makedirs(od, exist_ok=True)
    rc, out, err = run([tgc, "run", tg, "--weights", wpath, "--input", "x=" + xp,
                        "--output-dir", od, "--precision", "mixed-bf16"])
    if rc != 0:
        return ["tgc run %s: %s" % (rcs(rc), oneline(err))]
    got = np.load(os.path.join(od, "y.npy"))
    m = compare("y", ref, got, "bf16", 1, tol=AUTOCAST_TOL)
    return [m + " (against torch.autocast)"] if m else []


# --------------------------------------------------------------------------
# Report figures against the built object
# --------------------------------------------------------------------------

C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "tgcrt.h"
#include "model.h"
#define P2(a, b) a##b
#define P(a, b) P2(a, b)
int main(int argc, char **argv) {
    P(G, _ctx) *c = NULL;
    int s = P(G, _create)(&c, argc > 1 ? argv[1] : NULL, 1);
    if (s) {
        fprintf(stderr, "create: %d %s\n", s, c ? P(G, _error)(c) : "out of memory");
        P(G, _destroy)(c);
        return 1;
    }
    const RtProgram *p = rt_context_program((const RtContext *)c);
    size_t pb = 0;
    for (int i = 0; i < p->nparams; i++) {
        RtDesc d = p->params[i].desc;
        size_t n = 0;
        d.dtype = p->params[i].storage;
        if (!rt_desc_nbytes(&d, &n)) return 2;
        pb += n;
        printf("param %s %s %zu\n", p->params[i].name, rt_dtype_name(d.dtype), n);
    }
    void *in[64] = {0}, *out[64] = {0};
    for (int i = 0; i < P(G, _num_inputs)(); i++) in[i] = calloc(1, P(G, _input_bytes)(i) + 1);
    for (int i = 0; i < P(G, _num_outputs)(); i++) out[i] = calloc(1, P(G, _output_bytes)(i) + 1);
    s = P(G, _run_buffers)(c, (const void *const *)in, out);
    if (s) fprintf(stderr, "run: %d %s\n", s, P(G, _error)(c));
    printf("arena_bytes %zu\nparams_bytes %zu\nrun %d\n", P(G, _arena_bytes)(), pb, s);
    for (int i = 0; i < 64; i++) free(in[i]), free(out[i]);
    P(G, _destroy)(c);
    return s ? 1 : 0;
}
"""

DT_SIZE = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1,
           "u8": 1, "bool": 1}


def expected_params_bytes(src, defines, pol_name, quant):
    """Params bytes computed from the declarations: float params at the
    policy's dtype, quantized ones as q (1 byte, or half) plus f32 scales."""
    low = TGN[Policy(pol_name).low]
    total = 0
    for kind, name, dt, shape, init in declarations(src, defines):
        if kind != "param":
            continue
        numel = int(np.prod(shape)) if shape else 1
        if quant and name in quant[2]:
            tr = quant[2][name] == "kn"
            n, k = (shape[1], shape[0]) if tr else (shape[0], shape[1])
            g = min(quant[1] or (128 if quant[0] == 4 else k), k)
            total += n * (k if quant[0] == 8 else (k + 1) // 2) + 4 * n * ((k + g - 1) // g)
        else:
            total += numel * DT_SIZE[low if dt in ("f32", "f16", "bf16") else dt]
    return total


def report_json(tgc, tg, flags):
    rc, out, err = run([tgc, "report", tg, "--json"] + flags)
    if rc != 0:
        return None, "tgc report %s %s: %s" % (" ".join(flags), rcs(rc), oneline(err))
    try:
        return json.loads(out), None
    except ValueError as e:
        return None, "tgc report --json: invalid JSON (%s)" % e


def report_job(ex, pol_name, quant, tgc, work, opts):
    src = example_src(ex)
    defines = EXAMPLE_DIMS.get(ex, {})
    q = (quant[0], quant[1], EXAMPLE_QUANT[ex]) if quant else None
    tag = "%s_%s_%s" % (ex, pol_name, "int%d_g%s" % (quant[0], quant[1] or "def") if quant else "f")
    d = os.path.join(work, "report_" + re.sub(r"\W", "_", tag))
    os.makedirs(d, exist_ok=True)
    tg = os.path.join(d, ex + ".tg")
    with open(tg, "w") as f:
        f.write(src)
    flags = ["--precision", pol_name] + tgc_quant_flags(q)
    for k, v in defines.items():
        flags += ["-D", "%s=%s" % (k, v)]
    msgs = []
    rep, err = report_json(tgc, tg, flags)
    if err:
        return [err]
    r_params, r_arena = rep["params"]["bytes"], rep["activations"]["arena_bytes"]
    want = expected_params_bytes(src, defines, pol_name, q)
    if r_params != want:
        msgs.append("report params.bytes %d, the declarations give %d" % (r_params, want))
    cmd = [tgc, "compile", tg, "-o", os.path.join(d, "m.o"), "--header",
           os.path.join(d, "model.h")] + flags
    if q:
        case = Case(tag, src, inputs=example_inputs(ex, src), defines=defines)
        data, _ = make_data(case)
        wpath = os.path.join(d, "w.safetensors")
        tensorio.write_safetensors(wpath, [(n, data[n]) for kind, n, *_ in
                                           declarations(src, defines) if kind == "param"])
        cmd += ["--weights", wpath]
    rc, out, err = run(cmd)
    if rc != 0:
        return msgs + ["tgc compile %s: %s" % (rcs(rc), oneline(err))]
    cprog = os.path.join(d, "prog.c")
    with open(cprog, "w") as f:
        f.write(C_PROGRAM)
    exe = os.path.join(d, "prog")
    san = shlex.split(opts.sanitize_flags or "")
    libs = link_libs([tgc, "compile", tg] + cmd[7:])  # flags and --weights
    rc, out, err = run([opts.cc, "-std=c11", "-O1", "-g", "-DG=" + ex, "-I", d, "-I", opts.rtinc,
                        cprog, os.path.join(d, "m.o"), opts.rtlib] + libs + ["-o", exe] + san)
    if rc != 0:
        return msgs + ["cc %s: %s" % (rcs(rc), oneline(err))]
    env = dict(os.environ)
    if san:
        env["ASAN_OPTIONS"] = "detect_leaks=1:" + env.get("ASAN_OPTIONS", "")
    rc, out, err = run([exe], env=env)
    if rc != 0 or sanitizer_report(err):
        return msgs + ["the C program %s: %s" % (rcs(rc), oneline(err))]
    vals = dict(ln.split(" ", 1) for ln in out.splitlines() if not ln.startswith("param "))
    o_arena, o_params = int(vals["arena_bytes"]), int(vals["params_bytes"])
    if o_arena != r_arena:
        msgs.append("report activations.arena_bytes %d, the object's %s_arena_bytes() %d" % (
            r_arena, ex, o_arena))
    if o_params != r_params:
        msgs.append("report params.bytes %d, the object's params hold %d bytes (%s)" % (
            r_params, o_params, "; ".join(ln[6:] for ln in out.splitlines()
                                          if ln.startswith("param "))))
    return msgs


def by_dtype_job(ex, pol_name, tgc, work):
    """The by_dtype rows of `report --precision P` agree with the reports of
    those choices: the row of P itself, and int8 / int4 (the rest at P)."""
    src = example_src(ex)
    d = os.path.join(work, "bydtype_%s_%s" % (ex, pol_name))
    os.makedirs(d, exist_ok=True)
    tg = os.path.join(d, ex + ".tg")
    with open(tg, "w") as f:
        f.write(src)
    dflags = []
    for k, v in EXAMPLE_DIMS.get(ex, {}).items():
        dflags += ["-D", "%s=%s" % (k, v)]
    base, err = report_json(tgc, tg, ["--precision", pol_name] + dflags)
    if err:
        return [err]
    rows = {r["dtype"]: r for r in base.get("by_dtype", [])}
    msgs = []
    for row, flags in ((pol_name, []), ("int8", ["--quantize", "int8"]),
                       ("int4", ["--quantize", "int4"])):
        r = rows.get(row)
        if r is None:
            msgs.append("by_dtype has no %s row" % row)
            continue
        other, err = report_json(tgc, tg, ["--precision", pol_name] + flags + dflags)
        if err:
            msgs.append(err)
            continue
        if r["params_bytes"] != other["params"]["bytes"]:
            msgs.append("by_dtype row %s params_bytes %d, but report --precision %s %s gives "
                        "params.bytes %d" % (row, r["params_bytes"], pol_name, " ".join(flags),
                                             other["params"]["bytes"]))
        if r["peak_bytes"] != other["peak_bytes"]:
            msgs.append("by_dtype row %s peak_bytes %d, but report --precision %s %s gives "
                        "peak_bytes %d" % (row, r["peak_bytes"], pol_name, " ".join(flags),
                                           other["peak_bytes"]))
    return msgs


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

ERR_SRC = """graph errg(m = 3)
input x : f32[m, 16]
param w : f32[8, 16]
param u : f32[8, 16]
output y = linear(x, w) + linear(x, u)
output z = u.sum()
"""


def error_cases(work):
    """(label, argv after tgc (with {G} {W} {NAN} {INF} {MISS} {OUT}), expected rc,
    substrings the message must contain)."""
    cases = []
    for cmd in ("build", "compile", "run", "report", "show", "check"):
        extra = {"build": ["-o", "{OUT}"], "compile": ["-o", "{OUT}.o", "--header", "{OUT}.h"],
                 "run": ["--random-inputs", "0", "--output-dir", "{OUT}"]}.get(cmd, [])
        cases.append(("%s --precision bogus" % cmd, [cmd, "{G}", "--precision", "bogus"] + extra,
                      1, ["--precision", "bogus"]))
    cases += [
        ("report --precision-io bogus", ["report", "{G}", "--precision-io", "i32"], 1,
         ["--precision-io"]),
        ("build --quantize int3", ["build", "{G}", "-o", "{OUT}", "--quantize", "int3",
                                   "--weights", "{W}"], 1, ["--quantize", "int3"]),
        ("report --quantize int3", ["report", "{G}", "--quantize", "int3"], 1, ["--quantize"]),
        ("build --group-size 0", ["build", "{G}", "-o", "{OUT}", "--quantize", "int4",
                                  "--group-size", "0", "--weights", "{W}"], 1, ["--group-size"]),
        ("report --group-size -4", ["report", "{G}", "--quantize", "int8", "--group-size", "-4"],
         1, ["--group-size"]),
        ("report --group-size abc", ["report", "{G}", "--quantize", "int8", "--group-size", "abc"],
         1, ["--group-size"]),
        ("report --group-size without --quantize", ["report", "{G}", "--group-size", "32"], 1,
         ["--group-size", "--quantize"]),
        ("build --group-size without --quantize", ["build", "{G}", "-o", "{OUT}", "--group-size",
                                                   "32", "--weights", "{W}"], 1,
         ["--group-size", "--quantize"]),
        ("build --quantize without --weights", ["build", "{G}", "-o", "{OUT}", "--quantize",
                                                "int8"], 1, ["--quantize", "--weights"]),
        ("compile --quantize without --weights", ["compile", "{G}", "-o", "{OUT}.o", "--header",
                                                  "{OUT}.h", "--quantize", "int4"], 1,
         ["--quantize", "--weights"]),
        ("run --quantize without --weights", ["run", "{G}", "--random-inputs", "0",
                                              "--output-dir", "{OUT}", "--quantize", "int8"], 1,
         ["--weights"]),
        ("build --quantize, NaN in the weight", ["build", "{G}", "-o", "{OUT}", "--quantize",
                                                 "int8", "--weights", "{NAN}"], 1, ["'w'", "NaN"]),
        ("build --quantize int4, inf in the weight", ["build", "{G}", "-o", "{OUT}",
                                                      "--quantize", "int4", "--weights", "{INF}"],
         1, ["'w'"]),
        ("run --quantize, NaN in the weight", ["run", "{G}", "--random-inputs", "0",
                                               "--output-dir", "{OUT}", "--quantize", "int8",
                                               "--weights", "{NAN}"], 1, ["'w'"]),
        ("build --quantize, weight missing from the file", ["build", "{G}", "-o", "{OUT}",
                                                            "--quantize", "int8", "--weights",
                                                            "{MISS}"], 1, ["'w'"]),
        ("build --quantize, weight of the wrong shape", ["build", "{G}", "-o", "{OUT}",
                                                         "--quantize", "int8", "--weights",
                                                         "{SHAPE}"], 1, ["'w'"]),
        # u is also summed: not quantized, so its NaN is no error of --quantize
        ("build --quantize, NaN in an unquantized param", ["build", "{G}", "-o", "{OUT}",
                                                           "--quantize", "int8", "--weights",
                                                           "{UNAN}"], 0, []),
    ]
    return cases


def error_job(label, argv, want_rc, needles, tgc, work):
    d = os.path.join(work, "err_" + re.sub(r"\W", "_", label))
    os.makedirs(d, exist_ok=True)
    g = os.path.join(d, "g.tg")
    with open(g, "w") as f:
        f.write(ERR_SRC)
    gen_ = torch.Generator().manual_seed(1)
    w, u = torch.randn(8, 16, generator=gen_), torch.randn(8, 16, generator=gen_)
    wn, wi, un = w.clone(), w.clone(), u.clone()
    wn[3, 5] = float("nan")
    wi[0, 0] = float("inf")
    un[1, 1] = float("nan")
    files = {"W": [("w", w), ("u", u)], "NAN": [("w", wn), ("u", u)], "INF": [("w", wi), ("u", u)],
             "MISS": [("u", u)], "SHAPE": [("w", torch.randn(16, 8)), ("u", u)],
             "UNAN": [("w", w), ("u", un)]}
    subst = {"G": g, "OUT": os.path.join(d, "out")}
    for k, v in files.items():
        p = os.path.join(d, k + ".safetensors")
        tensorio.write_safetensors(p, v)
        subst[k] = p
    args = [re.sub(r"\{(\w+)\}", lambda m: subst[m.group(1)], a) for a in argv]
    rc, out, err = run([tgc] + args)
    msgs = []
    if rc != want_rc:
        msgs.append("exit %s, expected %d: %s" % (rcs(rc) if rc is None or rc < 0 else rc,
                                                  want_rc, oneline(err)))
    elif want_rc and not re.search(r"error", err):
        msgs.append("no error message: %s" % oneline(err))
    for n in needles:
        if n not in err:
            msgs.append("the message does not name %r: %s" % (n, oneline(err)))
    if sanitizer_report(err):
        msgs.append("sanitizer report: %s" % oneline(err))
    return msgs


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def build_jobs(subset):
    """[(label, kind, payload, asan)]."""
    jobs = []
    for c in CORPUS + IO_CASES + example_cases() + quant_cases():
        for p in c.policies:
            label = "%s [%s%s]" % (c.name, p, ", io " + c.io if c.io else "")
            if c.quant:
                label = c.name
            # asan: two policies per marked case, all five for two of them
            jobs.append((label, "value", (c, p), c.asan and (
                p in ("bf16", "mixed-f16") or c.name in ("ew_arith", "products")
                or bool(c.quant) or bool(c.io))))
    for name, src in AUTOCAST_GRAPHS:
        jobs.append(("autocast %s" % name, "autocast", (name, src), name == "ac_mlp"))
    for ex in ("mlp", "transformer_block", "embedding_classifier"):
        for p in POLICIES:
            for q in ((None, (8, None), (4, 32)) if ex != "embedding_classifier" else (None,)):
                label = "report %s [%s%s]" % (ex, p, ", int%d g%s" % (q[0], q[1] or "def")
                                              if q else "")
                jobs.append((label, "report", (ex, p, q),
                             ex == "mlp" and (q is None or p == "mixed-bf16")))
        for p in ("f32", "bf16", "mixed-bf16"):
            jobs.append(("report by_dtype %s [%s]" % (ex, p), "bydtype", (ex, p),
                         ex == "mlp" and p == "bf16"))
    for label, argv, rc, needles in error_cases(None):
        jobs.append(("error: " + label, "error", (label, argv, rc, needles), True))
    if subset == "asan":
        jobs = [j for j in jobs if j[3]]
    return jobs


_OPTS = None


def _init(opts):
    global _OPTS
    _OPTS = opts
    torch.set_num_threads(1)


def _work(job):
    label, kind, payload, _ = job
    t0 = time.time()
    opts = _OPTS
    global NEEDED
    NEEDED = []
    try:
        if kind == "value":
            msgs = value_job(payload[0], payload[1], opts.tgc, opts.work)
        elif kind == "autocast":
            msgs = autocast_job(payload[0], payload[1], opts.tgc, opts.work)
        elif kind == "report":
            msgs = report_job(payload[0], payload[1], payload[2], opts.tgc, opts.work, opts)
        elif kind == "bydtype":
            msgs = by_dtype_job(payload[0], payload[1], opts.tgc, opts.work)
        else:
            msgs = error_job(*payload, opts.tgc, opts.work)
    except Exception:
        msgs = ["harness error: %s" % traceback.format_exc().strip().splitlines()[-1],
                traceback.format_exc()]
    worst = max(NEEDED) if NEEDED else None
    return label, kind, msgs, time.time() - t0, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--rtlib", help="libtgcrt.a (default: next to tgc, runtime/libtgcrt.a)")
    ap.add_argument("--rtinc", default=os.path.join(ROOT, "runtime"))
    ap.add_argument("--cc", default=os.environ.get("CC") or "cc")
    ap.add_argument("--sanitize-flags", default="")
    ap.add_argument("--subset", choices=["full", "asan"],
                    default=os.environ.get("TGC_PRECISION_SUBSET", "full"))
    ap.add_argument("-k", dest="pattern")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    opts.tgc = os.path.abspath(opts.tgc)
    if not opts.rtlib:
        opts.rtlib = os.path.join(os.path.dirname(opts.tgc), "runtime", "libtgcrt.a")
    t0 = time.time()
    jobs = build_jobs(opts.subset)
    if opts.pattern:
        jobs = [j for j in jobs if opts.pattern in j[0]]
    if opts.list:
        for j in jobs:
            print(j[0])
        return 0
    counts = {}
    for j in jobs:
        counts[j[1]] = counts.get(j[1], 0) + 1
    print("checks: %d (%s)%s" % (len(jobs), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
          " [asan subset]" if opts.subset == "asan" else ""))
    sys.stdout.flush()
    opts.work = opts.keep or tempfile.mkdtemp(prefix="tgc-precision-")
    os.makedirs(opts.work, exist_ok=True)
    passed = failed = xfailed = xpassed = 0
    times = []
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(max(1, opts.jobs), initializer=_init, initargs=(opts,)) as pool:
            for label, kind, msgs, secs, worst in pool.imap_unordered(_work, jobs):
                times.append((secs, label))
                if opts.verbose and worst is not None and kind == "value":
                    print("  worst error %.3g tolerance units (allowed %g): %s %s" % (
                        worst[0], worst[2], label, worst[1]))
                xf = next((r for n, r in XFAIL.items() if label.startswith(n)), None)
                if not msgs:
                    if xf:
                        xpassed += 1
                        print("XPASS %s (marked: %s)" % (label, xf))
                    else:
                        passed += 1
                    continue
                if xf:
                    xfailed += 1
                    print("XFAIL %s: %s (%s)" % (label, msgs[0].splitlines()[0], xf))
                    continue
                failed += 1
                more = " (and %d more)" % (len(msgs) - 1) if len(msgs) > 1 and not opts.verbose \
                    else ""
                print("FAIL %s: %s%s" % (label, msgs[0].splitlines()[0], more))
                if opts.verbose:
                    for m in msgs[1:]:
                        print("  " + m.replace("\n", "\n  "))
                sys.stdout.flush()
    finally:
        if not opts.keep:
            shutil.rmtree(opts.work, ignore_errors=True)
    if opts.verbose:
        for secs, label in sorted(times, reverse=True)[:10]:
            print("  slowest: %6.2f s %s" % (secs, label))
    print("time: %.1f s" % (time.time() - t0))
    extra = ""
    if xfailed or xpassed:
        extra = " (%d expected failures, %d unexpected passes)" % (xfailed, xpassed)
    print("precision: %d passed, %d failed%s" % (passed, failed, extra))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
