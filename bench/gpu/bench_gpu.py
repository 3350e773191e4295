#!/usr/bin/env python3
"""GPU benchmarks: tgc's CUDA executables against PyTorch on the same GPU.

Two modes (bench/README.md, "GPU (CUDA)", says how to run them):

  bench_gpu.py prepare --tgc BUILD/tgc --out DATA_DIR [--archs sm_90]
      (here, Debian's /usr/bin/python3) builds every benchmark's executable
      with --target cuda (and the small models with --cuda-graph too),
      copies the shared libraries they need that a GPU machine may lack,
      the graphs and this script, and packs them as DATA_DIR/gpu-bench.tar.xz.
  bench_gpu.py run --dir BUNDLE [--budget S] [--rounds R] [--only A,B]
      (on the GPU machine, through bench/gpu/run_on_gpu.sh) generates the
      inputs and weights there (64M-element tensors do not travel), checks
      each executable's output against PyTorch's, times both and prints the
      table.

What is timed
-------------
- tgc: the executable's own `--bench N` line (cli.md: `bench: runs=N
  median_us=M ...`, the time of one run with the inputs already loaded in
  host memory). For --target cuda a run INCLUDES the host-to-device copy of
  the inputs and the device-to-host copy of the outputs (the context's run
  takes and returns host buffers), so it is compared with PyTorch doing the
  same copies: "torch+copy" times `x.to("cuda")` from pageable host memory
  (as a .npy loads), the computation and `y.cpu()`, synchronised, by the
  wall clock. Where Nsight Compute (ncu) can read the GPU's counters, the
  sum of tgc's kernel durations for one run is reported too ("tgc kernels",
  gpu__time_duration.sum per launch, clocks not locked), so that the device
  work can be compared with PyTorch's compute-only time; elsewhere that
  column says n/a and why.
- torch: PyTorch eager on the GPU, compute only: inputs already on the
  device, CUDA events around N calls after a warm-up, the median per call.
  TF32 is off for matrix products and cuDNN (PyTorch's f32 semantics, which
  tgc keeps); torch.backends.cudnn.benchmark keeps its default (False)
  unless `run --cudnn-benchmark`. The resnet50 rows are torchvision's
  ResNet-50 (examples/vision_torch.py, built on the GPU machine) in eval
  mode, at batch 1 and 64, 224 x 224; tgc's executable computes its
  convolutions with cuDNN (algorithms measured at context creation, batch
  norms folded, bias/ReLU/residual in one epilogue kernel per conv).
- torch.compile: the same function compiled (default mode), timed the same
  way; "n/a: REASON" when it cannot compile here.
- copy: the device's copy bandwidth measured in the same run,
  y.copy_(x) on the bytes of the elementwise benchmark (read + write
  counted), CUDA events. The elementwise rows report their bandwidth as GB/s
  (bytes read + written, fused: 2 x 64M x element size) and as a fraction of
  that copy bandwidth; the target is >= 80% for tgc's kernels.
Each side's time is the median of R interleaved rounds' medians. No
result is asserted except correctness: an executable whose output differs
from PyTorch's (beyond the row's tolerance) is reported as FAILED and the
exit status is 1.
"""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
EW_N = 64 * MIB  # 67108864 elements

