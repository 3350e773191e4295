#!/usr/bin/python3
"""tgc's precision policies and int8 weights against PyTorch in the same dtype.

    bench/precision.py [--threads T] [--budget S] [--rounds R] [--tgc PATH]
                       [--only NAME,...] [--json FILE] [--torch-omp-active] [--keep]

For the MLP (examples/mlp.tg, -D batch=1 and -D batch=64) and the
transformer block (examples/transformer_block.tg), with the graphs, sizes,
weights and inputs of bench/run.py (its mlp_case / transformer_case, seed 0),
it builds one executable per row:

    f32                 tgc build --precision f32
    bf16                tgc build --precision bf16
    mixed-bf16          tgc build --precision mixed-bf16
    int8                tgc build --quantize int8 --weights W      (f32 activations)
    mixed-bf16 + int8   tgc build --precision mixed-bf16 --quantize int8 --weights W

W is the safetensors file of the weights; the quantized builds embed their
(quantized) weights, the others read W at run time (`EXE --weights W`). The
PyTorch side is an nn.Module holding the same weights (the products as
nn.Linear, so that quantize_dynamic reaches them), run as:

    f32                 the module in f32, eager
    bf16                module.to(bfloat16), input.to(bfloat16) (converted before timing)
    mixed-bf16          the f32 module under torch.autocast("cpu", dtype=torch.bfloat16)
    int8, mixed+int8    torch.ao.quantization.quantize_dynamic(module, {nn.Linear},
                        dtype=torch.qint8): PyTorch's int8-weight path. It also
                        quantizes the activations (per tensor, at every call), which
                        tgc does not; it is the closest PyTorch has.

Steps, per graph: build the five executables; run each once on the input
(`--input x=x.npy`) and compare its output with the PyTorch f32 module's: the
f32 build must match (max |diff| <= 2e-4 * max |ref| + 1e-6, as bench/run.py
checks) or the script stops with exit status 1; for every row it records
the max absolute error and the max relative error (max |diff| / max |f32 ref|),
and the same for the PyTorch variant. Then R interleaved rounds of every
executable (`EXE --bench N --threads T`) and every PyTorch variant (N timed
runs, inference_mode, warmed up), N chosen for about --budget seconds per
side; each time is the median of the rounds' medians.

Columns: tgc median; "vs tgc f32" = tgc f32 median / this row's (above 1:
faster than f32); the PyTorch variant's median; "vs PyTorch" = PyTorch /
tgc (above 1: tgc is faster); the errors of tgc and of the PyTorch variant
against PyTorch f32; "target" and "met": issue 16's targets for the row
(met, NOT MET with what falls short, or "-" for rows without one):

    mlp batch 1, int8                    vs tgc f32 >= 1.5x
    mlp batch 64 and transformer block,  vs tgc f32 >= 1.2x and
      bf16                               vs PyTorch (eager bf16) >= 1x
    every graph, mixed-bf16 + int8       vs tgc f32 >= 1x (no slower than f32)

The same thread count T is given to the executables (--threads),
torch.set_num_threads and OpenBLAS in the PyTorch process. PyTorch runs with
OMP_WAIT_POLICY=PASSIVE unless --torch-omp-active (see bench/run.py).
"""

import argparse
import copy
import ctypes
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# run.py sets OMP_WAIT_POLICY (unless --torch-omp-active is in sys.argv) before
# it imports torch; import it first.
import run as B  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = B.ROOT
log, sh, fmt_time = B.log, B.sh, B.fmt_time

# (row name, tgc build flags, PyTorch variant)
POLICIES = [
    ("f32", ["--precision", "f32"], "f32"),
    ("bf16", ["--precision", "bf16"], "bf16"),
    ("mixed-bf16", ["--precision", "mixed-bf16"], "autocast"),
    ("int8", ["--quantize", "int8"], "dynq"),
    ("mixed-bf16+int8", ["--precision", "mixed-bf16", "--quantize", "int8"], "dynq"),
]
TORCH_LABEL = {
    "f32": "eager f32",
    "bf16": "eager bf16",
    "autocast": "autocast bf16",
    "dynq": "dynamic int8",
}


# Issue 16's targets: (graph, policy) -> [(field, minimum, label)], every one
# to be met; rows without an entry have no target.


