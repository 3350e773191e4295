#!/usr/bin/python3
"""Differential suite: the values tgc computes against PyTorch 1.13's.

Every case is one `.tg` graph. tgc compiles and runs it (`tgc run`, or
`tgc build` and the executable), and each output is compared value by value
with what PyTorch computes from the same inputs and weights.

How the reference is computed
-----------------------------
The graph text itself is the reference program: it is evaluated statement by
statement by the oracle suite's evaluator (tests/oracle/oracle.py, imported,
not copied: it maps every `.tg` construct onto torch calls). This module
hooks the evaluator in three places:
  - inputs and params get the values this harness generated and wrote to
    .npy / safetensors (rather than the oracle's torch.randn / ones), so both
    sides see bit-identical data;
  - the evaluator's environment is captured, so the outputs' values can be
    read after evaluation;
  - f16/bf16: PyTorch 1.13 has no CPU kernel for many ops at these dtypes
    (exp, matmul, softmax, layer_norm...), and where it has one it may
    accumulate differently. So every non-view torch call with an f16/bf16
    tensor argument is computed again with those arguments converted to f32
    (exactly: the rounded input values are kept) and its floating result is
    rounded once to the dtype PyTorch gives the result (when PyTorch rejects
    the call at that dtype: to the one low-precision dtype of its floating
    arguments). The reference is thus "f32 arithmetic on the same rounded
    inputs, rounded once per language-level operation". `rms_norm`, which
    the oracle writes out as several ops, is likewise rounded once.
Ops PyTorch rejects for a dtype on CPU (int `mean`, bool `neg`, ...): in the
dtype-sweep cases (`prune=True`), a statement PyTorch rejects with one of the
REJECTIONS messages is removed from the graph (with the statements and
outputs that depend on it) before tgc sees it; `--verbose` lists them.

Comparison
----------
Each output must exist as OUTPUT_DIR/NAME.npy with the reference's dtype
(bf16 as float32) and shape. Values: integers and bool exactly; floats with
|got - ref| <= rtol * |ref| + atol, (rtol, atol) = TOLERANCE[dtype] times
the case's FACTOR[category] (at f16/bf16 capped by
LOW_PRECISION_FACTOR_CAP); NaN must meet NaN and +-inf the same infinity.
A case's `exact` category compares floats exactly too (casts, copies,
indexing, creation). The worst element (largest error / allowed) is reported.

Usage: diff.py --tgc build/tgc [-k SUBSTRING] [--subset asan] [--jobs N]
               [--keep DIR] [--reference-only] [--self-check] [--list] [-v]
Cases run in parallel (a process pool of --jobs workers, default one per
CPU), each in its own folder of a temporary directory (--keep DIR keeps the
graph, inputs, weights and outputs). One line per failing case: its name
and the worst element of the first mismatching output (-v: every output,
the graph, pruned statements and the slowest cases). `--reference-only`
evaluates only the PyTorch side; `--self-check` checks the tolerances
themselves (an f64 evaluation of each case must pass against the
reference). `--subset asan` (or TGC_DIFF_SUBSET=asan; CMakeLists passes it
when the tree is built with TGC_SANITIZE) runs the reduced set of cases
marked `asan`, which still covers every operation (f32/i32 sweeps, the
f16/bf16 paths, casts, views, chains, examples, executables). Last line:
`diff: N passed, M failed`; exit status 1 if M > 0. If tgc has no working
`run` subcommand every case fails at once.

Case lists: diff_ops.py (operations), diff_models.py (examples/*.tg),
diff_random.py (random chains), diff_modules.py (def blocks, prefix=, repeat,
dotted param names: weights keyed by full dotted names), diff_conv.py
(convolutions, pools, norms), diff_loss.py (loss functions), diff_reduce.py
(reductions over leading dims).

Other suites reuse the corpus by importing this module (never copying the
case lists): select_cases(subset, pattern) gives the cases, and
materialize(case, dir) computes a case's reference and writes its graph,
inputs and weights with the flags to build and run it (tests/cuda builds
every case with --target cuda; tests/gpu runs them against PyTorch on a
GPU).
"""

import argparse
import multiprocessing
import os
import re
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
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import oracle  # noqa: E402
import tensorio  # noqa: E402
import diff_attention  # noqa: E402,F401  (rounds the oracle's f16/bf16 attention once)

# --------------------------------------------------------------------------
# Tolerances: the one place they are set.
# --------------------------------------------------------------------------

