#!/usr/bin/python3
"""`tgc report --generate --max-seq S` (issue 27, item 4): the memory of a
generating executable, on tests/report/kv_decoder.tg (a decoder whose KV
cache is two states per layer).

- The KV cache's bytes equal 2 x layers x batch x kv_heads x head_dim x
  max_seq x bytes, computed here from the test's own sizes, at two sizes
  and at the states' own dtype, --cache-dtype bf16/f16 and --precision f16;
  per token = that / max_seq; the weights equal the params' element count
  (from the graph's shapes) x 4. The same for examples/llama_generate.tg
  (Llama-2-7B's shape in f16 at batch 8 and 4,096 tokens: a 16 GiB cache,
  6,738,415,616 params x 2 bytes; and a small one) and
  examples/gpt2_generate.tg.
- The two programs are the plain report's: the prefill's arena is
  `tgc report -D seq=CHUNK -D max_seq=S`'s, the step's `-D seq=1`'s, the
  arena the larger; the chunk is min(HI of -D seq, 128, max_seq); a
  -D batch=LO:HI range is planned at HI; the total adds up.
- --fit batch and --fit seq: the value found fits and value + 1 does not,
  checked by two more reports with the same budget.
- Errors: no max_seq dimension, no state, --fit other than batch|seq,
  --max-seq 0, --generate with --train, a range on another dimension,
  --max-seq without --generate, a bad --cache-dtype: exit 1 or 2 with a
  message naming what is wrong.

Plans only (nothing is compiled to machine code): seconds. --quick (the
sanitizer build) runs one size and the errors. Last line:
`report_generate: N passed, M failed`."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtest import Checks, Tgc, write_tmp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KV = os.path.join(HERE, "kv_decoder.tg")
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2}


def sizes(**over):
    s = dict(batch=2, seq=8, max_seq=64, n_layer=3, d=32, n_head=4, n_kv_head=2, vocab=50)
    s.update(over)
    return s


def dflags(s, skip=("max_seq",)):
    out = []
    for k, v in s.items():
        if k not in skip:
            out += ["-D", "%s=%s" % (k, v)]
    return out


def kv_formula(s, nbytes):
    head_dim = s["d"] // s["n_head"]
    return 2 * s["n_layer"] * s["batch"] * s["n_kv_head"] * head_dim * s["max_seq"] * nbytes


def weights_formula(s, nbytes):
    d, hd = s["d"], s["d"] // s["n_head"]
    per_layer = 2 * d * d + 2 * s["n_kv_head"] * hd * d
    return (s["n_layer"] * per_layer + 2 * s["vocab"] * d) * nbytes


def gen_report(c, tgc, what, *args):
    rep, rc, err = tgc.report(KV, "--generate", *args)
    c.check(rep is not None and "generate" in rep, what + ": report --generate --json",
            "rc %s: %s" % (rc, err.strip()[:300]))
    return rep


def check_sizes(c, tgc, s, cache=None, precision=None):
    """The formulas and the two plain reports behind one --generate report."""
    flags = dflags(s) + ["--max-seq", s["max_seq"]]
    if cache:
        flags += ["--cache-dtype", cache]
    if precision:
        flags += ["--precision", precision]
    what = "%s cache=%s precision=%s" % (
        ",".join("%s=%s" % kv for kv in s.items()), cache, precision)
    rep = gen_report(c, tgc, what, *flags)
    if rep is None:
        return
    g = rep["generate"]
    storage = precision if precision in ("f16", "bf16") else "f32"
    cache_dt = cache or storage
    c.eq(kv_formula(s, DTYPE_BYTES[cache_dt]), g["kv_cache_bytes"], what + ": kv_cache_bytes")
    c.eq(kv_formula(s, DTYPE_BYTES[cache_dt]) // s["max_seq"], g["kv_bytes_per_token"],
         what + ": kv_bytes_per_token")
    c.eq(weights_formula(s, DTYPE_BYTES[storage]), g["weights_bytes"], what + ": weights_bytes")
    c.eq(cache_dt, g["cache_dtype"], what + ": cache_dtype")
    c.eq(2 * s["n_layer"], g["states"], what + ": states")
    chunk = min(s["seq"], 128, s["max_seq"])
    c.eq(chunk, g["chunk"], what + ": chunk")
    c.eq(s["batch"], g["batch"], what + ": batch")
    c.eq(s["max_seq"], g["max_seq"], what + ": max_seq")
    # The two programs, planned by the plain report.
    arenas = []
    for seq in (chunk, 1):
        plain = dict(s, seq=seq)
        p, rc, err = tgc.report(KV, *dflags(plain, skip=()),
                                *(["--precision", precision] if precision else []))
        if not c.check(p is not None, what + ": plain report at seq=%d" % seq, err.strip()[:300]):
            return
        arenas.append(p["activations"]["arena_bytes"])
        if seq == 1:
            step_io = p["inputs_bytes"] + p["outputs_bytes"]
        else:
            # The build's prefill reads one row of logits (passes/logits_row.h):
            # a gen_row input (i64[1]) and logits [batch, 1, vocab], the
            # plain program's [batch, chunk, vocab] (its only output) over chunk.
            prefill_io = p["inputs_bytes"] + 8 + p["outputs_bytes"] // seq
            # params = weights + states at their storage dtype
            c.eq(p["params"]["bytes"], g["weights_bytes"] + kv_formula(s, DTYPE_BYTES[storage]),
                 what + ": plain params.bytes = weights + states")
    c.eq(arenas[0], g["prefill_arena_bytes"], what + ": prefill arena = plain report's at seq=chunk")
    c.eq(arenas[1], g["step_arena_bytes"], what + ": step arena = plain report's at seq=1")
    c.eq(max(arenas), g["arena_bytes"], what + ": arena = the larger")
    c.eq(prefill_io, g["prefill_io_bytes"], what + ": prefill inputs + outputs")
    c.eq(step_io, g["step_io_bytes"], what + ": step inputs + outputs")
    total = g["weights_bytes"] + g["kv_cache_bytes"] + max(arenas) + prefill_io + step_io
    c.eq(total, g["total_bytes"], what + ": total = weights + cache + arena + inputs/outputs")
    c.eq(total, rep["peak_bytes"], what + ": peak_bytes is the total")
    rows = {r["dtype"]: r for r in rep["by_dtype"]}
    if not precision:
        c.eq(g["total_bytes"], rows["f32"]["peak_bytes"], what + ": by_dtype f32 row's peak")
        c.eq(g["weights_bytes"], rows["f32"]["params_bytes"],
             what + ": by_dtype f32 row's weights (the cache is not a weight)")


def check_fit(c, tgc, dim, budget, base):
    flags = dflags(base) + ["--budget", budget]
    rep = gen_report(c, tgc, "--fit " + dim, *flags, "--max-seq", base["max_seq"], "--fit", dim)
    if rep is None:
        return
    f = rep["generate"].get("fit")
    if not c.check(f is not None and f["dim"] == dim, "--fit %s: generate.fit" % dim, repr(f)):
        return
    v = f["value"]
    c.check(v > 1, "--fit %s: a value above 1 (%d)" % (dim, v))
    for value, fits in ((v, True), (v + 1, False)):
        s = dict(base)
        s["batch" if dim == "batch" else "max_seq"] = value
        r = gen_report(c, tgc, "--fit %s check" % dim, *dflags(s), "--budget", budget,
                       "--max-seq", s["max_seq"])
        if r is None:
            continue
        c.eq(fits, r["generate"]["fits"], "--fit %s: %s=%d fits %s" % (dim, dim, value, budget))
        c.eq(fits, r["budget"]["fits"], "--fit %s: budget.fits at %d" % (dim, value))
        want = f["peak_bytes"] if fits else f["next_peak_bytes"]
        c.eq(want, r["generate"]["total_bytes"], "--fit %s: the peak at %d" % (dim, value))


def check_examples(c, tgc):
    """examples/llama_generate.tg and gpt2_generate.tg: the cache by the
    formula, Llama's weights by its shapes; the 7B question's figures."""
    ex = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples")
    llama_7b = dict(batch=8, max_seq=4096, n_layer=32, d=4096, n_head=32, n_kv_head=32,
                    ffn=11008, vocab=32000)
    llama_small = dict(batch=2, max_seq=96, n_layer=2, d=64, n_head=4, n_kv_head=2, ffn=96,
                       vocab=100)
    for s, precision, cache in ((llama_7b, "f16", None), (llama_small, None, "bf16")):
        flags = dflags(s) + ["--max-seq", s["max_seq"]]
        flags += ["--precision", precision] if precision else []
        flags += ["--cache-dtype", cache] if cache else []
        rep, rc, err = tgc.report(os.path.join(ex, "llama_generate.tg"), "--generate", *flags)
        what = "llama_generate d=%d batch=%d max_seq=%d" % (s["d"], s["batch"], s["max_seq"])
        if not c.check(rep is not None, what, err.strip()[:300]):
            continue
        g = rep["generate"]
        nbytes = DTYPE_BYTES[cache or precision or "f32"]
        c.eq(kv_formula(s, nbytes), g["kv_cache_bytes"], what + ": kv_cache_bytes")
        d, hd, L = s["d"], s["d"] // s["n_head"], s["n_layer"]
        params = 2 * s["vocab"] * d + d + L * (2 * d * d + 2 * s["n_kv_head"] * hd * d +
                                               3 * d * s["ffn"] + 2 * d)
        c.eq(params * DTYPE_BYTES[precision or "f32"], g["weights_bytes"], what + ": weights")
    # Llama-2-7B at batch 8 and 4,096 tokens in f16: the cache is 16 GiB.
    c.eq(16 << 30, kv_formula(llama_7b, 2), "the 7B cache formula is 16 GiB")
    gpt2 = dict(batch=3, max_seq=64, n_ctx=64, n_layer=2, d=64, n_head=4, vocab=100)
    rep, rc, err = tgc.report(os.path.join(ex, "gpt2_generate.tg"), "--generate", *dflags(gpt2),
                              "--max-seq", gpt2["max_seq"])
    if c.check(rep is not None, "gpt2_generate", err.strip()[:300]):
        c.eq(kv_formula(dict(gpt2, n_kv_head=gpt2["n_head"]), 4),
             rep["generate"]["kv_cache_bytes"], "gpt2_generate: kv_cache_bytes")


def check_error(c, tgc, what, path, args, codes, words):
    rc, out, err = tgc.run("report", path, *args)
    ok = rc in codes and all(w in err for w in words)
    c.check(ok, "error: " + what,
            "expected exit %s and %r in stderr; found exit %s: %s" % (codes, words, rc,
                                                                      err.strip()[:300]))


def check_errors(c, tgc, tmp):
    text = open(KV).read()
    no_max = write_tmp(text.replace("max_seq = 64, ", "").replace("max_seq", "seq"),
                       tmpdir=tmp)
    no_state = write_tmp(text.replace("    state ", "    param "), tmpdir=tmp)
    gen = ["--generate", "--max-seq", "64"]
    check_error(c, tgc, "no max_seq dimension", no_max, gen, (1,), ["kvdec", "max_seq"])
    check_error(c, tgc, "no state", no_state, gen, (1,), ["kvdec", "no state"])
    check_error(c, tgc, "--fit d", KV, gen + ["--budget", "1GiB", "--fit", "d"], (1, 2),
                ["--fit d", "batch", "seq"])
    check_error(c, tgc, "--max-seq 0", KV, ["--generate", "--max-seq", "0"], (1,),
                ["--max-seq 0"])
    check_error(c, tgc, "--max-seq abc", KV, ["--generate", "--max-seq", "abc"], (1,),
                ["--max-seq abc"])
    check_error(c, tgc, "--generate without --max-seq", KV, ["--generate"], (2,), ["--max-seq"])
    check_error(c, tgc, "--generate --train", KV, gen + ["--train", "logits"], (1, 2),
                ["--generate", "--train"])
    check_error(c, tgc, "a range on d", KV, gen + ["-D", "d=16:32"], (1,), ["d=16:32", "batch"])
    check_error(c, tgc, "--max-seq without --generate", KV, ["--max-seq", "64"], (2,),
                ["--generate"])
    check_error(c, tgc, "--cache-dtype i8", KV, gen + ["--cache-dtype", "i8"], (1,),
                ["--cache-dtype i8", "bf16"])
    check_error(c, tgc, "--html with --generate", KV, gen + ["--html", os.path.join(tmp, "x.html")],
                (1,), ["--html", "--generate"])
    check_error(c, tgc, "-D max_seq disagrees", KV, gen + ["-D", "max_seq=32"], (1,),
                ["max_seq=32", "--max-seq 64"])
    check_error(c, tgc, "a range without --generate", KV, ["-D", "seq=1:8"], (1,), ["seq=1:8"])
    check_error(c, tgc, "-D seq=0:8", KV, gen + ["-D", "seq=0:8"], (1,), ["-D seq", "at least 1"])
    onnx = os.path.join(tmp, "decoder.onnx")
    open(onnx, "wb").close()
    check_error(c, tgc, "an empty ONNX model", onnx, gen, (1,),
                ["decoder.onnx", "not an ONNX model"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    tgc = Tgc(a.tgc)
    c = Checks("report_generate")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        check_sizes(c, tgc, sizes())
        check_errors(c, tgc, tmp)
        if not a.quick:
            big = sizes(batch=5, seq=300, max_seq=256, n_layer=2, d=48, n_head=6, n_kv_head=1)
            check_sizes(c, tgc, sizes(), cache="bf16")
            check_sizes(c, tgc, big)
            check_sizes(c, tgc, big, cache="f16")
            check_sizes(c, tgc, sizes(max_seq=40), precision="f16")
            check_sizes(c, tgc, sizes(max_seq=6))  # the chunk clamped to the cache
            # -D batch=LO:HI and -D seq=LO:HI: planned at HI, the ranges kept
            rep = gen_report(c, tgc, "ranges", "-D", "batch=1:4", "-D", "seq=3:200",
                             "--max-seq", "256")
            if rep:
                g = rep["generate"]
                c.eq((1, 4, 3, 200, 128), (g["batch_lo"], g["batch"], g["seq_lo"], g["seq_hi"],
                                           g["chunk"]), "ranges: batch and seq bounds, chunk")
                c.eq(kv_formula(sizes(batch=4, max_seq=256), 4), g["kv_cache_bytes"],
                     "ranges: the cache at batch's HI")
            check_examples(c, tgc)
            check_fit(c, tgc, "batch", "3MiB", sizes(max_seq=128))
            check_fit(c, tgc, "seq", "3MiB", sizes(batch=3))
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
