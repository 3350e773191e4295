#!/usr/bin/python3
"""ONNX import suite (`tgc import`, and every command taking a .onnx file):
torchvision models, transformers and a GPT-style model exported by
torch.onnx.export, against PyTorch; malformed and unsupported files.

Models (export_models.py: one per torchvision classification family, the
LR-ASPP segmentation model, nn.TransformerEncoder, nn.TransformerDecoder,
examples/gpt2_torch.py's GPT-2 at small sizes; random weights, eval mode;
exported at opset 17 and at opset 13 and cached in --cache, by default the
working directory's `exports/`, i.e. the build tree under ctest). For each
model and opset:
  - `tgc import M.onnx -o W/M.tg` exits 0 and writes M.tg and, beside it,
    M.safetensors;
  - `tgc check M.tg` exits 0;
  - round trip: `tgc show --json M.tg` equals `tgc show --json M.onnx`
    (same graph, dims and values: names, ops, dtypes, shapes, strides,
    views), and every ONNX graph input is an `input` value of that name
    with the exported shape;
  - the .tg way: `tgc run M.tg --weights M.safetensors --input NAME=NAME.npy
    --output-dir A` (NAME: the ONNX input names, identifiers already); the
    .onnx way: `tgc build M.onnx -o EXE` (initializers embedded), then
    `EXE --input ... --output-dir B`. Each output DIR/NAME.npy is compared
    with torch's value by value, and A and B must be bit-identical (the
    same program from the same weights: a constant printed into the .tg
    with too few digits would show here and nowhere else).
Tolerance: |tgc - torch| <= TOL * |torch| + TOL * max|torch|, with
TOL = max(1e-4, 10 * e) where e is PyTorch's own f32 error on this model and
input: max |torch f32 - torch f64| / max |torch f64|, the same model and
input evaluated in float64 at export (export_models.py, meta.json). Both
sides compute in f32 from bit-identical weights; what differs is summation
order (oneDNN's blocked convolutions vs PyTorch's, batch norm folded into
the convolution weights, BLAS blocking) and exp/erf/tanh approximations (a
few ulp), so tgc's error against the exact result is of the order of
PyTorch's, and their difference at most a few times e. e is 1e-7..1e-5 of
the output's scale for most models (1e-4 is then two orders above the
rounding and far below a wrong padding, stride, layout or attribute, which
moves outputs by 1e-2..1 of their scale); it reaches 2.4e-5 on googlenet,
7e-5 on inception_v3 and 1.3e-4 on efficientnet_v2_s (deep stacks of
random layers condition them badly: their TOL is 2.4e-4, 7e-4, 1.3e-3). The
atol is relative to max|torch| because output scales differ by orders of
magnitude between models. Every comparison prints its error and TOL.
Dynamic batch (resnet18, transformer_encoder; exported with dynamic_axes
{0: "batch"} at batch 2): `tgc show --json` of the .tg has a symbolic dim
"batch" (its default is the importer's: the file does not record the
export's size, so the runs above pass -D batch=2); `tgc build M.tg -D
batch=8` run on a batch-8 input matches torch at batch 8; `tgc import -D
batch=8 --weights-out W` gives inputs of batch 8 and writes W;
`tgc report M.tg --fit batch --budget 1GiB --json` answers max_fit
{"dim": "batch", "value": V} with V >= 1, and peak_bytes at -D batch=V
fits 1 GiB while at V + 1 it does not (checked with `report -D`).
External data (resnet18, opset 17, saved again with its initializers in
opset17_ext.data): `tgc import` writes the same safetensors bytes and `tgc
run` of it gives the same outputs as the embedded model.

Malformed and unsupported files (make_malformed.py: 77 files plus the valid
control): for each, `tgc import F -o W/F.tg` and `tgc check F` exit exactly
1 within 60 s, with a non-empty stderr naming the expected node or tensor
(or the file, where nothing inside can be named), no sanitizer report, and
import leaves neither F.tg nor F.safetensors behind. The control imports
and checks with exit 0.

Opsets: every model runs at the highest opset (17). At a lower one (13)
a model runs only where its exported graph has an operator form no model
before it (in export_models.MODELS's order) had at that opset: an op type
with its attribute names and string values (Resize's mode, say), so that
every importer path of opset 13 (Squeeze/Unsqueeze/Split/ReduceSum with
axes as inputs, LayerNorm and GELU decomposed, ...) still runs at least
once, while models that add no new form are not built twice (they are
exported, and their forms computed, all the same); the dynamic-batch
models run at every opset (their -D / --fit checks). `--all-opsets` runs
every model at every opset. The lines `opset 13: skipped M (no new
operator form)` say which.

Subsets: `--subset full` (normal build): every model at opset 17 and the
sampled ones at opset 13 (above), and every malformed file; `--subset asan` (TGC_SANITIZE): resnet18 and
transformer_encoder at both opsets (dynamic batch and external data
included) and every malformed file. `--part models|malformed` runs half.
`--full-size` exports the named torchvision constructors unchanged (224 or
299, 1000 classes; not for CI: export_models.py's header).
Without python3-onnx the suite prints why and exits 77 (ctest's
SKIP_RETURN_CODE: skipped, not passed); without python3-torchvision the
models part runs the transformers and GPT-2 only and then exits 77 (1 if
any of them failed).

Usage: run_onnx.py --tgc build/tgc [--subset full|asan] [--part all|models|malformed]
                   [-k SUBSTRING] [--jobs N] [--cache DIR] [--keep DIR] [--opsets 17,13]
                   [--all-opsets]
Last line: `onnx: N passed, M failed`; exit status 1 if M > 0.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "tests", "report"))
from rtest import Checks  # noqa: E402

SKIP = 77
TOL_MIN = 1e-4      # the tolerance, relative to max |torch| (see the header)
TOL_FACTOR = 10     # times PyTorch's own f32 error on the model, where that is larger
ASAN_MODELS = ("resnet18", "transformer_encoder")
BUDGET = 1 << 30          # --budget 1GiB for the --fit check
SANITIZER = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "Sanitizer")
PYTHON = "/usr/bin/python3"


CPU = threading.local()  # per thread: CPU seconds of the commands run (see model_job)


def run(cmd, timeout=600):
    """(rc, stdout, stderr, wall seconds); rc None on timeout. The command's
    CPU time (user + system, its children included) is added to CPU.seconds."""
    t0 = time.monotonic()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    bufs = {}
    readers = [threading.Thread(target=lambda k, f: bufs.__setitem__(k, f.read()), args=(k, f))
               for k, f in (("out", p.stdout), ("err", p.stderr))]
    for t in readers:
        t.start()
    killed = []
    timer = threading.Timer(timeout, lambda: (killed.append(1), p.kill()))
    timer.start()
    _, status, ru = os.wait4(p.pid, 0)
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join()
    p.stdout.close()
    p.stderr.close()
    CPU.seconds = getattr(CPU, "seconds", 0.0) + ru.ru_utime + ru.ru_stime
    out, err = (bufs[k].decode("utf-8", "replace") for k in ("out", "err"))
    if killed:
        return None, out, err + "\ntimeout after %d s" % timeout, time.monotonic() - t0
    return p.returncode, out, err, time.monotonic() - t0


def tail(s, n=800):
    s = s.strip()
    return s if len(s) <= n else "..." + s[-n:]


class Job:
    """One model's (or malformed file's) checks and printed lines, merged
    into the suite's Checks when the job ends (jobs run on threads)."""

    def __init__(self, name):
        self.name, self.results, self.lines, self.cpu = name, [], [], 0.0

    def check(self, ok, what, detail=""):
        self.results.append((bool(ok), what, detail))
        return bool(ok)

    def say(self, line):
        self.lines.append(line)

    def ran(self, what, r, want_rc=0):
        rc, out, err, _ = r
        detail = "exit %s; stderr: %s" % (rc, tail(err)) if rc != want_rc else ""
        return self.check(rc == want_rc, what, detail)


