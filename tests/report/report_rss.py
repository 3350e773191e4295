"""`tgc report` against the executable's measured memory (issue 32).

Weights held once: a ResNet-style net (tests/report/rnet.tg: conv, batch
norm, relu, residual adds; 18 MiB of weights, tiny activations) is built
with its weights from a file and embedded. Its params are read only by
convolutions that oneDNN prepares (folded, reordered), so runtime/conv.c
releases their pages once folded. Checked:
  - the report counts every param as released and its peak falls by
    exactly their bytes (peak = the larger of the run's and the load's);
  - the drop in the executable's peak RSS (GNU time's maximum resident set size) between
    TGC_CONV_KEEP_PARAMS=1 (the params stay, as before) and the default
    is the params' bytes within 3% (measured 98.3%: the batch norm's 1 KiB
    vectors and each weight's partial first and last pages stay mapped).
The whole process: the report's process.peak_bytes (its peak plus the
runtime and libraries term for the library set and thread count) against
the executable's peak RSS (the largest of three runs), within PROCESS_TOL, for the conv net (weights
from a file), a transformer block (examples/transformer_block.tg, batch 8)
a training step (tests/report/train_mlp.tg, AdamW, 3 steps) and a
product whose 16 MiB weight is converted from an f16 file at load (held
once: the file's pages go), each at 2 threads; and a generating
executable (tgc build --generate of tests/report/kv_decoder.tg: weights,
a 256 MiB KV cache, the larger arena) against report --generate.
Not run under AddressSanitizer (its shadow memory is the RSS).
Prints `report_rss: N passed, M failed`."""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtest import Checks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 0.03
PROCESS_TOL = 0.05
THREADS = "2"


