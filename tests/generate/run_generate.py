#!/usr/bin/python3
"""Generation with a KV cache (issue 27) against PyTorch's greedy loop.

Builds examples/llama_generate.tg with `tgc build --generate` at a small
configuration, runs the executable on prompts and compares its tokens with
PyTorch's greedy loop over examples/llama_torch.py's module (the whole
sequence recomputed per token, no cache: the plainest reference). Where the
two differ, the reference's margin between its best two logits at that
step must be a tie (< 1e-4); any other difference fails. Also: a prompt of
fewer rows than the build's batch, a one-token prompt, a prompt longer than
one prefill chunk, seeded sampling reproducible, and the limits (prompt +
new tokens > max_seq) refused.

    run_generate.py TGC WORKDIR
"""

import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.dont_write_bytecode = True
from gpt2_torch import randomize, save_safetensors  # noqa: E402
from gpt2_torch import GPT2  # noqa: E402
from llama_torch import Llama  # noqa: E402

CFG = {"n_layer": 2, "d": 64, "n_head": 4, "n_kv_head": 2, "ffn": 96, "vocab": 101}
GPT2_CFG = {"n_layer": 2, "d": 64, "n_head": 4, "vocab": 101, "n_ctx": 128}
TIE = 1e-4
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def greedy(model, prompt, n):
    """PyTorch's greedy loop; returns the tokens and each step's margin."""
    ids = torch.from_numpy(prompt)
    margins = []
    with torch.no_grad():
        for _ in range(n):
            last = model(ids)[:, -1].double()
            top2 = last.topk(2, dim=-1).values
            margins.append((top2[:, 0] - top2[:, 1]).numpy())
            ids = torch.cat([ids, last.argmax(-1, keepdim=True)], dim=1)
    return ids.numpy(), margins