# ---- models ------------------------------------------------------------------

def input_args(meta, d):
    args = []
    for name, _, _ in meta["inputs"]:
        args += ["--input", "%s=%s" % (name, os.path.join(d, name + ".npy"))]
    return args


def tolerance(meta, name):
    return max(TOL_MIN, TOL_FACTOR * meta["f32_error"][name])


def compare(job, what, out_dir, want_dir, meta):
    """Each output NAME.npy in out_dir against want_dir's; returns {name: array} or None."""
    got_all = {}
    for n in meta["outputs"]:
        tol = tolerance(meta, n)
        path = os.path.join(out_dir, n + ".npy")
        if not job.check(os.path.exists(path), "%s: wrote %s.npy" % (what, n),
                         "found %s" % sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else "no dir"):
            return None
        got = np.load(path)
        want_raw = np.load(os.path.join(want_dir, n + ".npy"))
        if want_raw.dtype.kind in "iub":
            # integer outputs (a max pool's indices): torch's dtype, exact
            if job.check(got.shape == want_raw.shape and got.dtype == want_raw.dtype,
                         "%s: %s is %s%s" % (what, n, want_raw.dtype, list(want_raw.shape)),
                         "got %s%s" % (got.dtype, list(got.shape))):
                bad = int(np.count_nonzero(got != want_raw))
                job.check(bad == 0, "%s: %s equals torch's" % (what, n), "%d elements differ" % bad)
                job.say("  %-34s %-7s %d of %d elements differ (exact)" % (what, n, bad, got.size))
                got_all[n] = got
            continue
        want = want_raw.astype(np.float64)
        if not job.check(got.shape == want.shape and got.dtype == np.float32,
                         "%s: %s is f32%s" % (what, n, list(want.shape)),
                         "got %s%s" % (got.dtype, list(got.shape))):
            return None
        err = np.abs(got - want)
        scale = float(np.abs(want).max())
        allowed = tol * np.abs(want) + tol * scale
        worst = np.unravel_index(np.argmax(err / np.maximum(allowed, 1e-30)), want.shape)
        job.check(bool(np.all(err <= allowed)) and bool(np.all(np.isfinite(got))),
                  "%s: %s matches torch (tol %g)" % (what, n, tol),
                  "worst at %s: tgc %.7g torch %.7g (allowed %.3g); max |diff| %.3g, max |torch| %.3g"
                  % (list(worst), got[worst], want[worst], allowed[worst], err.max(), scale))
        job.say("  %-34s %-7s max |tgc - torch| = %.2e  (%.1e of max |torch| = %.3g; tol %.1e)"
                % (what, n, err.max(), err.max() / scale if scale else 0, scale, tol))
        got_all[n] = got
    return got_all