def write_st(path, tensors, dtype=np.float32):
    hdr, off, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=dtype)
        st = "F16" if dtype == np.float16 else "F32"
        hdr[name] = {"dtype": st, "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(hdr).encode()
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def rnet_weights(c=256):
    rng = np.random.default_rng(0)
    t = {}
    for b in range(1, 5):
        for k in (1, 2):
            t["b%d.conv%d.weight" % (b, k)] = rng.standard_normal((c, c, 3, 3)) * 0.02
            for n in ("weight", "bias", "running_mean"):
                t["b%d.bn%d.%s" % (b, k, n)] = rng.standard_normal(c) * 0.1
            t["b%d.bn%d.running_var" % (b, k)] = rng.random(c) + 0.5
    return t


def max_rss(cmd, env):
    """The peak RSS of cmd, by GNU time: the maximum a child's rusage
    reports carries the image it was forked from, and this script's (with
    numpy) is larger than the programs measured."""
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss %M"] + cmd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), r.stderr))
    return int(r.stderr.strip().splitlines()[-1].split()[1]) * 1024


def weights_once(c, tgc, tmp):
    tg = os.path.join(HERE, "rnet.tg")
    w = os.path.join(tmp, "w.safetensors")
    write_st(w, rnet_weights())
    rep = json.loads(subprocess.run([tgc, "report", tg, "--json"], check=True,
                                    capture_output=True, text=True).stdout)
    p = rep["params"]
    c.eq(p["bytes"], p["released_bytes"], "every param of rnet is released")
    c.eq(0, p["resident_bytes"], "no param resident")
    before = (p["bytes"] + rep["inputs_bytes"] + rep["outputs_bytes"] + rep["activations"]["arena_bytes"]
              + rep["conv_prepared_bytes"])
    c.eq(before - p["bytes"], rep["run_peak_bytes"], "the run's peak falls by the params' bytes")
    c.eq(rep["run_peak_bytes"] - rep["inputs_bytes"] - rep["outputs_bytes"] - rep["activations"]["arena_bytes"]
         + rep["load_plain_bytes"], rep["load_peak_bytes"], "the load's peak")
    c.eq(max(rep["run_peak_bytes"], rep["load_peak_bytes"]), rep["peak_bytes"], "peak = max(run, load)")
    env = dict(os.environ)
    env.pop("TGC_CONV_KEEP_PARAMS", None)
    keep = dict(env, TGC_CONV_KEEP_PARAMS="1")
    out = os.path.join(tmp, "out")
    for how, flags in (("from the file", ["--weights", w]), ("embedded", ["--weights", w, "--embed-weights"])):
        exe = os.path.join(tmp, "rnet_" + how.split()[0])
        subprocess.run([tgc, "build", tg, "-o", exe] + flags, check=True)
        run = [exe, "--random-inputs", "1", "--output-dir", out]
        if how == "from the file":
            run += ["--weights", w]
        drops = []
        for _ in range(2):
            drops.append(max_rss(run, keep) - max_rss(run, env))
        drop = max(drops)
        c.check(abs(drop - p["released_bytes"]) <= TOL * p["released_bytes"],
                "weights %s: the peak RSS falls by the params' bytes" % how,
                "drop %.2f MiB, params %.2f MiB" % (drop / 2**20, p["released_bytes"] / 2**20))
        print("weights %s: RSS drop %.2f MiB, params %.2f MiB" % (how, drop / 2**20, p["released_bytes"] / 2**20))


def report(tgc, tg, *flags):
    return json.loads(subprocess.run([tgc, "report", tg, "--json", "--threads", THREADS] + list(flags),
                                     check=True, capture_output=True, text=True).stdout)


def process(c, tgc, tmp):
    """After weights_once, whose weights file the conv net runs with."""
    env = dict(os.environ)
    env.pop("TGC_CONV_KEEP_PARAMS", None)
    w = os.path.join(tmp, "w.safetensors")
    rng = np.random.default_rng(1)
    x, y = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(x, rng.standard_normal((64, 512)).astype(np.float32))
    np.save(y, rng.standard_normal((64, 10)).astype(np.float32))
    out = os.path.join(tmp, "out")
    cases = [
        ("conv net", os.path.join(HERE, "rnet.tg"), [], ["--weights", w],
         ["--weights", w, "--random-inputs", "1"]),
        ("transformer block", os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples",
                                           "transformer_block.tg"), ["-D", "batch=8"], [],
         ["--random-inputs", "1"]),
        ("training step", os.path.join(HERE, "train_mlp.tg"), ["--train", "loss", "--optimizer", "adamw"],
         ["--lr", "0.001"], ["--input", "x=" + x, "--input", "y=" + y, "--steps", "3"]),
    ]
    # A weight converted at load (f16 in the file, f32 declared) is the
    # context's copy: the file's pages it was read from are released
    # (runtime/program.c), so it is held once.
    lin = os.path.join(tmp, "lin.tg")
    with open(lin, "w") as f:
        f.write("graph lin(batch = 8)\ninput x : f32[batch, 2048]\nparam w : f32[2048, 2048]\n"
                "output y = linear(x, w)\n")
    w16 = os.path.join(tmp, "w16.safetensors")
    write_st(w16, {"w": np.random.default_rng(2).standard_normal((2048, 2048)) * 0.02}, np.float16)
    cases.append(("converted weights", lin, [], [], ["--weights", w16, "--random-inputs", "1"]))
    for what, tg, flags, build, run in cases:
        exe = os.path.join(tmp, what.replace(" ", "_"))
        subprocess.run([tgc, "build", tg, "-o", exe, "--threads", THREADS] + flags + build, check=True)
        # The largest of three runs: the libraries' file-backed pages are
        # mapped by fault-around only while they sit in the page cache, so a
        # run on a loaded machine (other processes, DAMON reclaim) can map
        # up to ~1.5 MiB fewer of them than the report's runtime term, which
        # counts a warm process (seen: 0.944 on the transformer block once in
        # a CI run, 0.98 alone). A run that maps more than the report still
        # fails: the bound is two-sided and not widened.
        rss = max(max_rss([exe, "--output-dir", out] + run, env) for _ in range(3))
        rep = report(tgc, tg, *flags)
        pr = rep.get("process", {})
        peak = pr.get("peak_bytes", 0)
        c.eq(rep["peak_bytes"] + pr.get("runtime_bytes", 0) + pr.get("io_declared_bytes", 0), peak,
             what + ": process peak = peak + runtime + declared I/O")
        c.check(peak and abs(rss / peak - 1) <= PROCESS_TOL, what + ": peak RSS against the process peak",
                "RSS %.2f MiB, report %.2f MiB" % (rss / 2**20, peak / 2**20))
        print("%s: RSS %.2f MiB, process peak %.2f MiB (%s, %s threads), RSS / report %.3f"
              % (what, rss / 2**20, peak / 2**20, pr.get("libraries"), pr.get("threads"), rss / max(peak, 1)))