def compare_tokens(got, want, margins, plen, what):
    if got.shape != want.shape:
        check(False, "%s: tokens %s, expected %s" % (what, got.shape, want.shape))
        return
    for row in range(want.shape[0]):
        diff = np.nonzero(got[row] != want[row])[0]
        if len(diff) == 0:
            continue
        step = diff[0] - plen
        m = margins[step][row] if 0 <= step < len(margins) else float("inf")
        if m < TIE:
            print("note %s: row %d differs at step %d, a tie in PyTorch (margin %.2g): "
                  "compared up to there" % (what, row, step, m))
            continue
        check(False, "%s: row %d: token %d is %d, PyTorch's %d (margin %.3g)"
              % (what, row, diff[0], got[row, diff[0]], want[row, diff[0]], m))
        return
    check(True, "%s: %d rows x %d tokens equal PyTorch's greedy loop"
          % (what, want.shape[0], want.shape[1]))


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "llg.h"
/* argv: weights prompt.bin batch prompt_len max_new tokens.bin */
int main(int argc, char **argv) {
    if (argc != 7) return 2;
    int64_t b = atoll(argv[3]), p = atoll(argv[4]), n = atoll(argv[5]);
    int64_t *prompt = malloc(sizeof(int64_t) * b * p), *toks = malloc(sizeof(int64_t) * b * (p + n));
    FILE *f = fopen(argv[2], "rb");
    if (!f || fread(prompt, sizeof(int64_t), b * p, f) != (size_t)(b * p)) return 2;
    fclose(f);
    llama_generate_gen *g = NULL;
    if (llama_generate_gen_create(&g, argv[1], 1)) {
        fprintf(stderr, "create: %s\n", llama_generate_gen_error(g));
        return 1;
    }
    /* twice: each call starts from an empty cache */
    for (int k = 0; k < 2; k++)
        if (llama_generate_generate(g, prompt, b, p, n, 0.0, 0, 1.0, 0, toks)) {
            fprintf(stderr, "generate: %s\n", llama_generate_gen_error(g));
            return 1;
        }
    int bad = llama_generate_generate(g, prompt, b, p, 200, 0.0, 0, 1.0, 0, toks) == 0;
    fprintf(stderr, "%s\n", llama_generate_gen_error(g));
    llama_generate_gen_destroy(g);
    f = fopen(argv[6], "wb");
    fwrite(toks, sizeof(int64_t), b * (p + n), f);
    fclose(f);
    free(prompt);
    free(toks);
    return bad ? 3 : 0;
}
"""


def compile_api(tgc, work, model):
    """tgc compile --generate: the same tokens through the header's API."""
    obj, hdr = os.path.join(work, "llg.o"), os.path.join(work, "llg.h")
    cmd = [tgc, "compile", os.path.join(ROOT, "examples", "llama_generate.tg"), "--generate",
           "-D", "batch=2", "-D", "seq=1:8", "-D", "max_seq=96"]
    for k, v in CFG.items():
        cmd += ["-D", "%s=%d" % (k, v)]
    r = run(cmd + ["-o", obj, "--header", hdr])
    check(r.returncode == 0, "tgc compile --generate (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return
    link = run(cmd + ["--print-link-line"]).stdout.split()
    src, exe = os.path.join(work, "driver.c"), os.path.join(work, "driver")
    with open(src, "w") as f:
        f.write(DRIVER)
    cc = os.environ.get("CC", "cc")
    sanitize = [w for w in os.environ.get("TGC_TEST_SANITIZE", "").split() if w]
    r = run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", work, src, obj, "-o", exe]
            + sanitize + link)
    check(r.returncode == 0, "the API's driver compiles and links (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return
    prompt = torch.randint(0, CFG["vocab"], (2, 13),
                           generator=torch.Generator().manual_seed(11)).numpy()
    pbin, tbin = os.path.join(work, "prompt.bin"), os.path.join(work, "tokens.bin")
    prompt.astype(np.int64).tofile(pbin)
    r = run([exe, os.path.join(work, "model.safetensors"), pbin, "2", "13", "40", tbin])
    check(r.returncode == 0 and "96" in r.stderr,
          "the API: generate twice, then prompt + 200 refused naming max_seq 96 (exit %d: %s)"
          % (r.returncode, r.stderr.strip()[-200:]))
    if r.returncode:
        return
    got = np.fromfile(tbin, dtype=np.int64).reshape(2, 53)
    want, margins = greedy(model, prompt, 40)
    compare_tokens(got, want, margins, 13, "the compile API, batch 2, prompt 13, 40 new")


def gpt2(tgc, work):
    """examples/gpt2_generate.tg: 64 new tokens at batch 1 against GPT2's greedy loop."""
    model = GPT2(**GPT2_CFG).eval()
    randomize(model, GPT2_CFG["d"], 4)
    weights = os.path.join(work, "gpt2.safetensors")
    save_safetensors(weights, model.state_dict())
    gen = os.path.join(work, "gpt2_gen")
    build = [tgc, "build", os.path.join(ROOT, "examples", "gpt2_generate.tg"), "--generate",
             "-D", "batch=1", "-D", "seq=1:16", "-D", "max_seq=96", "-o", gen]
    for k, v in GPT2_CFG.items():
        build += ["-D", "%s=%d" % (k, v)]
    r = run(build)
    check(r.returncode == 0, "gpt2: tgc build --generate (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return
    prompt = torch.randint(0, GPT2_CFG["vocab"], (1, 20),
                           generator=torch.Generator().manual_seed(9)).numpy()
    pfile = os.path.join(work, "gpt2_prompt.npy")
    np.save(pfile, prompt)
    out = os.path.join(work, "gpt2_out")
    os.makedirs(out, exist_ok=True)
    r = run([gen, "--weights", weights, "--prompt", pfile, "--max-new-tokens", "64",
             "--output-dir", out])
    if r.returncode:
        check(False, "gpt2: exit %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
        return
    want, margins = greedy(model, prompt, 64)
    compare_tokens(np.load(os.path.join(out, "tokens.npy")), want, margins, 20,
                   "gpt2, prompt 20 (two chunks), 64 new")


def main():
    tgc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = Llama(**CFG).eval()
    randomize(model, CFG["d"], 3)
    weights = os.path.join(work, "model.safetensors")
    save_safetensors(weights, model.state_dict())
    gen = os.path.join(work, "gen")
    build = [tgc, "build", os.path.join(ROOT, "examples", "llama_generate.tg"), "--generate",
             "-D", "batch=1:2", "-D", "seq=1:8", "-D", "max_seq=96", "--weights", weights,
             "-o", gen]
    for k, v in CFG.items():
        build += ["-D", "%s=%d" % (k, v)]
    r = run(build)
    check(r.returncode == 0, "tgc build --generate (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return 1

    g = torch.Generator().manual_seed(7)
    cases = [("batch 2, prompt 11 (two chunks, the last padded), 64 new", 2, 11, 64),
             ("batch 1 of a batch-2 build, prompt 8 (one full chunk), 64 new", 1, 8, 64),
             ("batch 2, prompt 1, 30 new", 2, 1, 30)]
    for what, b, plen, n in cases:
        prompt = torch.randint(0, CFG["vocab"], (b, plen), generator=g).numpy()
        pfile = os.path.join(work, "prompt.npy")
        np.save(pfile, prompt)
        out = os.path.join(work, "out")
        os.makedirs(out, exist_ok=True)
        r = run([gen, "--weights", weights, "--prompt", pfile, "--max-new-tokens", str(n),
                 "--output-dir", out])
        if r.returncode:
            check(False, "%s: exit %d: %s" % (what, r.returncode, r.stderr.strip()[-300:]))
            continue
        got = np.load(os.path.join(out, "tokens.npy"))
        want, margins = greedy(model, prompt, n)
        compare_tokens(got, want, margins, plen, what)

    # Seeded sampling: the same seed gives the same tokens.
    prompt = torch.randint(0, CFG["vocab"], (2, 5), generator=g).numpy()
    np.save(os.path.join(work, "prompt.npy"), prompt)
    toks = []
    for k, seed in enumerate(("5", "5", "6")):
        out = os.path.join(work, "s%d" % k)
        os.makedirs(out, exist_ok=True)
        r = run([gen, "--weights", weights, "--prompt", os.path.join(work, "prompt.npy"),
                 "--max-new-tokens", "40",
                 "--temperature", "0.9", "--top-k", "20", "--top-p", "0.95", "--seed", seed,
                 "--output-dir", out])
        toks.append(np.load(os.path.join(out, "tokens.npy")) if r.returncode == 0 else None)
    check(toks[0] is not None and toks[1] is not None and (toks[0] == toks[1]).all(),
          "sampling with --seed 5 twice: the same tokens")
    check(toks[0] is not None and toks[2] is not None and not (toks[0] == toks[2]).all(),
          "sampling with --seed 6: other tokens")

    # The cache's length bounds prompt + new tokens.
    r = run([gen, "--prompt", os.path.join(work, "prompt.npy"), "--max-new-tokens", "92",
             "--output-dir", work])
    check(r.returncode == 1 and "96" in r.stderr,
          "prompt 5 + 92 new > max_seq 96: exit 1 naming the limit (%s)" % r.stderr.strip())
    compile_api(tgc, work, model)
    gpt2(tgc, work)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