def tgc_json(job, tgc, cmd, what, path, *args):
    """`tgc CMD PATH --json ARGS...` parsed, or None after a failed check."""
    r = run([tgc, cmd, path, "--json"] + list(args))
    if not job.ran(what, r):
        return None
    try:
        return json.loads(r[1])
    except ValueError as e:
        job.check(False, what + ": JSON", str(e))
        return None


def show_json(job, tgc, what, path, *defs):
    return tgc_json(job, tgc, "show", what, path, *defs)


def first_difference(a, b):
    if a.get("graph") != b.get("graph") or a.get("dims") != b.get("dims"):
        return "graph/dims: %r %r vs %r %r" % (a.get("graph"), a.get("dims"), b.get("graph"), b.get("dims"))
    va, vb = a.get("values", []), b.get("values", [])
    for i, (x, y) in enumerate(zip(va, vb)):
        if x != y:
            return "value %d: %s vs %s" % (i, json.dumps(x), json.dumps(y))
    if len(va) != len(vb):
        return "%d values vs %d" % (len(va), len(vb))
    return "other keys differ: %s vs %s" % (sorted(a), sorted(b))


def report_json(job, tgc, what, path, *args):
    return tgc_json(job, tgc, "report", what, path, *args)


def model_opset(job, tgc, cache, work, meta, opset):
    name = meta["name"]
    src_dir = os.path.join(cache, name)
    src = os.path.join(src_dir, "opset%d.onnx" % opset)
    label = "%s@%d" % (name, opset)
    w = os.path.join(work, "%s_opset%d" % (name, opset))
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    tg = os.path.join(w, "m.tg")
    st = os.path.join(w, "m.safetensors")
    times = {}

    r = run([tgc, "import", src, "-o", tg])
    times["import"] = r[3]
    if not job.ran(label + ": tgc import", r):
        return
    if not (job.check(os.path.exists(tg), label + ": import wrote m.tg")
            and job.check(os.path.exists(st), label + ": import wrote m.safetensors beside it",
                          "found %s" % sorted(os.listdir(w)))):
        return
    with open(tg) as f:
        lines = f.read().count("\n")
    job.ran(label + ": tgc check m.tg", run([tgc, "check", tg]))

    a = show_json(job, tgc, label + ": show --json m.tg", tg)
    b = show_json(job, tgc, label + ": show --json m.onnx", src)
    if a is not None and b is not None:
        job.check(a == b, label + ": show --json of the .tg equals that of the .onnx", first_difference(a, b))
        vals = {v["name"]: v for v in a.get("values", [])}
        dim = meta["dynamic"]
        default = a.get("dims", {}).get(dim) if dim else None
        for n, shape, _ in meta["inputs"]:
            v = vals.get(n)
            if dim:  # at the symbolic dim's default
                shape = [default] + shape[1:]
            job.check(v is not None and v.get("op") == "input" and v.get("shape") == shape,
                      "%s: input %s%s" % (label, n, shape), "found %s" % json.dumps(v))
        if dim:
            job.check(isinstance(default, int) and default >= 1,
                      "%s: the dynamic axis is a symbolic dim %s" % (label, dim), "dims %s" % a.get("dims"))
            job.say("  %-34s dims %s" % (label, a.get("dims")))

    # A dynamic batch axis has no size in the file: run at the export's with -D.
    defs = ["-D", "%s=%d" % (meta["dynamic"], meta["export_batch"])] if meta["dynamic"] else []
    out_a, out_b = os.path.join(w, "out_tg"), os.path.join(w, "out_onnx")
    os.makedirs(out_a)
    os.makedirs(out_b)
    r = run([tgc, "run", tg, "--weights", st, "--output-dir", out_a] + defs + input_args(meta, src_dir))
    times["run .tg"] = r[3]
    got_a = None
    if job.ran(label + ": tgc run m.tg --weights m.safetensors", r):
        got_a = compare(job, label + " .tg", out_a, src_dir, meta)
    exe = os.path.join(w, "exe")
    r = run([tgc, "build", src, "-o", exe] + defs)
    times["build .onnx"] = r[3]
    got_b = None
    if job.ran(label + ": tgc build m.onnx (embedded initializers)", r):
        r = run([exe, "--output-dir", out_b] + input_args(meta, src_dir))
        times["exe"] = r[3]
        if job.ran(label + ": run the executable built from m.onnx", r):
            got_b = compare(job, label + " .onnx", out_b, src_dir, meta)
    if got_a and got_b:
        same = all(np.array_equal(got_a[n], got_b[n]) for n in got_a)
        job.check(same, label + ": the .tg and the .onnx builds give bit-identical outputs",
                  "max |diff| %.3g" % max(float(np.abs(got_a[n] - got_b[n]).max()) for n in got_a))

    if meta["dynamic"]:
        dynamic_batch(job, tgc, label, src, src_dir, w, tg, st, meta)
    if meta["external"] and opset == 17:
        external_data(job, tgc, label, src_dir, w, st, meta, got_b, b, defs)
    job.say("  %-34s %d lines of .tg; %s" % (label, lines, ", ".join(
        "%s %.1f s" % kv for kv in times.items())))


