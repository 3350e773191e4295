#!/usr/bin/python3
"""Generation with a KV cache (issue 27): decode, prefill, range builds.

    bench/generate.py [--threads T] [--rounds R] [--tgc PATH] [--json FILE]
                      [--quick] [--keep] [--no-check]

The model is examples/llama_generate.tg (examples/llama_torch.py's module,
the same param names) at a size whose f32 weights do not fit in any cache:
8 layers, d 1024, 16 heads, 4 key/value heads (head_dim 64), SwiGLU 2752,
vocabulary 32000, an lm_head apart from the embedding: 154.2M params,
617 MB in f32, 486 MB read per decode step (`--quick`: run_generate.py's
tiny configuration, to check the script in seconds; its figures mean
nothing). Random weights (examples/gpt2_torch.py's randomize, seed 0),
written as safetensors.

It builds, with the same tgc (build-bench/ Release unless --tgc):

- gen_f32, gen_int8, gen_int4: `tgc build examples/llama_generate.tg
  --generate -D batch=1 -D seq=1:512 -D max_seq=512 [--quantize Q]`: the
  prompt runs in chunks of 128 (driver/generate.h's largest), the cache
  holds 512 positions;
- gen_r64: the same in f32 with `-D seq=1:64 -D max_seq=129` (chunks of 64:
  the range build of item 4) and plain64: `tgc build examples/llama.tg
  -D seq=64` (the fixed-size build).

Then R interleaved rounds (--rounds, default 3), every side with T threads
(--threads, default 2: tgc's --threads, torch.set_num_threads and
OpenBLAS's count, limits.c's threads), each round:

1. the machine's memory bandwidth: bench/limits.c `read:256` (a read-only
   stream of 256 MiB: what a matrix-vector product does with its weights,
   and the figure the limit uses) and `copy:256` (memcpy, read + write,
   printed for comparison: its rw_gbps counts both directions, and the
   non-temporal stores slow the reads);
2. decode at batch 1: `gen --prompt (1 token) --max-new-tokens 64` per
   precision, the executable's own "decode: N tokens in X ms (Y tokens/s)"
   (63 steps at positions 1..63; the first new token comes from the
   prefill). The weight-streaming limit is read_gbps / the bytes one step
   reads: every matrix product's weight at its storage (int8: one byte per
   element and one f32 scale per output row; int4: ceil(k/2) bytes per row
   and one f32 scale per 128 elements), the RMSNorm weights, and one row of
   the embedding table (an embedding reads the token's row, not the table).
   The attention also reads the whole cache, max_seq positions whatever the
   position (2 x layers x kv_heads x max_seq x head_dim x 4 bytes): the
   table gives the limit with those bytes too. Target: >= 0.7 of the limit.
3. decode against position: the same with a 448-token prompt (steps at
   positions 448..510) against item 2's steps at 1..63, per precision: the
   step attends over all max_seq cached positions (masked) either way, so
   the two rates should be equal; a slower late step would mean the cache
   is copied or grows per token.
4. prefill of 512 tokens: gen_f32's "prefill: 512 tokens in X ms" (4 runs
   of the 128-token program, the first run of the process: it includes
   first-touch costs) against PyTorch eager `model(ids)` on the same 512
   tokens (no_grad, warmed up once before the rounds, the median of 2 runs
   per round: one takes seconds on 2 cores). Target: tgc's time
   <= eager's / 1.5. Also printed: the CPU time of each side (tgc: the
   whole process, start and loading included; eager: process_time around
   model(ids)), which a loaded machine disturbs less than the wall time.
5. range against fixed: gen_r64's prefill of a 64-token prompt (one run of
   the 64-token program, the first of the process) against plain64's
   `--bench N` median (warm). As the generating executable's prefill figure
   is a cold run, the table also gives a warm figure: gen_r64's prefill of
   128 tokens (two runs) minus its prefill of 64 (one run), the second
   run's time. plain64 runs `--bench 5` (after its own warm-up run). Target:
   within 10% (gen / plain <= 1.10).

Unless --no-check, gen_f32's first 8 greedy tokens after a 16-token prompt
are compared with PyTorch's greedy loop first (a difference where PyTorch's
top two logits are within 1e-4 is a tie, noted); a mismatch is exit 1.

Prints the machine, the load average (uptime) at the start and after each
round, the build commands, each round's figures and a table per item with
the targets, met / NOT MET; --json FILE keeps everything. Exit status 1
when a build or a run fails or the check fails. No timing is asserted.
"""

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import run as B  # noqa: E402  (sets OMP_WAIT_POLICY before torch is imported)

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = B.ROOT
sys.path.insert(0, os.path.join(ROOT, "examples"))
from gpt2_torch import randomize, save_safetensors  # noqa: E402
from llama_torch import Llama  # noqa: E402