# name: (graph, -D defines, dtype, kind, build with --cuda-graph too)
CASES = [
    ("ew_chain_f32", "bench/gpu/graphs/ew_chain_f32.tg", {}, "f32", "ew", False),
    ("ew_chain_f16", "bench/gpu/graphs/ew_chain_f16.tg", {}, "f16", "ew", False),
    ("softmax_f32", "bench/gpu/graphs/softmax_f32.tg", {}, "f32", "softmax", False),
    ("softmax_f16", "bench/gpu/graphs/softmax_f16.tg", {}, "f16", "softmax", False),
    ("layer_norm_f32", "bench/gpu/graphs/layer_norm_f32.tg", {}, "f32", "layer_norm", False),
    ("layer_norm_f16", "bench/gpu/graphs/layer_norm_f16.tg", {}, "f16", "layer_norm", False),
    ("mlp_b64", "examples/mlp.tg", {"batch": 64}, "f32", "mlp", True),
    ("mlp_b4096", "examples/mlp.tg", {"batch": 4096}, "f32", "mlp", True),
    ("transformer_b1_s128", "examples/transformer_block.tg", {"batch": 1, "seq": 128}, "f32",
     "transformer", True),
    ("transformer_b8_s512", "examples/transformer_block.tg", {"batch": 8, "seq": 512}, "f32",
     "transformer", True),
    # Convolutions through cuDNN (issue 13): torchvision's ResNet-50 with the
    # weights of examples/vision_torch.py (seed 0, random batch norms).
    ("resnet50_b1", "examples/resnet50.tg", {"batch": 1, "size": 224}, "f32", "resnet50", True),
    ("resnet50_b64", "examples/resnet50.tg", {"batch": 64, "size": 224}, "f32", "resnet50", False),
    # Quantized products (issue 16, codegen/cuda/cu_qmatmul.c): a 4096 -> 1024
    # linear with an int8/int4 weight; up to 16 rows the weight is read in
    # place, above it is dequantized for cuBLAS (the threshold to measure).
    ("qlinear_int8_b1", "bench/gpu/graphs/qlinear.tg", {"batch": 1}, "f32", "qlinear", True),
    ("qlinear_int4_b1", "bench/gpu/graphs/qlinear.tg", {"batch": 1}, "f32", "qlinear", True),
    ("qlinear_int8_b16", "bench/gpu/graphs/qlinear.tg", {"batch": 16}, "f32", "qlinear", False),
    ("qlinear_int8_b17", "bench/gpu/graphs/qlinear.tg", {"batch": 17}, "f32", "qlinear", False),
    ("qlinear_int8_b256", "bench/gpu/graphs/qlinear.tg", {"batch": 256}, "f32", "qlinear", False),
]
# The quantized rows: (bits, group). Their weight is made here (seed 1: not
# the inputs' seed 0, whose first draws it would repeat) and embedded by
# --quantize; the reference on the GPU
# machine uses the q and scales shipped in data/ (quant_data), computed here as
# the driver quantizes (tests/precision/run_precision.py's quantize).
QUANT = {"qlinear_int8_b1": (8, 0), "qlinear_int4_b1": (4, 128), "qlinear_int8_b16": (8, 0),
         "qlinear_int8_b17": (8, 0), "qlinear_int8_b256": (8, 0)}
BUNDLE = None  # run: the bundle's folder (the quantized rows' data/)


def quant_data(name):
    """The file of a quantized row's q and scales (rows that quantize alike share it)."""
    return "qlinear_int%d_g%d.npz" % QUANT[name]


def qlinear_weight():
    import torch
    return torch.randn(1024, 4096, generator=torch.Generator().manual_seed(1)) * 0.02