def dynamic_batch(job, tgc, label, src, src_dir, w, tg, st, meta):
    dim, n = meta["dynamic"], meta["dynamic_batch"]
    d8 = os.path.join(src_dir, "b8")
    exe8, out8 = os.path.join(w, "exe8"), os.path.join(w, "out8")
    os.makedirs(out8)
    r = run([tgc, "build", tg, "-D", "%s=%d" % (dim, n), "-o", exe8])
    if job.ran("%s: tgc build m.tg -D %s=%d" % (label, dim, n), r):
        r = run([exe8, "--weights", st, "--output-dir", out8] + input_args(meta, d8))
        if job.ran("%s: run at %s=%d" % (label, dim, n), r):
            compare(job, "%s %s=%d" % (label, dim, n), out8, d8, meta)
    tg8 = os.path.join(w, "m8.tg")
    r = run([tgc, "import", src, "-o", tg8, "--weights-out", os.path.join(w, "m8.safetensors"),
             "-D", "%s=%d" % (dim, n)])
    if job.ran("%s: tgc import -D %s=%d --weights-out" % (label, dim, n), r):
        job.check(os.path.exists(os.path.join(w, "m8.safetensors")),
                  label + ": --weights-out wrote the named file")
        s = show_json(job, tgc, label + ": show --json m8.tg", tg8)
        if s is not None:
            vals = {v["name"]: v for v in s.get("values", [])}
            for name, shape, _ in meta["inputs"]:
                got = (vals.get(name) or {}).get("shape")
                job.check(got == [n] + shape[1:], "%s: import -D %s=%d: input %s is %s"
                          % (label, dim, n, name, [n] + shape[1:]), "found %s" % got)
    rep = report_json(job, tgc, "%s: report --fit %s --budget 1GiB" % (label, dim), tg,
                      "--fit", dim, "--budget", str(BUDGET))
    if rep is None:
        return
    fit = rep.get("max_fit") or {}
    if not job.check(fit.get("dim") == dim and isinstance(fit.get("value"), int) and fit["value"] >= 1,
                     "%s: report --fit %s answers a %s >= 1" % (label, dim, dim), "max_fit %s" % fit):
        return
    v = fit["value"]
    at = report_json(job, tgc, "%s: report -D %s=%d" % (label, dim, v), tg, "-D", "%s=%d" % (dim, v))
    above = report_json(job, tgc, "%s: report -D %s=%d" % (label, dim, v + 1), tg, "-D", "%s=%d" % (dim, v + 1))
    if at is not None and above is not None:
        job.check(at["peak_bytes"] <= BUDGET < above["peak_bytes"],
                  "%s: peak at %s=%d fits 1 GiB, at %d it does not" % (label, dim, v, v + 1),
                  "peak %d and %d" % (at["peak_bytes"], above["peak_bytes"]))
    job.say("  %-34s report --fit %s --budget 1GiB: %s = %d" % (label, dim, dim, v))