# dtype -> (rtol, atol). Integers and bool are always exact.
TOLERANCE = {
    "f64": (1e-10, 1e-12),
    "f32": (1e-5, 1e-6),
    "f16": (2e-3, 1e-4),    # 2 ulps: one rounding of the f32 reference, +1 ulp
    "bf16": (1.6e-2, 1e-3),  # 2 ulps (2^-7 relative)
}
# A case's category multiplies both. Why each is looser than "default":
FACTOR = {
    "exact": 0,             # casts, copies, gathers, creation: bit-exact (NaN = NaN)
    "default": 1,           # one elementwise op, rounded once
    "transcendental": 4,    # exp/log/erf/tanh...: libm vs vectorised approximations
    "reduction": 10,        # sums over up to ~100 terms, matrix products: order differs
    "chain": 20,            # fused chains: f16/bf16 may keep f32 between ops (reference rounds each)
    "long": 100,            # long reductions / whole models: hundreds of terms, many layers
}
# f16/bf16 categories whose factor is capped: 100 x bf16's 2 ulps is 1.6 |ref|
# + 0.1, which an all-zero or sign-flipped result meets. The "long" cases at
# f16/bf16 (column-reduction blocks) matched to 0 units of their tolerance
# in the audit of 2026-11-26 (TGC_DIFF_WORST below, whole suite), so the
# reduction factor keeps a wide margin: bf16 16% + 0.01, f16 2% + 0.001.
LOW_PRECISION_FACTOR_CAP = {"long": 10}
INT_DTYPES = {"i64", "i32", "i16", "i8", "u8", "bool"}
# `--precision P` cases (weights and activations stored at P, computed from
# the f32 graph): a sanity check that the flag keeps results close, not a
# value-exact reference. Floating outputs must satisfy
# |got - ref| <= PRECISION_TOLERANCE[P] * max|ref|; integer outputs are only
# checked for dtype and shape.
PRECISION_TOLERANCE = {"f16": 5e-3, "bf16": 4e-2}

# PyTorch's messages for "this op does not take this dtype" (sweep pruning).
REJECTIONS = [
    "not implemented for", "could not infer output dtype", "only support floating point",
    "is not supported", "Integers to negative integer powers", "Boolean inputs not supported",
    "ZeroDivision",  # bool divisors (False)
]

TIMEOUT = 300  # seconds per tgc / executable call (sanitizer builds are slow)

# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

IDENT = oracle.IDENT
RE_INIT = re.compile(r"\]\s*=\s*(%s)\s*(?:\((.*)\))?\s*$" % IDENT)


class DiffCase:
    """One graph. inputs: {name: spec} for the generator (see gen_tensor);
    names absent use their dtype's default. tol: a FACTOR key. prune: drop
    statements PyTorch rejects (dtype sweeps). mode: run | build |
    build-embed | build-threads. weights: "file" (every param in the
    weights file) or "init" (params with an initialiser are left to it).
    check: "values" or "finite" (random initialisers: only shape, dtype and
    finiteness). precision: tgc's --precision (then compared with
    PRECISION_TOLERANCE). asan: part of the reduced sanitizer subset.
    flags: more tgc build/run flags (e.g. --layout nchw)."""

    def __init__(self, name, src, inputs=None, tol="default", defines=None, prune=False,
                 mode="run", weights="file", check="values", add_outputs=True, asan=False,
                 group="ops", precision=None, flags=None):
        assert tol in FACTOR, tol
        self.name, self.inputs, self.tol = name, dict(inputs or {}), tol
        self.defines, self.prune, self.mode = dict(defines or {}), prune, mode
        self.weights, self.check, self.asan, self.group = weights, check, asan, group
        self.precision = precision
        self.flags = list(flags or [])
        self.src = oracle.Case(name, src, self.defines, add_outputs=add_outputs).src


# --------------------------------------------------------------------------
# Input generation
# --------------------------------------------------------------------------

def _ints(dt, lo, hi, rng, shape):
    info = np.iinfo({"i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8,
                     "u8": np.uint8}[dt])
    lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    return rng.integers(lo, hi + 1, size=shape).astype(np.float64)


