#!/usr/bin/python3
"""`tgc report` against what PyTorch 1.13 counts.

  - Every example: params count and bytes equal PyTorch's sum(numel) and
    sum(numel * element_size) over tensors made with each `param` line's
    dtype and shape (parsed here, not by tgc), at the declared precision
    and at f16 / bf16.
  - Models built as torch.nn modules (MLP, deep MLP with LayerNorm and GELU,
    GPT-2 transformer block, LLaMA-style SwiGLU block with RMSNorm,
    embedding classifier, torch.nn.MultiheadAttention) and written out as
    .tg by this script from their named_parameters(): params count and
    bytes (model.float(), .half(), .bfloat16() against --precision), input
    and output bytes and output shapes against the module's forward on real
    tensors, and the matrix products' FLOPs against torch.profiler's count
    (aten::mm / addmm / bmm: 2*m*k*n; tgc's linear adds its bias adds,
    taken off here).

Usage: report_torch.py --tgc build/tgc
Last line printed: `report_torch: N passed, M failed`; exit status 1 if M > 0."""

import argparse
import glob
import json
import math
import os
import re
import tempfile
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from rtest import EXAMPLES, MODEL_EXAMPLES, Checks, Tgc, main_guard, write_tmp

warnings.filterwarnings("ignore")
DTYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8,
          "bool": torch.bool}
PRECISIONS = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def dim_value(expr, dims):
    """A DIM expression (integers, names, + - * / and parentheses)."""
    py = re.sub(r"(?<![/])/(?![/])", "//", expr)
    return int(eval(py, {"__builtins__": {}}, dict(dims)))


def example_params(path):
    text = open(path).read()
    dims = {}
    m = re.search(r"^graph\s+\w+\s*(?:\(([^)]*)\))?", text, re.M)
    if m and m.group(1):
        for part in m.group(1).split(","):
            k, v = part.split("=")
            dims[k.strip()] = int(v)
    params = []
    for m in re.finditer(r"^param\s+(\w+)\s*:\s*(\w+)\[([^\]]*)\]", text, re.M):
        shape = [dim_value(d, dims) for d in m.group(3).split(",") if d.strip()]
        params.append(torch.empty(shape, dtype=DTYPES[m.group(2)]))
    return params


def torch_counts(tensors):
    return sum(t.numel() for t in tensors), sum(t.numel() * t.element_size() for t in tensors)


def examples(c, tgc):
    for f in sorted(glob.glob(os.path.join(EXAMPLES, "*.tg"))):
        name = os.path.basename(f)
        if name in MODEL_EXAMPLES:
            continue
        params = example_params(f)
        c.check(params, "%s: has params" % name)
        for prec in (None, "f16", "bf16"):
            args = ["--precision", prec] if prec else []
            rep, rc, err = tgc.report(f, *args)
            if not c.check(rep is not None, "%s %s: report" % (name, prec), err[-300:]):
                continue
            ts = [t.to(PRECISIONS[prec]) if prec and t.is_floating_point() else t for t in params]
            count, nbytes = torch_counts(ts)
            c.eq(count, rep["params"]["count"], "%s %s: params.count = sum(numel)" % (name, prec or "declared"))
            c.eq(nbytes, rep["params"]["bytes"], "%s %s: params.bytes = sum(numel * element_size)" % (name, prec or "declared"))


# ---- models built in PyTorch ------------------------------------------------


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, x):
        return F.softmax(self.net(x), dim=-1)


MLP_TG = """
h = relu(linear(x, p_net_0_weight, p_net_0_bias))
output probs = softmax(linear(h, p_net_2_weight, p_net_2_bias), dim = -1)
"""


class DeepMLP(nn.Module):
    def __init__(self, d=192, n=6):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d) for _ in range(n))
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(n))
        self.head = nn.Linear(d, 7)

    def forward(self, x):
        for lin, ln in zip(self.layers, self.norms):
            x = x + F.gelu(lin(ln(x)))
        return self.head(x)


def deep_mlp_tg(n=6, d=192):
    lines = ["h0 = x"]
    for i in range(n):
        lines.append("h%d = h%d + gelu(linear(layer_norm(h%d, [%d], p_norms_%d_weight, p_norms_%d_bias), "
                     "p_layers_%d_weight, p_layers_%d_bias))" % (i + 1, i, i, d, i, i, i, i))
    lines.append("output y = linear(h%d, p_head_weight, p_head_bias)" % n)
    return "\n".join(lines) + "\n"