def generating(c, tgc, tmp):
    """A generating executable (tgc build --generate) against tgc report
    --generate: its weights (40 MiB) and KV cache (256 MiB, zeroed at
    creation, so resident) once, one arena, both programs' buffers."""
    tg = os.path.join(HERE, "kv_decoder.tg")
    s = dict(d=512, n_layer=2, vocab=8000, n_head=8, n_kv_head=8, batch=4)
    dims = sum((["-D", "%s=%d" % kv] for kv in s.items()), []) + ["-D", "seq=1:8"]
    d, kv = s["d"], s["n_kv_head"] * s["d"] // s["n_head"]
    rng = np.random.default_rng(3)
    t = {"emb": rng.standard_normal((s["vocab"], d)), "head": rng.standard_normal((s["vocab"], d))}
    for i in range(s["n_layer"]):
        for n, shape in (("wq", (d, d)), ("wk", (kv, d)), ("wv", (kv, d)), ("wo", (d, d))):
            t["layers.%d.%s" % (i, n)] = rng.standard_normal(shape) * 0.02
    w = os.path.join(tmp, "kv.safetensors")
    write_st(w, t)
    prompt = os.path.join(tmp, "prompt.npy")
    np.save(prompt, rng.integers(0, s["vocab"], (s["batch"], 3)).astype(np.int64))
    exe = os.path.join(tmp, "gen")
    subprocess.run([tgc, "build", tg, "--generate", "-D", "max_seq=8192", "-o", exe] + dims,
                   check=True)
    env = dict(os.environ)
    out = os.path.join(tmp, "out")
    os.makedirs(out, exist_ok=True)
    run = [exe, "--prompt", prompt, "--max-new-tokens", "5", "--weights", w, "--threads", THREADS,
           "--output-dir", out]
    rss = max(max_rss(run, env) for _ in range(3))  # the largest of three, as process()
    rep = report(tgc, tg, "--generate", "--max-seq", "8192", *dims)
    g, pr = rep["generate"], rep.get("process", {})
    c.eq(g["kv_cache_bytes"], 256 << 20, "generating: the cache is 256 MiB")
    peak = pr.get("peak_bytes", 0)
    c.eq(g["total_bytes"] + pr.get("runtime_bytes", 0) + pr.get("io_declared_bytes", 0), peak,
         "generating: process peak = total + runtime")
    c.check(peak and abs(rss / peak - 1) <= PROCESS_TOL,
            "generating: peak RSS against the process peak",
            "RSS %.2f MiB, report %.2f MiB" % (rss / 2**20, peak / 2**20))
    print("generating: RSS %.2f MiB, process peak %.2f MiB (total %.2f MiB), RSS / report %.3f"
          % (rss / 2**20, peak / 2**20, g["total_bytes"] / 2**20, rss / max(peak, 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    args = ap.parse_args()
    c = Checks("report_rss")
    tmp = tempfile.mkdtemp(prefix="tgc-report-rss-")
    try:
        weights_once(c, args.tgc, tmp)
        process(c, args.tgc, tmp)
        generating(c, args.tgc, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
