#!/usr/bin/python3
"""tgc vs PyTorch eager vs the machine's limits, in one command.

    bench/run.py [--threads T] [--budget S] [--rounds R] [--tgc PATH]
                 [--only NAME,...] [--no-check] [--json FILE]
                 [--torch-omp-active] [--keep]

Run from anywhere; it runs under Debian's /usr/bin/python3 (PyTorch 1.13,
numpy). It

1. builds tgc (Release, in build-bench/, incremental) unless --tgc is given,
   and bench/limits.c (cc -O2 $(pkg-config --cflags --libs openblas));
2. measures the machine's limits with T threads: memcpy of a 256 MiB buffer
   (read + write GB/s) and cblas_sgemm at 1024^3 and 2048^3 (GFLOP/s,
   openblas_set_num_threads(T));
3. times `tgc build examples/transformer_block.tg` (wall clock, median of 3);
4. for each benchmark: builds the graph with tgc, checks the executable's
   output against the PyTorch reference on the same inputs and weights
   (skip with --no-check), then R interleaved rounds of: the executable
   (`EXE --random-inputs 0 --bench N --threads T`), the PyTorch eager
   reference (torch.set_num_threads(T) and OpenBLAS set to T threads,
   inference_mode, warmed up, N time.perf_counter runs), and the matching
   limit (memcpy for the bandwidth-bound graphs, sgemm for the matrix
   products, and for the MLP the time to stream its weights once at the
   memcpy bandwidth). N is chosen so that each side takes about --budget
   seconds in all; each side's time is the median of its rounds' medians;
   one more row, "transformer block, batch 8, seq 2048, peak", is the peak
   memory that `tgc report examples/transformer_block.tg -D batch=8
   -D seq=2048` plans (nothing is run);
5. prints the table: tgc median, PyTorch median, speedup (PyTorch / tgc),
   the fraction of the machine limit, the targets (met / NOT MET), the
   compile time, and per-benchmark details (every round, fastest runs).

The targets are issue 16's: MLP batch 1 >= 5x PyTorch eager and >= 0.5 of the
weight-streaming limit (the time to read its weights once at the memcpy
bandwidth measured in the same rounds, over tgc's median time; above 1 when
the weights stay in cache); the transformer block (batch 1, seq 128) >= 2x
PyTorch eager; softmax and layer_norm >= 0.8 of the memcpy bandwidth; at
batch 8, seq 2048 the transformer block's peak memory below 250 MB (250e6
bytes). The elementwise chain and matmul rows keep an older issue's targets
(marked "(older issue)"). bench/precision.py reports issue 16's targets for
bf16 and int8.

The same thread count T (default: every core this process may use, as
`nproc` says) is used for tgc, PyTorch, the copy and sgemm. PyTorch runs with
OMP_WAIT_POLICY=PASSIVE unless --torch-omp-active (see below). Exit status 1
when a graph fails to build or run, or its output differs from PyTorch's.
"""

import argparse
import ctypes
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

import numpy as np

# Debian's PyTorch runs its own OpenMP threads beside OpenBLAS's pthreads
# (matrix products). With GNU OpenMP's default spin-waiting the idle OpenMP
# threads keep the cores busy while OpenBLAS works: on a 2-core machine
# F.linear(128x256 -> 768) then takes 4-17 ms instead of 0.6 ms. Passive
# waiting is PyTorch's better configuration here, so it is the default
# (it must be set before libgomp loads, i.e. before importing torch).
# --torch-omp-active on the command line keeps GOMP's default.
if "--torch-omp-active" not in sys.argv:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit("bench/run.py: PyTorch is missing; run it with Debian's /usr/bin/python3 "
             "(python3-torch)")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MIB = 1 << 20


