#!/usr/bin/python3
"""`tgc report`'s command line and its JSON contract (cli.md): every key
present, figures that add up (peak = params + inputs + outputs + arena +
fixed), sizes and devices, precision and target, --fit edge cases, exit
codes (1 bad values, 2 bad command line), and the text report's sections.

Usage: report_cli.py --tgc build/tgc
Last line printed: `report_cli: N passed, M failed`; exit status 1 if M > 0."""

import argparse
import json
import os
import tempfile

from rtest import EXAMPLES, Checks, Tgc, main_guard, write_tmp

TB = os.path.join(EXAMPLES, "transformer_block.tg")
MLP = os.path.join(EXAMPLES, "mlp.tg")
EMB = os.path.join(EXAMPLES, "embedding_classifier.tg")
FIXED_CUDA = (512 + 32) << 20
PRESETS = ["t4", "l4", "a10", "rtx3090", "rtx4090", "a100-40gb", "a100-80gb", "h100", "h200", "b200", "cpu"]


def contract(c, tgc):
    rep, rc, err = tgc.report(TB, "--device", "rtx4090", "--fit", "batch")
    if not c.check(rep is not None, "report --device rtx4090 --fit batch --json", err):
        return
    top = {"graph": str, "dims": dict, "target": str, "precision": str, "params": dict, "inputs_bytes": int,
           "outputs_bytes": int, "activations": dict, "peak_bytes": int, "flops": int, "by_dtype": list,
           "budget": dict, "max_fit": dict, "steps": list}
    for k, t in top.items():
        c.check(k in rep and isinstance(rep[k], t), "key %s (%s)" % (k, t.__name__), repr(rep.get(k))[:80])
    for k in ("count", "bytes"):
        c.check(isinstance(rep["params"].get(k), int), "params.%s" % k)
    for k in ("arena_bytes", "lower_bound_bytes", "unplanned_bytes"):
        c.check(isinstance(rep["activations"].get(k), int), "activations.%s" % k)
    c.eq(sorted(["f32", "f16", "bf16", "mixed-bf16", "mixed-f16", "int8", "int4"]),
         sorted(r["dtype"] for r in rep["by_dtype"]), "by_dtype rows")
    peaks = [r["peak_bytes"] for r in rep["by_dtype"]]
    c.eq(sorted(peaks), peaks, "by_dtype ranked by peak")
    for r in rep["by_dtype"]:
        c.check(isinstance(r.get("params_bytes"), int) and isinstance(r.get("peak_bytes"), int),
                "by_dtype %s keys" % r["dtype"])
    for k, t in (("name", str), ("bytes", int), ("fits", bool), ("headroom_bytes", int)):
        c.check(isinstance(rep["budget"].get(k), t), "budget.%s" % k)
    c.check(isinstance(rep["max_fit"].get("dim"), str) and isinstance(rep["max_fit"].get("value"), int), "max_fit keys")
    for s in rep["steps"]:
        ok = (isinstance(s.get("index"), int) and isinstance(s.get("op"), str) and isinstance(s.get("outputs"), list)
              and isinstance(s.get("live_bytes"), int))
        if not c.check(ok, "steps entry keys", str(s)):
            break
    c.eq(list(range(len(rep["steps"]))), [s["index"] for s in rep["steps"]], "steps are indexed in order")
    c.eq("transformer_block", rep["graph"], "graph")
    c.eq({"batch": 1, "seq": 128}, rep["dims"], "dims")
    c.eq("cuda", rep["target"], "a GPU device implies target cuda")
    c.eq("f32", rep["precision"], "precision of an all-f32 graph")
    c.eq("rtx4090", rep["budget"]["name"], "budget.name")
    c.eq(25757220864, rep["budget"]["bytes"], "rtx4090 bytes (cli.md)")
    a = rep["activations"]
    c.eq(rep["params"]["bytes"] + rep["inputs_bytes"] + rep["outputs_bytes"] + a["arena_bytes"] + FIXED_CUDA,
         rep["peak_bytes"], "peak = params + inputs + outputs + arena + fixed")
    c.eq(rep["budget"]["bytes"] - rep["peak_bytes"], rep["budget"]["headroom_bytes"], "headroom")
    c.eq(True, rep["budget"]["fits"], "fits")
    c.check(a["lower_bound_bytes"] <= a["arena_bytes"] <= a["unplanned_bytes"], "lower bound <= arena <= unplanned")
    c.eq("batch", rep["max_fit"]["dim"], "max_fit.dim")
    c.check(rep["max_fit"]["value"] > 1, "max_fit.value > 1")
    # Steps: one per fused kernel: the materialising values of `tgc show
    # --json` (the graph as written) in order, less those fusion computes
    # inside their consumer's kernel (the scale and the mask fused into
    # softmax, tril(ones) into ~) and, on CUDA (a GPU device implies it),
    # the attention written out, which becomes one scaled_dot_product_attention
    # step computing ctx: the scores' product, the masked scores and the
    # probabilities leave the graph.
    rc, out, err = tgc.run("show", TB, "--json")
    vals = json.loads(out)["values"] if rc == 0 else []
    mat = [v["name"] for v in vals if not v["view"] and v["op"] not in ("input", "param", "scalar") and not v.get("dead")]
    fused = {"scores", "%29", "causal", "%35"}
    attention = {"%25", "%31", "attn"}
    c.eq([m for m in mat if m not in fused | attention], [s["outputs"][0] for s in rep["steps"]],
         "steps = the materialising values in order, less the fused ones and the attention")
    c.eq(["scaled_dot_product_attention"], [s["op"] for s in rep["steps"] if s["outputs"] == ["ctx"]],
         "ctx is computed by the recognised attention on CUDA")