class Block(nn.Module):
    """GPT-2 block: pre-LN causal self-attention and a GELU MLP."""

    def __init__(self, d=256, heads=4):
        super().__init__()
        self.d, self.h = d, heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        hd = D // self.h
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, T, self.h, hd).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.o(y)
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


BLOCK_TG = """
q, k, v = linear(layer_norm(x, [256], p_ln1_weight, p_ln1_bias), p_qkv_weight, p_qkv_bias).split(256, dim = -1)
qh = q.view(batch, seq, 4, 64).transpose(1, 2)
kh = k.view(batch, seq, 4, 64).transpose(1, 2)
vh = v.view(batch, seq, 4, 64).transpose(1, 2)
att = (qh @ kh.transpose(-2, -1)) * 0.125
causal = tril(ones([seq, seq], dtype = bool))
att2 = att.masked_fill(~causal, -inf).softmax(dim = -1)
y = (att2 @ vh).transpose(1, 2).reshape(batch, seq, 256)
x1 = x + linear(y, p_o_weight, p_o_bias)
output out = x1 + linear(gelu(linear(layer_norm(x1, [256], p_ln2_weight, p_ln2_bias), p_fc_weight, p_fc_bias)), p_proj_weight, p_proj_bias)
"""


class SwiGLU(nn.Module):
    """LLaMA-style feed-forward with RMSNorm, no biases."""

    def __init__(self, d=320, hidden=864):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(d))
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w3 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm_weight
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


SWIGLU_TG = """
h = rms_norm(x, p_norm_weight, eps = 1e-6)
output y = x + linear(silu(linear(h, p_w1_weight)) * linear(h, p_w3_weight), p_w2_weight)
"""


class EmbedClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64)
        self.ln = nn.LayerNorm(64)
        self.fc = nn.Linear(64, 5)

    def forward(self, ids):
        logits = self.fc(self.ln(self.emb(ids).mean(dim=1)))
        return F.log_softmax(logits, dim=-1), logits.argmax(dim=-1)


EMBED_TG = """
logits = linear(layer_norm(embedding(ids, p_emb_weight).mean(dim = 1), [64], p_ln_weight, p_ln_bias), p_fc_weight, p_fc_bias)
output logp = log_softmax(logits, dim = -1)
output pred = logits.argmax(dim = -1)
"""


class MHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(128, 4, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


MHA_TG = """
q, k, v = linear(x, p_mha_in_proj_weight, p_mha_in_proj_bias).chunk(3, dim = -1)
qh = q.view(batch, seq, 4, 32).transpose(1, 2)
kh = k.view(batch, seq, 4, 32).transpose(1, 2)
vh = v.view(batch, seq, 4, 32).transpose(1, 2)
att = softmax((qh @ kh.mT) / 5.656854249492381, dim = -1)
y = (att @ vh).transpose(1, 2).reshape(batch, seq, 128)
output out = linear(y, p_mha_out_proj_weight, p_mha_out_proj_bias)
"""

MODELS = [
    # name, module, inputs {name: tensor}, dims, forward text, compare FLOPs (MHA: PyTorch's own
    # forward, so its FLOPs check that the .tg computes the same products)
    ("torch_mlp", MLP, {"x": torch.randn(32, 784)}, {"batch": 32}, MLP_TG, True),
    ("torch_deep_mlp", DeepMLP, {"x": torch.randn(12, 192)}, {"batch": 12}, deep_mlp_tg(), True),
    ("torch_block", Block, {"x": torch.randn(2, 64, 256)}, {"batch": 2, "seq": 64}, BLOCK_TG, True),
    ("torch_swiglu", SwiGLU, {"x": torch.randn(3, 40, 320)}, {"batch": 3, "seq": 40}, SWIGLU_TG, True),
    ("torch_embed", EmbedClassifier, {"ids": torch.randint(0, 1000, (16, 32))}, {"batch": 16, "seq": 32}, EMBED_TG, True),
    ("torch_mha", MHA, {"x": torch.randn(2, 48, 128)}, {"batch": 2, "seq": 48}, MHA_TG, True),
]

TG_DTYPE = {torch.float32: "f32", torch.int64: "i64"}


def shape_text(shape, dims):
    """Writes leading sizes equal to a dim's value as that dim's name."""
    names = list(dims.items())
    out = []
    for i, s in enumerate(shape):
        out.append(names[i][0] if i < len(names) and names[i][1] == s else str(s))
    return "[%s]" % ", ".join(out)


def write_tg(name, module, inputs, dims, body):
    lines = ["graph %s(%s)" % (name, ", ".join("%s = %d" % kv for kv in dims.items()))]
    for n, t in inputs.items():
        lines.append("input %s : %s%s" % (n, TG_DTYPE[t.dtype], shape_text(t.shape, dims)))
    for n, p in module.named_parameters():
        lines.append("param p_%s : f32[%s]" % (n.replace(".", "_"), ", ".join(str(s) for s in p.shape)))
    return "\n".join(lines) + "\n" + body


def torch_matmul_flops(module, inputs):
    from torch.profiler import profile
    with torch.no_grad(), profile(with_flops=True) as prof:
        module(**inputs)
    return sum(e.flops for e in prof.events() if e.name in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
               and e.flops)


def tgc_matmul_flops(tgc, path, rep):
    """Matrix-product FLOPs from the steps, less linear's bias adds."""
    rc, out, err = tgc.run("show", path, "--json")
    shapes = {v["name"]: v["shape"] for v in json.loads(out)["values"]} if rc == 0 else {}
    total = 0
    for s in rep["steps"]:
        if s["op"] in ("matmul", "mm", "bmm", "mv", "linear", "einsum"):
            f = s["flops"]
            if s["op"] == "linear" and len(s["inputs"]) == 3:
                f -= math.prod(shapes[s["outputs"][0]])
            total += f
    return total


def models(c, tgc, tmp):
    for name, cls, inputs, dims, body, flops in MODELS:
        torch.manual_seed(0)
        module = cls().eval()
        path = os.path.join(tmp, name + ".tg")
        with open(path, "w") as f:
            f.write(write_tg(name, module, inputs, dims, body))
        with torch.no_grad():
            outs = module(**inputs)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        rc, out, err = tgc.run("show", path, "--json")
        if not c.check(rc == 0, "%s: the written .tg compiles" % name, err[-600:]):
            continue
        shown = json.loads(out)
        shapes = {v["name"]: v["shape"] for v in shown["values"]}
        c.eq([list(o.shape) for o in outs], [shapes[n] for n in shown["outputs"]], "%s: output shapes" % name)
        for prec, dt in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
            rep, rc, err = tgc.report(path, "--precision", prec, "--precision-io", prec)
            if not c.check(rep is not None, "%s %s: report" % (name, prec), err[-300:]):
                continue
            m = cls()
            m.to(dt)
            count, nbytes = torch_counts(list(m.parameters()))
            c.eq(count, rep["params"]["count"], "%s %s: params.count = sum(numel)" % (name, prec))
            c.eq(nbytes, rep["params"]["bytes"], "%s %s: params.bytes = sum(numel * element_size)" % (name, prec))
            ins = [t.to(dt) if t.is_floating_point() else t for t in inputs.values()]
            c.eq(torch_counts(ins)[1], rep["inputs_bytes"], "%s %s: inputs bytes" % (name, prec))
            os_ = [o.to(dt) if o.is_floating_point() else o for o in outs]
            c.eq(torch_counts(os_)[1], rep["outputs_bytes"], "%s %s: outputs bytes" % (name, prec))
            if prec == "f32" and flops:
                want = torch_matmul_flops(module, inputs)
                c.check(want > 0, "%s: torch.profiler counts FLOPs" % name)
                c.eq(want, tgc_matmul_flops(tgc, path, rep), "%s: matrix-product FLOPs = torch.profiler's" % name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    args = ap.parse_args()
    tgc = Tgc(args.tgc)
    c = Checks("report_torch")
    examples(c, tgc)
    with tempfile.TemporaryDirectory() as tmp:
        models(c, tgc, tmp)
    return c.finish()


if __name__ == "__main__":
    main_guard(main)