log, sh = B.log, B.sh
FULL = dict(cfg=dict(n_layer=8, d=1024, n_head=16, n_kv_head=4, ffn=2752, vocab=32000),
            max_seq=512, seq="1:512", prefill=512, new=64, late=448, r_chunk=64, eager_runs=2,
            lim_s=1.0)
QUICK = dict(cfg=dict(n_layer=2, d=64, n_head=4, n_kv_head=2, ffn=96, vocab=101),
             max_seq=64, seq="1:64", prefill=64, new=16, late=40, r_chunk=8, eager_runs=3,
             lim_s=0.1)
PRECISIONS = ["f32", "int8", "int4"]
INT4_GROUP = 128  # --quantize int4's default group (docs/precision.md)
TARGET_DECODE, TARGET_PREFILL, TARGET_RANGE = 0.7, 1.5, 1.10
CHECK_NEW, CHECK_PROMPT, TIE = 8, 16, 1e-4


# ---------------------------------------------------------------------------
# bytes a decode step reads


def products(cfg):
    """Every matrix product's weight [n, k] (nn.Linear's [out, in])."""
    d, f, hd = cfg["d"], cfg["ffn"], cfg["d"] // cfg["n_head"]
    kv = cfg["n_kv_head"] * hd
    layer = [(d, d), (kv, d), (kv, d), (d, d), (f, d), (f, d), (d, f)]
    return layer * cfg["n_layer"] + [(cfg["vocab"], d)]