def quant_files(root, stage, name):
    """The quantized row's build flags: the weights file to quantize and
    embed; and its q and scales in data/ for the reference. Each file is
    made once: the rows (and their --cuda-graph builds) share them."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(root, "tests", "precision"))
    import run_precision as rp
    bits, group = QUANT[name]
    wpath = os.path.join(stage, "qlinear_w.safetensors")
    dpath = os.path.join(stage, "data", quant_data(name))
    if not os.path.exists(wpath) or not os.path.exists(dpath):
        w = qlinear_weight()
        write_safetensors(wpath, {"w": w})
        q, scale, _ = rp.quantize(w, bits, group)
        os.makedirs(os.path.dirname(dpath), exist_ok=True)
        np.savez(dpath, q=q.to(torch.int8).numpy(), scale=scale.numpy(),
                 group=np.array(group or w.shape[1]))
    flags = ["--quantize", "int%d" % bits, "--weights", wpath]
    return flags + (["--group-size", str(group)] if group else [])


# Python files the "resnet50" rows need on the GPU machine (the module and
# its weights are made there: 100 MB of weights do not travel).
MODEL_FILES = ["examples/vision_torch.py", "examples/gpt2_torch.py"]
SYSTEM_LIBS = re.compile(r"^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|"
                         r"librt\.so|libgcc_s\.so|libstdc\+\+\.so|libresolv\.so|libutil\.so)")


def sh(cmd, timeout=900, check=True, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       env=env)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if check and p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, err.strip()[-800:]))
    return p.returncode, out, err


# ---------------------------------------------------------------------------
# prepare (here)
# ---------------------------------------------------------------------------

def prepare(args):
    root = os.path.dirname(os.path.dirname(HERE))
    tgc = os.path.abspath(args.tgc)
    top = tempfile.mkdtemp(prefix="tgc-gpu-bench-")
    stage = os.path.join(top, "gpu-bench")
    os.makedirs(os.path.join(stage, "exe"))
    t0 = time.time()
    try:
        built = {}
        cuda = args.target == "cuda"
        only = set(args.only.split(",")) if args.only else None
        for name, graph, defines, _, kind, cg in CASES:
            if only and name not in only and kind not in only:
                continue
            for variant, flags in [("", [])] + ([("_cg", ["--cuda-graph"])] if cg and cuda else []):
                exe = os.path.join(stage, "exe", name + variant)
                cmd = [tgc, "build", os.path.join(root, graph), "-o", exe, "--target", args.target] \
                    + (["--gpu-arch", args.archs] if cuda else []) + flags
                for k, v in defines.items():
                    cmd += ["-D", "%s=%s" % (k, v)]
                if name in QUANT:
                    cmd += quant_files(root, stage, name)
                t = time.time()
                sh(cmd)
                built[name + variant] = {"cmd": " ".join(os.path.relpath(c, root) if c.startswith(root)
                                                          else c for c in cmd),
                                         "build_s": round(time.time() - t, 2)}
                print("built %-24s %5.1f s" % (name + variant, time.time() - t))
                sys.stdout.flush()
        libdir = os.path.join(stage, "lib")
        os.makedirs(libdir)
        libs = []
        _, out, _ = sh(["ldd", os.path.join(stage, "exe", next(iter(built)))])
        for line in out.splitlines():
            m = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
            if not m:
                continue
            if "not found" in line:
                raise SystemExit("ldd: %s" % line.strip())
            if SYSTEM_LIBS.match(m.group(1)):
                continue
            shutil.copy2(os.path.realpath(m.group(2)), os.path.join(libdir, m.group(1)))
            libs.append(m.group(1))
        for e in glob.glob(os.path.join(stage, "exe", "*")):
            sh(["strip", "--strip-unneeded", e], check=False)
        if os.path.exists(os.path.join(stage, "qlinear_w.safetensors")):
            os.remove(os.path.join(stage, "qlinear_w.safetensors"))  # embedded in the executables
        os.makedirs(os.path.join(stage, "graphs"))
        for _, graph, _, _, _, _ in CASES:
            shutil.copy2(os.path.join(root, graph), os.path.join(stage, "graphs"))
        shutil.copy2(os.path.abspath(__file__), os.path.join(stage, "bench_gpu.py"))
        for f in MODEL_FILES:
            shutil.copy2(os.path.join(root, f), stage)
        _, ver, _ = sh([tgc, "--version"], check=False)
        with open(os.path.join(stage, "manifest.json"), "w") as f:
            json.dump({"tgc": ver.strip(), "archs": args.archs if cuda else None,
                       "target": args.target, "built": built, "libs": libs,
                       "created": time.strftime("%Y-%m-%d %H:%M:%S")}, f, indent=1)
        os.makedirs(args.out, exist_ok=True)
        tarball = os.path.join(args.out, "gpu-bench.tar.xz")
        env = dict(os.environ, XZ_OPT="-9e -T1")
        sh(["tar", "--sort=name", "--owner=0", "--group=0", "-cJf", tarball, "-C", top, "gpu-bench"],
           env=env)
        print("libraries copied: %s" % (", ".join(libs) or "none"))
        print("bundle: %s, %.1f MiB (%.0f s)" % (tarball, os.path.getsize(tarball) / MIB,
                                                  time.time() - t0))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return 0


# ---------------------------------------------------------------------------
# run (on the GPU machine)
# ---------------------------------------------------------------------------

def parse_bench(out):
    """The executable's bench line -> dict (every key=value on it)."""
    m = re.search(r"^bench: (.*)$", out, re.M)
    if not m:
        raise RuntimeError("no bench line in %r" % out[-500:])
    d = {}
    for kv in m.group(1).split():
        k, _, v = kv.partition("=")
        try:
            d[k] = float(v)
        except ValueError:
            d[k] = v
    return d