# ---------------------------------------------------------------------------
# helpers


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(cmd, **kw):
    """Runs cmd (a list); returns stdout. Exits with its output on failure."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        log(f"command failed (exit {r.returncode}): {' '.join(cmd)}")
        log(r.stdout[-4000:])
        log(r.stderr[-4000:])
        raise RuntimeError(f"exit {r.returncode}: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r.stdout


def fmt_time(us):
    if us is None:
        return "-"
    if us < 1000:
        return f"{us:.1f} us"
    if us < 1e6:
        return f"{us / 1000:.2f} ms"
    return f"{us / 1e6:.2f} s"


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def write_safetensors(path, tensors):
    """A minimal safetensors writer (F32 only): {name: np.ndarray}."""
    header, off, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------------------
# the benchmarks: a graph (+ -D), its inputs/params, and the PyTorch reference


def mlp_case(batch):
    def make(g):
        p = {
            "w1": torch.randn(784, 256, generator=g) * 0.05,
            "b1": torch.randn(256, generator=g) * 0.1,
            "w2": torch.randn(10, 256, generator=g) * 0.06,
            "b2": torch.randn(10, generator=g) * 0.1,
        }
        x = {"x": torch.randn(batch, 784, generator=g)}

        def fn(x):
            h = torch.relu(x @ p["w1"] + p["b1"])
            logits = F.linear(h, p["w2"], p["b2"])
            return torch.softmax(logits, dim=-1)

        return x, p, fn

    flops = 2 * batch * 784 * 256 + 2 * batch * 256 * 10
    # f32 w1, b1, w2, b2: what one run must read at least once
    weight_bytes = 4 * (784 * 256 + 256 + 10 * 256 + 10)
    return dict(name=f"mlp batch {batch}", graph="examples/mlp.tg", defines={"batch": batch},
                make=make, flops=flops, weight_bytes=weight_bytes, output="probs")


def transformer_case():
    B, S, D, H, HD = 1, 128, 256, 4, 64

    def make(g):
        def r(*shape, std=0.02):
            return torch.randn(*shape, generator=g) * std

        p = {
            "ln1_w": 1 + r(D, std=0.1), "ln1_b": r(D, std=0.1),
            "w_qkv": r(3 * D, D), "b_qkv": r(3 * D),
            "w_o": r(D, D), "b_o": r(D),
            "ln2_w": 1 + r(D, std=0.1), "ln2_b": r(D, std=0.1),
            "w_fc": r(4 * D, D), "b_fc": r(4 * D),
            "w_proj": r(D, 4 * D), "b_proj": r(D),
        }
        # The causal mask, computed once as a module would keep it (a buffer).
        not_causal = ~torch.tril(torch.ones(S, S, dtype=torch.bool))
        x = {"x": torch.randn(B, S, D, generator=g)}

        def fn(x):
            h = F.layer_norm(x, [D], p["ln1_w"], p["ln1_b"], eps=1e-5)
            qkv = F.linear(h, p["w_qkv"], p["b_qkv"])
            q, k, v = qkv.split(D, dim=-1)
            qh = q.view(B, S, H, HD).transpose(1, 2)
            kh = k.view(B, S, H, HD).transpose(1, 2)
            vh = v.view(B, S, H, HD).transpose(1, 2)
            scores = (qh @ kh.transpose(-2, -1)) * 0.125
            attn = torch.softmax(scores.masked_fill(not_causal, float("-inf")), dim=-1)
            ctx = attn @ vh
            merged = ctx.transpose(1, 2).reshape(B, S, D)
            x1 = x + F.linear(merged, p["w_o"], p["b_o"])
            h2 = F.layer_norm(x1, [D], p["ln2_w"], p["ln2_b"])
            up = F.gelu(F.linear(h2, p["w_fc"], p["b_fc"]))
            return x1 + F.linear(up, p["w_proj"], p["b_proj"])

        return x, p, fn

    flops = 2 * S * D * 3 * D + 2 * 2 * H * S * S * HD + 2 * S * D * D + 2 * 2 * S * D * 4 * D
    return dict(name="transformer block", graph="examples/transformer_block.tg", defines={},
                make=make, flops=flops, output="y")


ELEM_N = 16 * MIB  # 16M floats


def elementwise_case():
    def make(g):
        x = {"x": torch.randn(ELEM_N, generator=g), "y": torch.randn(ELEM_N, generator=g)}

        def fn(x, y):
            # the same 8 operations as bench/graphs/elementwise_chain.tg
            return torch.maximum(((torch.relu(x * 1.5 + y) - 0.25) * y + x) * 0.5, y)

        return x, {}, fn

    return dict(name="elementwise chain 16M", graph="bench/graphs/elementwise_chain.tg",
                defines={}, make=make, bytes_moved=3 * ELEM_N * 4, output="out")


def softmax_case():
    def make(g):
        x = {"x": torch.randn(4096, 4096, generator=g)}
        return x, {}, lambda x: torch.softmax(x, dim=-1)

    return dict(name="softmax 4096x4096", graph="bench/graphs/softmax.tg", defines={},
                make=make, bytes_moved=2 * 4096 * 4096 * 4, output="y")


def layer_norm_case():
    def make(g):
        p = {"w": torch.randn(4096, generator=g), "b": torch.randn(4096, generator=g)}
        x = {"x": torch.randn(4096, 4096, generator=g)}
        return x, p, lambda x: F.layer_norm(x, [4096], p["w"], p["b"], eps=1e-5)

    return dict(name="layer_norm 4096x4096", graph="bench/graphs/layer_norm.tg", defines={},
                make=make, bytes_moved=2 * 4096 * 4096 * 4, output="y")


def matmul_case(n):
    def make(g):
        x = {"a": torch.randn(n, n, generator=g), "b": torch.randn(n, n, generator=g)}
        return x, {}, lambda a, b: a @ b

    return dict(name=f"matmul {n}^3", graph="bench/graphs/matmul.tg",
                defines={"m": n, "k": n, "n": n}, make=make, flops=2 * n ** 3, sgemm_n=n,
                output="c")


PEAK_BUDGET = 250e6  # bytes (issue 16: "at seq 2048 the peak below 250 MB")


def peak_case():
    """Not timed: the peak memory `tgc report` plans for the block at seq 2048."""
    return dict(name="transformer block, batch 8, seq 2048, peak",
                graph="examples/transformer_block.tg", defines={"batch": 8, "seq": 2048},
                report=True)


CASES = [mlp_case(1), mlp_case(64), transformer_case(), elementwise_case(), softmax_case(),
         layer_norm_case(), matmul_case(1024), matmul_case(2048), peak_case()]

# The targets: (description, test(result) -> (met, detail)). Issue 16's, but
# for the elementwise chain and matmul, which keep an older issue's.

OLDER = "(older issue) "


def all_of(*checks):
    """A target test: every (result key, least value, miss message) holds;
    (None, "") while a value is missing, else (met, the misses)."""
    def t(r):
        vals = [r.get(key) for key, _, _ in checks]
        if any(v is None for v in vals):
            return None, ""
        miss = [msg.format(v) for v, (_, least, msg) in zip(vals, checks) if v < least]
        return not miss, "; ".join(miss)
    return t


def target_for(case):
    name = case["name"]
    if case.get("report"):
        def t(r):
            pk = r.get("peak_bytes")
            if pk is None:
                return None, ""
            return pk < PEAK_BUDGET, f"{pk / 1e6:.1f} MB"
        return f"peak < {PEAK_BUDGET / 1e6:.0f} MB", t
    if name.startswith("elementwise"):
        return OLDER + ">=0.8 copy BW & >=4x", all_of(("vs_limit", 0.8, "BW {:.2f}<0.8"),
                                                     ("speedup", 4, "{:.2f}x<4x"))
    if name == "mlp batch 1":
        return ">=5x PyTorch & >=0.5 weight stream", all_of(("speedup", 5, "{:.2f}x<5x"),
                                                            ("weight_stream", 0.5, "stream {:.2f}<0.5"))
    if name == "transformer block":
        return ">=2x PyTorch", lambda r: ((r["speedup"] >= 2, "") if r.get("speedup") else (None, ""))
    if name.startswith("softmax") or name.startswith("layer_norm"):
        return ">=0.8 copy BW", lambda r: ((r["vs_limit"] >= 0.8, "") if r.get("vs_limit") else (None, ""))
    if name.startswith("matmul"):
        return OLDER + ">=0.95 sgemm", lambda r: ((r["vs_limit"] >= 0.95, "") if r.get("vs_limit") else (None, ""))
    return "", None


# ---------------------------------------------------------------------------
# measuring


def build_tgc(args):
    if args.tgc:
        return os.path.abspath(args.tgc)
    bdir = os.path.join(ROOT, "build-bench")
    if not os.path.exists(os.path.join(bdir, "build.ninja")) and \
            not os.path.exists(os.path.join(bdir, "Makefile")):
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        log("configuring tgc (Release) in build-bench/ ...")
        sh(["cmake", "-S", ROOT, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release"] + gen)
    log("building tgc ...")
    sh(["cmake", "--build", bdir, "--target", "tgc"])
    return os.path.join(bdir, "tgc")


def build_limits(work):
    exe = os.path.join(work, "limits")
    try:
        flags = sh(["pkg-config", "--cflags", "--libs", "openblas"]).split()
    except (RuntimeError, FileNotFoundError):
        flags = ["-lopenblas"]
    src = os.path.join(HERE, "limits.c")
    try:  # with oneDNN's dnnl_sgemm beside OpenBLAS's when libdnnl is there
        sh(["cc", "-O2", "-DLIMITS_DNNL", "-fopenmp", "-o", exe, src] + flags + ["-ldnnl", "-lpthread"])
    except RuntimeError:
        log("  (limits.c without oneDNN: libdnnl or its headers are missing)")
        sh(["cc", "-O2", "-o", exe, src] + flags + ["-lpthread"])
    return exe


class Limits:
    """Runs limits.c measurements and keeps every value, per kind."""

    def __init__(self, exe, threads):
        self.exe, self.threads = exe, threads
        self.seen = {}  # "copy" or "sgemm:N" -> [median values]
        self.best = {}  # "copy" or "sgemm:N" -> the fastest run's value

    def measure(self, what, seconds):
        """what: "copy" (GB/s, read+write of 256 MiB) or "sgemm:N" (GFLOP/s).
        Returns (median run, fastest run)."""
        arg = "copy:256" if what == "copy" else what
        line = sh([self.exe, str(self.threads), f"{seconds:.3f}", arg]).strip()
        kv = dict(re.findall(r"(\w+)=([\d.]+)", line))
        key = "rw_gbps" if what == "copy" else "gflops"
        v = (float(kv[key]), float(kv["best_" + key]))
        self.seen.setdefault(what, []).append(v[0])
        self.best[what] = max(self.best.get(what, 0.0), v[1])
        return v


def tgc_build(tgc, case, exe):
    cmd = [tgc, "build", os.path.join(ROOT, case["graph"]), "-o", exe]
    for k, v in case["defines"].items():
        cmd += ["-D", f"{k}={v}"]
    sh(cmd)
    return cmd


def parse_bench(out):
    m = re.search(r"bench: runs=(\d+) median_us=([\d.]+) min_us=([\d.]+) max_us=([\d.]+)", out)
    if not m:
        raise RuntimeError(f"no bench line in: {out!r}")
    return dict(runs=int(m[1]), median_us=float(m[2]), min_us=float(m[3]), max_us=float(m[4]))


def runs_for(est_us, budget):
    return int(max(5, min(2000, round(budget * 1e6 / max(est_us, 1.0)))))


def tgc_runs(exe, threads, n):
    """One invocation of the executable: n timed runs after its warm-up."""
    return parse_bench(sh([exe, "--random-inputs", "0", "--bench", str(n), "--threads",
                           str(threads)]))


def torch_runs(fn, args, n):
    """n timed runs of fn(*args) (already warmed up); returns the times in us."""
    ts = []
    with torch.inference_mode():
        for _ in range(n):
            t0 = time.perf_counter()
            fn(*args)
            ts.append((time.perf_counter() - t0) * 1e6)
    return dict(runs=n, median_us=statistics.median(ts), min_us=min(ts), max_us=max(ts))


def torch_warmup(fn, args, seconds):
    """Warms fn up; returns the estimated time of one run in us."""
    with torch.inference_mode():
        for _ in range(2):
            fn(*args)
        t0 = time.perf_counter()
        fn(*args)
        est = (time.perf_counter() - t0) * 1e6
        for _ in range(min(20, max(1, runs_for(est, seconds) // 10))):
            fn(*args)
    return est


def combine(rounds):
    """The rounds' summaries -> one: the median of the round medians."""
    return dict(runs=sum(r["runs"] for r in rounds),
                median_us=statistics.median(r["median_us"] for r in rounds),
                min_us=min(r["min_us"] for r in rounds), max_us=max(r["max_us"] for r in rounds),
                round_medians_us=[r["median_us"] for r in rounds])