def external_data(job, tgc, label, src_dir, w, st, meta, got_b, show_b, defs):
    ext = os.path.join(src_dir, "opset17_ext.onnx")
    what = label + " external data"
    tg = os.path.join(w, "ext.tg")
    r = run([tgc, "import", ext, "-o", tg])
    if job.ran(what + ": tgc import", r):
        with open(st, "rb") as f1, open(os.path.join(w, "ext.safetensors"), "rb") as f2:
            job.check(f1.read() == f2.read(), what + ": the same safetensors as the embedded model's")
    s = show_json(job, tgc, what + ": show --json", ext)
    if s is not None and show_b is not None:
        s["graph"] = show_b["graph"]  # named after the file
        job.check(s == show_b, what + ": show --json equals the embedded model's", first_difference(s, show_b))
    out = os.path.join(w, "out_ext")
    os.makedirs(out)
    r = run([tgc, "run", ext, "--output-dir", out] + defs + input_args(meta, src_dir))
    if job.ran(what + ": tgc run", r):
        got = compare(job, what, out, src_dir, meta)
        if got and got_b:
            job.check(all(np.array_equal(got[n], got_b[n]) for n in got),
                      what + ": outputs bit-identical to the embedded model's")


def model_job(tgc, cache, work, meta, opsets, keep):
    job = Job(meta["name"])
    t0 = time.monotonic()
    CPU.seconds = 0.0
    for opset in opsets:
        model_opset(job, tgc, cache, work, meta, opset)
    job.cpu = CPU.seconds
    job.say("  %-34s %.1f s, %.1f s of CPU (export %.1f s, cached or not)"
            % (meta["name"], time.monotonic() - t0, job.cpu, meta.get("export_s", 0)))
    if not keep:
        for opset in opsets:
            shutil.rmtree(os.path.join(work, "%s_opset%d" % (meta["name"], opset)), ignore_errors=True)
    return job


