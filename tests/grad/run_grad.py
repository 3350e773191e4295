#!/usr/bin/python3
"""Gradient suite: tgc's reverse-mode gradients against torch.autograd.

Every case is one `.tg` graph with a 0-d float output `loss`. tgc builds
and runs it with `tgc run FILE --train loss --optimizer none`, which writes
OUT/loss.npy and OUT/NAME.grad.npy for every trainable param (floating, not
--freeze'd) the loss depends on; each is compared with the gradient
torch.autograd computes for the same graph, inputs and weights.

How the reference is computed
-----------------------------
The graph text is the reference program, evaluated by the oracle's
evaluator through the differential suite (tests/diff/diff.py, imported, not
copied): diff.materialize draws the inputs and weights and writes them
(.npy, safetensors) exactly as the diff suite does; diff.evaluate then
evaluates the graph again, fed with the same values, the trainable params
fed as leaf tensors with requires_grad=True. `loss.backward()` gives each
param's .grad. The set of NAME.grad.npy files tgc writes must be exactly
the set of trainable params whose .grad is defined.

f32 cases are differentiated in f64: the graph's f32 declarations are
widened to f64 and fed the same (exactly converted) f32 values, so the
reference carries no rounding error of its own and the tolerance below
bounds tgc's f32 error alone. Cases with explicit casts or mixed dtypes
(widen=False) use torch's own f32 autograd. f64 cases are f64 on both sides.

Op cases (cases_ops.py) write one result `y` (or several) of the op under
test; the suite appends a random cotangent input `gy_y` of y's shape and
`output loss = (y * gy_y).sum()`, so the op's vector-Jacobian product is
exercised with a random vector rather than ones. Graph cases
(cases_graphs.py) carry their own loss.

Tolerances: the one place they are set
--------------------------------------
Per element, |got - ref| <= rtol * |ref| + atol * scale, where scale is
the largest |ref| of that gradient (1 when the gradient is all zeros):
gradients are sums with cancellation (layer_norm's sums to ~0 over a row,
softmax's likewise), so an element near 0 is judged against the size of
its tensor, not its own. NaN must meet NaN, an infinity the same infinity.
  f64: rtol 1e-10, atol 1e-12. f64 on both sides; sums of up to a few
       thousand terms taken in another order differ by ~1e-13 of the scale.
  f32: rtol 1e-4, atol 1e-5. tgc in f32 against the exact (f64) gradient.
       One f32 rounding is 6e-8 relative; a gradient here is a chain of up
       to ~50 ops (the transformer block) with sums of up to ~1000 terms,
       whose rounding grows like sqrt(n) per sum: ~1e-6 of the scale, and
       a few times that where norms and softmaxes cancel. The margin above
       that covers other BLAS / oneDNN summation orders. Measured: tgc's
       worst f32 error is ~10% of this tolerance (the transformer block
       and the conv net), PyTorch's own f32 autograd ~15% (the conv net;
       `--self-check` runs that check on every f32 case).
A case may scale both by its `factor` (cases_ops.py says where and why:
only f64 hardsigmoid, where PyTorch itself rounds 1/6 to f32).

Usage: run_grad.py --tgc build/tgc [-k SUBSTRING] [--jobs N] [--keep DIR]
                   [--subset asan] [--self-check] [--list] [-v]
One line per failing case (its name and the worst element of the first
mismatching gradient), then `time: S s` and `grad: N passed, M failed`;
exit status 1 if M > 0, 77 (skipped) when torch cannot be imported.
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
import zlib

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
sys.path.insert(0, HERE)

try:
    import numpy as np
    import torch
except ImportError as e:  # Debian's python3-torch is missing: skip (ctest SKIP_RETURN_CODE)
    print("grad: skipped: %s (the suite needs /usr/bin/python3 with torch)" % e)
    sys.exit(77)

import diff  # noqa: E402
import oracle  # noqa: E402

# dtype -> (rtol, atol); atol is relative to the gradient's largest |value|.
TOLERANCE = {
    "f64": (1e-10, 1e-12),
    "f32": (1e-4, 1e-5),
}
NP_DTYPE = {"f64": np.float64, "f32": np.float32}
TIMEOUT = 300  # seconds per tgc call (sanitizer builds are slow)


class GradCase:
    """One graph. dt: the float dtype substituted for {dt} in src. dims:
    {name: (lo, hi)} graph dims drawn per case (seeded by the name), or
    fixed ints. ys: op results given a random cotangent and summed into
    `loss` (op cases); None: src has its own `output loss`. inputs: diff
    input specs ({name: spec}; {dim} placeholders are formatted with the
    drawn dims; a key "re:PATTERN" applies to every declared name it
    matches). freeze: --freeze names, or "re:PATTERN" over the params'
    names (they get no gradient on either side). widen: differentiate f32
    in f64 (see the header). factor: scales the tolerance. defines: -D
    flags. asan: part of the sanitizer subset."""

    def __init__(self, name, src, dt, dims=None, ys=("y",), inputs=None, freeze=(), widen=True,
                 factor=1, defines=None, asan=False, group="ops"):
        self.name, self.src, self.dt, self.dims, self.ys = name, src, dt, dict(dims or {}), ys
        self.inputs, self.freeze, self.widen = dict(inputs or {}), freeze, widen
        self.factor, self.defines, self.asan, self.group = factor, dict(defines or {}), asan, group


def draw_dims(case):
    rng = np.random.default_rng(zlib.crc32(("dims:" + case.name).encode()))
    out = {}
    for k, v in case.dims.items():
        out[k] = int(rng.integers(v[0], v[1] + 1)) if isinstance(v, tuple) else int(v)
    return out


def graph_source(case):
    """(src, input specs): the case's full graph, the graph line holding
    the drawn dims; op cases get their cotangents and loss appended."""
    dims = draw_dims(case)
    body = case.src.strip("\n").replace("{dt}", case.dt)
    specs = {k: v.format(**dims) for k, v in case.inputs.items()}
    dimlist = "(%s)" % ", ".join("%s = %d" % kv for kv in dims.items()) if dims else ""
    head = "graph %s%s\n" % (re.sub(r"\W", "_", case.name), dimlist)
    if re.search(r"^graph\b", body, re.M):
        head = ""
    src = head + body + "\n"
    if any(k.startswith("re:") for k in specs):  # patterns over the declared names
        names = [d[1] for d in diff.declarations(src, case.defines)]
        for k in [k for k in specs if k.startswith("re:")]:
            spec = specs.pop(k)
            for n in names:
                if re.search(k[3:], n) and n not in specs:
                    specs[n] = spec
    if case.ys is None:
        return src, specs
    # the shapes of the results: one evaluation of the forward graph
    shapes = {}
    _, _, records = oracle.evaluate(src, case.defines)
    for r in records:
        if r["name"] in case.ys:
            shapes[r["name"]] = (r["dtype"], r["shape"])
    terms = []
    for y in case.ys:
        dt, shape = shapes[y]
        src += "input gy_%s : %s[%s]\n" % (y, dt, ", ".join(str(s) for s in shape))
        terms.append("(%s * gy_%s).sum()" % (y, y))
    src += "output loss = %s\n" % " + ".join(terms)
    return src, specs


def widen(src):
    return re.sub(r"(:\s*)f32(\s*\[)", r"\1f64\2", src)


def frozen(case, m):
    """The --freeze names: case.freeze, its pattern resolved over m's params."""
    if isinstance(case.freeze, str) and case.freeze.startswith("re:"):
        return [n for kind, n, _ in m.files if kind == "param" and re.search(case.freeze[3:], n)]
    return list(case.freeze)