def check(case, exe, inputs, params, fn, work):
    """Runs the executable on the same inputs and weights; compares with PyTorch."""
    d = os.path.join(work, "check")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cmd = [exe, "--output-dir", d, "--threads", "1"]
    for k, v in inputs.items():
        f = os.path.join(d, f"in_{k}.npy")
        np.save(f, v.numpy())
        cmd += ["--input", f"{k}={f}"]
    if params:
        w = os.path.join(d, "w.safetensors")
        write_safetensors(w, {k: v.numpy() for k, v in params.items()})
        cmd += ["--weights", w]
    sh(cmd)
    got = np.load(os.path.join(d, case["output"] + ".npy"))
    with torch.inference_mode():
        ref = fn(*inputs.values()).numpy()
    shutil.rmtree(d, ignore_errors=True)
    if got.shape != ref.shape:
        return False, f"shape {got.shape} != {ref.shape}"
    err = float(np.max(np.abs(got.astype(np.float64) - ref)))
    scale = float(np.max(np.abs(ref))) or 1.0
    # f32 with different summation orders: relative to the output's magnitude,
    # loose enough for k = 2048 dot products.
    ok = bool(np.all(np.isfinite(got) == np.isfinite(ref))) and err <= 2e-4 * scale + 1e-6
    return ok, f"max_abs_err={err:.3g} (max |ref| {scale:.3g})"


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def parse_peak(out):
    """The bytes of the summary's peak line of `tgc report`:
    "  peak             132.52 MiB   params + inputs + outputs + arena"."""
    m = re.search(r"^\s*peak\s+([\d.]+) (B|KiB|MiB|GiB|TiB)\s", out, re.M)
    if not m:
        raise RuntimeError(f"no peak line in: {out[:2000]!r}")
    return float(m[1]) * UNITS[m[2]], f"{m[1]} {m[2]}"