def targets_for(graph, policy):
    if graph == "mlp batch 1" and policy == "int8":
        return [("vs_f32", 1.5, "vs f32")]
    if graph in ("mlp batch 64", "transformer block") and policy == "bf16":
        return [("vs_f32", 1.2, "vs f32"), ("vs_torch", 1.0, "vs PyTorch")]
    if policy == "mixed-bf16+int8":
        return [("vs_f32", 1.0, "vs f32")]
    return []


def judge(row):
    """Sets row["target"], row["met"] (True, False or None) and row["met_str"]."""
    ts = targets_for(row["graph"], row["policy"])
    row["target"] = " & ".join(f"{label} >={lo:g}x" for _, lo, label in ts)
    if not ts:
        row["met"], row["met_str"] = None, "-"
        return
    miss = [f"{label} {row[k]:.2f}x<{lo:g}x" for k, lo, label in ts if row[k] < lo]
    row["met"] = not miss
    row["met_str"] = "met" if not miss else f"NOT MET ({'; '.join(miss)})"


# ---------------------------------------------------------------------------
# the PyTorch modules: the same weights as bench/run.py's params dict


def linear_from(weight_out_in, bias):
    out_f, in_f = weight_out_in.shape
    m = nn.Linear(in_f, out_f)
    with torch.no_grad():
        m.weight.copy_(weight_out_in)
        m.bias.copy_(bias)
    return m


