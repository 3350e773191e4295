#!/usr/bin/python3
"""Conv nets: tgc against PyTorch eager and TorchScript, at batch 1 and 16.

    bench/conv.py [--threads T] [--batches 1,16] [--size 224] [--only resnet18,...]
                  [--budget S] [--tgc PATH] [--no-check] [--json FILE] [--keep]
                  [--torch-omp-active]

Models: examples/resnet18.tg, examples/resnet50.tg and examples/mobilenet_v3.tg
(MobileNetV3-Small), with the PyTorch modules of examples/vision_torch.py
(torchvision's architectures; seed 0 weights with random batch norm
statistics) in eval mode. For each model and batch size:

1. builds the graph with tgc (`-D batch=B -D size=S`; tgc is built in
   build-bench/, Release, unless --tgc is given, as bench/run.py does) and
   writes the module's state_dict as safetensors and a random input;
2. unless --no-check, runs the executable on that input and compares its
   logits with PyTorch's: max |diff| <= 1e-4 * max |logits| (f32; the same
   check as tests/models/run_models.py, looser than its per-element one);
3. times, one run each (no interleaved rounds: a quick comparison, not
   bench/run.py's protocol), with the same thread count T everywhere:
   - tgc: `EXE --weights W --random-inputs 0 --bench N --threads T` (the
     executable's median over N runs after its warm-up);
   - PyTorch eager: torch.set_num_threads(T), torch.inference_mode(), the
     module warmed up, the median of N time.perf_counter() runs;
   - TorchScript: torch.jit.optimize_for_inference(torch.jit.freeze(
     torch.jit.script(module))) (oneDNN/MKLDNN convolutions with folded
     batch norm where PyTorch's build has them), warmed up, timed the same way.
   N is chosen per side so that it takes about --budget seconds (default 2).
4. prints a table: milliseconds per run of each and the ratios
   eager / tgc and script / tgc (above 1: tgc is faster).

PyTorch runs with OMP_WAIT_POLICY=PASSIVE unless --torch-omp-active (see
bench/run.py, whose helpers this imports). Exit status 1 when a graph fails to
build or run, or its logits differ from PyTorch's. No timing is asserted.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
# run.py sets OMP_WAIT_POLICY (unless --torch-omp-active is in sys.argv) before
# it imports torch; import it first.
import run as B  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = B.ROOT
sys.path.insert(0, os.path.join(ROOT, "examples"))
import vision_torch as V  # noqa: E402

log, sh, fmt_time = B.log, B.sh, B.fmt_time
MODELS = ["resnet18", "resnet50", "mobilenet_v3"]
CHECK_TOL = 1e-4  # max |tgc - torch| <= CHECK_TOL * max |torch|


def build_case(tgc, name, batch, size, work):
    """Builds the executable, writes weights and input. Returns a dict."""
    d = os.path.join(work, "%s_b%d" % (name, batch))
    os.makedirs(d, exist_ok=True)
    model = V.build(name, seed=0)
    x = V.make_input(name, batch, size, seed=0)
    want = V.write_case(model, x, d)
    exe = os.path.join(d, "model")
    cmd = [tgc, "build", V.graph_path(name), "-o", exe]
    for k, v in V.dims(name, batch, size).items():
        cmd += ["-D", "%s=%d" % (k, v)]
    t0 = time.monotonic()
    sh(cmd)
    return dict(name=name, batch=batch, dir=d, model=model, x=x, want=want, exe=exe,
                weights=os.path.join(d, "model.safetensors"), build_s=time.monotonic() - t0)


def check(case):
    out = os.path.join(case["dir"], "out")
    os.makedirs(out, exist_ok=True)
    sh([case["exe"], "--weights", case["weights"], "--input", "x=" + os.path.join(case["dir"], "x.npy"),
        "--output-dir", out])
    got = np.load(os.path.join(out, "logits.npy")).astype(np.float64)
    want = case["want"].astype(np.float64)
    err, scale = float(np.abs(got - want).max()), float(np.abs(want).max())
    return err, scale, err <= CHECK_TOL * scale


def tgc_time(case, threads, budget):
    base = [case["exe"], "--weights", case["weights"], "--random-inputs", "0", "--threads", str(threads)]
    est = B.parse_bench(sh(base + ["--bench", "3"]))["median_us"]
    return B.parse_bench(sh(base + ["--bench", str(B.runs_for(est, budget))]))


def torch_time(fn, x, budget):
    est = B.torch_warmup(fn, (x,), budget)
    return B.torch_runs(fn, (x,), B.runs_for(est, budget))


def scripted(model):
    with torch.no_grad():
        m = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model.eval())))
    return m


def add_common_args(ap, models):
    """The options conv.py and onnx.py share."""
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(models))
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timed runs per side")
    ap.add_argument("--tgc", help="tgc binary (default: build build-bench/tgc)")
    ap.add_argument("--no-check", action="store_true", help="skip the comparison with PyTorch")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--torch-omp-active", action="store_true",
                    help="leave OMP_WAIT_POLICY alone in the PyTorch process (default: PASSIVE)")


def apply_common_args(ap, a, models):
    """Sets PyTorch's and OpenBLAS's threads to --threads; returns the
    models (--only, checked) and the batch sizes."""
    torch.set_num_threads(a.threads)
    try:  # torch.set_num_threads does not reach Debian's OpenBLAS (bench/run.py)
        import ctypes
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(a.threads)
    except OSError:
        pass
    chosen = a.only.split(",") if a.only else models
    for m in chosen:
        if m not in models:
            ap.error("unknown model %r (choose from %s)" % (m, ", ".join(models)))
    return chosen, [int(b) for b in a.batches.split(",")]


def print_timings(rows, width):
    """The table of times and ratios, and the geometric mean of eager/tgc."""
    def ms(us):
        return "%9.2f" % (us / 1000) if us else "%9s" % "-"

    def ratio(num, den):
        return "%7.2f" % (num / den) if num and den else "%7s" % "-"

    print("%-*s %5s %9s %9s %9s %7s %7s  %s" % (width, "model", "batch", "tgc ms", "eager ms",
                                               "script ms", "eager/", "script/", "check"))
    print("%-*s %5s %9s %9s %9s %7s %7s" % (width, "", "", "", "", "", "tgc", "tgc"))
    for r in rows:
        chk = r.get("error") or ("-" if "match" not in r else
                                 "%s %.1e" % ("ok" if r["match"] else "MISMATCH", r["max_abs_diff"]))
        print("%-*s %5d %s %s %s %s %s  %s" % (width, r["model"], r["batch"], ms(r.get("tgc_us")),
                                               ms(r.get("eager_us")), ms(r.get("script_us")),
                                               ratio(r.get("eager_us"), r.get("tgc_us")),
                                               ratio(r.get("script_us"), r.get("tgc_us")), chk))
    ratios = [r["eager_us"] / r["tgc_us"] for r in rows if r.get("tgc_us") and r.get("eager_us")]
    if ratios:
        print("geometric mean eager/tgc: %.2f" % statistics.geometric_mean(ratios))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(ap, MODELS)
    ap.add_argument("--size", type=int, default=224, help="image side (default 224)")
    a = ap.parse_args()
    T = a.threads
    models, batches = apply_common_args(ap, a, MODELS)
    tgc = B.build_tgc(a)
    work = tempfile.mkdtemp(prefix="tgc-bench-conv-")
    rows, failed = [], False
    try:
        for name in models:
            script = None
            for batch in batches:
                log("%s batch %d: building ..." % (name, batch))
                r = dict(model=name, batch=batch)
                rows.append(r)
                try:
                    case = build_case(tgc, name, batch, a.size, work)
                except RuntimeError as e:
                    log("  build failed: %s" % e)
                    r["error"], failed = "build failed", True
                    continue
                r["build_s"] = case["build_s"]
                if not a.no_check:
                    try:
                        err, scale, ok = check(case)
                    except RuntimeError as e:
                        r["error"], failed = "run failed", True
                        log("  run failed: %s" % e)
                        continue
                    r.update(max_abs_diff=err, max_abs_logit=scale, match=ok)
                    log("  logits: max |tgc - torch| = %.2e (max |torch| %.3g)%s"
                        % (err, scale, "" if ok else "  MISMATCH"))
                    failed |= not ok
                log("  timing tgc ...")
                r["tgc_us"] = tgc_time(case, T, a.budget)["median_us"]
                log("  timing PyTorch eager ...")
                r["eager_us"] = torch_time(case["model"], case["x"], a.budget)["median_us"]
                log("  timing TorchScript (script + freeze + optimize_for_inference) ...")
                try:
                    if script is None:
                        script = scripted(case["model"])
                    r["script_us"] = torch_time(script, case["x"], a.budget)["median_us"]
                except Exception as e:  # noqa: BLE001 (report, keep the other columns)
                    log("  TorchScript failed: %s" % str(e).splitlines()[0])
                    r["script_us"] = None
    finally:
        if a.keep:
            log("work files kept in " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)

    print("conv nets, %s; threads=%d (tgc --threads, torch.set_num_threads); image %dx%d; "
          "PyTorch %s, OMP_WAIT_POLICY=%s; load %s"
          % (time.strftime("%Y-%m-%d %H:%M"), T, a.size, a.size, torch.__version__,
             os.environ.get("OMP_WAIT_POLICY", "(unset)"), B.loadavg()))
    print_timings(rows, 14)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(threads=T, size=a.size, rows=rows), f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
