#!/usr/bin/python3
"""ONNX models: tgc against ONNX Runtime, PyTorch eager and TorchScript.

    bench/onnx.py [--threads T] [--batches 1,16] [--only resnet50,...] [--budget S]
                  [--tgc PATH] [--no-check] [--no-ort] [--ort DIR] [--baseline FILE]
                  [--json FILE] [--keep] [--torch-omp-active]

Models (issue 25; bench/onnx_models.py defines them): torchvision's
resnet50, mobilenet_v3_large, efficientnet_b0, convnext_tiny,
regnet_y_800mf and vit_b_16 at 224x224, and bert4, a 4-layer BERT-base
encoder from hidden states at seq 128; random weights, eval mode. For each
model:

1. `torch.onnx.export` at opset 17 with a dynamic batch axis, then
   `tgc import MODEL.onnx -o MODEL.tg` (the weights go to MODEL.safetensors);
   the wall time of the import and of `tgc build MODEL.tg -D batch=B` (first
   batch) is printed; its FLOPs per sample are counted on the ONNX graph
   (onnx_models.count_flops: Conv, MatMul, Gemm; times B for batch B);
2. per batch size B: `tgc build MODEL.tg -D batch=B`, one random input
   (x.npy), and unless --no-check, the executable's output and ONNX
   Runtime's on that input against the torch module's: max |diff| <= 1e-4 *
   max |output| (f32) for each;
3. times, with the same thread count T everywhere and one after the other
   (not interleaved: run it on an idle machine):
   - tgc: the executable's median (`--bench N --threads T`);
   - ORT: ONNX Runtime 1.30 (onnxruntime-node, CPU) on the same .onnx file
     and the same x.npy through bench/ort_run.js: intraOpNumThreads T,
     interOpNumThreads 1, graphOptimizationLevel "all"; 3 warm-up runs, then
     the median of N awaited session.run calls (Node's process.hrtime);
   - PyTorch eager (torch.inference_mode()) and TorchScript
     (torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(m))),
     traced instead when scripting fails), as bench/conv.py does;
   N is chosen per side so that it takes about --budget seconds.
4. measures the machine's f32 GEMM limit with T threads (bench/limits.c):
   OpenBLAS's cblas_sgemm and oneDNN's dnnl_sgemm at 1024^3 and at
   2048x768x3072 (a transformer's feed-forward at 16 x 128 tokens); the
   limit is the fastest median of the four.

The table: tgc, ORT, eager and TorchScript ms; ORT/tgc and eager/tgc (above
1: tgc is faster); tgc's GFLOP/s (the counted FLOPs over tgc's median) and
its fraction of the GEMM limit; the check. Then the geometric mean of
ORT/tgc per batch and over all rows, and issue 25's targets, met / NOT MET:
- every model >= 1.0x ONNX Runtime at every batch;
- the geometric mean of ORT/tgc >= 1.25x (per batch and over all rows);
- ResNet-50 at batch 16 >= 0.85 of the GEMM limit;
- no model slower than before against PyTorch eager: with --baseline FILE
  (an earlier run's --json), each row's eager/tgc >= 0.95 of the baseline's
  (5% for the noise of a run); "?" without one.

ORT needs bench/setup_ort.sh (npm, once; it installs into bench/.ort/);
when it is missing the script says so and the ORT column is "-" (--no-ort
skips it outright). PyTorch and the executables run with
OMP_WAIT_POLICY=PASSIVE unless --torch-omp-active (see bench/run.py). Exit
status 1 when a step fails or an output differs. No timing is asserted.
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
import run as B  # noqa: E402  (sets OMP_WAIT_POLICY before torch is imported)
import conv as C  # noqa: E402
import onnx_models as M  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

log, sh = B.log, B.sh
MODELS = M.MODELS
CHECK_TOL = 1e-4
ORT_DIR = os.path.join(HERE, ".ort")
# (library, shape) of limits.c's GEMMs: square, and a transformer's FFN;
# OpenBLAS's, oneDNN's dnnl_sgemm and its matmul primitive (made once, as
# the runtime keeps it) side by side: the fastest is the machine's limit.
GEMMS = ["sgemm:1024", "dnnl_sgemm:1024", "dnnl_matmul:1024", "sgemm:2048x768x3072",
         "dnnl_sgemm:2048x768x3072", "dnnl_matmul:2048x768x3072"]
BASELINE_SLACK = 0.95


def timed(cmd):
    t0 = time.monotonic()
    sh(cmd)
    return time.monotonic() - t0


def scripted(name, model):
    try:
        return C.scripted(model)
    except Exception:  # noqa: BLE001 (some torchvision models do not script in 1.13)
        x = M.make_input(name, 1, 0)
        with torch.no_grad():
            return torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, x)))


def compare(got, want):
    """(max |diff|, max |want|, within CHECK_TOL)."""
    err, scale = float(np.abs(got - want).max()), float(np.abs(want).max())
    return err, scale, err <= CHECK_TOL * scale


def ort_available(a):
    if a.no_ort:
        return False
    if shutil.which("node") is None:
        log("ORT column skipped: node is not installed")
        return False
    if not os.path.isdir(os.path.join(a.ort, "node_modules", "onnxruntime-node")):
        log("ORT column skipped: %s has no onnxruntime-node; run bench/setup_ort.sh" % a.ort)
        return False
    return True


def ort_time(a, onnx_path, x_npy, out_dir):
    """bench/ort_run.js on the file and input; writes the output to out_dir."""
    out = sh(["node", os.path.join(HERE, "ort_run.js"), "--model", onnx_path, "--input",
              "x=" + x_npy, "--threads", str(a.threads), "--budget", str(a.budget),
              "--output-dir", out_dir, "--ort", a.ort])
    return json.loads(out.strip().splitlines()[-1])


def gemm_limit(threads, seconds, work):
    """{what: median GFLOP/s} of GEMMS on limits.c, the ones it can run."""
    lims = B.Limits(B.build_limits(work), threads)
    got = {}
    for what in GEMMS:
        try:
            got[what] = lims.measure(what, seconds)[0]
        except RuntimeError:  # dnnl_sgemm: limits.c was built without oneDNN
            log("  %s: not measured" % what)
    return got


def run_model(a, name, batches, tgc, use_ort, work, rows, imports):
    """Every step for one model; appends to rows and imports. Returns False
    when something failed."""
    ok_all = True
    d = os.path.join(work, name)
    os.makedirs(d)
    model = M.make_model(name)
    onnx_path, tg = os.path.join(d, "model.onnx"), os.path.join(d, "model.tg")
    weights = os.path.join(d, "model.safetensors")
    out_name = M.output_name(name)
    log("%s: exporting ..." % name)
    M.export(name, model, onnx_path)
    imp = dict(model=name)
    imports.append(imp)
    # Exact: every counted op is per sample (verified at batch 1 and 2).
    imp["flops_per_sample"] = M.count_flops(name, model, 1)
    try:
        imp["import_s"] = timed([tgc, "import", onnx_path, "-o", tg])
    except RuntimeError as e:
        log("  import failed: %s" % e)
        imp["error"] = "import failed"
        return False
    script = None
    for batch in batches:
        r = dict(model=name, batch=batch, flops=imp["flops_per_sample"] * batch)
        rows.append(r)
        exe = os.path.join(d, "b%d" % batch)
        log("%s batch %d: building ..." % (name, batch))
        try:
            r["build_s"] = timed([tgc, "build", tg, "-D", "batch=%d" % batch, "-o", exe])
        except RuntimeError as e:
            log("  build failed: %s" % e)
            r["error"], ok_all = "build failed", False
            continue
        imp.setdefault("build_s", r["build_s"])
        x = M.make_input(name, batch, batch)
        case = dict(exe=exe, weights=weights, dir=os.path.join(d, "b%d_run" % batch))
        os.makedirs(case["dir"])
        x_npy = os.path.join(case["dir"], "x.npy")
        np.save(x_npy, x.numpy())
        want = None
        if not a.no_check:
            with torch.inference_mode():
                want = model(x).double().numpy()
            try:
                sh([exe, "--weights", weights, "--input", "x=" + x_npy, "--output-dir", case["dir"]])
            except RuntimeError as e:
                r["error"], ok_all = "run failed", False
                log("  run failed: %s" % e)
                continue
            got = np.load(os.path.join(case["dir"], out_name + ".npy")).astype(np.float64)
            err, scale, ok = compare(got, want)
            r.update(max_abs_diff=err, max_abs_out=scale, match=ok)
            log("  %s: max |tgc - torch| = %.2e (max |torch| %.3g)%s"
                % (out_name, err, scale, "" if ok else "  MISMATCH"))
            ok_all &= ok
        log("  timing tgc ...")
        r["tgc_us"] = C.tgc_time(case, a.threads, a.budget)["median_us"]
        if use_ort:
            log("  timing ONNX Runtime ...")
            ort_out = os.path.join(case["dir"], "ort")
            os.makedirs(ort_out)
            try:
                o = ort_time(a, onnx_path, x_npy, ort_out)
                r["ort_us"] = o["median_us"]
                if want is not None:
                    got = np.load(os.path.join(ort_out, out_name + ".npy")).astype(np.float64)
                    err, _, ok = compare(got, want)
                    r.update(ort_max_abs_diff=err, ort_match=ok)
                    log("  ORT: max |ort - torch| = %.2e%s" % (err, "" if ok else "  MISMATCH"))
                    ok_all &= ok
            except RuntimeError as e:
                log("  ORT failed: %s" % str(e).splitlines()[0])
                r["ort_error"], ok_all = "ORT failed", False
        log("  timing PyTorch eager ...")
        r["eager_us"] = C.torch_time(model, x, a.budget)["median_us"]
        log("  timing TorchScript ...")
        try:
            if script is None:
                script = scripted(name, model)
            r["script_us"] = C.torch_time(script, x, a.budget)["median_us"]
        except Exception as e:  # noqa: BLE001 (report, keep the other columns)
            log("  TorchScript failed: %s" % str(e).splitlines()[0])
            r["script_us"] = None
    return ok_all


def ratio(r, num):
    return r[num] / r["tgc_us"] if r.get(num) and r.get("tgc_us") else None


def targets(rows, batches, limit, baseline):
    """Issue 25's targets: [(description, met or None, detail)]."""
    out = []
    ort = [(r, ratio(r, "ort_us")) for r in rows]
    missing = [r for r, v in ort if v is None]
    slow = ["%s b%d %.2f" % (r["model"], r["batch"], v) for r, v in ort if v is not None and v < 1.0]
    out.append((">= 1.0x ORT, every model and batch", False if slow else None if missing else True,
                "; ".join(slow + (["%d rows without ORT" % len(missing)] if missing else []))))
    groups = [("batch %d" % b, [v for r, v in ort if r["batch"] == b]) for b in batches]
    for label, vs in groups + [("all rows", [v for _, v in ort])]:
        if vs and None not in vs:
            gm = statistics.geometric_mean(vs)
            out.append((">= 1.25x ORT geomean, " + label, gm >= 1.25, "%.2f" % gm))
        else:
            out.append((">= 1.25x ORT geomean, " + label, None, "rows missing"))
    r50 = [r for r in rows if r["model"] == "resnet50" and r["batch"] == 16]
    if r50 and r50[0].get("tgc_us") and limit:
        frac = r50[0]["flops"] / r50[0]["tgc_us"] / 1e3 / limit
        out.append((">= 0.85 of the GEMM limit, resnet50 b16", frac >= 0.85,
                    "%.2f of %.1f GFLOP/s" % (frac, limit)))
    else:
        out.append((">= 0.85 of the GEMM limit, resnet50 b16", None, "not measured"))
    if baseline is None:
        out.append(("eager/tgc >= before (--baseline)", None, "no --baseline"))
    else:
        base = {(b.get("model"), b.get("batch")): ratio(b, "eager_us")
                for b in baseline["rows"] if isinstance(b, dict)}
        worse, compared = [], 0
        for r in rows:
            now, then = ratio(r, "eager_us"), base.get((r["model"], r["batch"]))
            if now is None or then is None:
                continue
            compared += 1
            if now < BASELINE_SLACK * then:
                worse.append("%s b%d %.2f < %.2f" % (r["model"], r["batch"], now, then))
        out.append(("eager/tgc >= %.2f x baseline's" % BASELINE_SLACK,
                    not worse if compared else None,
                    "; ".join(worse) if compared else "no row in common"))
    return out


