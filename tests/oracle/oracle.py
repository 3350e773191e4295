#!/usr/bin/python3
"""Oracle suite: `tgc show --json` against what PyTorch 1.13 reports.

How the reference is computed
-----------------------------
Every case is one `.tg` source text. The same text is also the reference:
each `let`/`output` expression in it is evaluated as Python by PyTorch on real
tensors, so the graph and its reference cannot drift apart. The subset of the
language the cases use is written so that it means the same in both (always
parenthesise `&`/`|`, whose Python precedence differs; lists, not tuples).
  - Symbolic dimensions become Python ints (with the `-D NAME=VALUE`
    overrides applied); `/` in dimension expressions divides exactly.
  - Inputs and params are created with the declared dtype and shape
    (torch.randn for floating dtypes, torch.ones for integers and bool:
    valid indices, no integer division by zero), so
    they are contiguous and each owns its storage.
  - `true false None inf nan`, the dtype names (f32, ...) and their aliases
    (float = f32, int = i32, ...) are bound to the Python/torch values. Functions
    are torch's: a call `f(t, ...)` is `t.f(...)` when torch.Tensor has a method
    `f`, otherwise torch.f / torch.nn.functional.f (`where`, `cat`, `linear`,
    `layer_norm`, `dropout` at inference, `rms_norm` written out, ...).
  - The spec's memory model says every non-view operation returns a NEW
    CONTIGUOUS tensor, where PyTorch sometimes keeps a strided layout. The
    tensors are therefore a torch.Tensor subclass whose __torch_function__
    runs the op and applies `.contiguous()` to every result that does not
    share storage with an argument (i.e. every result of a non-view op).
    View ops (view, reshape, transpose, indexing, ...) are left exactly as
    PyTorch computes them, including reshape/flatten copying when PyTorch's
    rule gives no view and contiguous()/to(own dtype) returning the value.
  - For every named value: dtype, shape, stride() (elements),
    storage_offset(), is_contiguous(); `view` and `storage` from storage
    identity: a value whose storage belongs to an earlier named value is a view
    of that value's owner; a value with a storage first seen in its own
    statement owns it (view false, storage = its name, bytes = numel *
    element size), unless it is a view of an unnamed intermediate in that
    statement (then view true and storage must be a `%` name, consistent
    across values). A contiguous whole-storage result obtained by viewing a
    fresh intermediate (e.g. `(x + 1).view(6)`) may be reported either way.
  - Modules: a `def` becomes a callable that runs its body in a scope of its
    own (the dims, its arguments, the defs); its params and named values are
    recorded under their paths (`h.0.ln_1.weight`, `h.0.att`, `Block#1.s` for
    a call without prefix=), `repeat(DEF, N, x, ...)` chains N calls under
    `prefix.i`, and a dotted param name `a.b` is an attribute of a namespace
    bound to `a`. Scopes are kept alive so storage ids stay unique.
  - A statement PyTorch rejects makes the case an error case: tgc must exit 1
    (kernel-availability errors, "not implemented for 'Half'", are skipped).

Cases: hand-written graphs (every view op, tuple binding, indexing, -D
overrides, the examples/*.tg files), randomly generated chains of 2-8 view
operations (fixed seed), and dtype promotion over every pair of dtypes,
0-d tensors and literals.

Usage: oracle.py --tgc build/tgc [-k SUBSTRING] [--keep DIR] [--reference-only]
Last line printed: `oracle: N passed, M failed`; exit status 1 if M > 0.
"""

import argparse
import json
import os
import random
import math
import re
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"]
TORCH_DTYPE = {
    "f64": torch.float64, "f32": torch.float32, "f16": torch.float16,
    "bf16": torch.bfloat16, "i64": torch.int64, "i32": torch.int32,
    "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool,
}
ALIASES = {
    "float32": "f32", "float": "f32", "float16": "f16", "half": "f16",
    "bfloat16": "bf16", "float64": "f64", "double": "f64", "int64": "i64",
    "long": "i64", "int32": "i32", "int": "i32", "int16": "i16", "int8": "i8",
    "uint8": "u8",
}
TG_NAME = {v: k for k, v in TORCH_DTYPE.items()}


