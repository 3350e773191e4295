#!/usr/bin/python3
"""An ONNX decoder's chunked prefill and `tgc report --generate` of it
(issue 27, items 3 and 4), on run_generate.py's GPT-2 exported to ONNX with
its cache in the Hugging Face convention (PastGPT2).

- Built with `--generate -D batch=1:2 -D seq=1:8 -D max_seq=95`: the
  prompt runs in chunks of 8 tokens (the executable's --help says so) and
  its greedy tokens equal PyTorch's greedy loop (no cache, the whole
  sequence per token) for a prompt of 20 at batch 2 (three chunks, the
  last padded), of 1 at batch 1 of the batch-2 build (one padded chunk)
  and of 89 at batch 2 (the last chunk starts earlier, at 87, recomputing
  rows).
- A model that runs one token a run only (its queries reshaped for one
  token) builds with a note on stderr, its prefill at one token a run, and
  still gives PyTorch's tokens; the report plans it the same way.
- `tgc report MODEL.onnx --generate --max-seq S`: the KV cache's bytes
  equal 2 x layers x batch x heads x head_dim x S x bytes at two sizes and
  under --cache-dtype bf16, per token that / S, the chunk 8; its arena
  equals the one the generating program allocates (read from the
  programs' descriptors through `tgc compile --generate`); --fit seq with
  a budget gives a context that fits, one more not.
- A model without attention_mask is refused (exit 1 naming it) by the
  build and the report: nothing else could hide the cache's rows past the
  position.

    run_generate_onnx.py TGC WORKDIR [--quick]

--quick (the sanitizer build): the report's checks only (plans, nothing
compiled to machine code). Last line: `N failures`.
"""

import json
import os
import re
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import run_generate as rg  # noqa: E402
from run_generate import GPT2, GPT2_CFG, check, compare_tokens, greedy  # noqa: E402
from run_generate import randomize, run  # noqa: E402

CHUNK, MAX_SEQ = 8, 95
HD = GPT2_CFG["d"] // GPT2_CFG["n_head"]

DRIVER = r"""
#include <stdio.h>
#include "tgcrt.h"
const RtProgram *NAME_prefill_program(void);
const RtProgram *NAME_step_program(void);
/* The arena each program's context is created with (one, shared). */
int main(void) {
    printf("%zu %zu\n", NAME_prefill_program()->arena_bytes, NAME_step_program()->arena_bytes);
    return 0;
}
"""


def gen_flags(batch="1:2", max_seq=MAX_SEQ):
    return ["--generate", "-D", "batch=%s" % batch, "-D", "seq=1:%d" % CHUNK,
            "-D", "max_seq=%d" % max_seq]


def tokens(gen, work, model, b, plen, n, what, seed=9):
    prompt = torch.randint(0, GPT2_CFG["vocab"], (b, plen),
                           generator=torch.Generator().manual_seed(seed + plen)).numpy()
    pfile, out = os.path.join(work, "prompt.npy"), os.path.join(work, "out")
    np.save(pfile, prompt)
    os.makedirs(out, exist_ok=True)
    r = run([gen, "--prompt", pfile, "--max-new-tokens", str(n), "--output-dir", out])
    if r.returncode:
        check(False, "%s: exit %d: %s" % (what, r.returncode, r.stderr.strip()[-300:]))
        return
    want, margins = greedy(model, prompt, n)
    compare_tokens(np.load(os.path.join(out, "tokens.npy")), want, margins, plen, what)


def chunked(tgc, work, model, onnx):
    gen = os.path.join(work, "onnx_chunked")
    r = run([tgc, "build", onnx] + gen_flags() + ["-o", gen])
    check(r.returncode == 0 and "note" not in r.stderr,
          "chunked: tgc build model.onnx --generate -D seq=1:%d, no note (exit %d: %s)"
          % (CHUNK, r.returncode, r.stderr.strip()[-300:]))
    if r.returncode:
        return
    h = run([gen, "--help"])
    check("chunks of %d tokens" % CHUNK in h.stdout,
          "chunked: the prompt runs in chunks of %d (--help: %s)"
          % (CHUNK, h.stdout.splitlines()[2:4]))
    for b, plen, n, what in ((2, 20, 64, "three chunks, the last padded"),
                             (1, 1, 64, "one padded chunk, batch 1 of 2"),
                             (2, 89, 6, "the last chunk starting earlier")):
        tokens(gen, work, model, b, plen, n,
               "chunked onnx, prompt %d (%s), %d new" % (plen, what, n))


def fallback(tgc, work, model, quick):
    """A model that takes one token a run only: the prefill falls back."""
    onnx = os.path.join(work, "gpt2_one_token.onnx")
    rg.export_past(model, onnx, bad="one_token", t=1)
    r = run([tgc, "report", onnx, "--json", "--max-seq", str(MAX_SEQ)] + gen_flags("1")[:-2])
    g = json.loads(r.stdout)["generate"] if r.returncode == 0 else {}
    check(g.get("chunk") == 1 and "note" in r.stderr,
          "one-token model: the report plans its prefill at 1 token, with a note (exit %d, "
          "chunk %s: %s)" % (r.returncode, g.get("chunk"), r.stderr.strip()[-300:]))
    if quick:
        return
    gen = os.path.join(work, "onnx_one_token")
    r = run([tgc, "build", onnx] + gen_flags("1") + ["-o", gen])
    check(r.returncode == 0 and "one token a run" in r.stderr,
          "one-token model: builds, with a note that its prompt runs one token a run (exit %d: "
          "%s)" % (r.returncode, r.stderr.strip()[-300:]))
    if r.returncode:
        return
    h = run([gen, "--help"])
    check("chunks of 1 tokens" in h.stdout, "one-token model: --help says chunks of 1")
    tokens(gen, work, model, 1, 12, 20, "one-token model, prompt 12, 20 new")