class MLP(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.fc1 = linear_from(p["w1"].t(), p["b1"])  # w1 is stored [in, out]: x @ w1
        self.fc2 = linear_from(p["w2"], p["b2"])

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


class Block(nn.Module):
    B, S, D, H, HD = 1, 128, 256, 4, 64

    def __init__(self, p):
        super().__init__()
        self.qkv = linear_from(p["w_qkv"], p["b_qkv"])
        self.o = linear_from(p["w_o"], p["b_o"])
        self.fc = linear_from(p["w_fc"], p["b_fc"])
        self.proj = linear_from(p["w_proj"], p["b_proj"])
        for k in ("ln1_w", "ln1_b", "ln2_w", "ln2_b"):
            setattr(self, k, nn.Parameter(p[k].clone()))
        S = self.S
        self.register_buffer("not_causal", ~torch.tril(torch.ones(S, S, dtype=torch.bool)))

    def forward(self, x):
        B, S, D, H, HD = self.B, self.S, self.D, self.H, self.HD
        h = F.layer_norm(x, [D], self.ln1_w, self.ln1_b, eps=1e-5)
        q, k, v = self.qkv(h).split(D, dim=-1)
        qh = q.view(B, S, H, HD).transpose(1, 2)
        kh = k.view(B, S, H, HD).transpose(1, 2)
        vh = v.view(B, S, H, HD).transpose(1, 2)
        scores = (qh @ kh.transpose(-2, -1)) * 0.125
        attn = torch.softmax(scores.masked_fill(self.not_causal, float("-inf")), dim=-1)
        merged = (attn @ vh).transpose(1, 2).reshape(B, S, D)
        x1 = x + self.o(merged)
        h2 = F.layer_norm(x1, [D], self.ln2_w, self.ln2_b)
        return x1 + self.proj(F.gelu(self.fc(h2)))


CASES = [
    (B.mlp_case(1), MLP),
    (B.mlp_case(64), MLP),
    (B.transformer_case(), Block),
]


def torch_variants(module, x):
    """{variant: (fn, args)}: the callables timed and checked."""
    module = module.eval()
    m_bf16 = copy.deepcopy(module).to(torch.bfloat16)
    x_bf16 = x.to(torch.bfloat16)
    m_q = torch.ao.quantization.quantize_dynamic(module, {nn.Linear}, dtype=torch.qint8)

    def autocast_fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return module(x)

    return {
        "f32": (module, [x]),
        "bf16": (m_bf16, [x_bf16]),
        "autocast": (autocast_fn, [x]),
        "dynq": (m_q, [x]),
    }


# ---------------------------------------------------------------------------


def errors(got, ref):
    got = np.asarray(got, dtype=np.float64)
    if got.shape != ref.shape:
        raise RuntimeError(f"shape {got.shape} != {ref.shape}")
    if not np.all(np.isfinite(got)):
        return float("inf"), float("inf")
    err = float(np.max(np.abs(got - ref)))
    return err, err / (float(np.max(np.abs(ref))) or 1.0)


def tgc_bench(exe, run_args, threads, n):
    return B.parse_bench(sh([exe] + run_args + ["--bench", str(n), "--threads", str(threads)]))


def run_case(case, module_cls, tgc, work, args):
    T, R = args.threads, args.rounds
    name = case["name"]
    d = os.path.join(work, re.sub(r"\W+", "_", name))
    os.makedirs(d)
    g = torch.Generator().manual_seed(0)
    inputs, params, _ = case["make"](g)
    (xname, x), = inputs.items()
    wfile = os.path.join(d, "w.safetensors")
    B.write_safetensors(wfile, {k: v.numpy() for k, v in params.items()})
    xfile = os.path.join(d, "x.npy")
    np.save(xfile, x.numpy())

    module = module_cls(params).eval()
    variants = torch_variants(module, x)
    with torch.inference_mode():
        ref = module(x).double().numpy()
        torch_err = {}
        for v, (fn, a) in variants.items():
            torch_err[v] = errors(fn(*a).float().numpy(), ref)

    rows = []
    for pol, flags, tv in POLICIES:
        row = {"graph": name, "policy": pol, "torch_variant": tv}
        exe = os.path.join(d, pol.replace("+", "_"))
        cmd = [tgc, "build", os.path.join(ROOT, case["graph"]), "-o", exe, "--weights", wfile] + flags
        for k, v in case["defines"].items():
            cmd += ["-D", f"{k}={v}"]
        # as printed: tgc, the graph relative to the tree, the weights file as W
        row["build_cmd"] = " ".join(
            ["tgc"] + [("W.safetensors" if c == wfile else "EXE" if c == exe else
                        os.path.relpath(c, ROOT) if c.startswith(ROOT + "/") else c)
                       for c in cmd[1:]])
        sh(cmd)
        quantized = "--quantize" in flags
        # quantized builds embed their weights (in the quantized layout); the
        # others load the f32 file at run time (converted to the policy's dtype)
        row["run_args"] = ["--input", f"{xname}={xfile}"] + ([] if quantized else ["--weights", wfile])
        out = os.path.join(d, "out_" + pol.replace("+", "_"))
        os.makedirs(out)
        sh([exe] + row["run_args"] + ["--output-dir", out, "--threads", "1"])
        got = np.load(os.path.join(out, case["output"] + ".npy"))
        row["max_abs_err"], row["max_rel_err"] = errors(got, ref)
        row["torch_max_abs_err"], row["torch_max_rel_err"] = torch_err[tv]
        row["exe"] = exe
        row["exe_bytes"] = os.path.getsize(exe)
        if pol == "f32":
            scale = float(np.max(np.abs(ref)))
            if not (row["max_abs_err"] <= 2e-4 * scale + 1e-6):
                raise SystemExit(
                    f"bench/precision.py: {name}: the tgc f32 build does not match PyTorch f32: "
                    f"max |diff| {row['max_abs_err']:.3g} (max |ref| {scale:.3g}); "
                    f"{row['build_cmd']}")
        log(f"  {pol:16s} built; err vs PyTorch f32: abs {row['max_abs_err']:.3g} "
            f"rel {row['max_rel_err']:.3g}  (PyTorch {TORCH_LABEL[tv]}: rel {torch_err[tv][1]:.3g})")
        rows.append(row)

    # run counts, then R interleaved rounds of every executable and every variant
    per_round = args.budget / R
    for row in rows:
        row["n"] = B.runs_for(tgc_bench(row["exe"], row["run_args"], T, 3)["median_us"], per_round)
    n_torch = {v: B.runs_for(B.torch_warmup(fn, a, per_round), per_round)
               for v, (fn, a) in variants.items()}
    tgc_rounds = {row["policy"]: [] for row in rows}
    torch_rounds = {v: [] for v in variants}
    for _ in range(R):
        for row in rows:
            tgc_rounds[row["policy"]].append(tgc_bench(row["exe"], row["run_args"], T, row["n"]))
        for v, (fn, a) in variants.items():
            torch_rounds[v].append(B.torch_runs(fn, a, n_torch[v]))
    torch_t = {v: B.combine(rs) for v, rs in torch_rounds.items()}
    f32_us = None
    for row in rows:
        row["tgc"] = B.combine(tgc_rounds[row["policy"]])
        row["torch"] = torch_t[row["torch_variant"]]
        us = row["tgc"]["median_us"]
        if row["policy"] == "f32":
            f32_us = us
        row["vs_f32"] = f32_us / us
        row["vs_torch"] = row["torch"]["median_us"] / us
        judge(row)
        log(f"  {row['policy']:16s} tgc {fmt_time(us)} ({row['vs_f32']:.2f}x f32), PyTorch "
            f"{TORCH_LABEL[row['torch_variant']]} {fmt_time(row['torch']['median_us'])}")
        del row["exe"]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="threads for tgc and PyTorch (default: all cores, %(default)s)")
    ap.add_argument("--budget", type=float, default=1.5,
                    help="seconds of timed runs per row per side (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds per graph (default %(default)s)")
    ap.add_argument("--tgc", help="use this tgc binary instead of building build-bench/tgc")
    ap.add_argument("--only", help="comma-separated substrings of graph names to run "
                    "(mlp batch 1, mlp batch 64, transformer block)")
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

    command = " ".join(["bench/precision.py"] + sys.argv[1:])
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load0 = B.loadavg()
    t_start = time.perf_counter()
    torch.set_num_threads(T)
    try:
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(T)
    except (OSError, AttributeError):
        log("note: could not set OpenBLAS's thread count in the PyTorch process")

    work = tempfile.mkdtemp(prefix="tgc-precision-")
    rows = []
    try:
        tgc = B.build_tgc(args)
        log(f"tgc: {tgc}; threads: {T}; load average: {load0}")
        only = [s.strip() for s in args.only.split(",")] if args.only else None
        for case, cls in CASES:
            if only and not any(s in case["name"] for s in only):
                continue
            log(f"{case['name']} ...")
            rows += run_case(case, cls, tgc, work, args)
    finally:
        if args.keep:
            log(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    load1 = B.loadavg()
    elapsed = time.perf_counter() - t_start

    print(f"command: {command}")
    print(f"tgc precision benchmark, {started}; threads={T}; PyTorch {torch.__version__} "
          f"(quantized engine {torch.backends.quantized.engine}), "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}")
    print(f"load average: {load0} at start, {load1} at end; total {elapsed:.0f} s; "
          f"{args.rounds} interleaved rounds, ~{args.budget:g} s per row per side")
    print()
    head = ["graph", "policy", "tgc median", "vs tgc f32", "PyTorch (same dtype)",
            "PyTorch median", "vs PyTorch", "tgc max abs err", "tgc max rel err",
            "PyTorch max rel err", "target", "met"]
    table = []
    for r in rows:
        table.append([
            r["graph"], r["policy"], fmt_time(r["tgc"]["median_us"]), f"{r['vs_f32']:.2f}x",
            TORCH_LABEL[r["torch_variant"]], fmt_time(r["torch"]["median_us"]),
            f"{r['vs_torch']:.2f}x", f"{r['max_abs_err']:.3g}", f"{r['max_rel_err']:.3g}",
            f"{r['torch_max_rel_err']:.3g}", r["target"], r["met_str"],
        ])
    widths = [max([len(h)] + [len(t[i]) for t in table]) for i, h in enumerate(head)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for t in table:
        print(line(t))
    print()
    print("vs tgc f32: tgc f32's median / this row's; vs PyTorch: PyTorch's median / tgc's "
          "(above 1: tgc faster). Errors: against PyTorch f32 on the same input and weights; "
          "rel = max |diff| / max |f32 ref|. PyTorch dynamic int8 also quantizes activations; "
          "tgc's int8 rows quantize only the weights. target: issue 16's for the row "
          "(every part must hold); \"-\": none.")
    print()
    print("details (rounds' medians; N = timed runs over all rounds):")
    for r in rows:
        print(f"  {r['graph']}, {r['policy']}: {r['build_cmd']}")
        for label, x in (("tgc", r["tgc"]), (TORCH_LABEL[r["torch_variant"]], r["torch"])):
            print(f"    {label + ':':15s}N={x['runs']} rounds "
                  f"{' '.join(fmt_time(v) for v in x['round_medians_us'])}; "
                  f"min {fmt_time(x['min_us'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "date": started, "threads": T, "load_before": load0,
                       "load_after": load1, "elapsed_s": elapsed, "rows": rows}, f, indent=1,
                      default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
