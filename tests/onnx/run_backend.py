#!/usr/bin/python3
"""The ONNX backend test suite (Debian's libonnx-testdata, the cases ONNX
Runtime runs in its CI) through tgc, against an expected-outcome list.

Cases: /usr/include/onnx/backend/test/data/{node,pytorch-converted,
pytorch-operator,simple}/CASE, each a model.onnx and test_data_set_*/
{input,output}_*.pb. For each case:
  - `tgc import model.onnx -o W/m.tg`: exit 1 is a refusal, classed by the
    first problem its message names (`op:TopK`, `attr:ArgMax.select_last_index`,
    `opset`, `dtype`, ... see refusal_class); any exit but 0 or 1 is a crash;
  - `tgc build model.onnx -o W/exe` (initializers embedded; a symbolic dim
    set with -D from the first data set's input shapes): exit 1 is a refusal
    classed `build:`, anything else but 0 a crash;
  - the executable on each data set's inputs (the .pb tensors written as .npy),
    each output compared with output_K.pb: same shape, same dtype (ONNX's:
    Pow of an int base is the base's type), and values within
      floats (f16, bf16, f32, f64): |got - want| <= ATOL + RTOL * |want|
        (bf16 tensors, read as their uint16 bits, are compared as float32)
        with RTOL 1e-3, ATOL 1e-5 for f32/f64 (ONNX's backend runner uses
        rtol 1e-3, atol 1e-7; 1e-5 leaves room for exp/erf/tanh
        approximations of a few ulp on values near 0), RTOL 1e-2, ATOL 1e-3
        for f16/bf16; NaN matches NaN, inf the same inf;
      integers and bools: exact.
    A mismatch is `wrong:`, an executable exiting non-zero `run:` (exit 1)
    or a crash.
Resize's, TopK's and MaxUnpool's cases (names matching FREEZE) feed scales,
sizes, K or output_shape as graph inputs, which tgc needs at import time to fix the output's shape: such a
case, once refused for it, is run again with that input made an
initializer holding its data set's value, and its class is prefixed
`frozen:` (`frozen:pass`: the operator computes ONNX's outputs once its
sizes are known; it is not counted as a pass).
A case whose data sets contradict the model's own declaration of a graph
input (a fixed dim, or the rank, other than the data's: the CastLike
bfloat16 cases store `like` as [1] and declare it [3, 4]; ONNX Runtime
refuses such inputs and excludes these cases) runs with that input
declared with the data's shape (redeclare()), as a runner that takes
shapes from the data does, and its class is prefixed `redeclared:`
(not counted as a pass: the case as written cannot be run).
The outcome of every case is compared with tests/onnx/backend_expected.txt
(`SUITE/CASE CLASS`; a case not listed must pass): a case that passes but is
listed, or whose class differs from its line, fails the suite and is
printed, so the list is updated deliberately (`--update` rewrites it from
this run). A crash is a failure even when listed; `wrong:` lines are known
wrong answers, each to be fixed.

Subsets: `--subset all`: all 1,072 cases on --jobs workers; `--subset
full` (normal build): the same but for every other case of the families
in SAMPLED (Resize, 3-d Conv, the pools' new windows, TopK, the
scatters: many variants of one mapping, each a full build, that would
grow CI's time by some 15%), 1,046 cases;
`--subset asan` (TGC_SANITIZE): every 25th case in sorted order (43), a
sample that covers refusals and passes of every suite.
Nothing is cached across runs: each case works in a fresh temporary folder.
Without the test data or python3-onnx the suite prints why and exits 77.

Usage: run_backend.py --tgc build/tgc [--subset all|full|asan] [--jobs N]
                      [-k SUBSTRING] [--update] [--keep DIR]
Last line: `onnx_backend: N passed, M failed` (cases whose outcome is the
expected one pass); exit 1 if M > 0.
"""

import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "/usr/include/onnx/backend/test/data"
SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")
EXPECTED = os.path.join(HERE, "backend_expected.txt")
ASAN_STRIDE = 25
# Families whose variants --subset full runs every other one of (sorted).
SAMPLED = re.compile(r"^(node/test_(resize_|upsample_|top_k|scatter|averagepool_(2d_pads|2d_same|3d)"
                     r"|maxpool_(2d_pads|2d_same|3d))|pytorch-converted/test_Conv3d)")