def _special(dt, n):
    """Values that exercise rounding to f16/bf16: ties (to even), values
    just either side of ties, subnormals, overflow, inf, nan, signed zero."""
    v = [1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -8, 1 + 3 * 2 ** -8,          # f16 / bf16 ties
         -(1 + 2 ** -11), -(1 + 3 * 2 ** -8), 2 + 2 ** -10, 1 + 2 ** -11 + 2 ** -20,
         1 + 2 ** -8 + 2 ** -16, 65504.0, 65519.0, 65520.0, 70000.0, -1e6, 3.4e38,
         6e-8, 3e-8, 2.9e-8, 1e-5, 1e-40, -1e-45, 0.0, -0.0, 0.1, 1 / 3, -2 / 3, 1e-3,
         float("inf"), float("-inf"), float("nan"), 123.456, -0.0001, 2 ** 24 + 1, 1e20]
    if dt == "f32":
        v = [float(np.float32(x)) for x in v]
    out = (v * (n // len(v) + 1))[:n]
    return np.array(out, dtype=np.float64)


def gen_tensor(spec, dt, shape, rng):
    """A torch tensor of dtype dt and shape `shape` drawn per spec:
    randn[:S] | small | pos | nz | half | unit | pm1 | perm | nan | special |
    cast+ | cast- | wide | ints:A:B | idx:N | idx:A:B | bool:P | const:V |
    vals:V1,V2,... (repeated to fill).
    Integer dtypes read float specs as small integer ranges."""
    td = oracle.TORCH_DTYPE[dt]
    n = int(np.prod(shape)) if shape else 1
    isf = td.is_floating_point
    kind, _, arg = spec.partition(":")
    if dt == "bool" and not kind.startswith("bool") and kind != "const":
        kind, arg = "bool", "0.5"
    if kind == "randn":
        a = rng.standard_normal(n) * (float(arg) if arg else 1.0) if isf else _ints(dt, -4, 4, rng, n)
    elif kind == "small":
        a = rng.standard_normal(n) if isf else _ints(dt, -4, 4, rng, n)
    elif kind == "pos":
        a = rng.uniform(0.2, 3.0, n) if isf else _ints(dt, 1, 5, rng, n)
    elif kind == "nz":
        if isf:
            a = rng.uniform(0.3, 3.0, n) * rng.choice([-1.0, 1.0], n)
        else:
            a = _ints(dt, 1, 4, rng, n) * (1 if dt == "u8" else rng.choice([-1.0, 1.0], n))
    elif kind == "half":
        a = rng.integers(-6, 7, n) * 0.5 if isf else _ints(dt, -3, 3, rng, n)
    elif kind == "unit":
        a = rng.uniform(-1.0, 1.0, n) if isf else _ints(dt, -1, 1, rng, n)
    elif kind == "pm1":
        a = rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n) if isf else \
            rng.choice([-1.0, 1.0, 2.0] if dt != "u8" else [1.0, 2.0], n)
    elif kind == "perm":
        a = rng.permutation(n).astype(np.float64)
        a = (a - n // 2) / 4 if isf else (a - (0 if dt == "u8" else n // 2))
    elif kind == "nan":
        a = rng.standard_normal(n)
        for i, v in enumerate([np.nan, np.inf, -np.inf, np.nan]):
            if i * 3 < n:
                a[rng.integers(0, n)] = v
    elif kind == "special":
        a = _special(dt, n)
    elif kind == "cast+":
        a = rng.uniform(0, 100, n) if isf else _ints(dt, 0, 100, rng, n)
    elif kind == "cast-":
        a = rng.uniform(-100, 0, n) if isf else _ints(dt, -100, 0, rng, n)
    elif kind == "wide":
        a = _ints(dt, -300, 300, rng, n) if not isf else rng.uniform(-300, 300, n)
    elif kind == "ints":
        lo, hi = arg.split(":")
        a = _ints(dt, int(lo), int(hi), rng, n) if not isf else \
            rng.integers(int(lo), int(hi) + 1, n).astype(np.float64)
    elif kind == "idx":
        parts = arg.split(":")
        lo, hi = (0, int(parts[0])) if len(parts) == 1 else (int(parts[0]), int(parts[1]))
        a = rng.integers(lo, hi, n).astype(np.float64)
    elif kind == "bool":
        a = (rng.random(n) < (float(arg) if arg else 0.5)).astype(np.float64)
    elif kind == "const":
        a = np.full(n, float(arg))
    elif kind == "vals":
        v = [float(x) for x in arg.split(",")]
        a = np.array((v * (n // len(v) + 1))[:n])
    else:
        raise ValueError("unknown input spec %r" % spec)
    if dt == "bool":
        return torch.tensor(a != 0).reshape(shape)
    if isf:
        src = torch.tensor(np.asarray(a, dtype=np.float64))
        if dt == "f32" or (kind == "special" and dt in ("f16", "bf16")):
            src = src.to(torch.float32)  # special f16/bf16 values: rounded from the f32 ones
        return src.to(td).reshape(shape)
    return torch.tensor(np.asarray(a, dtype=np.int64)).to(td).reshape(shape)


def default_spec(dt):
    return "bool:0.5" if dt == "bool" else "randn"


def init_value(init, args, dt, shape):
    """A param's value from its initialiser, or None when unpredictable."""
    td = oracle.TORCH_DTYPE[dt]
    if init == "zeros":
        return torch.zeros(shape, dtype=td)
    if init == "ones":
        return torch.ones(shape, dtype=td)
    if init == "full":
        v = float(args.split("=")[-1])
        return torch.full(shape, v, dtype=torch.float64).to(td)
    if init == "arange":
        n = int(np.prod(shape)) if shape else 1
        return torch.arange(n, dtype=torch.float64).to(td).reshape(shape)
    return None


# --------------------------------------------------------------------------
# Reference evaluation (hooks into the oracle's evaluator)
# --------------------------------------------------------------------------

LOWP = (torch.float16, torch.bfloat16)


def _tensors(obj, out):
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out)
    return out


def _upcast(obj):
    if isinstance(obj, torch.Tensor):
        return obj.to(torch.float32) if obj.dtype in LOWP else obj
    if isinstance(obj, tuple) and not isinstance(obj, torch.Size):
        return tuple(_upcast(o) for o in obj)
    if isinstance(obj, list):
        return [_upcast(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _upcast(v) for k, v in obj.items()}
    return obj


def _round_like(up, native, low):
    """up (computed in f32) rounded to native's dtypes, or to `low`."""
    if isinstance(up, torch.Tensor):
        if native is not None:
            return up.to(native.dtype)
        return up.to(low) if (low is not None and up.dtype == torch.float32) else up
    if isinstance(up, (tuple, list)) and not isinstance(up, torch.Size):
        nat = list(native) if native is not None else [None] * len(up)
        return tuple(_round_like(u, n, low) for u, n in zip(up, nat))
    return up


def _lowp(func):
    """func, computed in f32 and rounded once when it takes f16/bf16 tensors."""
    def call(*args, **kwargs):
        ins = _tensors((args, kwargs), [])
        lows = {t.dtype for t in ins if t.dtype in LOWP}
        if not lows:
            return func(*args, **kwargs)
        try:
            native, err = func(*args, **kwargs), None
        except Exception as e:  # no kernel at this dtype
            native, err = None, e
        if native is not None:
            outs = _tensors(native, [])
            if not outs:
                return native
            in_sids = {oracle.sid(t) for t in ins}
            if any(oracle.sid(o) in in_sids for o in outs):
                return native  # a view: nothing was computed
        try:
            up = func(*_upcast(args), **_upcast(kwargs))
        except Exception:
            if err is not None:
                raise err
            raise
        return _round_like(up, native, next(iter(lows)) if len(lows) == 1 else None)
    return call


_orig_tf = oracle.Ref.__torch_function__.__func__
_orig_rms = oracle.Ref.rms_norm


def _torch_function(cls, func, types, args=(), kwargs=None):
    return _orig_tf(cls, _lowp(func), types, args, kwargs)


def _rms_norm(self, weight, eps=1e-6):
    """rms_norm rounded once (the oracle's written-out form rounds per op)."""
    if self.dtype not in LOWP and weight.dtype not in LOWP:
        return _orig_rms(self, weight, eps)
    with torch._C.DisableTorchFunction():
        dt = torch.result_type(self, weight)
        x, w = self.to(torch.float32), weight.to(torch.float32)
        r = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w).to(dt)
    r = r.as_subclass(oracle.Ref)
    oracle.Ref.fresh.add(oracle.sid(r))
    return r


oracle.Ref.__torch_function__ = classmethod(_torch_function)
oracle.Ref.rms_norm = _rms_norm


def declarations(src, defines=None):
    """[(kind, name, dtype, dim_text, init, init_args)] in file order. With
    def blocks, in the order the evaluator creates them (a def's params once
    per call, under their full dotted names; dim_text is then the shape)."""
    out = []
    if oracle.split_defs(src)[1]:
        def on_decl(kind, name, dt, shape, st):
            mi = RE_INIT.search(st)
            out.append((kind, name, oracle.ALIASES.get(dt, dt), ", ".join(str(d) for d in shape),
                        mi.group(1) if mi else None, (mi.group(2) or "") if mi else ""))
        try:
            oracle.evaluate(src, defines, on_decl=on_decl)
        except oracle.RefError:
            pass  # the evaluation proper reports it
        return out
    for _, st in oracle.statements(src):
        m = oracle.RE_DECL.match(st)
        if m:
            kind, name, dt, dims = m.groups()
            mi = RE_INIT.search(st)
            out.append((kind, name, oracle.ALIASES.get(dt, dt), dims,
                        mi.group(1) if mi else None, (mi.group(2) or "") if mi else ""))
    return out


def output_names(src):
    return [re.match(r"output\s+(%s)" % IDENT, st).group(1)
            for _, st in oracle.statements(src) if st.startswith("output")]


def evaluate(src, defines, feed):
    """Evaluates src with the oracle, feeding `feed` (a list of tensors, one per
    declaration in order). Returns {output name: tensor} (plain tensors)."""
    queue = list(feed)
    captured = {}
    orig_make, orig_env = oracle.make_tensor, oracle.base_env

    def make(dt, shape):
        t = queue.pop(0)
        assert oracle.TG_NAME[t.dtype] == dt and list(t.shape) == list(shape), \
            "feed mismatch: %s%s for %s%s" % (t.dtype, list(t.shape), dt, shape)
        return t.clone().as_subclass(oracle.Ref)

    def env():
        e = orig_env()
        captured.setdefault("env", e)  # the graph's; a def call's scope comes later
        return e

    oracle.make_tensor, oracle.base_env = make, env
    try:
        oracle.evaluate(src, defines)
    finally:
        oracle.make_tensor, oracle.base_env = orig_make, orig_env
    e = captured["env"]
    out = {}
    for n in output_names(src):
        t = e[n]
        with torch._C.DisableTorchFunction():
            out[n] = torch.Tensor.as_subclass(t, torch.Tensor).clone()
    return out


def drop_statement(src, lineno):
    """src without the statement starting at lineno, nor anything that uses
    the names it binds. Returns (new_src, dropped statement texts)."""
    stmts = oracle.statements(src)
    lines = src.splitlines()
    keep = set(range(1, len(lines) + 1))
    dropped, dead = [], set()
    ends = {}
    for i, (start, _) in enumerate(stmts):
        ends[start] = stmts[i + 1][0] - 1 if i + 1 < len(stmts) else len(lines)
    for start, st in stmts:
        uses = set(re.findall(IDENT, st))
        m = re.match(r"^(?:output\s+)?(%s(?:\s*,\s*%s)*)\s*(?:=(?!=)|$)" % (IDENT, IDENT), st)
        binds = {n.strip() for n in m.group(1).split(",")} if m else set()
        if start == lineno or (uses & dead):
            dead |= binds
            dropped.append(st)
            for ln in range(start, ends[start] + 1):
                keep.discard(ln)
    return "\n".join(l for i, l in enumerate(lines, 1) if i in keep) + "\n", dropped


def reference(case, rng, feed_out=None):
    """(src, files, outputs, dropped): generates inputs, evaluates the case
    (pruning rejected statements when case.prune). files: [(kind, name,
    tensor or None)] per declaration (None: a param left to its
    initialiser); feed_out, when a list, receives every declaration's
    tensor in order (what the evaluator was fed)."""
    src, dropped = case.src, []
    decls = declarations(src, case.defines)
    feed, files = [], []
    for kind, name, dt, dims, init, iargs in decls:
        shape = []
        if dims.strip():
            env = {k: oracle.Dim(v) for k, v in _dims(src, case.defines).items()}
            env["__builtins__"] = {}
            shape = [int(d) for d in eval("[" + dims + "]", env)]
        t = None
        if kind == "param" and init and case.weights == "init":
            t = init_value(init, iargs, dt, shape)
            if t is None:  # randn/uniform: tgc's values; only checked for finiteness
                t = torch.zeros(shape, dtype=oracle.TORCH_DTYPE[dt])
            files.append((kind, name, None))
        if t is None:
            t = gen_tensor(case.inputs.get(name, default_spec(dt)), dt, shape, rng)
            files.append((kind, name, t))
        feed.append(t)
    while True:
        try:
            outs = evaluate(src, case.defines, feed)
            break
        except oracle.RefError as e:
            msg = str(e)
            m = re.match(r"line (\d+):", msg)
            if not (case.prune and m and any(r in msg for r in REJECTIONS)):
                raise
            src, d = drop_statement(src, int(m.group(1)))
            dropped += d
    if feed_out is not None:
        feed_out[:] = feed
    return src, files, outs, dropped


def _dims(src, defines):
    for _, st in oracle.statements(src):
        m = oracle.RE_GRAPH.match(st)
        if m:
            dims = {}
            if m.group(2):
                for part in m.group(2).split(","):
                    k, v = part.split("=")
                    dims[k.strip()] = int(defines.get(k.strip(), eval(v, {"__builtins__": {}})))
            return dims
    return {}


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

def tg_dtype(t):
    return oracle.TG_NAME[t.dtype]


def compare(name, ref, got, tol, check, precision=None):
    """None when got (np.ndarray) matches ref (torch.Tensor), else a message."""
    dt = tg_dtype(ref)
    exp = tensorio.to_numpy(ref)
    if got.dtype != exp.dtype:
        return "%s: dtype %s, expected %s (%s)" % (name, got.dtype, exp.dtype, dt)
    if got.shape != exp.shape:
        return "%s: shape %s, expected %s" % (name, list(got.shape), list(exp.shape))
    if check == "finite":
        if exp.dtype.kind == "f" and not np.isfinite(got).all():
            bad = np.argwhere(~np.isfinite(got))[0]
            return "%s: not finite at %s: %r" % (name, list(bad), got[tuple(bad)])
        return None
    if got.size == 0:
        return None
    if precision:
        if exp.dtype.kind != "f":
            return None
        bad = np.isnan(got) != np.isnan(exp)
        e64, g64 = exp.astype(np.float64), got.astype(np.float64)
        scale = np.nanmax(np.abs(e64)) if np.isfinite(e64).any() else 1.0
        err = np.where(np.isfinite(e64), np.abs(g64 - e64), 0.0)
        lim = PRECISION_TOLERANCE[precision] * max(scale, 1e-30)
        if bad.any() or (err > lim).any():
            i = np.unravel_index(int(np.argmax(err)), err.shape)
            return ("%s: --precision %s: worst at %s: got %r, expected %r "
                    "(|diff| %.3g, allowed %.3g)") % (
                name, precision, [int(x) for x in i], got[i].item(), exp[i].item(), err[i], lim)
        return None
    if exp.dtype.kind != "f":
        diff = got != exp
        if diff.any():
            i = tuple(np.argwhere(diff)[0])
            return "%s: %d of %d elements differ; first at %s: got %r, expected %r" % (
                name, int(diff.sum()), got.size, list(i), got[i].item(), exp[i].item())
        return None
    g, e = got.astype(np.float64), exp.astype(np.float64)
    gn, en = np.isnan(g), np.isnan(e)
    nan_bad = gn != en
    fin = np.isfinite(e) & np.isfinite(g)
    inf_bad = ~fin & ~gn & ~en & (g != e)
    rtol, atol = TOLERANCE[dt]
    f = FACTOR[tol]
    if dt in ("f16", "bf16"):
        f = min(f, LOW_PRECISION_FACTOR_CAP.get(tol, f))
    allowed = (rtol * np.abs(e) + atol) * f
    err = np.where(fin, np.abs(g - e), 0.0)
    ratio = np.where(fin, err / np.where(allowed > 0, allowed, 1.0) if f else (err > 0) * 1.0, 0.0)
    bad = (fin & (err > allowed)) | nan_bad | inf_bad
    # Tolerance audits: TGC_DIFF_WORST=FILE appends "output dtype category
    # worst-error/allowed" per compared output (runs that pass included).
    if os.environ.get("TGC_DIFF_WORST") and f:
        with open(os.environ["TGC_DIFF_WORST"], "a") as wf:
            wf.write("%s %s %s %.4g\n" % (name, dt, tol, float(ratio.max()) if ratio.size else 0))
    if not bad.any():
        return None
    nb = int(bad.sum())
    if (nan_bad | inf_bad).any():
        i = tuple(np.argwhere(nan_bad | inf_bad)[0])
    else:
        i = np.unravel_index(int(np.argmax(np.where(bad, ratio, -1))), g.shape)
    return ("%s: %d of %d elements differ; worst at %s: got %r, expected %r "
            "(|diff| %.3g, allowed %.3g, %s tol %s)") % (
        name, nb, got.size, [int(x) for x in i], got[i].item(), exp[i].item(),
        abs(g[i] - e[i]) if np.isfinite(g[i] - e[i]) else float("nan"), allowed[i], dt, tol)


# --------------------------------------------------------------------------
# Running a case
# --------------------------------------------------------------------------

def _run(cmd, cwd=None):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                           cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, "", "timeout after %d s" % TIMEOUT
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def _oneline(text, cap=600):
    """stderr folded onto one line (lines joined with ' | '), capped."""
    t = " | ".join(l.strip() for l in text.strip().splitlines() if l.strip())
    return t if len(t) <= cap else t[:cap] + "..."


def _rc(rc):
    if rc is None:
        return "timed out"
    if rc < 0:
        return "died of signal %d" % -rc
    return "exited %d" % rc


class Materialized:
    """A case written to its folder (see materialize)."""


def materialize(case, workdir):
    """Computes the reference (may raise oracle.RefError) and, unless
    workdir is None or PyTorch rejects every statement (then `outs` is
    empty), writes the case into its own folder of workdir: graph.tg (the
    pruned source), in_NAME.npy per input, weights.safetensors (when some
    param is in the file). Returns a Materialized with: name, src, files
    and feed (see reference), outs ({output: reference tensor}), dropped,
    and, when written: dir, tg, inputs ({name: .npy path}), in_args (the
    --input flags), wpath (or None), dflags (-D and --precision flags, for
    `tgc build`/`run`), build_weights (what `tgc build` adds: --weights W
    --embed-weights in build-embed mode, else nothing) and run_weights (the
    executable's --weights flag, or []). Also used by tests/cuda and
    tests/gpu, which build the same cases with --target cuda."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    m = Materialized()
    m.feed = []
    m.src, m.files, m.outs, m.dropped = reference(case, rng, m.feed)
    m.name, m.dir = case.name, None
    if not m.outs or workdir is None:
        return m
    m.dir = d = os.path.join(workdir, re.sub(r"\W", "_", case.name))
    os.makedirs(d, exist_ok=True)
    m.tg = os.path.join(d, "graph.tg")
    with open(m.tg, "w") as f:
        f.write(m.src)
    m.inputs, m.in_args, weights = {}, [], []
    for kind, name, t in m.files:
        if t is None:
            continue
        if kind == "input":
            p = os.path.join(d, "in_%s.npy" % name)
            tensorio.write_npy(p, t)
            m.inputs[name] = p
            m.in_args += ["--input", "%s=%s" % (name, p)]
        else:
            weights.append((name, t))
    m.wpath = None
    if weights:
        m.wpath = os.path.join(d, "weights.safetensors")
        tensorio.write_safetensors(m.wpath, weights)
    m.dflags = []
    for k, v in case.defines.items():
        m.dflags += ["-D", "%s=%s" % (k, v)]
    if case.precision:
        m.dflags += ["--precision", case.precision]
    m.dflags += case.flags
    embed = bool(m.wpath and case.mode == "build-embed")
    m.build_weights = ["--weights", m.wpath, "--embed-weights"] if embed else []
    m.run_weights = ["--weights", m.wpath] if (m.wpath and not embed) else []
    return m


def run_case(case, tgc, workdir):
    """Returns (status, messages, dropped): status 'pass', 'fail' or 'skip'."""
    try:
        m = materialize(case, workdir if tgc is not None else None)
    except oracle.RefError as e:
        return "fail", ["suite error: PyTorch rejects the case: %s" % e], []
    if not m.outs:
        return "skip", ["PyTorch rejects every statement"], m.dropped
    if tgc is None:
        return "pass", [], m.dropped
    d, tg, outs, dropped, in_args, dflags = m.dir, m.tg, m.outs, m.dropped, m.in_args, m.dflags
    runs = []  # (label, output dir)
    if case.mode == "run":
        od = os.path.join(d, "out")
        os.makedirs(od, exist_ok=True)
        cmd = [tgc, "run", tg] + in_args + (["--weights", m.wpath] if m.wpath else []) \
            + ["--output-dir", od] + dflags
        rc, _, err = _run(cmd)
        if rc != 0:
            return "fail", ["tgc run %s: %s" % (_rc(rc), _oneline(err))], dropped
        runs.append(("tgc run", od))
    else:
        exe = os.path.join(d, "graph.exe")
        cmd = [tgc, "build", tg, "-o", exe] + dflags + m.build_weights
        rc, _, err = _run(cmd)
        if rc != 0:
            return "fail", ["tgc build %s: %s" % (_rc(rc), _oneline(err))], dropped
        variants = [("exe", [])]
        if case.mode == "build-threads":
            variants = [("exe --threads 1", ["--threads", "1"]),
                        ("exe --threads 2", ["--threads", "2"])]
        for label, extra in variants:
            od = os.path.join(d, "out_%d" % len(runs))
            os.makedirs(od, exist_ok=True)
            rc, out, err = _run([exe] + in_args + m.run_weights + ["--output-dir", od] + extra)
            if rc != 0:
                return "fail", ["%s %s: %s" % (label, _rc(rc), _oneline(err))], dropped
            if out.strip() or err.strip():
                msg = "%s printed on success: %s" % (label, _oneline(out + err, 300))
                return "fail", [msg], dropped
            runs.append((label, od))
    msgs = []
    for label, od in runs:
        for n, ref in outs.items():
            p = os.path.join(od, n + ".npy")
            if not os.path.exists(p):
                msgs.append("%s: output %s.npy was not written" % (label, n))
                continue
            try:
                got = np.load(p, allow_pickle=False)
            except Exception as e:
                msgs.append("%s: %s.npy unreadable: %s" % (label, n, e))
                continue
            m = compare(n, ref, got, case.tol, case.check, case.precision)
            if m:
                msgs.append(("%s: " % label if len(runs) > 1 or label != "tgc run" else "") + m)
    return ("fail" if msgs else "pass"), msgs, dropped


def self_check_case(case):
    """Tolerance self-check (--self-check): the case evaluated with every
    floating dtype widened to f64 (a more precise implementation, e.g. one
    that keeps f32 between fused f16 ops) must pass against the reference.
    Cases with explicit casts or dtype arguments are left out (widening
    changes their meaning). Returns (status, messages)."""
    if case.tol == "exact" or case.check != "values" or re.search(r"\.to\(|dtype|tensor\(", case.src):
        return "skip", []
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    src, files, outs, _ = reference(case, rng)
    wide = re.sub(r"(:\s*)(f32|f16|bf16)(\[)", r"\1f64\3", src)
    feed = [t.to(torch.float64) if t.dtype.is_floating_point else t
            for t in (f[2] for f in files)]
    outs_w = evaluate(wide, case.defines, feed)
    msgs = []
    for n, ref in outs.items():
        got = tensorio.to_numpy(outs_w[n].to(ref.dtype))
        m = compare(n, ref, got, case.tol, case.check)
        if m:
            msgs.append(m)
    return ("fail" if msgs else "pass"), msgs


def _worker_init():
    torch.set_num_threads(1)
    torch.manual_seed(0)


def _work(job):
    case, tgc, workdir = job
    t0 = time.time()
    try:
        if tgc == "self-check":
            status, msgs = self_check_case(case)
            dropped = []
        else:
            status, msgs, dropped = run_case(case, tgc, workdir)
    except Exception:
        tb = traceback.format_exc()
        status, msgs, dropped = "fail", ["harness error: " + tb.strip().splitlines()[-1],
                                         traceback.format_exc()], []
    return case.name, status, msgs, dropped, time.time() - t0


# --------------------------------------------------------------------------

def all_cases():
    import diff_ops
    import diff_models
    import diff_random
    import diff_modules
    import diff_conv
    import diff_loss
    import diff_reduce
    import diff_attention
    import diff_layout
    cases = diff_ops.cases(DiffCase) + diff_models.cases(DiffCase, ROOT) \
        + diff_random.cases(DiffCase) + diff_modules.cases(DiffCase) + diff_conv.cases(DiffCase) \
        + diff_loss.cases(DiffCase) + diff_reduce.cases(DiffCase)
    cases += diff_attention.cases(DiffCase) + diff_layout.cases(DiffCase)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, "duplicate case names: %s" % sorted(dup)
    return cases


def select_cases(subset="full", pattern=None):
    """all_cases() narrowed as the command line does: `subset` "asan" keeps
    the cases marked asan; `pattern` keeps names containing it."""
    cases = all_cases()
    if subset == "asan":
        cases = [c for c in cases if c.asan]
    if pattern:
        cases = [c for c in cases if pattern in c.name]
    return cases


def has_run(tgc):
    rc, out, err = _run([tgc, "run", "--help"])
    return rc == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", help="path to the tgc binary")
    ap.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    ap.add_argument("--subset", choices=["full", "asan"],
                    default=os.environ.get("TGC_DIFF_SUBSET", "full"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", help="keep each case's files (graph, inputs, outputs) here")
    ap.add_argument("--reference-only", action="store_true",
                    help="only compute the references in PyTorch (no tgc)")
    ap.add_argument("--list", action="store_true", help="print every case's source and exit")
    ap.add_argument("--self-check", action="store_true",
                    help="check the tolerances: an f64 evaluation of each case must pass")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print the graph of failing cases, pruned statements and timings")
    args = ap.parse_args()
    if not args.tgc and not (args.reference_only or args.self_check or args.list):
        ap.error("--tgc is required (or --reference-only)")
    t_start = time.time()
    cases = select_cases(args.subset, args.pattern)
    if args.list:
        for c in cases:
            print("### %s [%s, tol %s, %s]%s\n%s" % (c.name, c.group, c.tol, c.mode,
                  "".join(" -D %s=%s" % kv for kv in c.defines.items()), c.src))
        return 0
    counts = {}
    for c in cases:
        counts[c.group] = counts.get(c.group, 0) + 1
    print("cases: %d (%s)%s" % (len(cases), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
          " [asan subset]" if args.subset == "asan" else ""))
    sys.stdout.flush()
    tgc = None if args.reference_only else \
        "self-check" if args.self_check else os.path.abspath(args.tgc)
    if tgc and not args.self_check and not has_run(tgc):
        print("FAIL %s has no working `run` subcommand (`tgc run --help` fails): "
              "the CPU backend is missing" % args.tgc)
        print("diff: 0 passed, %d failed" % len(cases))
        return 1
    by_name = {c.name: c for c in cases}
    passed = failed = skipped = 0
    ndropped = 0
    times = []
    workdir = args.keep or tempfile.mkdtemp(prefix="tgc-diff-")
    os.makedirs(workdir, exist_ok=True)
    try:
        jobs = [(c, tgc, workdir) for c in cases]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(max(1, args.jobs), initializer=_worker_init) as pool:
            for name, status, msgs, dropped, secs in pool.imap_unordered(_work, jobs):
                times.append((secs, name))
                ndropped += len(dropped)
                if args.verbose and dropped:
                    print("  %s: pruned (PyTorch rejects): %s" % (name, "; ".join(dropped)))
                if status == "pass":
                    passed += 1
                elif status == "skip":
                    skipped += 1
                    if args.verbose:
                        print("SKIP %s: %s" % (name, msgs[0]))
                else:
                    failed += 1
                    more = ""
                    if len(msgs) > 1 and not args.verbose:
                        more = " (and %d more)" % (len(msgs) - 1)
                    print("FAIL %s: %s%s" % (name, msgs[0].splitlines()[0], more))
                    if args.verbose:
                        for m in msgs[1:]:
                            print("  " + m.replace("\n", "\n  "))
                        print("  | " + by_name[name].src.rstrip("\n").replace("\n", "\n  | "))
                sys.stdout.flush()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.verbose:
        for secs, name in sorted(times, reverse=True)[:10]:
            print("  slowest: %6.2f s %s" % (secs, name))
    if skipped or ndropped:
        print("(%d cases skipped, %d statements pruned: PyTorch rejects those op/dtype pairs; "
              "-v lists them)" % (skipped, ndropped))
    print("time: %.1f s" % (time.time() - t_start))
    print("diff: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