# --------------------------------------------------------------------------
# Reference evaluation
# --------------------------------------------------------------------------

def sid(t):
    """Identity of a tensor's storage (the StorageImpl)."""
    return t.storage()._cdata


class Ref(torch.Tensor):
    """Tensor whose non-view results are made contiguous (the spec's model)."""

    # Storages created while evaluating the current statement, and those of
    # them that some op then viewed (see `classify`).
    fresh = set()
    viewed = set()

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunction():
            out = func(*args, **kwargs)
            ins = set()

            def walk(a):
                if isinstance(a, torch.Tensor):
                    ins.add(sid(a))
                elif isinstance(a, (list, tuple)):
                    for b in a:
                        walk(b)
            walk(args)
            walk(list(kwargs.values()))

            def fix(t):
                if isinstance(t, torch.Tensor):
                    s = sid(t)
                    if s not in ins:
                        t = t.contiguous()
                        Ref.fresh.add(sid(t))
                    elif s in Ref.fresh:
                        Ref.viewed.add(s)
                    return t.as_subclass(Ref)
                if isinstance(t, tuple) and not isinstance(t, torch.Size):
                    return tuple(fix(u) for u in t)
                if isinstance(t, list):
                    return [fix(u) for u in t]
                return t
            return fix(out)

    # Functions of the language that torch.Tensor lacks as methods.
    def dropout(self, p=0.5, **kw):
        return F.dropout(self, p, training=False)

    def linear(self, weight, bias=None):
        return F.linear(self, weight, bias)

    def layer_norm(self, normalized_shape, weight=None, bias=None, eps=1e-5):
        return F.layer_norm(self, normalized_shape, weight, bias, eps)

    def rms_norm(self, weight, eps=1e-6):
        return self * torch.rsqrt(self.pow(2).mean(-1, keepdim=True) + eps) * weight

    def gelu(self, approximate="none"):
        return F.gelu(self, approximate=approximate)

    def silu(self):
        return F.silu(self)

    def embedding(self, table):
        return F.embedding(self, table)

    # The spec's reductions take a list of dims (or none) where PyTorch 1.13's
    # prod takes one dim and its logsumexp needs dims: reduce dim by dim.
    def prod(self, dim=None, keepdim=False, dtype=None):
        if dim is None:
            return torch.Tensor.prod(self, dtype=dtype)
        if not isinstance(dim, (list, tuple)):
            return torch.Tensor.prod(self, dim, keepdim=keepdim, dtype=dtype)
        dims = sorted({d % self.dim() for d in dim}, reverse=True) or list(range(self.dim()))[::-1]
        out = self
        for d in dims:
            out = torch.Tensor.prod(out, d, keepdim=True, dtype=dtype)
        if not keepdim:
            for d in dims:
                out = out.squeeze(d)
        return out

    # all/any over a list of dims: PyTorch 1.13 takes one dim; reduce dim by dim.
    def all(self, dim=None, keepdim=False):
        return _by_dims(torch.Tensor.all, self, dim, keepdim)

    def any(self, dim=None, keepdim=False):
        return _by_dims(torch.Tensor.any, self, dim, keepdim)

    def logsumexp(self, dim=None, keepdim=False):
        if dim is None:
            dim = list(range(self.dim()))
        return torch.logsumexp(self, dim, keepdim=keepdim)


def _by_dims(fn, t, dim, keepdim):
    """fn (a one-dim reduction) over a list of dims, one dim at a time."""
    if dim is None:
        return fn(t)
    if not isinstance(dim, (list, tuple)):
        return fn(t, dim, keepdim=keepdim)
    dims = sorted({d % t.dim() for d in dim}, reverse=True) or list(range(t.dim()))[::-1]
    out = t
    for d in dims:
        out = fn(out, d, keepdim=True)
    if not keepdim:
        for d in dims:
            out = out.squeeze(d)
    return out