def reference_grads(case, m, src, wide):
    """(loss, {param: grad}) from torch.autograd, fed m's values."""
    feed, leaves, freeze = [], {}, frozen(case, m)
    for (kind, name, _), t in zip(m.files, m.feed):
        t = t.detach().clone()
        if wide and t.dtype == torch.float32:
            t = t.to(torch.float64)
        if kind == "param" and t.dtype.is_floating_point and name not in freeze:
            t.requires_grad_(True)
            leaves[name] = t
        feed.append(t)
    outs = diff.evaluate(widen(src) if wide else src, case.defines, feed)
    loss = outs["loss"]
    loss.backward()
    return loss.detach(), {n: t.grad for n, t in leaves.items() if t.grad is not None}


def compare(name, ref, got, dt, factor, margin=None):
    """None when got (np.ndarray) matches ref (a torch tensor), else a
    message. margin (a list), when given, receives the worst error / allowed."""
    exp = ref.detach().to(torch.float64).numpy()
    if got.dtype != NP_DTYPE[dt]:
        return "%s: dtype %s, expected %s" % (name, got.dtype, dt)
    if list(got.shape) != list(exp.shape):
        return "%s: shape %s, expected %s" % (name, list(got.shape), list(exp.shape))
    if got.size == 0:
        return None
    g = got.astype(np.float64)
    rtol, atol = TOLERANCE[dt]
    fin = np.isfinite(exp)
    scale = np.max(np.abs(exp[fin])) if fin.any() else 0.0
    scale = scale if scale > 0 else 1.0
    allowed = (rtol * np.abs(exp) + atol * scale) * factor
    err = np.where(fin & np.isfinite(g), np.abs(g - exp), np.inf)
    same_special = ~fin & ((np.isnan(exp) & np.isnan(g)) | (exp == g))
    err = np.where(same_special, 0.0, err)
    bad = err > allowed
    if margin is not None:
        margin.append(float(np.max(np.where(np.isfinite(err), err / allowed, np.inf))))
    if not bad.any():
        return None
    i = np.unravel_index(int(np.argmax(np.where(bad, err / allowed, -1))), g.shape)
    return ("%s: %d of %d elements differ; worst at %s: got %r, expected %r "
            "(|diff| %.3g, allowed %.3g; largest |grad| %.3g)") % (
        name, int(bad.sum()), got.size, [int(x) for x in i], g[i].item(), exp[i].item(),
        abs(g[i] - exp[i]), allowed[i], scale)


