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
new tokens > max_seq) refused. Then the same GPT-2 exported to ONNX with
its cache in the Hugging Face convention (past_key_values.N.key in,
present.N.key out), built with --generate from the .onnx: its tokens
equal the same greedy loop; a model without past inputs, whose past is
read besides its Concat, or concatenated after the new keys, is refused.

    run_generate.py TGC WORKDIR
"""

import math
import os
import subprocess
import sys
import warnings

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


class PastGPT2(torch.nn.Module):
    """GPT2's forward with a cache, as Hugging Face exports a decoder:
    (input_ids, attention_mask [batch, past + seq], position_ids, past_0_key,
    past_0_value, ...) -> (logits, present_0_key, ...), present = past and
    the new keys concatenated along dim 2; the causal mask is the last `seq`
    rows of the (past + seq) square, attention_mask's zeros are -inf.
    Not the pattern: bad="extra_read" reads the first past elsewhere too,
    bad="new_first" concatenates the first layer's keys (new, past).
    bad="one_token" reshapes the queries for a single token (the model
    exports and runs at one token a run only: --generate's prefill falls
    back to one token a run)."""

    def __init__(self, m, n_head, bad=None):
        super().__init__()
        self.m, self.n_head, self.bad = m, n_head, bad

    def forward(self, input_ids, attention_mask, position_ids, *past):
        m = self.m
        b, t = input_ids.shape
        x = m.wte(input_ids) + m.wpe(position_ids)
        presents = []
        for i, blk in enumerate(m.h):
            a = blk.attn
            h = blk.ln_1(x)
            d = h.shape[-1]
            q, k, v = a.c_attn(h).split(d, dim=2)
            q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2)
                       for z in (q, k, v))
            if self.bad == "one_token":
                q = q.reshape(b, self.n_head, 1, d // self.n_head)
            k = torch.cat([k, past[0]] if i == 0 and self.bad == "new_first"
                          else [past[2 * i], k], dim=2)
            v = torch.cat([past[2 * i + 1], v], dim=2)
            presents += [k, v]
            total = k.shape[2]
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.n_head)
            keep = a.mask[total - t:total, :total][None, None] \
                & attention_mask[:, None, None, :].bool()
            att = scores.masked_fill(~keep, float("-inf")).softmax(dim=-1)
            x = x + a.c_proj((att @ v).transpose(1, 2).reshape(b, t, d))
            x = x + blk.mlp(blk.ln_2(x))
        logits = m.ln_f(x) @ m.wte.weight.T
        if self.bad == "extra_read":
            logits = logits + past[0].mean()
        return (logits, *presents)


class NoMask(torch.nn.Module):
    """PastGPT2 without the attention_mask input (every row attended)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, position_ids, *past):
        b, t = input_ids.shape
        mask = torch.ones(b, past[0].shape[2] + t, dtype=torch.int64)
        return self.inner(input_ids, mask, position_ids, *past)