def report_case(case, tgc, r):
    """The peak memory row: `tgc report GRAPH -D ...` (nothing is built or run)."""
    cmd = [tgc, "report", os.path.join(ROOT, case["graph"])]
    for k, v in case["defines"].items():
        cmd += ["-D", f"{k}={v}"]
    r["report_cmd"] = " ".join(["tgc", "report", case["graph"]] + cmd[3:])
    try:
        r["peak_bytes"], r["peak_str"] = parse_peak(sh(cmd))
    except RuntimeError as e:
        r["error"] = f"tgc report failed: {e}"
        return r
    log(f"  peak {r['peak_str']} ({r['peak_bytes'] / 1e6:.1f} MB)")
    return r


# ---------------------------------------------------------------------------


def run_case(case, tgc, lims, work, args):
    """Builds, checks and times one benchmark; returns its result dict."""
    T, R = args.threads, args.rounds
    r = {"name": case["name"], "graph": case["graph"], "defines": case["defines"]}
    desc, test = target_for(case)
    r["target"] = desc
    if test:
        r["met_str"] = "NOT MET (failed)"
    if case.get("report"):
        report_case(case, tgc, r)
        if "peak_bytes" in r:
            met, detail = test(r)
            r["met"] = met
            r["met_str"] = ("met" if met else "NOT MET") + f" ({detail})"
        return r
    exe = os.path.join(work, re.sub(r"\W+", "_", case["name"]))
    try:
        r["build_cmd"] = " ".join(tgc_build(tgc, case, exe))
    except RuntimeError as e:
        r["error"] = f"tgc build failed: {e}"
        return r
    g = torch.Generator().manual_seed(0)
    inputs, params, fn = case["make"](g)
    if not args.no_check:
        try:
            ok, detail = check(case, exe, inputs, params, fn, work)
        except RuntimeError as e:
            ok, detail = False, f"run failed: {e}"
        r["check"] = {"ok": ok, "detail": detail}
        log(f"  output vs PyTorch: {'ok' if ok else 'MISMATCH'}: {detail}")

    per_round = args.budget / R
    try:
        n_tgc = runs_for(tgc_runs(exe, T, 3)["median_us"], per_round)
    except RuntimeError as e:
        r["error"] = f"tgc run failed: {e}"
        n_tgc = None
    targs = list(inputs.values())
    n_torch = runs_for(torch_warmup(fn, targs, per_round), per_round)
    limit_kind = "copy" if "bytes_moved" in case or "weight_bytes" in case else (
        f"sgemm:{case['sgemm_n']}" if "sgemm_n" in case else None)

    # R interleaved rounds (tgc, PyTorch, the limit) so that a change in the
    # machine's load hits all three alike; each side: the median of the
    # rounds' medians.
    tgc_rounds, torch_rounds, lim_rounds = [], [], []
    for _ in range(R):
        if n_tgc:
            tgc_rounds.append(tgc_runs(exe, T, n_tgc))
        torch_rounds.append(torch_runs(fn, targs, n_torch))
        if limit_kind:
            lim_rounds.append(lims.measure(limit_kind, per_round))
    del inputs, params, fn, targs
    tg = r["tgc"] = combine(tgc_rounds) if tgc_rounds else None
    tt = r["torch"] = combine(torch_rounds)
    log(f"  tgc {fmt_time(tg and tg['median_us'])} (N={tg and tg['runs']}), "
        f"PyTorch {fmt_time(tt['median_us'])} (N={tt['runs']})"
        + (f", {limit_kind} {', '.join(f'{v[0]:.1f}' for v in lim_rounds)}" if lim_rounds else ""))
    lim_median = statistics.median(v[0] for v in lim_rounds) if lim_rounds else None
    lim_best = max(v[1] for v in lim_rounds) if lim_rounds else None
    if tg:
        r["speedup"] = tt["median_us"] / tg["median_us"]
        r["best_speedup"] = tt["min_us"] / tg["min_us"]
        if "bytes_moved" in case:
            r["copy_gbps"], r["copy_best_gbps"] = lim_median, lim_best
            r["tgc_gbps"] = case["bytes_moved"] / (tg["median_us"] * 1e-6) / 1e9
            r["torch_gbps"] = case["bytes_moved"] / (tt["median_us"] * 1e-6) / 1e9
            r["vs_limit"] = r["tgc_gbps"] / r["copy_gbps"]
            r["best_vs_limit"] = case["bytes_moved"] / (tg["min_us"] * 1e-6) / 1e9 / lim_best
            r["vs_limit_str"] = f"{r['vs_limit']:.2f} of copy ({r['tgc_gbps']:.1f} GB/s)"
        if "weight_bytes" in case:
            # the weight-streaming limit: the time to read the weights once at
            # the copy bandwidth of these rounds, over tgc's median time
            r["copy_gbps"], r["copy_best_gbps"] = lim_median, lim_best
            r["weight_bytes"] = case["weight_bytes"]
            r["weight_stream_us"] = case["weight_bytes"] / (lim_median * 1e9) * 1e6
            r["weight_stream"] = r["weight_stream_us"] / tg["median_us"]
            r["best_weight_stream"] = case["weight_bytes"] / (lim_best * 1e9) * 1e6 / tg["min_us"]
            r["vs_limit_str"] = f"{r['weight_stream']:.2f} of weight stream"
        if "flops" in case:
            r["tgc_gflops"] = case["flops"] / (tg["median_us"] * 1e-6) / 1e9
            r["torch_gflops"] = case["flops"] / (tt["median_us"] * 1e-6) / 1e9
        if "sgemm_n" in case:
            r["sgemm_gflops"], r["sgemm_best_gflops"] = lim_median, lim_best
            r["vs_limit"] = r["tgc_gflops"] / r["sgemm_gflops"]
            r["best_vs_limit"] = case["flops"] / (tg["min_us"] * 1e-6) / 1e9 / lim_best
            r["vs_limit_str"] = f"{r['vs_limit']:.2f} of sgemm ({r['tgc_gflops']:.1f} GFLOP/s)"
    if test:
        met, detail = test(r)
        r["met"] = met
        r["met_str"] = "?" if met is None else ("met" if met else "NOT MET")
        if detail:
            r["met_str"] += f" ({detail})"
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="threads for tgc, PyTorch, the copy and sgemm (default: all cores, %(default)s)")
    ap.add_argument("--budget", type=float, default=1.5,
                    help="seconds of timed runs per side per benchmark (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds of tgc / PyTorch / limit per benchmark (default %(default)s)")
    ap.add_argument("--tgc", help="use this tgc binary instead of building build-bench/tgc")
    ap.add_argument("--only", help="comma-separated substrings of benchmark names to run")
    ap.add_argument("--no-check", action="store_true",
                    help="skip comparing each executable's output with PyTorch's")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--torch-omp-active", action="store_true",
                    help="leave OMP_WAIT_POLICY alone in the PyTorch process (default: PASSIVE)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    T = args.threads
    if T < 1:
        ap.error("--threads must be at least 1")
    if args.rounds < 1 or args.budget <= 0:
        ap.error("--rounds must be at least 1 and --budget positive")

    torch.set_num_threads(T)
    # torch.set_num_threads does not reach OpenBLAS (Debian's torch does its
    # matrix products through it): set it too, as limits.c and tgc do.
    try:
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(T)
    except (OSError, AttributeError):
        log("note: could not set OpenBLAS's thread count in the PyTorch process")

    work = tempfile.mkdtemp(prefix="tgc-bench-")
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load0 = loadavg()
    t_start = time.perf_counter()
    results = []
    many_outputs = {}
    try:
        tgc = build_tgc(args)
        log(f"tgc: {tgc}")
        log(f"threads: {T}; load average: {load0}")
        lims = Limits(build_limits(work), T)
        log("machine limits ...")
        for what in ("copy", "sgemm:1024", "sgemm:2048"):
            log(f"  {what}: {lims.measure(what, 1.0)[0]:.1f}")

        log("compile time of examples/transformer_block.tg ...")
        ctimes, compile_err = [], None
        try:
            for i in range(3):
                t0 = time.perf_counter()
                sh([tgc, "build", os.path.join(ROOT, "examples/transformer_block.tg"), "-o",
                    os.path.join(work, f"tb_compile_{i}")])
                ctimes.append(time.perf_counter() - t0)
            log(f"  tgc build: {', '.join(f'{t:.3f}' for t in ctimes)} s")
        except RuntimeError as e:
            compile_err = str(e)
            log(f"  tgc build failed: {compile_err}")

        # Build time against graph size (issue 18, item 8): thousands of
        # small outputs, each its own kernel. One wall-clock run per size.
        for n in (1000, 10000):
            log(f"compile time of a graph with {n} outputs ...")
            g = os.path.join(work, f"outputs_{n}.tg")
            with open(g, "w") as f:
                f.write(f"graph outputs_{n}\ninput x : f32[4]\n")
                f.writelines(f"output o{i} = x + {i}\n" for i in range(n))
            t0 = time.perf_counter()
            try:
                sh([tgc, "build", g, "-o", os.path.join(work, f"outputs_{n}")])
                many_outputs[n] = time.perf_counter() - t0
                log(f"  tgc build: {many_outputs[n]:.2f} s")
            except RuntimeError as e:
                many_outputs[n] = str(e)

        only = [s.strip() for s in args.only.split(",")] if args.only else None
        for case in CASES:
            if only and not any(s in case["name"] for s in only):
                continue
            log(f"{case['name']} ...")
            r = run_case(case, tgc, lims, work, args)
            if "error" in r:
                log("  " + r["error"])
            results.append(r)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"work directory kept: {work}")

    load1 = loadavg()
    elapsed = time.perf_counter() - t_start

    # ---- the report ------------------------------------------------------
    print(f"tgc benchmark, {started}; threads={T} (tgc --threads, torch.set_num_threads, "
          f"openblas_set_num_threads); PyTorch {torch.__version__}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}")
    print(f"load average: {load0} before, {load1} after; total {elapsed:.0f} s; "
          f"{args.rounds} interleaved rounds per benchmark, ~{args.budget:g} s per side")
    print()

    def lim_str(what, unit):
        v = lims.seen.get(what, [])
        if not v:
            return f"{what} -"
        return (f"{statistics.median(v):.1f} {unit} (median of {len(v)} measurements, "
                f"{min(v):.1f}..{max(v):.1f}; fastest run {lims.best[what]:.1f})")

    print(f"machine limits, {T} threads, measured through the run:")
    print(f"  memcpy 256 MiB, read+write: {lim_str('copy', 'GB/s')}")
    for n in (1024, 2048):
        print(f"  cblas_sgemm {n}^3:         {lim_str(f'sgemm:{n}', 'GFLOP/s')}")
    print()
    head = ["benchmark", "tgc median", "PyTorch median", "speedup", "vs limit", "target", "met"]
    rows = []
    for r in results:
        tg, tt = r.get("tgc"), r.get("torch")
        rows.append([
            r["name"],
            fmt_time(tg["median_us"]) if tg else
            (f"peak {r['peak_str']}" if "peak_str" in r else "FAILED"),
            fmt_time(tt["median_us"]) if tt else "-",
            f"{r['speedup']:.2f}x" if "speedup" in r else "-",
            r.get("vs_limit_str", "-"),
            r.get("target") or "-",
            r.get("met_str", "-"),
        ])
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(head)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))
    print("targets: issue 16's, but those marked (older issue); the peak row's value is "
          "the peak `tgc report` plans (nothing is run), its target 250 MB = 250e6 bytes")
    print()
    if ctimes:
        compile_s = statistics.median(ctimes)
        print(f"compile time, tgc build examples/transformer_block.tg: {compile_s:.3f} s "
              f"(median of 3 wall-clock runs: {', '.join(f'{t:.3f}' for t in ctimes)}); "
              f"target < 1 s: {'met' if compile_s < 1.0 else 'NOT MET'}")
    else:
        print(f"compile time, tgc build examples/transformer_block.tg: FAILED: {compile_err}")
    for n, t in many_outputs.items():
        print(f"compile time, tgc build of a graph with {n} outputs (output oI = x + I): "
              + (f"{t:.2f} s (one run)" if isinstance(t, float) else f"FAILED: {t}"))
    print()
    print("details (N = timed runs over all rounds; the rounds' medians; min/max of one run):")
    for r in results:
        tg, tt = r.get("tgc"), r.get("torch")
        print(f"  {r['name']}:")
        for label, x in (("tgc", tg), ("PyTorch", tt)):
            if x:
                print(f"    {label + ':':9s}N={x['runs']} rounds "
                      f"{' '.join(fmt_time(v) for v in x['round_medians_us'])}; "
                      f"min {fmt_time(x['min_us'])} max {fmt_time(x['max_us'])}")
        extra = []
        if "tgc_gbps" in r:
            extra.append(f"GB/s tgc {r['tgc_gbps']:.1f}, PyTorch {r['torch_gbps']:.1f}, "
                         f"memcpy {r['copy_gbps']:.1f}")
        if "weight_stream" in r:
            extra.append(f"weight stream: {r['weight_bytes']} bytes of weights at memcpy "
                         f"{r['copy_gbps']:.1f} GB/s = {fmt_time(r['weight_stream_us'])}; "
                         f"over tgc's median: {r['weight_stream']:.2f} of the "
                         f"weight-streaming limit (fastest runs {r['best_weight_stream']:.2f})")
        if "peak_bytes" in r:
            extra.append(f"{r['report_cmd']}: peak {r['peak_str']} = "
                         f"{r['peak_bytes'] / 1e6:.1f} MB (target < {PEAK_BUDGET / 1e6:.0f} MB)")
        if "tgc_gflops" in r:
            extra.append(f"GFLOP/s tgc {r['tgc_gflops']:.1f}, PyTorch {r['torch_gflops']:.1f}"
                         + (f", sgemm {r['sgemm_gflops']:.1f}" if "sgemm_gflops" in r else ""))
        if "check" in r:
            extra.append(f"output vs PyTorch {'ok' if r['check']['ok'] else 'MISMATCH'} "
                         f"({r['check']['detail']})")
        if "best_speedup" in r:
            extra.append(f"fastest runs: speedup {r['best_speedup']:.2f}x"
                         + (f", vs limit {r['best_vs_limit']:.2f}" if "best_vs_limit" in r else ""))
        for e in extra:
            print(f"    {e}")
        if "error" in r:
            print(f"    ERROR: {r['error']}")
    print()
    print("vs limit: elementwise chain, softmax, layer_norm: the bytes that must move (inputs "
          "read + output written) per second of tgc's median run, over the memcpy read+write "
          "bandwidth measured in the same rounds; matmul: tgc's GFLOP/s over direct "
          "cblas_sgemm's, measured in the same rounds; mlp: the weight-streaming limit, the "
          "time to read the weights once at that memcpy bandwidth over tgc's median time "
          "(above 1: faster than streaming them from memory, i.e. they stay in cache).")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": started, "threads": T, "load_before": load0, "load_after": load1,
                       "limits": lims.seen, "limits_best": lims.best, "compile_s": ctimes, "results": results}, f,
                      indent=1, default=str)
    failed = [r for r in results if "error" in r or ("check" in r and not r["check"]["ok"])]
    return 1 if failed or compile_err else 0


if __name__ == "__main__":
    sys.exit(main())