class Dim(int):
    """A dimension value: arithmetic stays integral, `/` must divide exactly."""

    def _w(self, v):
        return Dim(v) if isinstance(v, int) else v

    def __add__(self, o): return self._w(int(self) + o)
    def __radd__(self, o): return self._w(o + int(self))
    def __sub__(self, o): return self._w(int(self) - o)
    def __rsub__(self, o): return self._w(o - int(self))
    def __mul__(self, o): return self._w(int(self) * o)
    def __rmul__(self, o): return self._w(o * int(self))
    def __neg__(self): return Dim(-int(self))

    def __truediv__(self, o):
        if isinstance(o, int):
            if o == 0 or int(self) % o:
                raise ValueError("dimension division %d / %d is not exact" % (self, o))
            return Dim(int(self) // o)
        return int(self) / o

    def __rtruediv__(self, o):
        return Dim(o) / int(self)


def make_tensor(dt, shape):
    td = TORCH_DTYPE[dt]
    if td.is_floating_point:
        t = torch.randn(shape, dtype=torch.float32).to(td)
    else:
        t = torch.ones(shape, dtype=td)  # ones: no integer division by zero; valid indices
    return t.as_subclass(Ref)


def _creation(fn):
    def f(*a, **k):
        if "dtype" in k and isinstance(k["dtype"], str):
            k["dtype"] = TORCH_DTYPE[k["dtype"]]
        t = fn(*a, **k).as_subclass(Ref)
        Ref.fresh.add(sid(t))
        return t
    return f


# torch.nn.functional's signature where torch.* has another one under the
# same name (torch.batch_norm takes training, momentum, eps, cudnn_enabled).
F_FIRST = {
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
    "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "batch_norm", "group_norm", "instance_norm",
    "pad", "interpolate", "pixel_shuffle", "pixel_unshuffle", "hardswish", "hardsigmoid",
    "leaky_relu", "elu", "softplus", "mish", "hardtanh", "relu6",
    "binary_cross_entropy_with_logits",
}


class Env(dict):
    """Names visible to expressions; unknown names resolve to torch functions."""

    def __missing__(self, name):
        if name in F_FIRST:
            return getattr(F, name)
        if hasattr(Ref, name) and callable(getattr(Ref, name)):
            def method(t, *a, **k):
                return getattr(t, name)(*a, **k)
            return method
        if hasattr(torch, name):
            return getattr(torch, name)
        if hasattr(F, name):
            return getattr(F, name)
        raise NameError(name)


def base_env():
    env = Env()
    env["__builtins__"] = {}
    env.update({"true": True, "false": False, "None": None,
                "inf": float("inf"), "nan": float("nan")})
    for k, v in TORCH_DTYPE.items():
        env[k] = v
    for k, v in ALIASES.items():
        env[k] = TORCH_DTYPE[v]
    env.update({
        "where": torch.where, "cat": torch.cat, "stack": torch.stack,
        "einsum": torch.einsum,
        "zeros": _creation(torch.zeros), "ones": _creation(torch.ones),
        "full": _creation(torch.full), "arange": _creation(torch.arange),
        "eye": _creation(torch.eye), "tensor": _creation(torch.tensor),
        "zeros_like": torch.zeros_like, "ones_like": torch.ones_like,
        "full_like": torch.full_like,
        "tril": torch.tril, "triu": torch.triu,
        "scaled_dot_product_attention": _sdpa,
        "slice_scatter": _slice_scatter,
    })
    # Compile-time numbers: `math`, float("-inf"), int(3.7) (a call to the
    # dtype alias `float`/`int` is rewritten to these by CALL_CAST below), and
    # functions whose arguments are all numbers (sqrt(32.0) is a number).
    env["math"] = math
    env["_py_float"], env["_py_int"] = float, int
    for name, pyfn in NUMBER_FOLDS.items():
        env[name] = _fold_numbers(pyfn, Env.__missing__(env, name))
    return env


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """PyTorch 2's F.scaled_dot_product_attention, which 1.13 lacks: its
    math path, softmax(q @ k^T * scale + mask) @ v."""
    assert dropout_p == 0.0
    s = query @ key.transpose(-2, -1)
    s = s * (1 / math.sqrt(query.shape[-1]) if scale is None else scale)
    if is_causal:
        attn_mask = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        s = s.masked_fill(~attn_mask, float("-inf"))
    elif attn_mask is not None:
        s = s + attn_mask
    return torch.softmax(s, -1) @ value


def _slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """torch.slice_scatter through aten's positional form: 1.13's Python
    binding misreads start and end ("cannot be represented as a SymInt").
    A 0-d tensor start (the .tg extension: a run-time position) is its
    value, the slice start .. start + src.size(dim). Into a `state` it
    writes in place, as tgc does."""
    if isinstance(start, torch.Tensor):
        start = int(start)
        end = start + src.shape[dim]
    if getattr(input, "tg_state", False):
        # Into a state: written in place, the result a view of the state.
        with torch.no_grad():
            idx = [slice(None)] * input.dim()
            idx[dim] = slice(start, end, step)
            torch.Tensor.__setitem__(input, tuple(idx), src)
        return input.view(input.shape)
    return torch.ops.aten.slice_scatter(input, src, dim, start, end, step)


def _fold_numbers(pyfn, tensorfn):
    def f(*a, **k):
        if a and not k and all(isinstance(x, (int, float)) for x in a) and \
                (pyfn not in (min, max) or len(a) > 1):
            return pyfn(*a)
        return tensorfn(*a, **k)
    return f


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def _torchish(fn, special):
    """sqrt(-1.0) is nan and log(0.0) -inf, as torch computes them."""
    def f(x):
        try:
            return fn(x)
        except (ValueError, OverflowError):
            return special(x)
    return f


NUMBER_FOLDS = {
    "sqrt": _torchish(math.sqrt, lambda x: float("nan")),
    "exp": _torchish(math.exp, lambda x: float("inf")),
    "log": _torchish(math.log, lambda x: float("-inf") if x == 0 else float("nan")),
    "log1p": _torchish(math.log1p, lambda x: float("-inf") if x == -1 else float("nan")),
    "expm1": _torchish(math.expm1, lambda x: float("inf")),
    "sin": math.sin, "cos": math.cos, "tanh": math.tanh, "erf": math.erf,
    "sigmoid": _sigmoid,
    "rsqrt": _torchish(lambda x: 1.0 / math.sqrt(x),
                       lambda x: float("inf") if x == 0 else float("nan")),
    "abs": abs, "min": min, "max": max,
}
CALL_CAST = re.compile(r"(?<![\w.])(float|int)\(")


def strip_comment(line):
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
    """(line_number, text) per statement; newlines inside ( ) [ ] are ignored."""
    stmts, buf, depth, start = [], "", 0, 0
    for i, raw in enumerate(src.splitlines(), 1):
        line = strip_comment(raw)
        if not buf:
            start = i
        buf += " " + line
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        if depth <= 0:
            if buf.strip():
                stmts.append((start, buf.strip()))
            buf, depth = "", 0
    if buf.strip():
        stmts.append((start, buf.strip()))
    return stmts


class RefError(Exception):
    def __init__(self, msg, skip=False):
        super().__init__(msg)
        self.skip = skip


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
RE_GRAPH = re.compile(r"^graph\s+(%s)\s*(?:\((.*)\))?$" % IDENT)
RE_DECL = re.compile(r"^(input|param|state)\s+(%s(?:\.%s)*)\s*:\s*(%s)\s*\[(.*?)\]\s*(?:=.*)?$"
                     % (IDENT, IDENT, IDENT))
RE_DEF = re.compile(r"^def\s+(%s)\s*\((.*)\)\s*:\s*$" % IDENT)
RE_RETURN = re.compile(r"^return\s+(.*)$")


def split_defs(src):
    """Takes the `def` blocks out of src (their lines become blank, so line
    numbers stay): (src, {name: (arg names, body statements)})."""
    lines, defs, i = src.splitlines(), {}, 0
    while i < len(lines):
        m = RE_DEF.match(strip_comment(lines[i]).strip())
        if not m or lines[i][:1].isspace():
            i += 1
            continue
        start, i = i, i + 1
        while i < len(lines) and (not lines[i].strip() or lines[i][:1].isspace()
                                  or not strip_comment(lines[i]).strip()):
            i += 1
        body = "\n" * (start + 1) + "\n".join(lines[start + 1:i])
        args = [a.strip() for a in m.group(2).split(",") if a.strip()]
        defs[m.group(1)] = (args, statements(body))
        for k in range(start, i):
            lines[k] = ""
    return "\n".join(lines), defs


class Namespace:
    """The `ln_1` of a dotted param name `ln_1.weight`."""


def env_set(env, name, value):
    parts = name.split(".")
    if len(parts) == 1:
        env[name] = value
        return
    obj = dict.get(env, parts[0])
    if not isinstance(obj, Namespace):
        obj = env[parts[0]] = Namespace()
    for part in parts[1:-1]:
        nxt = getattr(obj, part, None)
        if not isinstance(nxt, Namespace):
            nxt = Namespace()
            setattr(obj, part, nxt)
        obj = nxt
    setattr(obj, parts[-1], value)
RE_OUTPUT = re.compile(r"^output\s+(%s)\s*(?:=(.*))?$" % IDENT)
RE_LET = re.compile(r"^(%s(?:\s*,\s*%s)*)\s*=(?!=)(.*)$" % (IDENT, IDENT))


def evaluate(src, defines=None, on_decl=None):
    """Run the graph in PyTorch. Returns (graph_name, dims, records) where
    records is a list of dicts in file order, one per named value.
    on_decl(kind, full name, dtype, shape, statement) is called for every
    input and param as it is created (a def's params once per call).
    Raises RefError if PyTorch rejects a statement."""
    defines = defines or {}
    env = base_env()
    src, defs = split_defs(src)
    calls = []  # the def calls being run: value-name paths, innermost last
    scopes = []
    anon = [0]
    records, by_name = [], {}
    owners = {}  # storage id -> kind of owner registration (named lets/inputs)
    graph_name, dims = None, {}

    class Block:
        """A def: a call runs its body in a scope of its own (dims, args, defs)."""
        def __init__(self, name):
            self.name = name

        def __call__(self, *args, prefix=None):
            argn, body = defs[self.name]
            if len(args) != len(argn):
                raise TypeError("%s takes %d arguments" % (self.name, len(argn)))
            if prefix is None:
                anon[0] += 1
                path = "%s#%d" % (self.name, anon[0])
                if calls:
                    path = calls[-1] + "." + path
            else:
                path = calls[-1] + "." + prefix if calls else prefix
            scope = base_env()
            for k, v in dims.items():
                scope[k] = Dim(v)
            add_defs(scope)
            for a, v in zip(argn, args):
                scope[a] = v
            scopes.append(scope)  # keeps its tensors alive: storage ids stay unique
            calls.append(path)
            try:
                return run(body, scope, path + ".")
            finally:
                calls.pop()

    def repeat(*a, **k):
        if a and isinstance(a[0], Block):
            blk, n, args, prefix = a[0], int(a[1]), list(a[2:]), k.get("prefix")
            r = args[0]
            for i in range(n):
                r = blk(*args, prefix=None if prefix is None else "%s.%d" % (prefix, i))
                args[0] = r[0] if isinstance(r, tuple) else r
            return r
        return a[0].repeat(*a[1:], **k)

    def add_defs(scope):
        for name in defs:
            scope[name] = Block(name)
        scope["repeat"] = repeat

    add_defs(env)

    def record(name, t, kind, scope=None, local=None):
        if not isinstance(t, torch.Tensor):
            raise RefError("%s is not a tensor (%r)" % (name, type(t)))
        r = {
            "name": name, "dtype": TG_NAME[t.dtype], "shape": list(t.shape),
            "strides": list(t.stride()), "offset": t.storage_offset(),
            "contiguous": t.is_contiguous(), "sid": sid(t), "kind": kind,
            "bytes": t.numel() * t.element_size(),
        }
        records.append(r)
        by_name[name] = r
        env_set(env if scope is None else scope, name if local is None else local, t)

    meta = {"graph": None}

    def run(stmts, env, prefix):
      """Runs statements in env; values are recorded as prefix + name. Returns
      the value of a `return`."""
      for lineno, st in stmts:
        try:
            m = RE_RETURN.match(st)
            if m and prefix:
                Ref.fresh, Ref.viewed = set(), set()
                return eval(CALL_CAST.sub(r"_py_\1(", m.group(1).strip()), env)
            m = RE_GRAPH.match(st)
            if m:
                meta["graph"] = m.group(1)
                if m.group(2):
                    for part in m.group(2).split(","):
                        k, v = part.split("=")
                        k = k.strip()
                        val = int(defines.get(k, eval(v, {"__builtins__": {}})))
                        dims[k] = val
                        env[k] = Dim(val)
                continue
            m = RE_DECL.match(st)
            if m:
                _, name, dt, dimtxt = m.groups()
                dt = ALIASES.get(dt, dt)
                shape = []
                if dimtxt.strip():
                    for d in eval("[" + dimtxt + "]", env):
                        if isinstance(d, float):
                            assert d.is_integer()
                        shape.append(int(d))
                if on_decl:
                    on_decl(m.group(1), prefix + name, dt, shape, st)
                t = make_tensor(dt, shape)
                if m.group(1) == "state":  # zero until a run writes it
                    t = torch.zeros(shape, dtype=TORCH_DTYPE[dt]).as_subclass(Ref)
                    t.tg_state = True
                owners[sid(t)] = prefix + name
                record(prefix + name, t, "owner", env, name)
                continue
            m = RE_OUTPUT.match(st)
            if m and m.group(2) is None:
                if m.group(1) not in by_name:
                    raise RefError("output of unknown name %s" % m.group(1))
                continue
            if m:
                names, expr = [m.group(1)], m.group(2)
            else:
                m = RE_LET.match(st)
                if not m:
                    raise RefError("line %d: cannot parse %r" % (lineno, st))
                names = [n.strip() for n in m.group(1).split(",")]
                expr = m.group(2)
            Ref.fresh, Ref.viewed = set(), set()
            val = eval(CALL_CAST.sub(r"_py_\1(", expr.strip()), env)
            if len(names) > 1:
                val = list(val)
                if len(val) != len(names):
                    raise RefError("line %d: %d names for %d values" % (lineno, len(names), len(val)))
            else:
                val = [val]
            for name, t in zip(names, val):
                if prefix and not isinstance(t, torch.Tensor):  # a def's constant: b = x.shape[0]
                    env_set(env, name, t)
                    continue
                if isinstance(t, torch.Tensor) and not isinstance(t, Ref):
                    t = t.as_subclass(Ref)
                s = sid(t)
                if s in owners:
                    kind = "view_named"
                else:
                    full = (t.storage_offset() == 0 and t.is_contiguous()
                            and t.numel() == t.storage().size())
                    if not full:
                        kind = "view_anon"
                    elif s in Ref.viewed:
                        kind = "ambiguous"
                    else:
                        kind = "owner"
                        owners[s] = prefix + name
                record(prefix + name, t, kind, env, name)
            # values that are views of an anonymous storage: later views of them
            # resolve through that storage id
            for name in names:
                if prefix + name in by_name:
                    owners.setdefault(by_name[prefix + name]["sid"], None)
        except RefError:
            raise
        except Exception as e:  # PyTorch (or Python) rejected the statement
            msg = "line %d: %s: %s" % (lineno, st, str(e).splitlines()[0] if str(e) else type(e).__name__)
            raise RefError(msg, skip="not implemented for" in str(e) or "ZeroDivision" in str(e))

    run(statements(src), env, "")
    return meta["graph"], dims, records


# --------------------------------------------------------------------------
# Running tgc and comparing
# --------------------------------------------------------------------------

class Case:
    def __init__(self, name, src, defines=None, expect="ok", group="fixed", add_outputs=True):
        self.name, self.defines, self.expect, self.group = name, defines or {}, expect, group
        src = src.strip("\n")
        first = statements(src)[:1]
        if not first or not first[0][1].startswith("graph"):
            src = "graph %s\n%s" % (re.sub(r"\W", "_", name), src)
        if add_outputs:
            declared = set(re.findall(r"^\s*output\s+(%s)" % IDENT, src, re.M))
            names = []
            for _, st in statements(split_defs(src)[0]):
                m = RE_LET.match(st)
                if m and not st.startswith("output") and not st.startswith("graph") \
                        and not RE_DECL.match(st):
                    names += [n.strip() for n in m.group(1).split(",")]
            extra = [n for n in names if n not in declared]
            if extra:
                src += "\n" + "\n".join("output %s" % n for n in extra)
        self.src = src + "\n"


def run_tgc(tgc, path, defines):
    cmd = [tgc, "show", path]
    for k, v in defines.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    cmd.append("--json")
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    except subprocess.TimeoutExpired:
        return None, "", "timeout after 30 s"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def compare(case, dims, records, data):
    """List of (value, field, expected, found)."""
    errs = []
    if data.get("dims", {}) != dims:
        errs.append(("<graph>", "dims", dims, data.get("dims")))
    found = {}
    for v in data.get("values", []):
        if isinstance(v, dict) and "name" in v and v["name"] not in found:
            found[v["name"]] = v
    # storage ids -> the name tgc must report
    sidname = {}
    named = {r["name"] for r in records}
    order = [v.get("name") for v in data.get("values", []) if v.get("name") in named]
    if order != [r["name"] for r in records if r["name"] in found]:
        errs.append(("<graph>", "order", [r["name"] for r in records], order))
    for r in records:
        n = r["name"]
        v = found.get(n)
        if v is None:
            errs.append((n, "missing", "present", "absent"))
            continue
        for field in ("dtype", "shape", "strides", "offset", "contiguous"):
            if v.get(field) != r[field]:
                errs.append((n, field, r[field], v.get(field)))
        kind, s = r["kind"], r["sid"]
        if kind == "ambiguous":
            kind = "owner" if v.get("view") is False else "view_anon"
        if kind == "owner":
            exp_view, exp_storage, exp_bytes = False, n, r["bytes"]
            sidname.setdefault(s, n)
        elif kind == "view_named":
            exp_view, exp_storage, exp_bytes = True, sidname.get(s, "?"), 0
        else:  # view of an unnamed intermediate
            st = v.get("storage")
            if s not in sidname:
                if isinstance(st, str) and st.startswith("%"):
                    sidname[s] = st
                else:
                    sidname[s] = "%<unnamed intermediate>"
            exp_view, exp_storage, exp_bytes = True, sidname[s], 0
        if v.get("view") != exp_view:
            errs.append((n, "view", exp_view, v.get("view")))
        if v.get("storage") != exp_storage:
            errs.append((n, "storage", exp_storage, v.get("storage")))
        if v.get("bytes") != exp_bytes:
            errs.append((n, "bytes", exp_bytes, v.get("bytes")))
    return errs


def check_case(case, tgc, tmpdir, keep):
    """Returns (ok, message_lines)."""
    try:
        _, dims, records = evaluate(case.src, case.defines)
        ref_err = None
    except RefError as e:
        if e.skip:
            return None, ["skipped (PyTorch kernel missing): %s" % e]
        ref_err = str(e)
    if case.expect == "ok" and ref_err:
        return False, ["suite error: PyTorch rejects a case meant to compile: %s" % ref_err]
    if case.expect == "error" and not ref_err:
        return False, ["suite error: PyTorch accepts a case meant to be an error"]
    # "spec_error": the spec rejects what PyTorch accepts (boolean masks);
    # "auto": whatever PyTorch says.
    expect_error = bool(ref_err) or case.expect == "spec_error"
    if tgc is None:
        return True, []
    fname = re.sub(r"\W", "_", case.name) + ".tg"
    path = os.path.join(keep or tmpdir, fname)
    with open(path, "w") as f:
        f.write(case.src)
    rc, out, err = run_tgc(tgc, path, case.defines)
    dflags = "".join(" -D %s=%s" % kv for kv in case.defines.items())
    if expect_error:
        if rc == 1:
            return True, []
        return False, ["expected exit 1 (%s), got %s; stderr: %s" % (
            ref_err or "the spec rejects it", rc, err.strip()[:300])]
    if rc != 0:
        return False, ["tgc show%s --json exited %s: %s" % (dflags, rc, err.strip()[:600])]
    try:
        data = json.loads(out)
    except ValueError as e:
        return False, ["invalid JSON on stdout (%s): %s" % (e, out[:300])]
    errs = compare(case, dims, records, data)
    if not errs:
        return True, []
    return False, ["%s: %s expected %s, found %s" % (n, fld, json.dumps(e), json.dumps(f))
                   for n, fld, e, f in errs]


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from cases_fixed import fixed_cases  # noqa: E402
from cases_random import random_cases  # noqa: E402
from cases_dtype import dtype_cases  # noqa: E402


def example_cases():
    out = []
    d = os.path.join(ROOT, "examples")
    if os.path.isdir(d):
        for fn in sorted(os.listdir(d)):
            # gpt2, llama: whole models, too large at their default sizes (GPT-2
            # small: 124M params, seq 1024); tests/models runs them small.
            if fn.endswith(".tg") and fn not in ("gpt2.tg", "llama.tg"):
                with open(os.path.join(d, fn)) as f:
                    out.append(Case("example_" + fn[:-3], f.read(), group="fixed", add_outputs=False))
    return out


def all_cases(seed):
    return fixed_cases(Case) + example_cases() + random_cases(Case, seed, evaluate, RefError) \
        + dtype_cases(Case, evaluate, RefError)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", help="path to the tgc binary")
    ap.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    ap.add_argument("--keep", help="write the .tg files here and keep them")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--reference-only", action="store_true",
                    help="only evaluate the cases in PyTorch (no tgc)")
    ap.add_argument("--list", action="store_true", help="print every case's source")
    ap.add_argument("--expected", action="store_true",
                    help="print every case's source and the reference values")
    args = ap.parse_args()
    if not args.tgc and not args.reference_only:
        ap.error("--tgc is required (or --reference-only)")
    torch.manual_seed(0)
    cases = all_cases(args.seed)
    if args.pattern:
        cases = [c for c in cases if args.pattern in c.name]
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    counts = {}
    for c in cases:
        counts[c.group] = counts.get(c.group, 0) + 1
    print("cases: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            if args.list or args.expected:
                print("### %s %s\n%s" % (c.name, c.defines or "", c.src))
            if args.expected:
                try:
                    _, dims, recs = evaluate(c.src, c.defines)
                    print("dims %s" % json.dumps(dims))
                    for r in recs:
                        print("  %-8s %-5s shape=%s strides=%s offset=%d contiguous=%s %s" % (
                            r["name"], r["dtype"], r["shape"], r["strides"], r["offset"],
                            r["contiguous"], r["kind"]))
                except RefError as e:
                    print("  PyTorch rejects it: %s" % e)
            ok, msgs = check_case(c, None if args.reference_only else args.tgc, tmp, args.keep)
            if ok is None:
                skipped += 1
                continue
            if ok:
                passed += 1
                continue
            failed += 1
            dflags = "".join(" -D %s=%s" % kv for kv in c.defines.items())
            print("FAIL %s%s" % (c.name, dflags))
            print("  | " + c.src.rstrip("\n").replace("\n", "\n  | "))
            for m in msgs:
                print("  " + m)
    if skipped:
        print("(%d cases skipped: PyTorch has no CPU kernel for them)" % skipped)
    print("oracle: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