def sizes_and_devices(c, tgc):
    for text, want in (("24GiB", 24 << 30), ("24GB", 24 * 10**9), ("512MiB", 512 << 20), ("123456", 123456),
                       ("1.5GiB", 3 << 29), ("2TB", 2 * 10**12), ("64kib", 64 << 10), ("100B", 100)):
        rep, rc, err = tgc.report(MLP, "--budget", text)
        c.check(rep is not None and rep["budget"]["bytes"] == want and rep["budget"]["name"] == "custom",
                "--budget %s = %d" % (text, want), err or str(rep and rep["budget"]))
    rep, _, _ = tgc.report(MLP, "--budget=1GB")
    c.check(rep is not None and rep["budget"]["bytes"] == 10**9, "--budget=1GB form")
    for bad in ("24XB", "-5GB", "0", "GB", "", "0x10", "1e9", "inf", "12 GiB extra", "99999999999TB"):
        rc, out, err = tgc.run("report", MLP, "--budget", bad)
        c.check(rc == 1 and "--budget" in err, "--budget %r: exit 1" % bad, "exit %s: %s" % (rc, err.strip()))
    rc, out, err = tgc.run("report", MLP, "--device", "rtx9090")
    c.check(rc == 1 and "rtx4090" in err and "h200" in err, "unknown device: exit 1 listing the known ones", err)
    for name in PRESETS:
        rep, rc, err = tgc.report(MLP, "--device", name)
        c.check(rep is not None and rep["budget"]["name"] == name and rep["budget"]["bytes"] > 0, "--device %s" % name, err)
    rep, _, _ = tgc.report(MLP, "--device", "RTX-4090")
    c.check(rep is not None and rep["budget"]["name"] == "rtx4090", "device names ignore case and dashes")
    with open("/proc/meminfo") as f:
        kb = [int(l.split()[1]) for l in f if l.startswith("MemTotal:")][0]
    rep, _, _ = tgc.report(MLP, "--device", "cpu")
    c.check(rep is not None and rep["budget"]["bytes"] == kb * 1024 and rep["target"] == "cpu",
            "cpu device = MemTotal, target cpu")
    rc, out, err = tgc.run("report", "--list-devices")
    c.check(rc == 0 and all(("\n" + n + " ") in ("\n" + out) for n in PRESETS), "--list-devices lists every preset", out)
    rc, out, err = tgc.run("report", "--list-devices", "--json")
    devs = json.loads(out)["devices"] if rc == 0 else []
    c.eq(PRESETS, [d["name"] for d in devs], "--list-devices --json")
    gib = {d["name"]: d["bytes"] / 2**30 for d in devs}
    for n, lo, hi in (("t4", 14.5, 16), ("l4", 22, 24), ("a10", 22, 24), ("rtx3090", 23.5, 24), ("rtx4090", 23.5, 24),
                      ("a100-40gb", 39, 40), ("a100-80gb", 79, 80), ("h100", 79, 80), ("h200", 139, 141),
                      ("b200", 178, 192)):
        c.check(lo <= gib.get(n, 0) <= hi, "%s size %.2f GiB in [%g, %g]" % (n, gib.get(n, 0), lo, hi))


