#!/usr/bin/env python3
"""The differential corpus on a GPU: tgc's CUDA executables against PyTorch
on CUDA (README.md here says how to run it; prepare.py builds the bundle).

For each case of the bundle (DIR/cases/*/meta.json), in parallel: the
executables (graph.exe, and graph_cg.exe built with --cuda-graph and run
with --bench 2, for the cases that have one) run with the case's inputs and
weights; meanwhile the reference is computed in this process: the case's
graph evaluated statement by statement by the oracle (tests/oracle, through
diff.evaluate) on torch.device("cuda"), fed the very tensors the executable
reads (the .npy inputs, the safetensors weights, the initialisers' values).
Each output is then compared with diff.compare (dtype, shape, NaN/inf
placement, |got - ref| <= (rtol * |ref| + atol) * factor), and a failing
case prints the worst element of its first mismatching output.

The reference on the GPU
------------------------
- The GPU machine's PyTorch (2.x) has CUDA kernels for f16 and bf16 that
  compute in f32 and round once per op, which is what diff.py's reference
  emulates on the CPU (PyTorch 1.13's CPU lacks those kernels). So here the
  ops run natively at their dtype; only a call that PyTorch rejects at a
  low-precision dtype falls back to diff.py's "compute in f32, round once"
  (`--upcast` uses that for every call, as diff.py does on the CPU; it is
  the default with --device cpu).
- TF32 is off (torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32
  False: tgc's cuDNN convolutions run f32 without TF32 too) and f16/bf16 matrix products may not reduce in reduced precision
  (allow_fp16/bf16_reduced_precision_reduction False): PyTorch's f32
  semantics, which tgc must meet.
- Factory calls (zeros, arange...) land on the GPU through
  torch.set_default_device.

Tolerances
----------
The dtype table is diff.py's TOLERANCE (rtol, atol), unchanged:
  f64 (1e-10, 1e-12); f32 (1e-5, 1e-6); f16 (2e-3, 1e-4): 2 ulps;
  bf16 (1.6e-2, 1e-3): 2 ulps. Integers and bool exact.
f16/bf16 stay at 2 ulps because both sides compute in f32 and round once per
op, as on the CPU. Per category the factors are diff.py's FACTOR, with
GPU_SCALE applied on a GPU:
  reduction x2 and long x2: on a GPU neither side sums in the CPU's order:
    tgc's kernels reduce per thread block, then across blocks; PyTorch's
    reductions are tree-shaped and cuBLAS picks its own split-K order per
    shape. Two different orders each err by up to ~log2(n) eps sum|x| (tree)
    and the CPU factors were set for sequential sums against one reference
    order, so twice the CPU's allowance: f32 sums/matmuls 2e-4 rel, whole
    models 2e-3 rel; f16 20 ulps on reductions.
  transcendental x2: CUDA's exp/log/tanh/erf (libdevice, or the fast
    intrinsics) are not the host's libm nor tgc's CPU polynomials; both are
    within a few ulps, x2 keeps the CPU margin over two independent
    implementations.
  exact, default and chain are unchanged (casts and copies are bit-exact on
  any device; a single op rounded once has one right answer).
`--precision P` cases use diff.PRECISION_TOLERANCE, unchanged.

Without a GPU (`--device cpu`): the reference is computed on the CPU (with
--upcast). Bundles of CPU executables (prepare.py --target cpu) then run
the whole comparison here; with CUDA executables, `--expect-no-driver`
requires each executable to exit 1 naming libcuda.so.1 instead (a dry run
of the harness: the references are still computed).

Usage: gpu_diff.py --dir BUNDLE [--device cuda|cpu] [--upcast]
         [--expect-no-driver] [-k SUBSTRING] [--jobs N] [-v]
         [--save-failures FILE.tar.xz]
Last line: `gpu-diff: N passed, M failed`; exit status 1 if M > 0.
"""

import argparse
import concurrent.futures
import json
import os
import re
import struct
import subprocess
import sys
import tarfile
import time
import traceback
import warnings
import zlib