def report(a, rows, imports, gemms, limit, baseline, batches):
    T = a.threads
    print("ONNX models, %s; threads=%d; image %dx%d, BERT seq %d; PyTorch %s, ONNX Runtime %s, "
          "OMP_WAIT_POLICY=%s; load %s"
          % (time.strftime("%Y-%m-%d %H:%M"), T, M.SIZE, M.SIZE, M.SEQ, torch.__version__,
             "1.30.0 (onnxruntime-node)" if any("ort_us" in r for r in rows) else "-",
             os.environ.get("OMP_WAIT_POLICY", "(unset)"), B.loadavg()))
    print("f32 GEMM, %d threads, median GFLOP/s: %s; limit %s"
          % (T, ", ".join("%s %.1f" % (k, v) for k, v in gemms.items()) or "-",
             "%.1f" % limit if limit else "-"))
    print("%-19s %9s %9s %9s %9s" % ("model", "import s", "build s", "total s", "GFLOP/img"))
    for i in imports:
        tot = i.get("import_s", 0) + i.get("build_s", 0)
        print("%-19s %9s %9s %9.2f %9.3f%s"
              % (i["model"], "%.2f" % i["import_s"] if "import_s" in i else "-",
                 "%.2f" % i["build_s"] if "build_s" in i else "-", tot,
                 i["flops_per_sample"] / 1e9, "  " + i["error"] if "error" in i else ""))

    def ms(us):
        return "%9.2f" % (us / 1000) if us else "%9s" % "-"

    def rat(v):
        return "%7.2f" % v if v else "%7s" % "-"

    print("%-19s %5s %9s %9s %9s %9s %7s %7s %8s %6s  %s"
          % ("model", "batch", "tgc ms", "ORT ms", "eager ms", "script ms", "ORT/", "eager/",
             "tgc", "of", "check (tgc; ORT)"))
    print("%-19s %5s %9s %9s %9s %9s %7s %7s %8s %6s"
          % ("", "", "", "", "", "", "tgc", "tgc", "GFLOP/s", "GEMM"))
    for r in rows:
        chk = r.get("error") or ("-" if "match" not in r else
                                 "%s %.1e" % ("ok" if r["match"] else "MISMATCH", r["max_abs_diff"]))
        if "ort_match" in r:
            chk += "; %s %.1e" % ("ok" if r["ort_match"] else "MISMATCH", r["ort_max_abs_diff"])
        elif "ort_error" in r:
            chk += "; " + r["ort_error"]
        gf = r["flops"] / r["tgc_us"] / 1e3 if r.get("tgc_us") else None
        r["tgc_gflops"] = gf
        print("%-19s %5d %s %s %s %s %s %s %8s %6s  %s"
              % (r["model"], r["batch"], ms(r.get("tgc_us")), ms(r.get("ort_us")),
                 ms(r.get("eager_us")), ms(r.get("script_us")), rat(ratio(r, "ort_us")),
                 rat(ratio(r, "eager_us")), "%.1f" % gf if gf else "-",
                 "%.2f" % (gf / limit) if gf and limit else "-", chk))
    for b in batches:
        vs = [ratio(r, "ort_us") for r in rows if r["batch"] == b and ratio(r, "ort_us")]
        es = [ratio(r, "eager_us") for r in rows if r["batch"] == b and ratio(r, "eager_us")]
        print("batch %d: geometric mean ORT/tgc %s, eager/tgc %s"
              % (b, "%.2f" % statistics.geometric_mean(vs) if vs else "-",
                 "%.2f" % statistics.geometric_mean(es) if es else "-"))
    result = targets(rows, batches, limit, baseline)
    print("targets (issue 25):")
    for desc, met, detail in result:
        print("  %-44s %s%s" % (desc, "?" if met is None else "met" if met else "NOT MET",
                                " (%s)" % detail if detail else ""))
    return [dict(target=d, met=m, detail=t) for d, m, t in result]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    C.add_common_args(ap, MODELS)
    ap.add_argument("--no-ort", action="store_true", help="leave out the ONNX Runtime column")
    ap.add_argument("--ort", default=ORT_DIR,
                    help="folder with node_modules/onnxruntime-node (default bench/.ort, "
                         "which bench/setup_ort.sh fills)")
    ap.add_argument("--baseline", help="an earlier run's --json: eager/tgc must not drop below it")
    a = ap.parse_args()
    if a.threads < 1 or not a.budget > 0:
        ap.error("--threads must be at least 1 and --budget positive")
    baseline = None
    if a.baseline:
        try:
            with open(a.baseline) as f:
                baseline = json.load(f)
            if not isinstance(baseline.get("rows"), list):
                raise ValueError("no \"rows\" list")
        except (OSError, ValueError, AttributeError) as e:
            ap.error("--baseline %s: expected an earlier bench/onnx.py --json file (%s)"
                     % (a.baseline, e))
    models, batches = C.apply_common_args(ap, a, MODELS)
    use_ort = ort_available(a)
    tgc = B.build_tgc(a)
    work = tempfile.mkdtemp(prefix="tgc-bench-onnx-")
    rows, imports, failed = [], [], False
    try:
        log("f32 GEMM limit (limits.c) ...")
        gemms = gemm_limit(a.threads, min(1.0, a.budget), work)
        limit = max(gemms.values()) if gemms else None
        for name in models:
            failed |= not run_model(a, name, batches, tgc, use_ort, work, rows, imports)
    finally:
        if a.keep:
            log("work files kept in " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    met = report(a, rows, imports, gemms, limit, baseline, batches)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(threads=a.threads, gemm_gflops=gemms, gemm_limit_gflops=limit,
                           imports=imports, rows=rows, targets=met), f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