def exit_codes(c, tgc, tmp):
    bad_graph = write_tmp("graph g\ninput x : f32[4]\noutput y = x @ x @ x\n", tmpdir=tmp)
    cases = [
        (["report", MLP, "--frobnicate"], 2, "unknown flag"),
        (["report", MLP, "--device"], 2, "missing value"),
        (["report", MLP, "--device", "t4", "--budget", "1GB"], 2, "--device and --budget"),
        (["report", MLP, "--fit", "batch"], 2, "--fit without a budget"),
        (["report"], 2, "missing FILE"),
        (["report", MLP, MLP], 2, "two files"),
        (["report", MLP, "--fit", "heads", "--budget", "1GB"], 1, "--fit of a dimension the graph lacks"),
        (["report", MLP, "--precision", "f8"], 1, "bad precision"),
        (["report", MLP, "--target", "tpu"], 1, "bad target"),
        (["report", os.path.join(tmp, "nonexistent.tg")], 1, "missing file"),
        (["report", bad_graph], 1, "graph with errors"),
        (["report", MLP, "-D", "batch=abc"], 1, "bad -D"),
        (["report", MLP, "-D", "nosuch=3"], 1, "-D of an unknown dimension"),
        (["report", MLP, "--html", os.path.join(tmp, "no", "such", "dir", "r.html")], 1, "unwritable --html"),
        (["show", MLP, "--device", "t4"], 2, "show rejects report's flags"),
        (["check", MLP, "--fit", "batch"], 2, "check rejects report's flags"),
        (["report", "--help"], 0, "--help"),
        (["report", MLP, "--precision", "half"], 0, "torch alias half"),
    ]
    for args, want, what in cases:
        rc, out, err = tgc.run(*args)
        c.check(rc == want, "%s: exit %d" % (what, want), "exit %s: %s" % (rc, err.strip()[-300:]))
    rc, out, err = tgc.run("report", MLP, "--fit", "heads", "--budget", "1GB")
    c.check("batch" in err, "--fit of an unknown dimension names the graph's dimensions", err)


