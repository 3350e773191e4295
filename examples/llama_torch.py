#!/usr/bin/python3
"""A Llama-style decoder in PyTorch, the reference for examples/llama.tg.

RMSNorm, rotary position embeddings (Hugging Face's rotate_half convention),
grouped-query attention (n_kv_head key/value heads, each shared by
n_head / n_kv_head query heads), a SwiGLU MLP, no biases. The state_dict()
keys are Hugging Face's LlamaForCausalLM's (model.embed_tokens.weight,
model.layers.{i}.self_attn.q_proj.weight, ..., model.norm.weight,
lm_head.weight), so such a checkpoint saved as safetensors loads unchanged.

    python3 examples/llama_torch.py --out DIR [--n-layer 2 --d 64 --n-head 4
        --n-kv-head 2 --ffn 96 --vocab 101 --seq 16 --batch 2] [--seed 0] [--tgc build/tgc]

writes DIR/model.safetensors, DIR/ids.npy and DIR/logits.npy, prints the
`tgc build` and run commands, and with --tgc runs them and compares.
"""

import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in examples/
from gpt2_torch import compare, randomize, write_case  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, d, n_head, n_kv_head):
        super().__init__()
        self.n_head, self.n_kv_head, self.hd = n_head, n_kv_head, d // n_head
        self.q_proj = nn.Linear(d, n_head * self.hd, bias=False)
        self.k_proj = nn.Linear(d, n_kv_head * self.hd, bias=False)
        self.v_proj = nn.Linear(d, n_kv_head * self.hd, bias=False)
        self.o_proj = nn.Linear(n_head * self.hd, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_head, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_kv_head, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_kv_head, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.n_head // self.n_kv_head          # HF's repeat_kv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        scores = (q @ k.transpose(-2, -1)) / self.hd ** 0.5
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        att = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        return self.o_proj((att @ v).transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, d, ffn):
        super().__init__()
        self.gate_proj = nn.Linear(d, ffn, bias=False)
        self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, d, n_head, n_kv_head, ffn, eps):
        super().__init__()
        self.input_layernorm = RMSNorm(d, eps)
        self.self_attn = Attention(d, n_head, n_kv_head)
        self.post_attention_layernorm = RMSNorm(d, eps)
        self.mlp = MLP(d, ffn)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Model(nn.Module):
    def __init__(self, n_layer, d, n_head, n_kv_head, ffn, vocab, eps, theta):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Layer(d, n_head, n_kv_head, ffn, eps) for _ in range(n_layer))
        self.norm = RMSNorm(d, eps)
        hd = d // n_head
        self.register_buffer("inv_freq", 1.0 / (theta ** (torch.arange(0, hd, 2).float() / hd)),
                             persistent=False)

    def forward(self, ids):
        t = torch.arange(ids.shape[1]).type_as(self.inv_freq)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)       # [seq, head_dim]
        cos, sin = emb.cos(), emb.sin()
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class Llama(nn.Module):
    def __init__(self, n_layer=4, d=256, n_head=8, n_kv_head=2, ffn=688, vocab=1000,
                 eps=1e-5, theta=10000.0):
        super().__init__()
        self.model = Model(n_layer, d, n_head, n_kv_head, ffn, vocab, eps, theta)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    for k, v in (("batch", 1), ("seq", 16), ("n-layer", 2), ("d", 64), ("n-head", 4),
                 ("n-kv-head", 2), ("ffn", 96), ("vocab", 101), ("seed", 0)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--tgc", help="tgc binary: build, run and compare")
    a = ap.parse_args()
    model = Llama(a.n_layer, a.d, a.n_head, a.n_kv_head, a.ffn, a.vocab).eval()
    randomize(model, a.d, a.seed)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=torch.Generator().manual_seed(a.seed))
    want = write_case(model, ids, a.out)
    defines = {"batch": a.batch, "seq": a.seq, "n_layer": a.n_layer, "d": a.d, "n_head": a.n_head,
               "n_kv_head": a.n_kv_head, "ffn": a.ffn, "vocab": a.vocab}
    return compare(a.tgc, os.path.join(HERE, "llama.tg"), defines, a.out, want)


if __name__ == "__main__":
    sys.exit(main())