TIMEOUT = 300  # a build takes seconds; minutes only on a machine stalled by other work
SKIP = 77

TOL = {  # dtype kind -> (rtol, atol)
    "f32": (1e-3, 1e-5),
    "f16": (1e-2, 1e-3),
}



def run(cmd, timeout=TIMEOUT):
    try:
        p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", "timeout after %d s" % timeout
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def first_error(err):
    for line in err.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()
    lines = [l for l in err.splitlines() if l.strip()]
    return lines[0].strip() if lines else "(no message)"


def refusal_class(err):
    """A short, stable name for the first problem a refusal names."""
    msg = first_error(err)
    if ".onnx" in msg:  # the model's path, as every message starts
        msg = msg.split(": ", 1)[-1]
    msg = re.sub(r"\S*/\S*", "PATH", msg)  # no temporary folders in a class
    for pat, fmt in (
        (r"operator (\w+) is not supported", "op:{0}"),
        (r"attribute '(\w+)' of (\w+) is not supported", "attr:{1}.{0}"),
        (r"opset -?\d+ is not supported", "opset"),
        (r"\((\w+), opset \d+\): (\S+(?: \S+){0,4})", "{0}:{1}"),
        # a run-time check the importer wrote (ox_ops_train.c): its index
        # value is named for the reason
        (r"of '\w*?(random_dropout)' \(index_select", "check:{0}"),
    ):
        m = re.search(pat, msg)
        if m:
            cls = re.sub(r"'[^']*'|\d+", "N", fmt.format(*m.groups()))
            return re.sub(r"[^\w:.\-]+", "_", cls).strip("_")[:60]
    msg = re.sub(r"'[^']*'", "X", msg)
    return re.sub(r"[^\w:.\-]+", "_", msg).strip("_")[:60]


def ident(name):
    """The importer's identifier for a plain ONNX name (frontend/onnx/ox_text.c's ox_ident)."""
    s = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not s or s[0].isdigit():
        s = "v_" + s if s else "v"
    return s


def dtype_kind(dt):
    if dt.kind == "f":
        return "f16" if dt.itemsize <= 2 else "f32"
    return "exact"


def compare(got, want):
    """None when got matches want, else why not."""
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if dtype_kind(want.dtype) == "exact":
        bad = got != want
        if bad.any():
            k = np.argwhere(bad)[0]
            return "at %s: %s, expected %s" % (list(k), got[tuple(k)], want[tuple(k)])
        return None
    rtol, atol = TOL["f16" if id(want) in BF16 else dtype_kind(want.dtype)]
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(g - w) <= atol + rtol * np.abs(w)) | (np.isnan(g) & np.isnan(w)) | (g == w)
    if not ok.all():
        k = tuple(np.argwhere(~ok)[0])
        return "at %s: %.7g, expected %.7g (rtol %g, atol %g)" % (list(k), g[k], w[k], rtol, atol)
    return None


def load_pb(path, bf16=False):
    """(name, array): a bfloat16 tensor (the suite stores its bits as
    uint16 or bfloat16; bf16: the model declares the value bfloat16) as
    float32, the dtype tgc's programs read and write bf16 tensors in; such
    an array is marked in BF16 for the comparison's tolerance."""
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    a = numpy_helper.to_array(t)
    if t.data_type == onnx.TensorProto.BFLOAT16 or (bf16 and a.dtype == np.uint16):
        a = (a.astype(np.uint32) << 16).view(np.float32)
        BF16[id(a)] = a  # kept alive, so that its id is not reused
    return t.name, a


BF16 = {}  # id -> each array that was bfloat16