def runs_for(est_us, budget):
    return int(max(5, min(5000, round(budget * 1e6 / max(est_us, 1.0)))))


def write_safetensors(path, tensors):
    """{name: torch tensor (f32/f16)} -> a safetensors file."""
    import torch
    st = {torch.float32: "F32", torch.float16: "F16"}
    header, off, blobs = {}, 0, []
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        b = t.numpy().tobytes()
        header[name] = {"dtype": st[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


class Case:
    """A benchmark's inputs, weights and PyTorch function (on the GPU)."""

    def __init__(self, name, defines, dtype, kind, dev):
        import numpy as np
        import torch
        import torch.nn.functional as F
        g = torch.Generator().manual_seed(0)
        td = {"f32": torch.float32, "f16": torch.float16}[dtype]
        self.name, self.kind, self.dtype = name, kind, dtype
        self.params, self.bytes_moved, self.tol = {}, None, 2e-4 if dtype == "f32" else 1e-2
        if kind == "ew":
            self.inputs = {"x": torch.randn(EW_N, generator=g).to(td)}
            self.fn = lambda x: torch.relu(x * 1.5 + 0.25) * 0.75 - 0.125
            self.bytes_moved = 2 * EW_N * self.inputs["x"].element_size()
        elif kind == "softmax":
            self.inputs = {"x": torch.randn(4096, 4096, generator=g).to(td)}
            self.fn = lambda x: torch.softmax(x, dim=-1)
            self.bytes_moved = 2 * 4096 * 4096 * self.inputs["x"].element_size()
        elif kind == "layer_norm":
            self.inputs = {"x": torch.randn(4096, 4096, generator=g).to(td)}
            self.params = {"w": (1 + 0.1 * torch.randn(4096, generator=g)).to(td),
                           "b": (0.1 * torch.randn(4096, generator=g)).to(td)}
            p = {k: v.to(dev) for k, v in self.params.items()}
            self.fn = lambda x: F.layer_norm(x, [4096], p["w"], p["b"], eps=1e-5)
            self.bytes_moved = 2 * 4096 * 4096 * self.inputs["x"].element_size()
        elif kind == "mlp":
            B = defines["batch"]
            self.params = {"w1": torch.randn(784, 256, generator=g) * 0.05,
                           "b1": torch.randn(256, generator=g) * 0.1,
                           "w2": torch.randn(10, 256, generator=g) * 0.06,
                           "b2": torch.randn(10, generator=g) * 0.1}
            self.inputs = {"x": torch.randn(B, 784, generator=g)}
            p = {k: v.to(dev) for k, v in self.params.items()}

            def mlp(x):
                h = torch.relu(x @ p["w1"] + p["b1"])
                return torch.softmax(F.linear(h, p["w2"], p["b2"]), dim=-1)
            self.fn = mlp
        elif kind == "transformer":
            B, S, D, H, HD = defines["batch"], defines["seq"], 256, 4, 64

            def r(*shape, std=0.02):
                return torch.randn(*shape, generator=g) * std
            self.params = {"ln1_w": 1 + r(D, std=0.1), "ln1_b": r(D, std=0.1),
                           "w_qkv": r(3 * D, D), "b_qkv": r(3 * D), "w_o": r(D, D), "b_o": r(D),
                           "ln2_w": 1 + r(D, std=0.1), "ln2_b": r(D, std=0.1),
                           "w_fc": r(4 * D, D), "b_fc": r(4 * D), "w_proj": r(D, 4 * D),
                           "b_proj": r(D)}
            self.inputs = {"x": torch.randn(B, S, D, generator=g)}
            p = {k: v.to(dev) for k, v in self.params.items()}
            not_causal = ~torch.tril(torch.ones(S, S, dtype=torch.bool, device=dev))

            def block(x):
                h = F.layer_norm(x, [D], p["ln1_w"], p["ln1_b"], eps=1e-5)
                qkv = F.linear(h, p["w_qkv"], p["b_qkv"])
                q, k, v = qkv.split(D, dim=-1)
                qh = q.view(B, S, H, HD).transpose(1, 2)
                kh = k.view(B, S, H, HD).transpose(1, 2)
                vh = v.view(B, S, H, HD).transpose(1, 2)
                scores = (qh @ kh.transpose(-2, -1)) * 0.125
                attn = torch.softmax(scores.masked_fill(not_causal, float("-inf")), dim=-1)
                merged = (attn @ vh).transpose(1, 2).reshape(B, S, D)
                x1 = x + F.linear(merged, p["w_o"], p["b_o"])
                h2 = F.layer_norm(x1, [D], p["ln2_w"], p["ln2_b"])
                up = F.gelu(F.linear(h2, p["w_fc"], p["b_fc"]))
                return x1 + F.linear(up, p["w_proj"], p["b_proj"])
            self.fn = block
            self.tol = 1e-3
        elif kind == "resnet50":
            # vision_torch.py sits beside this script in the bundle.
            sys.path.insert(0, HERE)
            import vision_torch as V
            model = V.build("resnet50", seed=0)
            self.params = {k: v.detach().clone() for k, v in model.state_dict().items()
                           if v.is_floating_point()}
            self.inputs = {"x": V.make_input("resnet50", defines["batch"], defines["size"], seed=0)}
            model = model.to(dev)
            self.fn = model
            # f32 without TF32 on both sides; cuDNN's sums against tgc's
            # cuDNN algorithms and folded batch norms: rounding only.
            self.tol = 1e-3
        elif kind == "qlinear":
            # x @ dequant(q)^T in f32 (TF32 off) against tgc's int8/int4 product;
            # the weight is embedded in the executable, so no --weights.
            z = np.load(os.path.join(BUNDLE, "data", quant_data(name)))
            grp = int(z["group"])
            w = torch.tensor(z["q"]).float() * \
                torch.tensor(z["scale"]).repeat_interleave(grp, 1)[:, :z["q"].shape[1]]
            wd = w.to(dev)
            self.inputs = {"x": torch.randn(defines["batch"], 4096, generator=g)}
            self.fn = lambda x: F.linear(x, wd)
            self.bytes_moved = z["q"].nbytes // (1 if QUANT[name][0] == 8 else 2)
        else:
            raise ValueError(kind)


DEV = "cuda"  # run --device cpu: a check of this script without a GPU (wall clock)


def sync():
    import torch
    if DEV == "cuda":
        torch.cuda.synchronize()


def cuda_time(fn, args, n):
    """Median per call of fn(*args) over n calls timed one by one with CUDA
    events (the inputs on the device)."""
    import torch
    if DEV != "cuda":
        with torch.inference_mode():
            return wall_time(lambda: fn(*args), n)
    ts = []
    with torch.inference_mode():
        for _ in range(n):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(*args)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)


def wall_time(fn, n):
    ts = []
    for _ in range(n):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        ts.append((time.perf_counter() - t) * 1e6)
    return statistics.median(ts)


def warm(fn, args, k=3):
    import torch
    with torch.inference_mode():
        for _ in range(k):
            fn(*args)
    sync()


def find_ncu():
    for c in [shutil.which("ncu"), "/usr/local/cuda/bin/ncu"] + \
            sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")):
        if c and os.path.exists(c):
            return c
    return None


def ncu_kernel_us(ncu, cmd):
    """Sum of the kernel durations of one run of cmd (no --bench), by ncu;
    (us, launches) or (None, reason)."""
    try:
        rc, out, err = sh([ncu, "--csv", "--clock-control", "none", "--metrics",
                           "gpu__time_duration.sum"] + cmd, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        return None, "ncu timed out"
    total, n = 0.0, 0
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 3 and cells[-3] == "gpu__time_duration.sum":
            unit, val = cells[-2], float(cells[-1].strip('"').replace(",", ""))
            scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(unit)
            if scale is None:
                return None, "ncu unit %r" % unit
            total += val * scale
            n += 1
    if n == 0:
        why = (err.strip().splitlines() or out.strip().splitlines() or ["no kernel measured"])[-1]
        return None, "ncu: " + why[:120]
    return total, n


def fmt_us(us):
    if us is None:
        return "n/a"
    if us >= 1e4:
        return "%.2f ms" % (us / 1e3)
    return "%.1f us" % us


def run(args):
    import numpy as np
    import torch
    global DEV
    DEV = args.device
    if DEV == "cuda" and not torch.cuda.is_available():
        print("bench: torch.cuda.is_available() is False: no GPU here (--device cpu checks "
              "this script with CPU executables)")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    dev = torch.device(DEV)
    global BUNDLE
    bundle = BUNDLE = os.path.abspath(args.dir)
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    if DEV == "cuda":
        prop = torch.cuda.get_device_properties(0)
        print("device: %s (%d SMs, %.0f GiB), PyTorch %s, CUDA %s; tgc %s, --gpu-arch %s" % (
            prop.name, prop.multi_processor_count, prop.total_memory / 2 ** 30, torch.__version__,
            torch.version.cuda, manifest["tgc"], manifest["archs"]))
    else:
        print("device: cpu (a check of the script: the numbers mean nothing), PyTorch %s; "
              "tgc %s, --target %s" % (torch.__version__, manifest["tgc"],
                                       manifest.get("target", "cuda")))
    ncu = find_ncu() if not (args.no_ncu or DEV != "cuda") else None
    work = tempfile.mkdtemp(prefix="tgc-bench-")
    R = args.rounds
    only = set(args.only.split(",")) if args.only else None
    rows, failed = [], 0
    copy_bw = {}
    try:
        # The device's copy bandwidth on the elementwise rows' bytes.
        for dt, tdt in (("f32", torch.float32), ("f16", torch.float16)):
            x = torch.randn(EW_N, device=dev).to(tdt)
            y = torch.empty_like(x)
            warm(lambda: y.copy_(x), (), 5)
            t = statistics.median(cuda_time(lambda: y.copy_(x), (), 50) for _ in range(R))
            copy_bw[dt] = 2 * x.numel() * x.element_size() / (t * 1e-6) / 1e9
            print("copy bandwidth (y.copy_(x), %s[64M], read + write): %.0f GB/s" % (dt, copy_bw[dt]))
            del x, y
        xh = torch.randn(EW_N)
        h2d = wall_time(lambda: xh.to(dev), 10)
        xd = xh.to(dev)
        d2h = wall_time(lambda: xd.cpu(), 10)
        print("host->device %.1f GB/s, device->host %.1f GB/s (pageable, 256 MiB)" % (
            xh.numel() * 4 / h2d / 1e3, xh.numel() * 4 / d2h / 1e3))
        del xh, xd
        sys.stdout.flush()
        for name, graph, defines, dtype, kind, cg in CASES:
            if only and name not in only and kind not in only:
                continue
            exe = os.path.join(bundle, "exe", name)
            if not os.path.exists(exe):  # prepare --only left it out
                continue
            c = Case(name, defines, dtype, kind, dev)
            d = os.path.join(work, name)
            os.makedirs(d, exist_ok=True)
            flags = []
            for k, v in c.inputs.items():
                p = os.path.join(d, "in_%s.npy" % k)
                np.save(p, v.numpy())
                flags += ["--input", "%s=%s" % (k, p)]
            if c.params:
                w = os.path.join(d, "w.safetensors")
                write_safetensors(w, c.params)
                flags += ["--weights", w]
            row = {"name": name, "kind": kind, "dtype": dtype}
            xs_host = [v for v in c.inputs.values()]
            xs_dev = [v.to(dev) for v in xs_host]
            # correctness first
            try:
                sh([exe, "--output-dir", d] + flags)
                outn = [f for f in os.listdir(d) if f.endswith(".npy") and not f.startswith("in_")]
                got = np.load(os.path.join(d, outn[0])).astype(np.float64)
                with torch.inference_mode():
                    ref = c.fn(*xs_dev).float().cpu().numpy().astype(np.float64)
                err = float(np.max(np.abs(got - ref))) if got.shape == ref.shape else float("inf")
                scale = float(np.max(np.abs(ref))) or 1.0
                row["check"] = "max|diff| %.2g of max|ref| %.2g" % (err, scale)
                if not (err <= c.tol * scale):
                    row["check"] = "FAILED: " + row["check"]
                    failed += 1
            except Exception as e:
                row["check"] = "FAILED: %s" % str(e)[:300]
                failed += 1
                rows.append(row)
                print("%s: %s" % (name, row["check"]))
                continue
            # rough estimate of one run, for N
            warm(c.fn, xs_dev)
            est = cuda_time(c.fn, xs_dev, 3)
            n_torch = runs_for(est, args.budget)
            n_copy = runs_for(est + 2 * sum(v.numel() * v.element_size() for v in xs_host) / 10e3,
                              args.budget)

            def with_copies():
                out = c.fn(*[v.to(dev) for v in xs_host])
                return out.cpu()
            compiled, why = None, None
            if not args.no_compile:
                try:
                    compiled = torch.compile(c.fn)
                    warm(compiled, xs_dev, 3)
                except Exception as e:
                    compiled, why = None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:100]
                                                     if str(e) else "")
            else:
                why = "--no-compile"
            cg = cg and os.path.exists(exe + "_cg")
            variants = [("tgc", exe)] + ([("tgc_cg", exe + "_cg")] if cg else [])
            tg = {v: [] for v, _ in variants}
            tt, tc, tcomp = [], [], []
            n_tgc = {}
            for v, e in variants:
                b = parse_bench(sh([e, "--bench", "3", "--output-dir", d] + flags)[1])
                n_tgc[v] = runs_for(b["median_us"], args.budget)
            for _ in range(R):
                for v, e in variants:
                    tg[v].append(parse_bench(sh([e, "--bench", str(n_tgc[v]), "--output-dir", d]
                                                + flags)[1]))
                tt.append(cuda_time(c.fn, xs_dev, n_torch))
                with torch.inference_mode():
                    tc.append(wall_time(with_copies, max(5, n_copy // 4)))
                if compiled is not None:
                    try:
                        tcomp.append(cuda_time(compiled, xs_dev, n_torch))
                    except Exception as e:
                        compiled, why = None, "%s: %s" % (type(e).__name__, str(e)[:100])
            for v, _ in variants:
                row[v] = statistics.median(b["median_us"] for b in tg[v])
                extra = {k: val for k, val in tg[v][-1].items()
                         if k not in ("runs", "median_us", "min_us", "max_us")}
                if extra:
                    row[v + "_extra"] = extra
            row["torch"] = statistics.median(tt)
            row["torch_copy"] = statistics.median(tc)
            row["compile"] = statistics.median(tcomp) if (tcomp and compiled is not None) else None
            row["compile_why"] = why
            if ncu:
                us, info = ncu_kernel_us(ncu, [exe, "--output-dir", d] + flags)
                row["kernels"] = us
                row["kernels_info"] = ("%d launches" % info) if us is not None else info
            else:
                row["kernels"], row["kernels_info"] = None, "no ncu on this machine"
            if c.bytes_moved and kind == "ew":
                bw = copy_bw[dtype]
                row["bw_note"] = "torch eager %.0f GB/s (%.0f%% of copy)" % (
                    c.bytes_moved / row["torch"] / 1e3, 100 * c.bytes_moved / row["torch"] / 1e3 / bw)
                if row["kernels"]:
                    g = c.bytes_moved / row["kernels"] / 1e3
                    row["bw_note"] = "tgc kernels %.0f GB/s = %.0f%% of copy %.0f GB/s (target >= 80%%: %s); " % (
                        g, 100 * g / bw, bw, "met" if g >= 0.8 * bw else "NOT MET") + row["bw_note"]
                else:
                    row["bw_note"] = "tgc kernels n/a (%s), so %% of copy bandwidth n/a; " % \
                        row["kernels_info"] + row["bw_note"]
            rows.append(row)
            print("%s: tgc %s%s, torch %s, torch+copy %s, torch.compile %s, kernels %s; %s" % (
                name, fmt_us(row["tgc"]), (", tgc --cuda-graph %s" % fmt_us(row.get("tgc_cg")))
                if cg else "", fmt_us(row["torch"]), fmt_us(row["torch_copy"]),
                fmt_us(row["compile"]) if row["compile"] else "n/a: %s" % why,
                fmt_us(row["kernels"]), row["check"]))
            sys.stdout.flush()
            del xs_dev, compiled
            if DEV == "cuda":
                torch.cuda.empty_cache()
            shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print()
    print("tgc = the executable's --bench median (includes host->device inputs and "
          "device->host outputs);")
    print("torch+copy = PyTorch with the same copies (pageable host memory); torch, "
          "torch.compile = compute only (CUDA events);")
    print("tgc kernels = sum of tgc's kernel durations in one run (ncu), comparable with "
          "the compute-only columns.")
    hdr = "| benchmark | tgc | tgc --cuda-graph | torch+copy | tgc vs torch+copy | tgc kernels | " \
          "torch | torch.compile | check |"
    print(hdr)
    print("|" + "---|" * (hdr.count("|") - 1))
    for r in rows:
        if "tgc" not in r:
            print("| %s | FAILED | | | | | | | %s |" % (r["name"], r["check"]))
            continue
        speed = r["torch_copy"] / r["tgc"]
        print("| %s | %s | %s | %s | %.2fx | %s | %s | %s | %s |" % (
            r["name"], fmt_us(r["tgc"]), fmt_us(r.get("tgc_cg")) if "tgc_cg" in r else "-",
            fmt_us(r["torch_copy"]), speed,
            fmt_us(r["kernels"]) if r["kernels"] else "n/a (%s)" % r["kernels_info"],
            fmt_us(r["torch"]),
            fmt_us(r["compile"]) if r["compile"] else "n/a: %s" % r["compile_why"], r["check"]))
    for r in rows:
        if r.get("bw_note"):
            print("%s: %s" % (r["name"], r["bw_note"]))
        for v in ("tgc", "tgc_cg"):
            if r.get(v + "_extra"):
                print("%s %s bench fields: %s" % (r["name"], v, r[v + "_extra"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_bw_gbs": copy_bw, "rows": rows}, f, indent=1)
    print("bench: %d benchmarks, %d failed the correctness check" % (len(rows), failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--tgc", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--archs", default="sm_90")
    p.add_argument("--target", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: CPU executables, to check this script without a GPU")
    p.add_argument("--only", help="comma-separated benchmark names or kinds to build")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--budget", type=float, default=0.5, help="seconds per side per round")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--only", help="comma-separated benchmark names or kinds (ew, softmax, ...)")
    r.add_argument("--no-ncu", action="store_true")
    r.add_argument("--no-compile", action="store_true")
    r.add_argument("--json")
    r.add_argument("--cudnn-benchmark", action="store_true",
                   help="torch.backends.cudnn.benchmark = True for PyTorch (tgc always measures)")
    r.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: check this script with a --target cpu bundle (no GPU)")
    args = ap.parse_args()
    return prepare(args) if args.mode == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