def export_past(model, path, bad=None, t=3):
    """torch.onnx.export of PastGPT2 with dynamic batch, seq, past and total
    (attention_mask's length, an axis of its own as in HF's exports),
    traced at t new tokens. bad="no_mask": without the attention_mask
    input; others: PastGPT2's."""
    cfg = GPT2_CFG
    hd = cfg["d"] // cfg["n_head"]
    b, p = 2, 4
    ids = torch.randint(0, cfg["vocab"], (b, t), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(b, p + t, dtype=torch.int64)
    pos = torch.arange(p, p + t)[None].expand(b, t)
    past = [torch.zeros(b, cfg["n_head"], p, hd) for _ in range(2 * cfg["n_layer"])]
    names, outs = ["input_ids", "attention_mask", "position_ids"], ["logits"]
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
           "position_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    for i in range(cfg["n_layer"]):
        for kv in ("key", "value"):
            names.append("past_key_values.%d.%s" % (i, kv))
            outs.append("present.%d.%s" % (i, kv))
            dyn[names[-1]] = {0: "batch", 2: "past"}
            dyn[outs[-1]] = {0: "batch", 2: "total"}
    module, args = PastGPT2(model, cfg["n_head"], bad).eval(), (ids, mask, pos, *past)
    if bad == "no_mask":
        module, args = NoMask(module), (ids, pos, *past)
        names.remove("attention_mask")
        del dyn["attention_mask"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, input_names=names,
                          output_names=outs, dynamic_axes=dyn, opset_version=14)


def onnx_gpt2(tgc, work):
    """An ONNX GPT-2 with past keys and values: greedy tokens equal GPT2's."""
    model = GPT2(**GPT2_CFG).eval()
    randomize(model, GPT2_CFG["d"], 4)
    onnx = os.path.join(work, "gpt2_past.onnx")
    export_past(model, onnx)
    gen = os.path.join(work, "onnx_gen")
    # cli.md's form: the upper bound of seq is the cache's length (96).
    r = run([tgc, "build", onnx, "--generate", "-D", "batch=1:2", "-D", "seq=1:96",
             "-o", gen])
    check(r.returncode == 0, "onnx: tgc build model.onnx --generate (%s)"
          % r.stderr.strip()[-300:])
    if r.returncode == 0:
        g = torch.Generator().manual_seed(9)
        for b, plen in ((2, 20), (1, 5)):
            prompt = torch.randint(0, GPT2_CFG["vocab"], (b, plen), generator=g).numpy()
            pfile = os.path.join(work, "onnx_prompt.npy")
            np.save(pfile, prompt)
            out = os.path.join(work, "onnx_out")
            os.makedirs(out, exist_ok=True)
            r = run([gen, "--prompt", pfile, "--max-new-tokens", "64", "--output-dir", out])
            what = "onnx gpt2 with past, batch %d of a batch-2 build, prompt %d, 64 new" % (b, plen)
            if r.returncode:
                check(False, "%s: exit %d: %s" % (what, r.returncode, r.stderr.strip()[-300:]))
                continue
            want, margins = greedy(model, prompt, 64)
            compare_tokens(np.load(os.path.join(out, "tokens.npy")), want, margins, plen, what)

    # Not the pattern: no past inputs at all; a past read besides its Concat.
    plain = os.path.join(work, "gpt2_plain.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(1, 3, dtype=torch.int64),), plain,
                          input_names=["input_ids"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"}}, opset_version=14)
    r = run([tgc, "build", plain, "--generate", "-D", "max_seq=96", "-o", gen + "_x"])
    check(r.returncode == 1 and "no input past_key_values" in r.stderr,
          "onnx without past inputs: exit 1 naming them (exit %d: %s)"
          % (r.returncode, r.stderr.strip()[-300:]))
    for bad, msg in (("extra_read", "past_key_values_0_key is read besides its Concat"),
                     ("new_first", "past_key_values_0_key is concatenated otherwise than "
                      "Concat(past, new, axis = 2)")):
        path = os.path.join(work, "gpt2_%s.onnx" % bad)
        export_past(model, path, bad)
        r = run([tgc, "build", path, "--generate", "-D", "max_seq=96", "-o", gen + "_x"])
        check(r.returncode == 1 and msg in r.stderr,
              "onnx, %s: exit 1 naming the past input (exit %d: %s)"
              % (bad, r.returncode, r.stderr.strip()[-300:]))
    check(not os.path.exists(gen + "_x"), "onnx: a refused build writes no -o")


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
             "-D", "batch=1:2", "-D", "seq=1:32", "-D", "max_seq=96", "--weights", weights,
             "-o", gen]
    for k, v in CFG.items():
        build += ["-D", "%s=%d" % (k, v)]
    r = run(build)
    check(r.returncode == 0, "tgc build --generate (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return 1

    g = torch.Generator().manual_seed(7)
    # Chunks of 32: a prompt's tail of at most 32 / 32 = 1 token runs as a step.
    cases = [("batch 2, prompt 43 (a chunk, then a padded one), 40 new", 2, 43, 40),
             ("batch 1 of a batch-2 build, prompt 33 (a chunk, then one step), 50 new", 1, 33, 50),
             ("batch 2, prompt 8 (one padded chunk), 64 new", 2, 8, 64),
             ("batch 2, prompt 1 (one step), 30 new", 2, 1, 30)]
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
    onnx_gpt2(tgc, work)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