def case_inputs(model):
    """The graph inputs that are not initializers: [(name, [dim or dim_param or None])]."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    out = []
    for vi in g.input:
        if vi.name in inits:
            continue
        dims = []
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            for d in vi.type.tensor_type.shape.dim:
                dims.append(d.dim_value if d.HasField("dim_value") else
                            (d.dim_param if d.HasField("dim_param") and d.dim_param else None))
        out.append((vi.name, dims))
    return out


def freeze(model_path, src, err, w, k):
    """The model with the graph input the refusal says must be known at
    import time made an initializer holding the first data set's value
    (the same in every data set), written to W/frozen_K.onnx; None when
    the refusal is another one, or the input has no such fixed value."""
    import onnx
    from onnx import numpy_helper
    m = re.search(r"input '([^']*)' \(\w+\) must be known at import time", err)
    if not m:
        return None
    model = onnx.load(model_path)
    inputs = [n for n, _ in case_inputs(model)]
    if m.group(1) not in inputs:
        return None
    values = []
    for ds in sorted(glob.glob(os.path.join(src, "test_data_set_*"))):
        path = os.path.join(ds, "input_%d.pb" % ORIG_INPUTS[src].index(m.group(1)))
        if not os.path.exists(path):
            return None
        values.append(load_pb(path)[1])
    if not values or any(v.shape != values[0].shape or (v != values[0]).any() for v in values):
        return None
    model.graph.initializer.append(numpy_helper.from_array(values[0], m.group(1)))
    keep = [vi for vi in model.graph.input if vi.name != m.group(1)]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    out = os.path.join(w, "frozen_%d.onnx" % k)
    onnx.save(model, out)
    return out, m.group(1)


def redeclare(model_path, src, w):
    """The model with each graph input whose declared shape the data sets
    contradict (another rank, or a fixed dim of another size; every data
    set giving one shape) declared with the data's shape, written to
    W/redeclared.onnx; None when the data agree with the declarations."""
    import onnx
    model = onnx.load(model_path)
    orig = ORIG_INPUTS[src]
    sets = sorted(glob.glob(os.path.join(src, "test_data_set_*")))
    changed = False
    for vi in model.graph.input:
        if vi.name not in orig or not vi.type.HasField("tensor_type"):
            continue
        shapes = set()
        for ds in sets:
            path = os.path.join(ds, "input_%d.pb" % orig.index(vi.name))
            if not os.path.exists(path):
                return None
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            shapes.add(tuple(t.dims))
        if len(shapes) != 1:
            continue
        data = list(shapes.pop())
        dims = vi.type.tensor_type.shape.dim
        if len(dims) == len(data) and all(not d.HasField("dim_value") or d.dim_value == v
                                          for d, v in zip(dims, data)):
            continue
        del vi.type.tensor_type.shape.dim[:]
        for v in data:
            vi.type.tensor_type.shape.dim.add().dim_value = v
        changed = True
    if not changed:
        return None
    out = os.path.join(w, "redeclared.onnx")
    onnx.save(model, out)
    return out


def run_case(tgc, case, work):
    """(class, detail): class "pass", or the outcome's class; a case whose
    name matches FREEZE and that is refused for a graph input needed at
    import time runs with that input frozen (freeze()), its class then
    prefixed "frozen:"."""
    import onnx
    suite, name = case.split("/", 1)
    src = os.path.join(DATA, suite, name)
    w = os.path.join(work, case.replace("/", "__"))
    os.makedirs(w)
    ORIG_INPUTS[src] = [n for n, _ in case_inputs(onnx.load(os.path.join(src, "model.onnx")))]
    frozen = set()
    model_path = os.path.join(src, "model.onnx")
    redeclared = redeclare(model_path, src, w)
    model_path = redeclared or model_path
    while True:
        rc, out, err = run([tgc, "import", model_path, "-o", os.path.join(w, "m.tg")])
        f = freeze(model_path, src, err, w, len(frozen)) \
            if rc == 1 and FREEZE.search(name) and len(frozen) < 4 else None
        if not f:
            break
        model_path = f[0]
        frozen.add(f[1])
    cls, detail = run_model(tgc, src, w, model_path, frozen, rc, err)
    if frozen:
        cls = "frozen:" + cls
    return ("redeclared:" + cls if redeclared else cls), detail


ORIG_INPUTS = {}  # case folder -> its graph inputs' names, in data set order
# Cases whose graph inputs that tgc needs at import time (Resize's scales
# and sizes, TopK's K, MaxUnpool's output_shape) are frozen from their data sets (run_case), so that the
# operator's computation is still compared with ONNX's outputs.
FREEZE = re.compile(r"^test_(resize|upsample|top_k|maxunpool)")


def run_model(tgc, src, w, model_path, frozen, rc, err):
    import onnx
    if rc == 1:
        return "refused:" + refusal_class(err), first_error(err)
    if rc != 0:
        return "crash:import", "exit %s: %s" % (rc, err[-400:])
    with open(os.path.join(w, "m.tg")) as f:
        text = f.read()
    # the .tg's input names: "input NAME : ...  # onnx name" when they differ
    tg_in = {}
    for m in re.finditer(r"^input (\w+) : [^\n#]*(?:#\s*(.*))?$", text, re.M):
        tg_in[(m.group(2) or m.group(1)).strip()] = m.group(1)
    # its outputs: "output NAME = ...  # ... output 'ONNX name'" when they differ
    tg_out = {}
    for m in re.finditer(r"^output (\w+) = ([^\n]*)$", text, re.M):
        named = re.search(r"#.*output '([^'\n]*)'", m.group(2))
        tg_out[named.group(1) if named else m.group(1)] = m.group(1)
    try:
        model = onnx.load(model_path)
    except Exception as e:  # noqa: BLE001 - the file itself; tgc read it
        return "crash:runner", "onnx.load: %s" % e
    inputs = case_inputs(model)
    outputs = [o.name for o in model.graph.output]
    bf = onnx.TensorProto.BFLOAT16
    in_bf16 = {vi.name for vi in model.graph.input if vi.type.tensor_type.elem_type == bf}
    out_bf16 = [o.type.tensor_type.elem_type == bf for o in model.graph.output]
    sets = sorted(glob.glob(os.path.join(src, "test_data_set_*")))
    if not sets:
        return "crash:runner", "no test_data_set"
    data = []
    for ds in sets:
        ins = []
        for k in range(len(glob.glob(os.path.join(ds, "input_*.pb")))):
            orig = ORIG_INPUTS[src]
            if k < len(orig) and orig[k] in frozen:
                continue
            name = orig[k] if k < len(orig) else "input_%d" % k
            n, arr = load_pb(os.path.join(ds, "input_%d.pb" % k), name in in_bf16)
            if n and n in in_bf16 and id(arr) not in BF16:
                n, arr = load_pb(os.path.join(ds, "input_%d.pb" % k), True)
            if n in frozen:
                continue
            ins.append((n or name, arr))
        outs = [load_pb(os.path.join(ds, "output_%d.pb" % k), k < len(out_bf16) and out_bf16[k])[1]
                for k in range(len(glob.glob(os.path.join(ds, "output_*.pb"))))]
        data.append((ins, outs))
    # symbolic dims from the first data set's shapes
    defs = []
    first = dict(data[0][0])
    for n, dims in inputs:
        if n not in first:
            continue
        for d, v in enumerate(dims):
            if isinstance(v, int) and v >= 0:
                continue
            sym = v if isinstance(v, str) else "%s_dim%d" % (n, d)
            if d < first[n].ndim:
                defs += ["-D", "%s=%d" % (sym, max(1, first[n].shape[d]))]
    exe = os.path.join(w, "exe")
    rc, out, err = run([tgc, "build", model_path, "-o", exe] + defs)
    if rc == 1:
        return "build:" + refusal_class(err), first_error(err)
    if rc != 0:
        return "crash:build", "exit %s: %s" % (rc, err[-400:])
    for si, (ins, outs) in enumerate(data):
        d = os.path.join(w, "set%d" % si)
        os.makedirs(d)
        args = []
        for k, (n, arr) in enumerate(ins):
            p = os.path.join(d, "in%d.npy" % k)
            np.save(p, arr)
            args += ["--input", "%s=%s" % (tg_in.get(n, ident(n)), p)]
        od = os.path.join(d, "out")
        os.makedirs(od)
        rc, out, err = run([exe, "--output-dir", od] + args)
        if rc == 1:
            return "run:" + refusal_class(err), first_error(err)
        if rc != 0:
            return "crash:run", "exit %s: %s" % (rc, err[-400:])
        files = set(os.listdir(od))
        for k, want in enumerate(outs):
            base = tg_out.get(outputs[k], "?") if k < len(outputs) else "?"
            fn = base + ".npy" if base + ".npy" in files else None
            if fn is None:
                return "wrong:output", "output %d (%s) not written; found %s" % (k, base, sorted(files))
            why = compare(np.load(os.path.join(od, fn)), want)
            if why:
                return "wrong:" + ("dtype" if why.startswith("dtype") else
                                   "shape" if why.startswith("shape") else "values"), \
                    "set %d output %s: %s" % (si, outputs[k], why)
    return "pass", ""


def read_expected():
    exp = {}
    if os.path.exists(EXPECTED):
        with open(EXPECTED) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    case, cls = line.split(None, 1)
                    exp[case] = cls.strip()
    return exp


def write_expected(results, old):
    header = []
    if os.path.exists(EXPECTED):
        with open(EXPECTED) as f:
            for line in f:
                if not line.startswith("#"):
                    break
                header.append(line)
    merged = dict(old)
    for case, (cls, _) in results.items():
        if cls == "pass":
            merged.pop(case, None)
        else:
            merged[case] = cls
    with open(EXPECTED, "w") as f:
        f.writelines(header)
        for case in sorted(merged):
            f.write("%s %s\n" % (case, merged[case]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--subset", choices=("all", "full", "asan"), default="full")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("-k", default="")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--keep")
    a = ap.parse_args()
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("onnx_backend: skipped: python3-onnx is not installed")
        return SKIP
    if not os.path.isdir(os.path.join(DATA, "node")):
        print("onnx_backend: skipped: %s is missing (Debian's libonnx-testdata; scripts/setup.sh)" % DATA)
        return SKIP
    tgc = os.path.abspath(a.tgc)
    cases = sorted("%s/%s" % (s, c) for s in SUITES for c in os.listdir(os.path.join(DATA, s))
                   if os.path.exists(os.path.join(DATA, s, c, "model.onnx")))
    if a.subset == "asan":
        cases = cases[::ASAN_STRIDE]
    elif a.subset == "full":
        sampled = [c for c in cases if SAMPLED.match(c)]
        cases = [c for c in cases if c not in set(sampled[1::2])]
    cases = [c for c in cases if a.k in c]
    expected = read_expected()
    work = a.keep or tempfile.mkdtemp(prefix="tgc_backend_")
    os.makedirs(work, exist_ok=True)
    t0 = time.monotonic()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = {ex.submit(run_case, tgc, c, work): c for c in cases}
        for f in concurrent.futures.as_completed(futs):
            try:
                results[futs[f]] = f.result()
            except Exception as e:  # noqa: BLE001 - a runner bug is reported as a crash
                results[futs[f]] = ("crash:runner", repr(e))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    passed = failed = 0
    counts = {}
    classes = {}
    for case in cases:
        cls, detail = results[case]
        suite = case.split("/", 1)[0]
        n = counts.setdefault(suite, [0, 0])
        n[1] += 1
        n[0] += cls == "pass"
        key = cls.split(":", 1)[0] if cls != "pass" else "pass"
        classes[key] = classes.get(key, 0) + 1
        want = expected.get(case, "pass")
        if cls == want and not cls.startswith("crash"):
            passed += 1
            if cls.startswith("wrong"):
                print("known wrong: %s (%s): %s" % (case, cls, detail))
            continue
        failed += 1
        if want == "pass":
            print("FAIL %s: newly %s: %s" % (case, cls, detail))
        elif cls == "pass":
            print("FAIL %s: newly passes (listed as %s): remove its line" % (case, want))
        else:
            print("FAIL %s: %s, listed as %s: %s" % (case, cls, want, detail))
    for suite in SUITES:
        if suite in counts:
            print("  %-18s %4d of %4d cases pass" % (suite, counts[suite][0], counts[suite][1]))
    print("  outcomes: %s" % ", ".join("%s %d" % kv for kv in sorted(classes.items())))
    print("  %.0f s on %d workers" % (time.monotonic() - t0, a.jobs))
    if a.update:
        write_expected(results, expected)
        print("  rewrote %s" % EXPECTED)
    print("onnx_backend: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