def no_mask(tgc, work, model, quick):
    """Without attention_mask nothing hides the cache's rows past the
    position: refused, naming the input."""
    onnx = os.path.join(work, "gpt2_no_mask.onnx")
    rg.export_past(model, onnx, bad="no_mask")
    gen = os.path.join(work, "onnx_no_mask")
    cmds = [("report", [tgc, "report", onnx, "--max-seq", str(MAX_SEQ)] + gen_flags("1")[:-2])]
    if not quick:
        cmds.append(("build", [tgc, "build", onnx] + gen_flags("1") + ["-o", gen]))
    for what, cmd in cmds:
        r = run(cmd)
        check(r.returncode == 1 and "no input 'attention_mask'" in r.stderr
              and not os.path.exists(gen),
              "a model without attention_mask: tgc %s --generate is exit 1 naming it (exit %d: %s)"
              % (what, r.returncode, r.stderr.strip()[-300:]))


def report_json(tgc, onnx, extra):
    r = run([tgc, "report", onnx, "--json"] + extra)
    if r.returncode:
        check(False, "report %s: exit %d: %s" % (" ".join(extra), r.returncode,
                                                r.stderr.strip()[-300:]))
        return None
    return json.loads(r.stdout)["generate"]


def report(tgc, work, onnx, quick):
    L, H = GPT2_CFG["n_layer"], GPT2_CFG["n_head"]
    sizes = ((2, MAX_SEQ, None, 4), (1, 64, "bf16", 2))
    for b, s, cache, nbytes in sizes[:1] if quick else sizes:
        flags = ["--max-seq", str(s)] + gen_flags(str(b), s)[:-2]
        flags += ["--cache-dtype", cache] if cache else []
        g = report_json(tgc, onnx, flags)
        if not g:
            continue
        kv = 2 * L * b * H * HD * s * nbytes
        what = "report, batch %d, --max-seq %d%s" % (b, s,
                                                     ", --cache-dtype " + cache if cache else "")
        check(g["kv_cache_bytes"] == kv and g["kv_bytes_per_token"] == kv // s,
              "%s: KV cache %d bytes (2 x %d x %d x %d x %d x %d x %d = %d), per token %d"
              % (what, g["kv_cache_bytes"], L, b, H, HD, s, nbytes, kv, g["kv_bytes_per_token"]))
        check(g["chunk"] == CHUNK and g["states"] == 2 * L and g["batch"] == b
              and g["max_seq"] == s,
              "%s: chunk %d, %d states, batch %d, max_seq %d"
              % (what, g["chunk"], g["states"], g["batch"], g["max_seq"]))
    if quick:
        return
    # The executable's arena: the programs' descriptors, as linked.
    obj, hdr = os.path.join(work, "onnx_gen.o"), os.path.join(work, "onnx_gen.h")
    cmd = [tgc, "compile", onnx] + gen_flags("2")
    r = run(cmd + ["-o", obj, "--header", hdr])
    check(r.returncode == 0, "tgc compile model.onnx --generate (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return
    name = re.search(r"typedef struct (\w+)_gen ", open(hdr).read()).group(1)
    link = run(cmd + ["--print-link-line"]).stdout.split()
    src, exe = os.path.join(work, "arena.c"), os.path.join(work, "arena")
    with open(src, "w") as f:
        f.write(DRIVER.replace("NAME", name))
    r = run([os.environ.get("CC", "cc"), "-std=c11", "-I", os.path.join(ROOT, "runtime"), src, obj,
             "-o", exe] + link)
    a = run([exe]) if r.returncode == 0 else r
    g = report_json(tgc, onnx, ["--max-seq", str(MAX_SEQ)] + gen_flags("2")[:-2])
    if a.returncode or not g:
        check(False, "the programs' arena: exit %d: %s" % (a.returncode, a.stderr.strip()[-300:]))
        return
    pre, step = (int(x) for x in a.stdout.split())
    check(pre == step == g["arena_bytes"],
          "report's arena %d = the generating program's (prefill %d, step %d)"
          % (g["arena_bytes"], pre, step))
    # --fit seq under a budget: the context found fits, one more does not.
    budget = g["total_bytes"] + 40 * 1024
    flags = gen_flags("2")[:-2] + ["--budget", str(budget)]
    f = report_json(tgc, onnx, ["--max-seq", str(MAX_SEQ), "--fit", "seq"] + flags)
    v = f["fit"]["value"] if f and f.get("fit") else 0
    at = report_json(tgc, onnx, ["--max-seq", str(v)] + flags) if v > MAX_SEQ else None
    nxt = report_json(tgc, onnx, ["--max-seq", str(v + 1)] + flags) if at else None
    check(at is not None and nxt is not None and at["total_bytes"] <= budget < nxt["total_bytes"],
          "--fit seq, budget %d: %d tokens fit (%s), %d do not (%s)"
          % (budget, v, at and at["total_bytes"], v + 1, nxt and nxt["total_bytes"]))


def main():
    tgc, work = sys.argv[1], sys.argv[2]
    quick = "--quick" in sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    model = GPT2(**GPT2_CFG).eval()
    randomize(model, GPT2_CFG["d"], 4)
    onnx = os.path.join(work, "gpt2_past.onnx")
    rg.export_past(model, onnx)
    report(tgc, work, onnx, quick)
    if not quick:
        chunked(tgc, work, model, onnx)
    fallback(tgc, work, model, quick)
    no_mask(tgc, work, model, quick)
    print("%d failures" % len(rg.failures))
    return 1 if rg.failures else 0


if __name__ == "__main__":
    sys.exit(main())