def operator_forms(path):
    """The operator forms of an ONNX file: (domain, op type, attribute
    names, string attribute values) of every node, subgraphs included."""
    import onnx  # noqa: E402
    forms = set()

    def walk(g):
        for n in g.node:
            strs = tuple(sorted((a.name, a.s.decode("utf-8", "replace")) for a in n.attribute
                                if a.type == onnx.AttributeProto.STRING))
            forms.add((n.domain, n.op_type, tuple(sorted(a.name for a in n.attribute)), strs))
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
    walk(onnx.load(path, load_external_data=False).graph)
    return forms


def sampled_opsets(cache, meta, opsets, seen, all_opsets):
    """The opsets meta's model runs at: the highest always; a lower one
    where the model has an operator form new at it (seen: opset -> forms
    so far), or it has a dynamic batch, or all_opsets. Returns (opsets,
    the lower ones skipped)."""
    top = max(opsets)
    run, skipped = [], []
    for o in opsets:
        if o not in meta["opsets"]:  # the model has no export at o (export_models.MIN_OPSET)
            skipped.append(o)
            continue
        if o != top and not all_opsets and not meta["dynamic"]:
            forms = operator_forms(os.path.join(cache, meta["name"], "opset%d.onnx" % o))
            new = forms - seen.setdefault(o, set())
            seen[o] |= forms
            if not new:
                skipped.append(o)
                continue
        run.append(o)
    return run, skipped


def exports(cache, names, full, opsets):
    """Runs export_models.py over names in one process and yields each
    model's meta as soon as it is exported (or found in the cache), so that
    tgc work on the first models overlaps the export of the next. Yields
    (name, meta or None, error text)."""
    if not names:
        return
    cmd = [PYTHON, os.path.join(HERE, "export_models.py"), "--out", cache, "--threads", "1",
           "--opsets", ",".join(map(str, opsets))]
    cmd += sum((["--model", n] for n in names), [])
    if full:
        cmd.append("--full")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err_lines = []
    t = threading.Thread(target=lambda: err_lines.extend(p.stderr))
    t.start()
    done = set()
    for line in p.stdout:
        name = line.split(" ", 1)[0]
        if name in names:
            with open(os.path.join(cache, name, "meta.json")) as f:
                done.add(name)
                yield name, json.load(f), line.rstrip()
    p.wait()
    t.join()
    err = "".join(err_lines)
    for n in names:
        if n not in done:
            at = err.find(n + ": export failed")
            mine = err[at:] if at >= 0 else err
            nxt = mine.find(": export failed", len(n) + 16)
            if at >= 0 and nxt >= 0:
                mine = mine[:mine.rfind("\n", 0, nxt) + 1]
            yield n, None, "export_models.py exit %s: %s" % (p.returncode, tail(mine, 3000))


# ---- malformed files ---------------------------------------------------------

def malformed_job(tgc, work, case):
    job = Job(case["name"])
    CPU.seconds = 0.0
    name, path, expect = case["name"], case["path"], case["expect"]
    out_dir = os.path.join(work, "malformed_out", name)
    os.makedirs(out_dir, exist_ok=True)
    tg = os.path.join(out_dir, name + ".tg")
    for cmd, what in (([tgc, "import", path, "-o", tg], "import"), ([tgc, "check", path], "check")):
        label = "malformed %s: tgc %s" % (name, what)
        rc, out, err, _ = run(cmd, timeout=60)
        if not expect:  # the control
            job.check(rc == 0, label + " exits 0", "exit %s; stderr: %s" % (rc, tail(err)))
            continue
        bad = [s for s in SANITIZER if s in err]
        named = all if case.get("expect_all") else any
        ok = rc == 1 and err.strip() and not bad and named(s in err for s in expect)
        job.check(ok, label + " exits 1 naming %s" % (" and " if named is all else " or ").join(
                      repr(s) for s in expect),
                  "%s (%s); stderr: %s" % ("exit %s" % rc if rc is not None else "timeout",
                                           case["what"], tail(err, 600)))
        if what == "import":
            left = [f for f in os.listdir(out_dir)]
            job.check(not left, label + " leaves no output behind", "found %s" % left)
            if ok:
                job.say("  %-30s %s" % (name, err.strip().splitlines()[0][:150]))
    job.cpu = CPU.seconds
    return job