warnings.filterwarnings("ignore")
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
HROOT = os.path.dirname(os.path.dirname(HERE))  # the folder holding tests/
sys.path.insert(0, os.path.join(HROOT, "tests", "oracle"))
sys.path.insert(0, os.path.join(HROOT, "tests", "diff"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import diff  # noqa: E402  (installs its f16/bf16 hooks on the oracle)
import oracle  # noqa: E402

TIMEOUT = 300
GPU_SCALE = {"reduction": 2, "long": 2, "transcendental": 2}
LOWP = (torch.float16, torch.bfloat16)

# --------------------------------------------------------------------------
# Reference set-up
# --------------------------------------------------------------------------

def _native_or_upcast(cls, func, types, args=(), kwargs=None):
    """The op at its own dtype; diff.py's f32-then-round only when PyTorch
    rejects it at a low-precision dtype."""
    try:
        return diff._orig_tf(cls, func, types, args, kwargs)
    except Exception:
        if not any(t.dtype in LOWP for t in diff._tensors((args, kwargs or {}), [])):
            raise
        return diff._orig_tf(cls, diff._lowp(func), types, args, kwargs)


def setup_reference(device, upcast):
    if hasattr(torch.Tensor, "untyped_storage"):
        # PyTorch 2.x: TypedStorage is deprecated; the storage's identity is
        # the same StorageImpl.
        oracle.sid = lambda t: t.untyped_storage()._cdata
    if not upcast:
        oracle.Ref.__torch_function__ = classmethod(_native_or_upcast)
    if device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("gpu-diff: torch.cuda.is_available() is False (use --device cpu "
                             "for a dry run)")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        for flag in ("allow_fp16_reduced_precision_reduction",
                     "allow_bf16_reduced_precision_reduction"):
            if hasattr(torch.backends.cuda.matmul, flag):
                setattr(torch.backends.cuda.matmul, flag, False)
        if not hasattr(torch, "set_default_device"):
            raise SystemExit("gpu-diff: this PyTorch (%s) has no torch.set_default_device "
                             "(2.0 or later is needed on the GPU)" % torch.__version__)
        torch.set_default_device("cuda")
        for k, v in GPU_SCALE.items():
            diff.FACTOR[k] = diff.FACTOR[k] * v


def regenerate(cdir, meta):
    """Draws again the inputs and weights that prepare.py did not ship
    (meta["regen_crc32"]): diff.gen_tensor with the case's seed and specs,
    in declaration order as diff.reference draws them, each required to have
    the CRC-32 recorded at preparation. Writes in_NAME.npy and the weights
    file. Returns None, or why the data cannot be reproduced here."""
    import tensorio
    rng = np.random.default_rng(zlib.crc32(meta["name"].encode()))
    crcs = meta["regen_crc32"]
    weights = []
    for d in meta["decls"]:
        if d["source"] == "init":
            continue
        t = diff.gen_tensor(d["spec"], d["dtype"], d["shape"], rng)
        crc = zlib.crc32(tensorio.tensor_bytes(t)) & 0xFFFFFFFF
        if crc != crcs[d["name"]]:
            return ("%s drawn here (numpy %s, PyTorch %s) differs from the prepared one "
                    "(CRC-32 %08x vs %08x): rebuild the bundle with prepare.py --ship-data "
                    "(and -k or --subset asan to keep it small)" % (
                        d["name"], np.__version__, torch.__version__, crc, crcs[d["name"]]))
        if d["source"] == "input":
            tensorio.write_npy(os.path.join(cdir, meta["inputs"][d["name"]]), t)
        else:
            weights.append((d["name"], t))
    if weights:
        tensorio.write_safetensors(os.path.join(cdir, meta["weights"]), weights)
    return None


def load_feed(cdir, meta):
    """Every declaration's tensor, in order, as the executable sees it."""
    weights = tensorio.read_safetensors(os.path.join(cdir, meta["weights"])) if meta["weights"] else {}
    feed = []
    for d in meta["decls"]:
        td = oracle.TORCH_DTYPE[d["dtype"]]
        if d["source"] == "input":
            t = torch.from_numpy(np.load(os.path.join(cdir, meta["inputs"][d["name"]])))
            t = t.to(td)  # bf16 travels as float32 (exact)
        elif d["source"] == "weights":
            t = weights[d["name"]]
        else:
            t = diff.init_value(d["init"], d["init_args"], d["dtype"], d["shape"])
            if t is None:  # randn/uniform: tgc's own values; only finiteness is checked
                t = torch.zeros(d["shape"], dtype=td)
        assert t.dtype == td and list(t.shape) == list(d["shape"]), \
            "%s: %s%s, declared %s%s" % (d["name"], t.dtype, list(t.shape), d["dtype"], d["shape"])
        feed.append(t)
    return feed


def reference(cdir, meta, device):
    with open(os.path.join(cdir, "graph.tg")) as f:
        src = f.read()
    feed = [t.to(device) for t in load_feed(cdir, meta)]
    outs = diff.evaluate(src, meta["defines"], feed)
    if device == "cuda":
        torch.cuda.synchronize()
    return {n: t.cpu() for n, t in outs.items()}


# --------------------------------------------------------------------------
# Executables
# --------------------------------------------------------------------------

def run_exe(cdir, exe):
    od = os.path.join(cdir, "out_" + os.path.splitext(exe["file"])[0])
    os.makedirs(od, exist_ok=True)
    for f in os.listdir(od):
        os.remove(os.path.join(od, f))
    cmd = [os.path.join(cdir, exe["file"])] + exe["meta_args"] + ["--output-dir", od] + exe["args"]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=cdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        rc, out, err = p.returncode, p.stdout.decode("utf-8", "replace"), \
            p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", "timed out after %d s" % TIMEOUT
    return {"rc": rc, "out": out, "err": err, "dir": od, "secs": time.time() - t0}


def oneline(text, cap=400):
    t = " | ".join(l.strip() for l in text.strip().splitlines() if l.strip())
    return t if len(t) <= cap else t[:cap] + "..."


def rcs(rc):
    return "timed out" if rc is None else ("died of signal %d" % -rc if rc < 0 else "exited %d" % rc)


def judge_exe(meta, exe, r, refs, expect_no_driver):
    """Messages (empty: fine) for one executable's run."""
    label = exe["label"]
    if expect_no_driver:
        if r["rc"] != 1 or "libcuda.so.1" not in r["err"]:
            return ["%s: expected exit 1 naming libcuda.so.1 (no driver here), %s: %s" % (
                label, rcs(r["rc"]), oneline(r["err"]))]
        return []
    if r["rc"] != 0:
        return ["%s %s: %s" % (label, rcs(r["rc"]), oneline(r["err"]))]
    extra = r["out"] + r["err"]
    if exe["args"][:1] == ["--bench"]:
        extra = re.sub(r"^bench: runs=.*$", "", extra, flags=re.M)
    if extra.strip():
        return ["%s printed on success: %s" % (label, oneline(extra, 300))]
    msgs = []
    for n in meta["outputs"]:
        if n not in refs:
            continue
        p = os.path.join(r["dir"], n + ".npy")
        if not os.path.exists(p):
            msgs.append("%s: output %s.npy was not written" % (label, n))
            continue
        try:
            got = np.load(p, allow_pickle=False)
        except Exception as e:
            msgs.append("%s: %s.npy unreadable: %s" % (label, n, e))
            continue
        m = diff.compare(n, refs[n], got, meta["tol"], meta["check"], meta["precision"])
        if m:
            msgs.append("%s: %s" % (label, m))
    return msgs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="the unpacked bundle (holds cases/)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--upcast", action="store_true", default=None,
                    help="compute every f16/bf16 op in f32 and round once (diff.py's CPU reference)")
    ap.add_argument("--expect-no-driver", action="store_true",
                    help="the executables must fail with the no-driver message (dry run)")
    ap.add_argument("-k", dest="pattern")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--save-failures", help="pack the failing cases' graphs, meta and outputs here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    upcast = args.upcast if args.upcast is not None else args.device == "cpu"
    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    print("bundle: %d cases, tgc %s, --target %s%s, built %s" % (
        len(manifest["cases"]), manifest["tgc"], manifest["target"],
        " --gpu-arch " + manifest["archs"] if manifest["archs"] else "", manifest["created"]))
    if manifest.get("failed_to_build"):
        print("note: %d cases failed to build in prepare and are not here: %s" % (
            len(manifest["failed_to_build"]), ", ".join(manifest["failed_to_build"][:20])))
    cases = []
    nregen = 0
    for rel in manifest["cases"]:
        cdir = os.path.join(args.dir, rel)
        with open(os.path.join(cdir, "meta.json")) as f:
            meta = json.load(f)
        if args.pattern and args.pattern not in meta["name"]:
            continue
        for e in meta["exes"]:
            e["meta_args"] = meta["run_args"]
        meta["regen_error"] = None
        if meta.get("regen_crc32"):
            meta["regen_error"] = regenerate(cdir, meta)
            nregen += 1
        cases.append((cdir, meta))
    if nregen:
        bad = sum(1 for _, m in cases if m["regen_error"])
        print("inputs and weights drawn again here for %d cases (CRC-checked): %s" % (
            nregen, "all identical" if not bad else "%d DIFFER" % bad))
    setup_reference(args.device, upcast)
    dev = "cpu"
    if args.device == "cuda":
        dev = "%s (CUDA %s, capability %d.%d)" % (torch.cuda.get_device_name(0), torch.version.cuda,
                                                   *torch.cuda.get_device_capability(0))
    print("reference: PyTorch %s on %s, %s; LD_LIBRARY_PATH=%s" % (
        torch.__version__, dev, "f16/bf16 computed in f32 and rounded once (--upcast)" if upcast
        else "f16/bf16 native", os.environ.get("LD_LIBRARY_PATH", "")))
    print("tolerances: %s; factors: %s" % (
        ", ".join("%s %s" % (k, v) for k, v in diff.TOLERANCE.items()),
        ", ".join("%s %s" % (k, v) for k, v in diff.FACTOR.items())))
    if args.expect_no_driver:
        print("dry run: every executable must exit 1 naming libcuda.so.1")
    sys.stdout.flush()

    passed = failed = 0
    failing = []
    slow = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futs = [[pool.submit(run_exe, cdir, e) for e in meta["exes"]] if not meta["regen_error"]
                else [] for cdir, meta in cases]
        for (cdir, meta), fl in zip(cases, futs):
            msgs = []
            refs = {}
            if meta["regen_error"]:
                failed += 1
                print("FAIL %s: data: %s" % (meta["name"], meta["regen_error"]))
                continue
            try:
                refs = reference(cdir, meta, args.device)
                for n, t in refs.items():
                    want = meta["ref_dtypes"].get(n)
                    if want and oracle.TG_NAME[t.dtype] != want:
                        msgs.append("reference: %s is %s under PyTorch %s but was %s when the case "
                                    "was prepared (PyTorch 1.13): a reference difference, not tgc's"
                                    % (n, oracle.TG_NAME[t.dtype], torch.__version__, want))
                missing = [n for n in meta["outputs"] if n not in refs]
                if missing:
                    msgs.append("reference: no value for %s" % ", ".join(missing))
            except Exception as e:
                msgs.append("reference error (PyTorch %s on %s): %s" % (
                    torch.__version__, args.device, str(e).splitlines()[0] if str(e) else repr(e)))
                if args.verbose:
                    msgs.append(traceback.format_exc())
            for e, fut in zip(meta["exes"], fl):
                r = fut.result()
                slow.append((r["secs"], meta["name"] + " " + e["label"]))
                msgs += judge_exe(meta, e, r, refs, args.expect_no_driver)
            if msgs:
                failed += 1
                failing.append(cdir)
                more = " (and %d more)" % (len(msgs) - 1) if len(msgs) > 1 else ""
                print("FAIL %s: %s%s" % (meta["name"], msgs[0].splitlines()[0], more))
                if args.verbose:
                    for m in msgs[1:]:
                        print("  " + m.replace("\n", "\n  "))
            else:
                passed += 1
                if args.verbose:
                    print("ok   %s" % meta["name"])
            sys.stdout.flush()
    if args.verbose:
        for secs, name in sorted(slow, reverse=True)[:5]:
            print("  slowest: %6.2f s %s" % (secs, name))
    if args.save_failures and failing:
        with tarfile.open(args.save_failures, "w:xz") as tf:
            for cdir in failing:
                for fn in sorted(os.listdir(cdir)):
                    p = os.path.join(cdir, fn)
                    if fn.endswith(".exe") or fn.endswith(".safetensors") or fn.startswith("in_"):
                        continue
                    tf.add(p, arcname=os.path.join(os.path.basename(cdir), fn))
        print("failing cases' graphs, meta and outputs: %s" % args.save_failures)
    print("time: %.1f s" % (time.time() - t0))
    what = "gpu-diff"
    if args.expect_no_driver:
        what = "gpu-diff (dry run: references on %s, executables must fail without a driver)" % args.device
    print("%s: %d passed, %d failed" % (what, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
