#!/usr/bin/python3
"""GPT-2 in PyTorch, the reference for examples/gpt2.tg.

The module's state_dict() has exactly the keys and layouts of Hugging Face's
GPT2Model (wte.weight, wpe.weight, h.{i}.ln_1.*, h.{i}.attn.c_attn.* with
Conv1D's [in, out] weights, ..., ln_f.*), so a GPT-2 checkpoint saved as
safetensors loads into it, and into the compiled graph, unchanged. The LM
head is tied: logits = ln_f(h) @ wte.weight.T.

    python3 examples/gpt2_torch.py --out DIR [--n-layer 2 --d 64 --n-head 4
        --vocab 101 --seq 16 --n-ctx 32 --batch 2] [--seed 0] [--tgc build/tgc]

writes DIR/model.safetensors (the state dict), DIR/ids.npy (random token
ids) and DIR/logits.npy (PyTorch's output), prints the `tgc build` and run
commands for the same sizes, and with --tgc runs them and prints the largest
difference from PyTorch's logits.
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class Conv1D(nn.Module):
    """HF's Conv1D: a linear layer whose weight is stored [in, out]."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.weight + self.bias


class Attention(nn.Module):
    def __init__(self, d, n_head, n_ctx):
        super().__init__()
        self.n_head = n_head
        self.c_attn = Conv1D(d, 3 * d)
        self.c_proj = Conv1D(d, d)
        # Not part of the state dict (HF's is non-persistent too).
        self.register_buffer("mask", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool)),
                             persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.n_head)
        att = scores.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = Conv1D(d, 4 * d)
        self.c_proj = Conv1D(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d, n_head, n_ctx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = Attention(d, n_head, n_ctx)
        self.ln_2 = nn.LayerNorm(d, eps=1e-5)
        self.mlp = MLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, n_layer=12, d=768, n_head=12, vocab=50257, n_ctx=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(n_ctx, d)
        self.h = nn.ModuleList(Block(d, n_head, n_ctx) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d, eps=1e-5)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1]))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T


def randomize(model, d, seed):
    """Deterministic weights of a realistic scale (not GPT-2's init, which
    zeroes biases and leaves LayerNorm at 1: every param is exercised)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g)
            if p.dim() >= 2:
                p.copy_(r * d ** -0.5)
            elif name.endswith("bias"):
                p.copy_(r * 0.1)
            else:                        # norm weights
                p.copy_(1 + r * 0.1)


# ---- files -------------------------------------------------------------------

ST_DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.float64: "F64",
            torch.int64: "I64", torch.int32: "I32"}


def save_safetensors(path, tensors):
    """tensors: {name: tensor}, written as safetensors (docs/runtime.md):
    an 8-byte little-endian header size, the JSON header, the data."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        raw = t.detach().contiguous().numpy().tobytes()
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_case(model, ids, out):
    """DIR/model.safetensors, DIR/ids.npy, DIR/logits.npy; returns the logits."""
    os.makedirs(out, exist_ok=True)
    save_safetensors(os.path.join(out, "model.safetensors"), model.state_dict())
    np.save(os.path.join(out, "ids.npy"), ids.numpy())
    with torch.no_grad():
        logits = model(ids)
    np.save(os.path.join(out, "logits.npy"), logits.numpy())
    return logits.numpy()


def commands(tgc, graph, defines, out, input_name="ids"):
    """The tgc build and run command lines for graph at sizes `defines`."""
    exe = os.path.join(out, "model")
    build = [tgc, "build", graph, "-o", exe]
    for k, v in defines.items():
        build += ["-D", "%s=%d" % (k, v)]
    run = [exe, "--weights", os.path.join(out, "model.safetensors"),
           "--input", "%s=%s" % (input_name, os.path.join(out, input_name + ".npy")),
           "--output-dir", os.path.join(out, "tgc")]
    return build, run


def compare(tgc, graph, defines, out, want, input_name="ids", label=""):
    """Builds and runs graph with tgc (when given) and prints how far its
    logits are from want; label prefixes the line (a model's name)."""
    build, run = commands(tgc or "tgc", graph, defines, out, input_name)
    print(" ".join(build))
    print(" ".join(run))
    if not tgc:
        return 0
    os.makedirs(os.path.join(out, "tgc"), exist_ok=True)
    for cmd in (build, run):
        r = subprocess.run(cmd)
        if r.returncode:
            return r.returncode
    got = np.load(os.path.join(out, "tgc", "logits.npy"))
    err = np.abs(got.astype(np.float64) - want).max()
    print("%slogits %s: max |tgc - torch| = %.3g (max |torch| = %.3g)"
          % (label + " " if label else "", list(want.shape), err, np.abs(want).max()))
    return 0
    os.makedirs(os.path.join(out, "tgc"), exist_ok=True)
    for cmd in (build, run):
        r = subprocess.run(cmd)
        if r.returncode:
            return r.returncode
    got = np.load(os.path.join(out, "tgc", "logits.npy"))
    err = np.abs(got.astype(np.float64) - want).max()
    print("logits %s: max |tgc - torch| = %.3g (max |torch| = %.3g)"
          % (list(want.shape), err, np.abs(want).max()))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    for k, v in (("batch", 1), ("seq", 16), ("n-layer", 2), ("d", 64), ("n-head", 4),
                 ("vocab", 101), ("n-ctx", 32), ("seed", 0)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--tgc", help="tgc binary: build, run and compare")
    a = ap.parse_args()
    model = GPT2(a.n_layer, a.d, a.n_head, a.vocab, a.n_ctx).eval()
    randomize(model, a.d, a.seed)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=torch.Generator().manual_seed(a.seed))
    want = write_case(model, ids, a.out)
    defines = {"batch": a.batch, "seq": a.seq, "n_layer": a.n_layer, "d": a.d,
               "n_head": a.n_head, "vocab": a.vocab, "n_ctx": a.n_ctx}
    return compare(a.tgc, os.path.join(HERE, "gpt2.tg"), defines, a.out, want)


if __name__ == "__main__":
    sys.exit(main())