# ---- main --------------------------------------------------------------------

def missing_modules(mods):
    r = subprocess.run([PYTHON, "-c", "import " + ", ".join(mods)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    return None if r.returncode == 0 else r.stderr.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--subset", choices=("full", "asan"), default=os.environ.get("TGC_ONNX_SUBSET", "full"))
    ap.add_argument("--part", choices=("all", "models", "malformed"), default="all")
    ap.add_argument("-k", dest="pattern", default="", help="only models / malformed files whose name contains this")
    ap.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 4))
    ap.add_argument("--cache", default="exports", help="where exports are kept (default ./exports)")
    ap.add_argument("--keep", help="keep the work files in this directory")
    ap.add_argument("--opsets", default="17,13")
    ap.add_argument("--all-opsets", action="store_true",
                    help="every model at every opset (default: lower opsets sampled)")
    ap.add_argument("--full-size", action="store_true", help="the named torchvision models unchanged (slow)")
    a = ap.parse_args()
    tgc = os.path.abspath(a.tgc)
    opsets = [int(o) for o in a.opsets.split(",")]
    t_start = time.monotonic()

    sys.path.insert(0, HERE)
    need = ["onnx", "numpy"]
    why = missing_modules(need)
    if why:
        print("onnx: skipped: %s (the suite needs Debian's python3-onnx to export models and "
              "write malformed files)" % why)
        return SKIP
    import export_models  # noqa: E402  (imports torch; checked above through onnx's deps)
    names = [n for n in export_models.MODELS if a.pattern in n]
    if a.subset == "asan":
        names = [n for n in names if n in ASAN_MODELS]
    if a.part == "malformed":
        names = []
    skipped_tv = missing_modules(["torchvision"])
    if skipped_tv:
        print("onnx: torchvision models skipped: %s (Debian's python3-torchvision)" % skipped_tv)
        names = [n for n in names if n not in export_models.NEEDS_TORCHVISION]
    cache = os.path.abspath(a.cache)
    if a.full_size:
        cache = os.path.join(cache, "full-size")
    os.makedirs(cache, exist_ok=True)
    work = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="tgc-onnx-")
    os.makedirs(work, exist_ok=True)

    c = Checks("onnx")
    n_malformed = 0
    n_skipped = 0
    seen = {}
    cpu = 0.0
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
            futures = []
            if a.part != "models":
                import make_malformed  # noqa: E402
                mdir = os.path.join(work, "malformed")
                shutil.rmtree(mdir, ignore_errors=True)
                listing = [m for m in make_malformed.write(mdir) if a.pattern in m["name"]]
                n_malformed = sum(1 for m in listing if m["expect"])
                futures += [pool.submit(malformed_job, tgc, work, m) for m in listing]
            for name, meta, line in exports(cache, names, a.full_size, opsets):
                if meta is None:
                    c.check(False, "%s: export" % name, line)
                    continue
                print(line, flush=True)
                mine, skipped = sampled_opsets(cache, meta, opsets, seen, a.all_opsets)
                for o in skipped:
                    why = ("no export at this opset" if o not in meta["opsets"]
                           else "no new operator form")
                    print("opset %d: skipped %s (%s)" % (o, name, why), flush=True)
                    n_skipped += 1
                futures.append(pool.submit(model_job, tgc, cache, work, meta, mine, bool(a.keep)))
            for f in futures:
                job = f.result()
                cpu += job.cpu
                for ok, what, detail in job.results:
                    c.check(ok, what, detail)
                for line in job.lines:
                    print(line)
                sys.stdout.flush()
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("onnx: %d models x %d opsets (%d lower-opset runs sampled out), %d malformed files, "
          "%.0f s (tgc: %.0f s of CPU)"
          % (len(names), len(opsets), n_skipped, n_malformed, time.monotonic() - t_start, cpu))
    rc = c.finish()
    if rc == 0 and skipped_tv and a.part != "malformed":
        print("onnx: skipped (not passed): the torchvision models did not run: %s" % skipped_tv)
        return SKIP
    return rc


if __name__ == "__main__":
    sys.exit(main())