def precision_and_target(c, tgc):
    base, _, _ = tgc.report(TB)
    # --precision-io: the inputs and outputs take the policy's dtype too.
    f16, _, _ = tgc.report(TB, "--precision", "f16", "--precision-io", "f16")
    bf16, _, _ = tgc.report(TB, "--precision", "bf16", "--precision-io", "bf16")
    f32, _, _ = tgc.report(TB, "--precision", "f32")
    if not c.check(None not in (base, f16, bf16, f32), "precision reports"):
        return
    c.eq("cpu", base["target"], "default target cpu")
    c.eq(0, base.get("fixed_bytes", 0), "no fixed bytes on cpu")
    c.eq(base["params"]["bytes"] // 2, f16["params"]["bytes"], "f16 halves the weights")
    c.eq(base["params"]["count"], f16["params"]["count"], "f16 keeps the count")
    c.eq(base["inputs_bytes"] // 2, f16["inputs_bytes"], "f16 halves the inputs")
    c.eq(base["outputs_bytes"] // 2, f16["outputs_bytes"], "f16 halves the outputs")
    c.check(f16["activations"]["arena_bytes"] < base["activations"]["arena_bytes"], "f16 shrinks the arena")
    c.eq("f16", f16["precision"], "precision key")
    for k in ("params", "inputs_bytes", "outputs_bytes", "activations", "peak_bytes", "flops"):
        c.eq(f16[k], bf16[k], "bf16 = f16: %s" % k)
        c.eq(base[k], f32[k], "f32 = declared f32: %s" % k)
    c.eq(f16["peak_bytes"], f16["params"]["bytes"] + f16["inputs_bytes"] + f16["outputs_bytes"] +
         f16["activations"]["arena_bytes"], "f16 peak adds up")
    rows = {r["dtype"]: r for r in base["by_dtype"]}
    c.eq(base["params"]["bytes"], rows["f32"]["params_bytes"], "by_dtype f32 = params")
    c.eq(f16["params"]["bytes"], rows["f16"]["params_bytes"], "by_dtype f16 = params at f16")
    c.check(rows["int4"]["params_bytes"] < rows["int8"]["params_bytes"] < rows["f16"]["params_bytes"],
            "int4 < int8 < f16")
    # Each row is what that build would plan: the same figures as a report with its flags.
    for r in base["by_dtype"]:
        flags = ["--quantize", r["dtype"]] if r["dtype"].startswith("int") else ["--precision", r["dtype"]]
        alone, _, _ = tgc.report(TB, *flags)
        c.eq(alone and alone["peak_bytes"], r["peak_bytes"], "by_dtype %s peak = report %s" % (r["dtype"], flags))
        c.eq(alone and alone["params"]["bytes"], r["params_bytes"], "by_dtype %s params" % r["dtype"])
    # Uniform f16 without --precision-io keeps the declared f32 inputs and outputs.
    f16d, _, _ = tgc.report(TB, "--precision", "f16")
    c.eq(base["inputs_bytes"], f16d and f16d["inputs_bytes"], "f16 keeps declared inputs")
    c.eq(base["outputs_bytes"], f16d and f16d["outputs_bytes"], "f16 keeps declared outputs")
    # int8: 1 byte per matrix element + an f32 scale per row; vectors stay f32.
    mats = [(768, 256), (256, 256), (1024, 256), (256, 1024)]
    vec_bytes = 4 * (256 * 6 + 768 + 1024)
    c.eq(sum(m * n + 4 * m for m, n in mats) + vec_bytes, rows["int8"]["params_bytes"], "int8 bytes")
    c.eq(sum(m * n // 2 + 4 * m * ((n + 127) // 128) for m, n in mats) + vec_bytes, rows["int4"]["params_bytes"],
         "int4 bytes")
    # Integer inputs keep their size under f16.
    e32, _, _ = tgc.report(EMB)
    e16, _, _ = tgc.report(EMB, "--precision", "f16", "--precision-io", "f16")
    c.eq(16 * 32 * 8, e16 and e16["inputs_bytes"], "i64 ids keep 8 bytes under f16")
    c.check(e32 and e16 and e16["outputs_bytes"] == 16 * 5 * 2 + 16 * 8, "f16 logp + i64 pred outputs")
    # CUDA.
    cu, _, _ = tgc.report(TB, "--target", "cuda")
    if c.check(cu is not None and "cuda" in cu, "--target cuda"):
        c.eq(FIXED_CUDA, cu["fixed_bytes"], "fixed CUDA bytes")
        # At seq 128 the CPU keeps the attention as written (its kernel's
        # scratch would exceed the scores); CUDA's kernel needs none, so
        # CUDA plans without the [1, 4, 128, 128] scores and probabilities.
        c.eq(cu["params"]["bytes"] + cu["inputs_bytes"] + cu["outputs_bytes"]
             + cu["activations"]["arena_bytes"] + FIXED_CUDA, cu["peak_bytes"],
             "cuda peak = params + inputs + outputs + arena + fixed")
        c.check(cu["activations"]["arena_bytes"] < base["activations"]["arena_bytes"],
                "cuda arena below the cpu's (attention recognised)",
                "%d vs %d" % (cu["activations"]["arena_bytes"], base["activations"]["arena_bytes"]))
        k = cu["cuda"]
        c.eq(cu["peak_bytes"], k["device_bytes"], "device bytes = peak")
        c.eq(cu["inputs_bytes"], k["h2d_bytes"], "h2d = inputs")
        c.eq(cu["outputs_bytes"], k["d2h_bytes"], "d2h = outputs")
        c.eq(cu["inputs_bytes"] + cu["outputs_bytes"], k["host_pinned_bytes"], "pinned = inputs + outputs")
        c.eq(["PCIe 4.0 x16", "PCIe 5.0 x16"], [t["link"] for t in k["transfer"]], "links")
        for t in k["transfer"]:
            c.check(abs(t["h2d_s"] - cu["inputs_bytes"] / t["bytes_per_s"]) < 1e-12, "h2d time " + t["link"])
            c.check(abs(t["weights_s"] - cu["params"]["bytes"] / t["bytes_per_s"]) < 1e-12, "weights time " + t["link"])
    rc, out, err = tgc.run("report", TB, "--device", "rtx4090", "--target", "cpu", "--json")
    r = json.loads(out) if rc == 0 else {}
    c.check(r.get("target") == "cpu" and "note" in r, "--target cpu with a GPU device: honoured, with a note")
    # FLOPs of the MLP by hand: matmul, bias add, relu, linear with bias, softmax.
    mlp, _, _ = tgc.report(MLP, "-D", "batch=8")
    b = 8
    want = 2 * b * 784 * 256 + b * 256 + b * 256 + (2 * b * 256 * 10 + b * 10) + 5 * b * 10
    c.eq(want, mlp and mlp["flops"], "MLP FLOPs")
    c.eq({"batch": 8}, mlp and mlp["dims"], "-D shows in dims")


def fit_edges(c, tgc):
    rep, _, err = tgc.report(MLP, "--fit", "batch", "--budget", "1KiB")
    c.check(rep is not None and rep["max_fit"]["value"] == 0 and rep["max_fit"]["peak_bytes"] is None and
            rep["max_fit"]["next_peak_bytes"] > 1024 and rep["budget"]["fits"] is False, "does not fit at 1", err)
    rep, _, err = tgc.report(EMB, "--fit", "classes", "--budget", "1TB")
    c.check(rep is not None and rep["max_fit"]["capped"] and rep["max_fit"]["value"] == 2**31, "capped search", err)
    rc, out, err = tgc.run("report", EMB, "--fit", "classes", "--budget", "1TB")
    c.check(rc == 0 and "stopped at 2147483648" in out, "capped search is said in the text")
    rc, out, err = tgc.run("report", MLP, "--fit", "batch", "--budget", "1KiB")
    c.check(rc == 0 and "does not fit at batch=1" in out, "does not fit at 1 is said in the text", out[:300])
    # A dimension whose odd values do not compile: answers stay consistent.
    src = "graph g(n = 8)\ninput x : f32[n, 64]\noutput y = relu(x.view(n / 2, 128))\n"
    path = write_tmp(src)
    rep, _, err = tgc.report(path, "--fit", "n", "--budget", "1MiB")
    if c.check(rep is not None, "fit over a dimension with holes", err):
        f = rep["max_fit"]
        c.check(f["value"] % 2 == 0 and f["peak_bytes"] <= 2**20, "fit with holes: value compiles and fits", str(f))
    os.unlink(path)


def edge_graphs(c, tgc, tmp):
    graphs = {
        "output is an input": "graph g\ninput x : f32[4, 4]\noutput x\n",
        "output is a param": "graph g\ninput x : f32[4]\nparam w : f32[3, 3]\noutput w\n",
        "output view of input": "graph g\ninput x : f32[4, 6]\noutput y = x.T\n",
        "output view of intermediate": "graph g\ninput x : f32[4, 6]\noutput y = exp(x).T\n",
        "0-d": "graph g\ninput x : f32[]\noutput y = x * 2.0\n",
        "empty tensor": "graph g(n = 1)\ninput x : f32[n, 0]\noutput y = relu(x)\n",
        "creation only": "graph g\ninput x : f32[2]\noutput y = arange(0, 10) * 2\n",
        "dead named": "graph g\ninput x : f32[4]\nt = (x * 0.5).to(f16)\noutput y = x + 1.0\n",
    }
    for what, src in graphs.items():
        path = write_tmp(src, tmpdir=tmp)
        for extra in ([], ["--device", "t4", "--fit", "n"] if "(n" in src else ["--device", "t4"]):
            rep, rc, err = tgc.report(path, *extra)
            if c.check(rep is not None, "%s %s: report" % (what, " ".join(extra)), "exit %s %s" % (rc, err[-300:])):
                c.eq(rep["params"]["bytes"] + rep["inputs_bytes"] + rep["outputs_bytes"] +
                     rep["activations"]["arena_bytes"] + rep.get("fixed_bytes", 0), rep["peak_bytes"], what + ": peak")
            rc, out, err = tgc.run("report", path, *extra)
            c.check(rc == 0 and "assumptions" in out, what + ": text report", err[-300:])
    rep, _, _ = tgc.report(write_tmp(graphs["output is an input"], tmpdir=tmp))
    c.check(rep is not None and rep["steps"] == [] and rep["peak_step"] is None and rep["outputs_bytes"] == 64,
            "no steps: empty arena, the output still counted")
    rep, _, _ = tgc.report(write_tmp(graphs["output view of intermediate"], tmpdir=tmp))
    c.check(rep is not None and rep["outputs_bytes"] == 96, "a view output counts its own buffer")
    # Functions of numbers fold at compile time: sqrt(32.0) and math.sqrt(d) are
    # numbers, so the report has the one division, and no sqrt/exp step.
    folded = ("graph g(d = 64)\ninput x : f32[4, 64]\n"
              "output y = x / sqrt(32.0) / math.sqrt(d) * exp(1.0) * math.pi\n")
    rep, rc, err = tgc.report(write_tmp(folded, tmpdir=tmp))
    ops = [s.get("op") for s in rep["steps"]] if rep else []
    c.check(rep is not None and not any(o in ("sqrt", "exp") for o in ops),
            "functions of numbers fold: no sqrt/exp step", "%s %s" % (ops, err[-200:]))


def text_report(c, tgc):
    rc, out, err = tgc.run("report", TB, "--device", "rtx4090", "--fit", "batch")
    for s in ("on rtx4090: FITS", "largest batch that fits:", "summary", "lower bound", "unplanned sum", "peak",
              "FLOPs", "memory peaks at step", "timeline", "<- peak", "storage choices", "int4", "cuda",
              "PCIe 4.0 x16", "PCIe 5.0 x16", "assumptions"):
        c.check(s in out, "text report shows %r" % s)
    c.check(rc == 0 and len(out.splitlines()[0]) < 100, "the verdict is the first line")
    c.check("no fusion" not in out, "the assumptions do not say 'no fusion yet' (fusion exists)")
    rc, out, err = tgc.run("report", TB, "--budget", "1MiB")
    c.check(out.startswith("transformer_block (batch=1, seq=128) on a budget of 1MiB: DOES NOT FIT"), "no-fit verdict",
            out.splitlines()[0] if out else err)
    # The answer comes first: verdict, peak and headroom, then the largest
    # batch that fits, searched unasked when the graph has a `batch` dim.
    rc, out, err = tgc.run("report", TB, "--device", "rtx4090")
    head = out.splitlines()[:3]
    c.check(rc == 0 and len(head) == 3 and "FITS" in head[0] and "peak" in head[1] and "headroom" in head[1]
            and head[2].startswith("  largest batch that fits:"), "first lines: verdict, peak, headroom, largest batch",
            "\n".join(head) or err)
    rep, _, _ = tgc.report(TB, "--device", "rtx4090")
    c.check(rep is not None and "max_fit" not in rep, "the JSON's max_fit stays --fit's")


# /proc/cpuinfo's names for the features tgc's CPU levels check.
CPUINFO_NAME = {"sse3": "pni", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "sahf": "lahf_lm",
                "lzcnt": "abm", "bmi": "bmi1"}


def cpu_levels(c, tgc):
    """--cpu: each level's features checked against /proc/cpuinfo (an
    oracle independent of tgc's CPUID code), the chosen one the runnable
    level with the most features, bad names a usage error."""
    try:
        flags = set(next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split(":")[1].split())
    except (OSError, StopIteration):
        c.check(True, "cpu levels: no /proc/cpuinfo, skipped")
        return
    rep, rc, err = tgc.report(TB, "--cpu", "x86-64-v2,x86-64-v4,native")
    lv = (rep or {}).get("cpu", {}).get("levels", [])
    c.check([l.get("name") for l in lv] == ["x86-64-v2", "x86-64-v4", "native"],
            "--cpu: one level per name, in order", str(rep.get("cpu") if rep else err))
    best = None
    for l in lv:
        feats = [f for f in l["features"].split(",") if f]
        have = all(CPUINFO_NAME.get(f, f.replace(".", "_")) in flags for f in feats)
        c.check(l["runs_here"] == have, "cpu level %s runs here iff /proc/cpuinfo has %s" % (
            l["name"], l["features"]), str(l))
        c.check(bool(l["missing"]) != have, "cpu level %s names what is missing" % l["name"], str(l))
        if have and (best is None or len(feats) > best[1]):
            best = (l["name"], len(feats))
    c.check(bool(lv) and (rep["cpu"]["selected"] == (best[0] if best else None)),
            "the selected level is the runnable one with the most features", str(rep.get("cpu") if rep else ""))
    c.check(bool(lv) and "avx512f" in lv[1]["features"] and "sse4.2" in lv[0]["features"]
            and "avx" not in lv[0]["features"].split(","), "x86-64-v2/v4 check their psABI features", str(lv))
    rc, out, err = tgc.run("report", TB, "--cpu", "x86-64-v2,native")
    c.check(rc == 0 and "cpu levels" in out and "runs on this CPU" in out, "the text report shows the levels")
    rc, out, err = tgc.run("report", TB, "--cpu", "nosuchcpu")
    c.check(rc == 2 and "nosuchcpu" in err, "--cpu with an unknown name: exit 2 naming it", err)
    rep, rc, err = tgc.report(TB, "--target", "cuda")
    c.check(rep is not None and "cpu" not in rep, "--target cuda: no cpu levels")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    args = ap.parse_args()
    tgc = Tgc(args.tgc)
    c = Checks("report_cli")
    with tempfile.TemporaryDirectory() as tmp:
        contract(c, tgc)
        sizes_and_devices(c, tgc)
        exit_codes(c, tgc, tmp)
        precision_and_target(c, tgc)
        fit_edges(c, tgc)
        edge_graphs(c, tgc, tmp)
        text_report(c, tgc)
        cpu_levels(c, tgc)
    return c.finish()


if __name__ == "__main__":
    main_guard(main)