def _run(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "timeout after %d s" % TIMEOUT
    return p.returncode, p.stderr.decode("utf-8", "replace")


def run_case(case, tgc, workdir):
    """(status, messages): status 'pass' or 'fail'."""
    src, specs = graph_source(case)
    dcase = diff.DiffCase(case.name, src, inputs=specs, defines=case.defines, add_outputs=False)
    m = diff.materialize(dcase, workdir if tgc != "self-check" else None)
    wide = case.widen and case.dt == "f32"
    loss, grads = reference_grads(case, m, src, wide)
    dtypes = {name: oracle.TG_NAME[t.dtype] for (_, name, _), t in zip(m.files, m.feed)}
    dtypes["loss"] = oracle.TG_NAME[m.outs["loss"].dtype]
    if tgc == "self-check":
        # PyTorch's own f32 autograd must pass the f32 tolerance against f64
        _, own = reference_grads(case, m, src, False)
        margin = []
        msgs = [msg for n in grads for msg in [compare(n + ".grad", grads[n],
                                                        diff.tensorio.to_numpy(own[n]),
                                                        dtypes[n], case.factor, margin)] if msg]
        if msgs:
            return "fail", msgs
        return "pass", ["%.3g of the tolerance at worst, over %d gradients"
                        % (max(margin), len(grads))]
    od = os.path.join(m.dir, "out")
    os.makedirs(od, exist_ok=True)
    cmd = [tgc, "run", m.tg] + m.in_args + (["--weights", m.wpath] if m.wpath else []) \
        + ["--output-dir", od, "--train", "loss", "--optimizer", "none"] + m.dflags
    if frozen(case, m):
        cmd += ["--freeze", ",".join(frozen(case, m))]
    rc, err = _run(cmd)
    if rc != 0:
        return "fail", ["tgc run --train %s: %s" % (diff._rc(rc), diff._oneline(err))]
    msgs = []
    written = sorted(f[:-len(".grad.npy")] for f in os.listdir(od) if f.endswith(".grad.npy"))
    if written != sorted(grads):
        msgs.append("gradients written for %s, expected for %s" % (written, sorted(grads)))
    checks = [("loss", loss)] + sorted(grads.items())
    margin = []
    for n, ref in checks:
        fn = os.path.join(od, n + ".npy" if n == "loss" else n + ".grad.npy")
        if n == "loss" and not os.path.exists(fn):
            msgs.append("loss.npy was not written")
        if not os.path.exists(fn):
            continue
        got = np.load(fn, allow_pickle=False)
        msg = compare(n if n == "loss" else n + ".grad", ref, got, dtypes[n], case.factor, margin)
        if msg:
            msgs.append(msg)
    if msgs:
        return "fail", msgs
    # passed: the worst error / allowed, for -v
    return "pass", ["%.3g of the tolerance at worst, over %d gradients" % (max(margin), len(grads))]


def _work(job):
    case, tgc, workdir = job
    t0 = time.time()
    try:
        status, msgs = run_case(case, tgc, workdir)
    except Exception:
        status, msgs = "fail", ["harness error: " + traceback.format_exc().strip().splitlines()[-1],
                                traceback.format_exc()]
    return case.name, status, msgs, time.time() - t0


def _worker_init():
    torch.set_num_threads(1)


def all_cases():
    import cases_ops
    import cases_graphs
    cases = cases_ops.cases(GradCase) + cases_graphs.cases(GradCase, ROOT)
    missing = cases_ops.uncovered(ROOT, [c.src for c in cases if c.group == "graph"])
    assert not missing, "differentiable ops without a gradient case (cases_ops.py): %s" % missing
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, "duplicate case names: %s" % sorted(dup)
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", help="path to the tgc binary")
    ap.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    ap.add_argument("--subset", choices=["full", "asan"],
                    default=os.environ.get("TGC_GRAD_SUBSET", "full"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", help="keep each case's files (graph, inputs, outputs) here")
    ap.add_argument("--self-check", action="store_true",
                    help="check the f32 tolerance: PyTorch's f32 gradients must pass it")
    ap.add_argument("--list", action="store_true", help="print every case's graph and exit")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print the graph of failing cases and the slowest cases")
    args = ap.parse_args()
    if not args.tgc and not (args.self_check or args.list):
        ap.error("--tgc is required (or --self-check, --list)")
    t_start = time.time()
    cases = all_cases()
    if args.subset == "asan":
        cases = [c for c in cases if c.asan]
    if args.pattern:
        cases = [c for c in cases if args.pattern in c.name]
    if args.self_check:
        cases = [c for c in cases if c.dt == "f32" and c.widen]
    if args.list:
        for c in cases:
            src, specs = graph_source(c)
            fr = c.freeze if isinstance(c.freeze, str) else ",".join(c.freeze)
            print("### %s [%s, %s]%s\n%s" % (c.name, c.group, c.dt,
                                              " --freeze " + fr if fr else "", src))
        return 0
    counts = {}
    for c in cases:
        counts[c.group] = counts.get(c.group, 0) + 1
    groups = ", ".join("%s %d" % kv for kv in sorted(counts.items()))
    print("cases: %d (%s)%s" % (len(cases), groups,
          " [asan subset]" if args.subset == "asan" else ""))
    sys.stdout.flush()
    tgc = "self-check" if args.self_check else os.path.abspath(args.tgc)
    if tgc != "self-check" and not (os.path.isfile(tgc) and diff.has_run(tgc)):
        print("FAIL %s has no working `run` subcommand (`tgc run --help` fails)" % args.tgc)
        print("grad: 0 passed, %d failed" % len(cases))
        return 1
    by_name = {c.name: c for c in cases}
    passed = failed = 0
    times, margins = [], []
    workdir = args.keep or tempfile.mkdtemp(prefix="tgc-grad-")
    os.makedirs(workdir, exist_ok=True)
    try:
        jobs = [(c, tgc, workdir) for c in cases]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(max(1, args.jobs), initializer=_worker_init) as pool:
            for name, status, msgs, secs in pool.imap_unordered(_work, jobs):
                times.append((secs, name))
                if status == "pass":
                    passed += 1
                    if msgs:
                        margins.append((float(msgs[0].split()[0]), name, msgs[0]))
                    continue
                failed += 1
                more = ""
                if len(msgs) > 1 and not args.verbose:
                    more = " (and %d more)" % (len(msgs) - 1)
                print("FAIL %s: %s%s" % (name, msgs[0].splitlines()[0], more))
                if args.verbose:
                    for m in msgs[1:]:
                        print("  " + m.replace("\n", "\n  "))
                    src = graph_source(by_name[name])[0].rstrip("\n")
                    print("  | " + src.replace("\n", "\n  | "))
                sys.stdout.flush()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.verbose:
        for secs, name in sorted(times, reverse=True)[:10]:
            print("  slowest: %6.2f s %s" % (secs, name))
        for _, name, msg in sorted(margins, reverse=True)[:15]:
            print("  closest: %s: %s" % (name, msg))
    print("time: %.1f s" % (time.time() - t_start))
    print("grad: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