def step_bytes(cfg, prec, max_seq):
    """(weight bytes one decode step reads at prec, cache bytes it reads)."""
    w = 0
    for n, k in products(cfg):
        if prec == "f32":
            w += n * k * 4
        elif prec == "int8":  # one byte per element, one f32 scale per row
            w += n * k + n * 4
        else:  # int4: two per byte, one f32 scale per group of 128
            w += n * ((k + 1) // 2) + n * ((k + INT4_GROUP - 1) // INT4_GROUP) * 4
    d = cfg["d"]
    w += (2 * cfg["n_layer"] + 1) * d * 4  # the RMSNorm weights
    w += d * 4  # one embedding row
    cache = 2 * cfg["n_layer"] * cfg["n_kv_head"] * max_seq * (d // cfg["n_head"]) * 4
    return w, cache


def report_params(tgc, defines, prec):
    """tgc report's params.bytes at prec (the whole embedding table
    included), or None when the report cannot say."""
    cmd = [tgc, "report", os.path.join(ROOT, "examples", "llama.tg"), "--json"] + defines
    if prec != "f32":
        cmd += ["--quantize", prec]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        return int(json.loads(r.stdout)["params"]["bytes"]) if r.returncode == 0 else None
    except (ValueError, KeyError, TypeError):
        return None


# ---------------------------------------------------------------------------
# building and running


def dflags(cfg, **more):
    out = []
    for k, v in list(cfg.items()) + list(more.items()):
        out += ["-D", "%s=%s" % (k, v)]
    return out


def build(tgc, cmd, what):
    log("building %s: %s" % (what, " ".join(cmd[1:])))
    t0 = time.monotonic()
    sh(cmd)
    s = time.monotonic() - t0
    log("  %.1f s" % s)
    return s


GEN_LINE = re.compile(r"^(prefill|decode): (\d+) tokens in ([\d.]+) ms \(([\d.]+) tokens/s\)",
                      re.M)


def gen_run(exe, prompt, new, threads, work, weights=None):
    """One run of a generating executable: {"prefill": (tokens, ms), "decode":
    (tokens, ms)} as it prints them, and the tokens it wrote. Raises (exit
    1 of the script) when it fails or prints neither line."""
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    cmd = [exe, "--prompt", prompt, "--max-new-tokens", str(new), "--output-dir", out,
           "--threads", str(threads)]
    if weights:
        cmd += ["--weights", weights]
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    text = sh(cmd)
    r1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - t0
    got = {m[1]: (int(m[2]), float(m[3])) for m in GEN_LINE.finditer(text)}
    # CPU seconds over wall seconds of the whole process: below --threads
    # when the machine's other load took the cores from it (compute-bound
    # kernels then slow down in proportion; a memory-bound stream less).
    got["cpu_s"] = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    got["cpus"] = got["cpu_s"] / wall
    if "prefill" not in got or "decode" not in got:
        raise RuntimeError("%s printed no prefill/decode line: %r" % (" ".join(cmd), text))
    got["tokens"] = np.load(os.path.join(out, "tokens.npy"))
    return got


def rate(tokens_ms):
    tokens, ms = tokens_ms
    return tokens / ms * 1e3 if ms > 0 else float("nan")


def prompt_file(work, name, n, vocab, seed):
    path = os.path.join(work, name + ".npy")
    g = torch.Generator().manual_seed(seed)
    np.save(path, torch.randint(0, vocab, (1, n), generator=g).numpy())
    return path


class Limits(B.Limits):
    """bench/run.py's, with the read-only stream."""

    def read(self, seconds):
        line = sh([self.exe, str(self.threads), "%.3f" % seconds, "read:256"]).strip()
        if "BAD_SUM" in line:
            raise RuntimeError("limits.c read: the sum is wrong: %s" % line)
        kv = dict(re.findall(r"(\w+)=([\d.]+)", line))
        return float(kv["read_gbps"]), float(kv["best_read_gbps"])


def eager_prefill(model, ids, runs):
    """PyTorch eager model(ids) under no_grad (warmed up before the
    rounds): the median of `runs` runs, ms, and of their CPU times (all
    the process's threads), ms."""
    ts, cs = [], []
    with torch.no_grad():
        for _ in range(runs):
            c0, t0 = time.process_time(), time.perf_counter()
            model(ids)
            ts.append((time.perf_counter() - t0) * 1e3)
            cs.append((time.process_time() - c0) * 1e3)
    return statistics.median(ts), statistics.median(cs)


def check_greedy(model, exe, work, threads, weights, vocab):
    """gen's first CHECK_NEW greedy tokens against PyTorch's greedy loop.
    Returns a line for the report; raises on a real mismatch."""
    prompt = prompt_file(work, "check", CHECK_PROMPT, vocab, 3)
    got = gen_run(exe, prompt, CHECK_NEW, threads, work, weights)["tokens"]
    ids = torch.from_numpy(np.load(prompt))
    with torch.no_grad():
        for step in range(CHECK_NEW):
            last = model(ids)[0, -1].double()
            want = int(last.argmax())
            top2 = last.topk(2).values
            have = int(got[0, CHECK_PROMPT + step])
            if have != want:
                margin = float(top2[0] - top2[1])
                if margin < TIE:
                    return ("gen_f32's greedy tokens equal PyTorch's up to step %d, a tie there "
                            "(margin %.1e)" % (step, margin))
                raise RuntimeError("gen_f32's greedy token %d is %d, PyTorch's %d (margin %.3g)"
                                   % (step, have, want, margin))
            ids = torch.cat([ids, torch.tensor([[want]])], dim=1)
    return "gen_f32's %d greedy tokens after a %d-token prompt equal PyTorch's" % (CHECK_NEW,
                                                                                CHECK_PROMPT)


# ---------------------------------------------------------------------------
# the rounds


def one_round(k, a, s, exes, files, lims, model, eager_ids):
    T, work, rec = a.threads, s["work"], {}
    rec["read_gbps"], _ = lims.read(s["lim_s"])
    rec["copy_rw_gbps"], _ = lims.measure("copy", s["lim_s"])
    log("round %d: read %.2f GB/s, copy %.2f GB/s (read + write)"
        % (k, rec["read_gbps"], rec["copy_rw_gbps"]))
    for p in PRECISIONS:
        w = files["weights"] if p == "f32" else None
        early = gen_run(exes[p], files["p1"], s["new"], T, work, w)
        late = gen_run(exes[p], files["late"], s["new"], T, work, w)
        rec[p] = dict(early=rate(early["decode"]), late=rate(late["decode"]),
                      late_prefill_ms=late["prefill"][1], early_cpus=early["cpus"],
                      late_cpus=late["cpus"])
        log("  %s decode: %.2f tokens/s at positions 1..%d, %.2f at %d..%d (CPUs used %.2f, "
            "%.2f)" % (p, rec[p]["early"], s["new"] - 1, rec[p]["late"], s["late"],
                       s["late"] + s["new"] - 2, early["cpus"], late["cpus"]))
    pre = gen_run(exes["f32"], files["prefill"], 0, T, work, files["weights"])
    rec["prefill_ms"], rec["prefill_cpus"] = pre["prefill"][1], pre["cpus"]
    rec["prefill_cpu_ms"] = pre["cpu_s"] * 1e3
    rec["eager_prefill_ms"], rec["eager_cpu_ms"] = eager_prefill(model, eager_ids,
                                                                 s["eager_runs"])
    log("  prefill of %d: tgc %.1f ms (CPUs used %.2f; CPU time of the whole process %.0f ms), "
        "eager %.1f ms (CPU time %.0f ms)" % (s["prefill"], rec["prefill_ms"], rec["prefill_cpus"],
                                             rec["prefill_cpu_ms"], rec["eager_prefill_ms"],
                                             rec["eager_cpu_ms"]))
    c = s["r_chunk"]
    one = gen_run(exes["r64"], files["r1"], 0, T, work, files["weights"])["prefill"]
    two = gen_run(exes["r64"], files["r2"], 0, T, work, files["weights"])["prefill"]
    base = [exes["plain"], "--weights", files["weights"], "--input", "ids=" + files["r1"],
            "--threads", str(T)]
    plain = B.parse_bench(sh(base + ["--bench", "5"]))["median_us"] / 1e3
    rec.update(range_cold_ms=one[1], range_warm_ms=two[1] - one[1], plain_ms=plain)
    log("  seq %d: gen_r64 prefill %.1f ms (cold), %.1f ms (2 runs) - %.1f = %.1f (warm); "
        "plain --bench %.1f ms" % (c, one[1], two[1], one[1], two[1] - one[1], plain))
    rec["load"] = os.getloadavg()[0]
    return rec


def med(rounds, *keys):
    v = []
    for r in rounds:
        for k in keys:
            r = r[k]
        v.append(r)
    return statistics.median(v)


# ---------------------------------------------------------------------------
# the report


def verdict(ok):
    return "met" if ok else "NOT MET"


def report(a, s, res):
    cfg, rounds, T = s["cfg"], res["rounds"], a.threads
    print("generation (issue 27), %s; %s; PyTorch %s eager, OMP_WAIT_POLICY=%s"
          % (time.strftime("%Y-%m-%d %H:%M %Z"), "--quick (a smoke run: the figures mean "
             "nothing)" if a.quick else "threads %d" % T, torch.__version__,
             os.environ.get("OMP_WAIT_POLICY", "(unset)")))
    print("machine: " + res["machine"])
    print("uptime at the start: " + res["uptime"][0])
    print("uptime at the end:   " + res["uptime"][1])
    print("load average (1 min) after each round: "
          + ", ".join("%.2f" % r["load"] for r in rounds))
    print("model: examples/llama_generate.tg %s: %.1fM params, %.1f MB in f32 (embedding "
          "%.1f MB, lm_head %.1f MB)" % (" ".join("%s=%d" % kv for kv in cfg.items()),
                                          res["params"] / 1e6, res["params"] * 4 / 1e6,
                                          cfg["vocab"] * cfg["d"] * 4 / 1e6,
                                          cfg["vocab"] * cfg["d"] * 4 / 1e6))
    for c in res["commands"]:
        print("  " + c)
    if res.get("check"):
        print("check: " + res["check"])
    bw = med(rounds, "read_gbps")
    print()
    print("Memory bandwidth, median of %d rounds: read %.2f GB/s (limits.c read:256, %d "
          "threads; rounds %s), copy %.2f GB/s read + write (copy:256)"
          % (len(rounds), bw, T, " ".join("%.2f" % r["read_gbps"] for r in rounds),
             med(rounds, "copy_rw_gbps")))
    print()
    print("1. Decode, batch 1, positions 1..%d (the executable's decode tokens/s, median of %d "
          "rounds); limit = read GB/s / bytes per step; CPUs used: the process's CPU time over "
          "its wall time, loading and prefill included (at most %d; well below it, other "
          "processes had the cores)"
          % (s["new"] - 1, len(rounds), T))
    print("| precision | weights/step MB | + cache MB | tokens/s | limit tokens/s | of limit "
          "| limit with cache | of it | target >= %.1f | CPUs used |" % TARGET_DECODE)
    print("|---|---|---|---|---|---|---|---|---|---|")
    res["decode"] = {}
    for p in PRECISIONS:
        wb, cb = step_bytes(cfg, p, s["max_seq"])
        tps = med(rounds, p, "early")
        lim, limc = bw * 1e9 / wb, bw * 1e9 / (wb + cb)
        res["decode"][p] = dict(tokens_s=tps, weight_bytes=wb, cache_bytes=cb, limit=lim,
                                fraction=tps / lim, limit_with_cache=limc,
                                rounds=[r[p]["early"] for r in rounds],
                                report_params_bytes=res["report_bytes"].get(p))
        print("| %s | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %.2f |"
              % (p, wb / 1e6, cb / 1e6, tps, lim, tps / lim, limc, tps / limc,
                 verdict(tps / lim >= TARGET_DECODE), med(rounds, p, "early_cpus")))
    for p in PRECISIONS:
        rb = res["report_bytes"].get(p)
        if rb:
            emb = cfg["vocab"] * cfg["d"] * 4
            print("   %s: tgc report's params.bytes %.1f MB, less the embedding table, plus one "
                  "row: %.1f MB (the count above: %.1f MB)"
                  % (p, rb / 1e6, (rb - emb + cfg["d"] * 4) / 1e6, step_bytes(cfg, p, 1)[0] / 1e6))
    print()
    print("2. Decode against position (tokens/s, median of %d rounds): steps at 1..%d (a "
          "1-token prompt) and at %d..%d (a %d-token prompt)"
          % (len(rounds), s["new"] - 1, s["late"], s["late"] + s["new"] - 2, s["late"]))
    print("| precision | early | late | late / early | CPUs used early, late |")
    print("|---|---|---|---|---|")
    for p in PRECISIONS:
        e, l_ = med(rounds, p, "early"), med(rounds, p, "late")
        res["decode"][p]["late_tokens_s"] = l_
        print("| %s | %.2f | %.2f | %.2f | %.2f, %.2f |" % (p, e, l_, l_ / e,
                                                         med(rounds, p, "early_cpus"),
                                                         med(rounds, p, "late_cpus")))
    print()
    tg, ea = med(rounds, "prefill_ms"), med(rounds, "eager_prefill_ms")
    res["prefill"] = dict(tgc_ms=tg, eager_ms=ea, ratio=ea / tg,
                          tgc_rounds=[r["prefill_ms"] for r in rounds],
                          eager_rounds=[r["eager_prefill_ms"] for r in rounds])
    print("3. Prefill of %d tokens, batch 1, f32 (median of %d rounds): tgc %.1f ms (gen_f32's "
          "prefill line: %d run(s) of the %d-token program, cold; rounds %s), PyTorch eager "
          "%.1f ms (rounds %s): eager / tgc = %.2f; target >= %.1f: %s"
          % (s["prefill"], len(rounds), tg, -(-s["prefill"] // s["chunk"]), s["chunk"],
             " ".join("%.0f" % r["prefill_ms"] for r in rounds), ea,
             " ".join("%.0f" % r["eager_prefill_ms"] for r in rounds), ea / tg, TARGET_PREFILL,
             verdict(ea / tg >= TARGET_PREFILL)))
    tc, ec = med(rounds, "prefill_cpu_ms"), med(rounds, "eager_cpu_ms")
    res["prefill"].update(tgc_cpu_ms=tc, eager_cpu_ms=ec)
    print("   CPU time, less sensitive to the load: tgc's whole process (start, loading the "
          "weights and the prefill) %.0f ms, eager's model(ids) %.0f ms: eager / tgc = %.2f"
          % (tc, ec, ec / tc))
    cold, warm, plain = (med(rounds, "range_cold_ms"), med(rounds, "range_warm_ms"),
                         med(rounds, "plain_ms"))
    res["range"] = dict(cold_ms=cold, warm_ms=warm, plain_ms=plain, cold_ratio=cold / plain,
                        warm_ratio=warm / plain)
    print()
    print("4. Range against fixed, seq %d, f32 (median of %d rounds): gen_r64's prefill %.1f ms "
          "(its printed figure, the process's first run) and %.1f ms (warm: 2 runs - 1 run); "
          "plain64 --bench %.1f ms; gen / plain = %.2f (cold), %.2f (warm); target <= %.2f: "
          "%s (cold), %s (warm)"
          % (s["r_chunk"], len(rounds), cold, warm, plain, cold / plain, warm / plain,
             TARGET_RANGE, verdict(cold / plain <= TARGET_RANGE),
             verdict(warm / plain <= TARGET_RANGE)))


# ---------------------------------------------------------------------------


def machine():
    name = "?"
    try:
        with open("/proc/cpuinfo") as f:
            name = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "%s, %d cores" % (name, len(os.sched_getaffinity(0)))


def uptime():
    try:
        return subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip()
    except OSError:
        return "load average: " + B.loadavg()


def setup(a, s, tgc):
    """The weights, the prompts and the executables: (exes, files, model)."""
    cfg, work = s["cfg"], s["work"]
    torch.manual_seed(0)
    model = Llama(**cfg).eval()
    randomize(model, cfg["d"], 0)
    files = {"weights": os.path.join(work, "model.safetensors")}
    save_safetensors(files["weights"], model.state_dict())
    v = cfg["vocab"]
    files.update(p1=prompt_file(work, "p1", 1, v, 1),
                 late=prompt_file(work, "late", s["late"], v, 2),
                 prefill=prompt_file(work, "prefill", s["prefill"], v, 4),
                 r1=prompt_file(work, "r1", s["r_chunk"], v, 5),
                 r2=prompt_file(work, "r2", 2 * s["r_chunk"], v, 5))
    graph = os.path.join(ROOT, "examples", "llama_generate.tg")
    exes, cmds = {}, []
    for p in PRECISIONS:
        exes[p] = os.path.join(work, "gen_" + p)
        cmd = [tgc, "build", graph, "--generate"] + dflags(
            dict(batch=1), seq=s["seq"], max_seq=s["max_seq"], **cfg) + [
            "--weights", files["weights"], "-o", exes[p]]
        if p != "f32":
            cmd += ["--quantize", p]
        s["build_s"][p] = build(tgc, cmd, "gen_" + p)
        cmds.append(" ".join(["tgc"] + cmd[1:]))
    c = s["r_chunk"]
    exes["r64"] = os.path.join(work, "gen_r64")
    cmd = [tgc, "build", graph, "--generate"] + dflags(
        dict(batch=1), seq="1:%d" % c, max_seq=2 * c + 1, **cfg) + ["--weights",
                                                                    files["weights"], "-o",
                                                                    exes["r64"]]
    s["build_s"]["r64"] = build(tgc, cmd, "gen_r64")
    cmds.append(" ".join(["tgc"] + cmd[1:]))
    exes["plain"] = os.path.join(work, "plain64")
    cmd = [tgc, "build", os.path.join(ROOT, "examples", "llama.tg")] + dflags(
        dict(batch=1, seq=c), **cfg) + ["-o", exes["plain"]]
    s["build_s"]["plain"] = build(tgc, cmd, "plain64")
    cmds.append(" ".join(["tgc"] + cmd[1:]))
    return exes, files, model, cmds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for tgc, PyTorch and limits.c (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--tgc", help="tgc binary (default: build build-bench/tgc, Release)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true",
                    help="a tiny model and one round: checks the script, measures nothing")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--no-check", action="store_true",
                    help="skip comparing gen_f32's greedy tokens with PyTorch's")
    a = ap.parse_args()
    if a.threads < 1 or a.rounds < 1:
        ap.error("--threads and --rounds must be at least 1")
    rounds_n = 1 if a.quick and "--rounds" not in sys.argv else a.rounds
    s = dict(QUICK if a.quick else FULL)
    s["chunk"] = min(int(s["seq"].split(":")[1]), 128)  # driver/generate.h
    s["build_s"] = {}
    torch.set_num_threads(a.threads)
    try:  # torch.set_num_threads does not reach Debian's OpenBLAS (bench/run.py)
        import ctypes
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(a.threads)
    except (OSError, AttributeError):
        log("note: could not set OpenBLAS's thread count in the PyTorch process")
    res = dict(machine=machine(), uptime=[uptime()], threads=a.threads, quick=a.quick,
               config=s["cfg"], rounds=[])
    log(res["uptime"][0])
    s["work"] = work = tempfile.mkdtemp(prefix="tgc-bench-gen-")
    failed = None
    try:
        tgc = B.build_tgc(a)
        lims = Limits(B.build_limits(work), a.threads)
        exes, files, model, res["commands"] = setup(a, s, tgc)
        res["params"] = sum(p.numel() for p in model.parameters())
        defs = dflags(s["cfg"], batch=1, seq=1)
        res["report_bytes"] = {p: report_params(tgc, defs, p) for p in PRECISIONS}
        if not a.no_check:
            res["check"] = check_greedy(model, exes["f32"], work, a.threads, files["weights"],
                                        s["cfg"]["vocab"])
            log(res["check"])
        eager_ids = torch.from_numpy(np.load(files["prefill"]))
        eager_prefill(model, eager_ids, 1)  # the warm-up: allocations, thread pools
        for k in range(rounds_n):
            res["rounds"].append(one_round(k + 1, a, s, exes, files, lims, model, eager_ids))
    except RuntimeError as e:
        failed = str(e)
        log("FAILED: " + failed)
    finally:
        if a.keep:
            log("work files kept in " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    res["uptime"].append(uptime())
    res["build_s"] = s["build_s"]
    if res["rounds"]:
        report(a, s, res)
    if failed:
        res["failed"] = failed
        print("FAILED: " + failed.splitlines()[0])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
