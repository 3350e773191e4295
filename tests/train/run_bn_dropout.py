#!/usr/bin/python3
"""Batch norm and dropout in training mode (issue 28, items 1 and 2).

Each case trains a graph with `tgc build --train` for a few steps and
compares every saved param and running statistic with PyTorch 1.13's
modules in train() mode stepped by torch.optim.AdamW from the same weights
on the same batches:

- block: a ResNet-style block, conv -> batch_norm(training) -> relu ->
  conv -> batch_norm(training, momentum=None) + residual -> relu -> pool ->
  linear, against nn.Conv2d / nn.BatchNorm2d / nn.Linear; the running
  statistics (and num_batches_tracked) too; then the same graph built
  without --train (the eval form) against model.eval().
- eval_bn: batch_norm(training=false) in a training build: its running
  statistics are buffers, never trained (no optimizer state).
- bn_f64: f64 running statistics updated in f64, bit for bit F.batch_norm's.
- nbt_param: momentum=None counting on from the graph's own
  num_batches_tracked param, as nn.BatchNorm1d(momentum=None).
- bert_p0: a BERT-style encoder layer (attention, dropout after the
  attention and in the feed-forward, post-norm) with p = 0: PyTorch's
  F.dropout(p=0, training=True) is the identity, so are tgc's.
- bert: the same layer with p = 0.2 and --seed 5: the masks are those of
  tgc's Philox 4x32-10 (docs/training.md "Dropout's mask"), regenerated
  here by philox_first() and given to PyTorch as F.dropout's CPU path
  applies its own (x * mask.div_(1 - p)); --seed and --load-state
  reproduce runs bit for bit; the attention written out with the dropout
  on its probabilities (the form --target cuda builds) trains to the
  blockwise kernels' weights within f32 rounding.
- mask: the mask read back from the executable (the gradient of
  sum(dropout(ones) * w) is the mask times 1 / (1 - p)) equals
  philox_first()'s, for dropout and dropout2d, and the keep rate over
  65536 draws is within 5 standard deviations of 1 - p.
- attention_f64: attention's dropout_p in a training build at f64: the
  gradients of q, k, v against torch.autograd given the same mask.
- attention_f32: the same in an f32 build, where the blockwise kernels
  apply the mask per tile (attention_dropout, attention_backward; the
  profile names them): four sites crossing the kernels' blocks, causal,
  bool and float masks.
- errors: a running statistic that is not a param, or that two batch
  norms share, under --train: exit 1 naming the place.
- cuda: the encoder's training step built for --target cuda (NVRTC
  compiles dropout's kernels; no GPU runs them here).

Tolerances are stated with each comparison (relative to the largest value
of the tensor, plus an absolute term): f32 kernels that sum in another
order than PyTorch's, a few steps. A few seconds in all.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "diff"))
import tensorio  # noqa: E402
from run_train import FAILS, check, close, run  # noqa: E402

# --- dropout's mask, as docs/training.md "Dropout's mask" defines it -------

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
U32 = np.uint64(0xFFFFFFFF)


def philox_first(seed, index, site, step):
    """The first word of Philox 4x32-10 with key (seed lo, seed hi) and
    counter (index lo, index hi, site, step lo), vectorised over index."""
    idx = np.asarray(index, dtype=np.uint64)
    c0, c1 = idx & U32, idx >> np.uint64(32)
    c2 = np.full_like(idx, site & 0xFFFFFFFF)
    c3 = np.full_like(idx, step & 0xFFFFFFFF)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    for _ in range(10):
        p0, p1 = np.uint64(M0) * c0, np.uint64(M1) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & U32,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & U32)
        k0, k1 = (k0 + np.uint64(W0)) & U32, (k1 + np.uint64(W1)) & U32
    return c0


def keep_mask(seed, site, step, shape, p, nmask=None):
    """The kept elements (bool) of a dropout site: its first nmask dims."""
    nm = len(shape) if nmask is None else nmask
    n = int(np.prod(shape[:nm]))
    r = philox_first(seed, np.arange(n, dtype=np.uint64), site, step)
    keep = (r >> np.uint64(8)) < np.uint64(int(np.ceil((1.0 - p) * 2.0 ** 24)))
    return torch.from_numpy(keep.reshape(tuple(shape[:nm]) + (1,) * (len(shape) - nm)).copy())


def dropout_as(x, keep, p):
    """F.dropout's CPU path (input * bernoulli(1 - p).div_(1 - p)) with the
    given mask as the Bernoulli draw."""
    return x * keep.to(x.dtype).div_(1 - p)


def build(tgc, tmp, name, text, flags):
    src = os.path.join(tmp, name + ".tg")
    with open(src, "w") as f:
        f.write(text)
    exe = os.path.join(tmp, name + ("_train" if "--train" in flags else "_eval"))
    p = run([tgc, "build", src, "-o", exe] + flags)
    check(p.returncode == 0, f"{name}: tgc build {' '.join(flags)}")
    return exe if p.returncode == 0 else None


def save_npy(tmp, name, t):
    path = os.path.join(tmp, name + ".npy")
    np.save(path, t.numpy())
    return path


# --- a ResNet-style block ----------------------------------------------------

BLOCK = """
graph block(batch = 4)
input  x : f32[batch, 4, 6, 6]
input  y : i64[batch]
param  conv1.weight : f32[4, 4, 3, 3]
param  bn1.weight : f32[4]
param  bn1.bias : f32[4]
param  bn1.running_mean : f32[4]
param  bn1.running_var : f32[4]
param  conv2.weight : f32[4, 4, 3, 3]
param  bn2.weight : f32[4]
param  bn2.bias : f32[4]
param  bn2.running_mean : f32[4]
param  bn2.running_var : f32[4]
param  fc.weight : f32[3, 4]
param  fc.bias : f32[3]
h1 = relu(batch_norm(conv2d(x, conv1.weight, padding=1), bn1.running_mean, bn1.running_var,
                     bn1.weight, bn1.bias, training=true, momentum=0.1))
h2 = batch_norm(conv2d(h1, conv2.weight, padding=1), bn2.running_mean, bn2.running_var,
                bn2.weight, bn2.bias, training=true, momentum=None)
h3 = relu(h2 + x)
output logits = linear(mean(h3, dim=[2, 3]), fc.weight, fc.bias)
output loss = cross_entropy(logits, y)
"""


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(4, momentum=0.1)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(4, momentum=None)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = torch.relu(self.bn2(self.conv2(h)) + x)
        return self.fc(h.mean(dim=(2, 3)))


def weights_of(model):
    """The module's state without num_batches_tracked (not a param of the
    graph: tgc keeps momentum=None's count as an optimizer state)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()
            if not k.endswith("num_batches_tracked")}


def case_block(tgc, tmp):
    torch.manual_seed(0)
    model = Block()
    with torch.no_grad():  # running statistics away from their defaults
        for bn in (model.bn1, model.bn2):
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
    w0 = weights_of(model)
    steps, k = 6, 2
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4 * k, 4, 6, 6, generator=g)
    y = torch.randint(0, 3, (4 * k,), generator=g)
    exe = build(tgc, tmp, "block", BLOCK, ["--train", "loss", "--optimizer", "adamw",
                                           "--lr", "0.01"])
    if not exe:
        return
    wpath = os.path.join(tmp, "block_w.safetensors")
    tensorio.write_safetensors(wpath, [(n, v.contiguous()) for n, v in w0.items()])
    xs, ys = save_npy(tmp, "block_x", x), save_npy(tmp, "block_y", y)
    out, state = os.path.join(tmp, "block_out.safetensors"), os.path.join(tmp, "block_st.safetensors")
    p = run([exe, "--weights", wpath, "--input", "x=" + xs, "--input", "y=" + ys,
             "--steps", str(steps), "--save-weights", out, "--save-state", state])
    check(p.returncode == 0, f"block: {steps} steps")
    if p.returncode:
        return
    got, st = tensorio.read_safetensors(out), tensorio.read_safetensors(state)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    for s in range(steps):
        b = s % k
        opt.zero_grad()
        F.cross_entropy(model(x[4 * b:4 * b + 4]), y[4 * b:4 * b + 4]).backward()
        opt.step()
    want = weights_of(model)
    # oneDNN's convolutions and tgc's reductions sum in other orders than
    # ATen's (which accumulates batch statistics in f64): measured <= 3e-7
    # of the scale after 6 AdamW steps; allowed 1e-5.
    for n in want:
        close(f"block: {n}", got[n], want[n], 1e-5, 1e-6)
    check(sorted(n for n in st if "running" in n) == [],
          "block: the running statistics are no optimizer state (no exp_avg of them)")
    check(int(st.get("bn2.num_batches_tracked", torch.tensor(-1))) == steps
          and int(model.bn2.num_batches_tracked) == steps,
          f"block: momentum=None counts the batches (bn2.num_batches_tracked = {steps})")
    # The eval form: the same graph built without --train normalises with
    # the running statistics, as model.eval() does.
    ev = build(tgc, tmp, "block", BLOCK, [])
    if not ev:
        return
    od = os.path.join(tmp, "block_eval_out")
    os.makedirs(od, exist_ok=True)
    x0 = save_npy(tmp, "block_x0", x[:4])
    y0 = save_npy(tmp, "block_y0", y[:4])
    p = run([ev, "--weights", out, "--input", "x=" + x0, "--input", "y=" + y0, "--output-dir", od])
    check(p.returncode == 0, "block: the eval build runs on the trained weights")
    if p.returncode:
        return
    model.eval()
    with torch.no_grad():
        ref = model(x[:4])
    # measured ~1e-7; allowed 1e-5 of the scale
    close("block: eval-form logits against model.eval()", np.load(os.path.join(od, "logits.npy")),
          ref, 1e-5, 1e-6)


# --- batch norm's eval form in a training build ----------------------------

EVAL_BN = """
graph evalbn(batch = 4)
input  x : f32[batch, 3, 4, 4]
param  bn.weight : f32[3]
param  bn.bias : f32[3]
param  bn.running_mean : f32[3]
param  bn.running_var : f32[3]
output loss = mean(relu(batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias)))
"""


def case_eval_bn(tgc, tmp):
    """batch_norm(training=false) under --train: its running statistics are
    buffers, as in PyTorch; AdamW trains the weight and bias only."""
    exe = build(tgc, tmp, "evalbn", EVAL_BN, ["--train", "loss", "--optimizer", "adamw"])
    if not exe:
        return
    g = torch.Generator().manual_seed(4)
    w0 = {"bn.weight": torch.rand(3, generator=g) + 0.5, "bn.bias": torch.randn(3, generator=g),
          "bn.running_mean": torch.randn(3, generator=g), "bn.running_var": torch.rand(3, generator=g) + 0.5}
    wpath = os.path.join(tmp, "evalbn_w.safetensors")
    tensorio.write_safetensors(wpath, list(w0.items()))
    out, st = os.path.join(tmp, "evalbn_out.safetensors"), os.path.join(tmp, "evalbn_st.safetensors")
    p = run([exe, "--weights", wpath, "--input", "x=" + save_npy(tmp, "evalbn_x", torch.randn(4, 3, 4, 4, generator=g)),
             "--steps", "3", "--save-weights", out, "--save-state", st])
    check(p.returncode == 0, "eval_bn: 3 steps")
    if p.returncode:
        return
    got, state = tensorio.read_safetensors(out), tensorio.read_safetensors(st)
    check(all(np.array_equal(got[n].numpy(), w0[n].numpy()) for n in ("bn.running_mean", "bn.running_var"))
          and not any(n.startswith("bn.running") for n in state)
          and not np.array_equal(got["bn.weight"].numpy(), w0["bn.weight"].numpy()),
          "eval_bn: running statistics neither trained nor given optimizer states; weight trained")


BN64 = """
graph bn64
input  x : f64[4, 3, 5]
param  rm : f64[3]
param  rv : f64[3]
param  w : f32[2] = ones
output loss = mean(batch_norm(x, rm, rv, training=true, momentum=0.3) ** 3) + sum(w)
"""


def case_bn_f64(tgc, tmp):
    """f64 running statistics are updated in f64, as ATen's param_t: bit
    for bit F.batch_norm(training=True)'s after 3 steps."""
    exe = build(tgc, tmp, "bn64", BN64, ["--train", "loss", "--optimizer", "sgd"])
    if not exe:
        return
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, 5, generator=g, dtype=torch.float64)
    rm = torch.randn(3, generator=g, dtype=torch.float64)
    rv = torch.rand(3, generator=g, dtype=torch.float64) + 0.5
    wpath, out = os.path.join(tmp, "bn64_w.safetensors"), os.path.join(tmp, "bn64_out.safetensors")
    tensorio.write_safetensors(wpath, [("rm", rm.clone()), ("rv", rv.clone())])
    p = run([exe, "--weights", wpath, "--input", "x=" + save_npy(tmp, "bn64_x", x), "--steps", "3",
             "--save-weights", out])
    check(p.returncode == 0, "bn_f64: 3 steps")
    if p.returncode:
        return
    got = tensorio.read_safetensors(out)
    for _ in range(3):
        F.batch_norm(x, rm, rv, training=True, momentum=0.3)
    check(np.array_equal(got["rm"].numpy(), rm.numpy()) and np.array_equal(got["rv"].numpy(), rv.numpy()),
          "bn_f64: f64 running statistics equal F.batch_norm's, bit for bit")


NBT = """
graph nbt
input  x : f32[4, 3, 5]
param  w : f32[2] = ones
param  bn.running_mean : f32[3]
param  bn.running_var : f32[3]
output loss = mean(batch_norm(x, bn.running_mean, bn.running_var, training=true, momentum=None) ** 3) + sum(w)
param  bn.num_batches_tracked : i64[]
"""


def case_nbt_param(tgc, tmp):
    """momentum=None with the graph's own num_batches_tracked param (a
    PyTorch state_dict's buffer, declared after its reader): loaded, counted
    on from its value, saved with the weights, as nn.BatchNorm1d does."""
    exe = build(tgc, tmp, "nbt", NBT, ["--train", "loss", "--optimizer", "sgd"])
    if not exe:
        return
    bn = torch.nn.BatchNorm1d(3, momentum=None, affine=False)
    g = torch.Generator().manual_seed(8)
    x = torch.randn(4, 3, 5, generator=g)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 1.5)
        bn.num_batches_tracked.fill_(5)
    wpath, out = os.path.join(tmp, "nbt_w.safetensors"), os.path.join(tmp, "nbt_out.safetensors")
    tensorio.write_safetensors(wpath, [("bn." + k, v.clone()) for k, v in bn.state_dict().items()])
    p = run([exe, "--weights", wpath, "--input", "x=" + save_npy(tmp, "nbt_x", x), "--steps", "3",
             "--save-weights", out])
    check(p.returncode == 0, "nbt_param: 3 steps")
    if p.returncode:
        return
    got = tensorio.read_safetensors(out)
    bn.train()
    for _ in range(3):
        bn(x)
    check(int(got["bn.num_batches_tracked"]) == 8, "nbt_param: num_batches_tracked 5 + 3 = 8, saved "
          "with the weights")
    # f32 statistics summed in another order: measured ~1e-7; allowed 1e-6.
    for k in ("running_mean", "running_var"):
        close(f"nbt_param: bn.{k} (factors 1/6, 1/7, 1/8)", got["bn." + k], getattr(bn, k), 1e-6, 1e-7)


# --- a BERT-style encoder layer ----------------------------------------------

BERT = """
graph bert(batch = 4)
input  x : f32[batch, 6, 16]
input  y : i64[batch]
param  q.weight : f32[16, 16]
param  q.bias : f32[16]
param  k.weight : f32[16, 16]
param  k.bias : f32[16]
param  v.weight : f32[16, 16]
param  v.bias : f32[16]
param  o.weight : f32[16, 16]
param  o.bias : f32[16]
param  ln1.weight : f32[16]
param  ln1.bias : f32[16]
param  ff1.weight : f32[32, 16]
param  ff1.bias : f32[32]
param  ff2.weight : f32[16, 32]
param  ff2.bias : f32[16]
param  ln2.weight : f32[16]
param  ln2.bias : f32[16]
param  head.weight : f32[3, 16]
param  head.bias : f32[3]
qh = linear(x, q.weight, q.bias).view(batch, 6, 2, 8).transpose(1, 2)
kh = linear(x, k.weight, k.bias).view(batch, 6, 2, 8).transpose(1, 2)
vh = linear(x, v.weight, v.bias).view(batch, 6, 2, 8).transpose(1, 2)
att = scaled_dot_product_attention(qh, kh, vh, dropout_p=P)
a = att.transpose(1, 2).reshape(batch, 6, 16)
h = layer_norm(x + dropout(linear(a, o.weight, o.bias), p=P, training=true), [16], ln1.weight, ln1.bias)
f = linear(dropout(gelu(linear(h, ff1.weight, ff1.bias)), p=P, training=true), ff2.weight, ff2.bias)
h2 = layer_norm(h + dropout(f, p=P, training=true), [16], ln2.weight, ln2.bias)
output logits = linear(mean(h2, dim=1), head.weight, head.bias)
output loss = cross_entropy(logits, y)
"""


class Bert(torch.nn.Module):
    """The layer with nn modules; drop(site, x) applies the dropout of site
    0 (attention's probabilities), 1, 2, 3 in graph order."""

    def __init__(self):
        super().__init__()
        L = torch.nn.Linear
        self.q, self.k, self.v, self.o = L(16, 16), L(16, 16), L(16, 16), L(16, 16)
        self.ln1, self.ln2 = torch.nn.LayerNorm(16), torch.nn.LayerNorm(16)
        self.ff1, self.ff2, self.head = L(16, 32), L(32, 16), L(16, 3)

    def forward(self, x, drop):
        B = x.shape[0]
        qh, kh, vh = (m(x).view(B, 6, 2, 8).transpose(1, 2) for m in (self.q, self.k, self.v))
        att = drop(0, torch.softmax(qh @ kh.transpose(-2, -1) * (1 / np.sqrt(8)), dim=-1))
        a = (att @ vh).transpose(1, 2).reshape(B, 6, 16)
        h = self.ln1(x + drop(1, self.o(a)))
        f = self.ff2(drop(2, F.gelu(self.ff1(h))))
        h = self.ln2(h + drop(3, f))
        return self.head(h.mean(dim=1))


def bert_run(tgc, tmp, p, seed, steps, tag):
    torch.manual_seed(2)
    model = Bert()
    w0 = {n: v.detach().clone() for n, v in model.state_dict().items()}
    # k.bias is frozen on both sides: softmax does not see it (q.(k + b)
    # shifts a row of scores by a constant), so its gradient is rounding
    # noise that AdamW's normalisation turns into +-lr steps.
    exe = build(tgc, tmp, "bert" + tag, BERT.replace("=P", "=%g" % p),
                ["--train", "loss", "--optimizer", "adamw", "--lr", "0.01", "--freeze", "k.bias"])
    if not exe:
        return None
    g = torch.Generator().manual_seed(3)
    k = 2
    x = torch.randn(4 * k, 6, 16, generator=g)
    y = torch.randint(0, 3, (4 * k,), generator=g)
    wpath = os.path.join(tmp, "bert_w.safetensors")
    tensorio.write_safetensors(wpath, [(n, v.contiguous()) for n, v in w0.items()])
    base = [exe, "--weights", wpath, "--input", "x=" + save_npy(tmp, "bert_x", x),
            "--input", "y=" + save_npy(tmp, "bert_y", y), "--seed", str(seed)]
    out = os.path.join(tmp, f"bert{tag}_out.safetensors")
    r = run(base + ["--steps", str(steps), "--save-weights", out])
    check(r.returncode == 0, f"bert{tag}: {steps} steps, p = {p}, --seed {seed}")
    if r.returncode:
        return None
    got = tensorio.read_safetensors(out)
    model.train()
    model.k.bias.requires_grad_(False)
    opt = torch.optim.AdamW([t for t in model.parameters() if t.requires_grad], lr=0.01)
    for s in range(steps):
        b = s % k
        if p == 0:
            def drop(site, t):
                return F.dropout(t, 0.0, training=True)
        else:
            def drop(site, t, s=s):
                return dropout_as(t, keep_mask(seed, site, s, t.shape, p), p)
        opt.zero_grad()
        F.cross_entropy(model(x[4 * b:4 * b + 4], drop), y[4 * b:4 * b + 4]).backward()
        opt.step()
    # 6 f32 AdamW steps: measured <= 4e-7 of the scale; allowed 1e-5.
    for n, v in model.state_dict().items():
        close(f"bert{tag}: {n}", got[n], v, 1e-5, 1e-6)
    return base, got


def case_bert_p0(tgc, tmp):
    bert_run(tgc, tmp, 0.0, 0, 6, "_p0")


def case_bert(tgc, tmp):
    r = bert_run(tgc, tmp, 0.2, 5, 6, "")
    if not r:
        return
    base, got = r
    # Reproducible: the same seed gives the same bits; 2 + 4 steps through
    # --save-state/--load-state give the 6 steps' (the seed and the step
    # count are state; 2 keeps the two batches' order).
    again = os.path.join(tmp, "bert_again.safetensors")
    p = run(base + ["--steps", "6", "--save-weights", again])
    same = p.returncode == 0 and all(
        np.array_equal(tensorio.read_safetensors(again)[n].numpy(), got[n].numpy()) for n in got)
    check(same, "bert: the same --seed gives the same weights, bit for bit")
    half, st = os.path.join(tmp, "bert_half.safetensors"), os.path.join(tmp, "bert_st.safetensors")
    p1 = run(base + ["--steps", "2", "--save-weights", half, "--save-state", st])
    i = base.index("--weights")
    resumed = base[:i + 1] + [half] + base[i + 2:]
    p2 = run([a for a in resumed if a not in ("--seed", "5")] + [
        "--steps", "4", "--load-state", st, "--save-weights", again])
    same = p1.returncode == 0 and p2.returncode == 0 and all(
        np.array_equal(tensorio.read_safetensors(again)[n].numpy(), got[n].numpy()) for n in got)
    check(same, "bert: 2 + 4 steps resumed with --load-state (the seed and step restored) "
          "equal 6, bit for bit")
    other = os.path.join(tmp, "bert_other.safetensors")
    p = run(base[:-1] + ["6", "--steps", "6", "--save-weights", other])
    diff = p.returncode == 0 and not np.array_equal(
        tensorio.read_safetensors(other)["q.weight"].numpy(), got["q.weight"].numpy())
    check(diff, "bert: another --seed draws other masks (other weights)")
    # The attention written out with the dropout on its probabilities (the
    # form --target cuda builds; the same site, so the same mask) trains
    # to the blockwise kernels' weights within f32 rounding.
    written = BERT.replace("=P", "=0.2").replace(
        "att = scaled_dot_product_attention(qh, kh, vh, dropout_p=0.2)",
        "att = dropout(softmax(qh @ kh.mT * 0.35355339059327373, dim=-1), p=0.2, training=true) @ vh")
    exe = build(tgc, tmp, "bert_written", written,
                ["--train", "loss", "--optimizer", "adamw", "--lr", "0.01", "--freeze", "k.bias"])
    wout = os.path.join(tmp, "bert_written.safetensors")
    p = run([exe or "-"] + base[1:] + ["--steps", "6", "--save-weights", wout]) if exe else None
    check(p is not None and p.returncode == 0, "bert: the written-out attention trains 6 steps")
    if p is not None and p.returncode == 0:
        ww = tensorio.read_safetensors(wout)
        # 6 f32 AdamW steps, products summed in other orders: measured
        # <= 2e-7 of the scale; allowed 2e-6.
        for n in got:
            close(f"bert: written-out attention's {n} = the blockwise kernels'", got[n], ww[n],
                  2e-6, 1e-7)


# --- the mask itself -------------------------------------------------------------

MASK = """
graph mask
input  x : f32[256, 256]
input  z : f32[8, 16, 4, 4]
param  w : f32[256, 256] = ones
param  w2 : f32[8, 16, 4, 4] = ones
output loss = sum(dropout(x, p=0.3, training=true) * w) + sum(dropout2d(z, p=0.5, training=true) * w2)
"""


def case_mask(tgc, tmp):
    src = os.path.join(tmp, "mask.tg")
    with open(src, "w") as f:
        f.write(MASK)
    od = os.path.join(tmp, "mask_out")
    os.makedirs(od, exist_ok=True)
    xs = save_npy(tmp, "mask_x", torch.ones(256, 256))
    zs = save_npy(tmp, "mask_z", torch.ones(8, 16, 4, 4))
    p = run([tgc, "run", src, "--input", "x=" + xs, "--input", "z=" + zs, "--output-dir", od,
             "--train", "loss", "--optimizer", "none"])
    check(p.returncode == 0, "mask: tgc run --train loss --optimizer none")
    if p.returncode:
        return
    got = np.load(os.path.join(od, "w.grad.npy"))
    keep = keep_mask(0, 0, 0, (256, 256), 0.3).numpy()
    scale = np.float32(1) / np.float32(0.7)
    check(np.array_equal(got, np.where(keep, scale, np.float32(0))),
          "mask: dropout's mask read back from the executable equals philox_first()'s "
          "(seed 0, site 0, step 0), kept elements scaled by 1/(1 - p) as F.dropout")
    rate, sd = keep.mean(), np.sqrt(0.3 * 0.7 / keep.size)
    check(abs(rate - 0.7) <= 5 * sd,
          f"mask: keep rate {rate:.4f} within 5 sd ({5 * sd:.4f}) of 1 - p = 0.7")
    got2 = np.load(os.path.join(od, "w2.grad.npy"))
    keep2 = keep_mask(0, 1, 0, (8, 16, 4, 4), 0.5, nmask=2).numpy()
    check(np.array_equal(got2, np.broadcast_to(np.where(keep2, np.float32(2), np.float32(0)),
                                               got2.shape)),
          "mask: dropout2d zeroes whole channels, its mask (site 1) philox_first()'s")
    # Random123's known answer: Philox4x32-10 of counter 0 under key 0.
    check(int(philox_first(0, [0], 0, 0)[0]) == 0x6627E8D5,
          "mask: philox_first() gives Random123's known answer 0x6627e8d5")


# --- attention's dropout at f64, against torch.autograd -----------------------

ATT64 = """
graph att64
input  w : f64[2, 2, 5, 4]
param  q : f64[2, 2, 5, 4]
param  k : f64[2, 2, 6, 4]
param  v : f64[2, 2, 6, 4]
output loss = sum(scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=true) * w)
"""


def case_attention_f64(tgc, tmp):
    """Attention's dropout_p in a training build (the math path, the mask
    on the probabilities): the gradients of q, k, v against torch.autograd
    at f64 with the same mask (site 0, step 0, seed 0)."""
    src = os.path.join(tmp, "att64.tg")
    with open(src, "w") as f:
        f.write(ATT64)
    g = torch.Generator().manual_seed(6)
    p0 = {"q": torch.randn(2, 2, 5, 4, generator=g, dtype=torch.float64),
          "k": torch.randn(2, 2, 6, 4, generator=g, dtype=torch.float64),
          "v": torch.randn(2, 2, 6, 4, generator=g, dtype=torch.float64)}
    w = torch.randn(2, 2, 5, 4, generator=g, dtype=torch.float64)
    wpath = os.path.join(tmp, "att64.safetensors")
    tensorio.write_safetensors(wpath, list(p0.items()))
    od = os.path.join(tmp, "att64_out")
    os.makedirs(od, exist_ok=True)
    p = run([tgc, "run", src, "--weights", wpath, "--input", "w=" + save_npy(tmp, "att64_w", w),
             "--output-dir", od, "--train", "loss", "--optimizer", "none"])
    check(p.returncode == 0, "attention_f64: tgc run --train loss --optimizer none")
    if p.returncode:
        return
    t = {n: v.clone().requires_grad_() for n, v in p0.items()}
    s = t["q"] @ t["k"].transpose(-2, -1) * (1 / np.sqrt(4))
    s = s.masked_fill(~torch.ones(5, 6, dtype=torch.bool).tril(), float("-inf"))
    att = dropout_as(torch.softmax(s, dim=-1), keep_mask(0, 0, 0, (2, 2, 5, 6), 0.3), 0.3)
    ((att @ t["v"]) * w).sum().backward()
    # f64 both sides, the same ops: measured ~1e-15; allowed 1e-12.
    for n in t:
        close(f"attention_f64: d loss / d {n}", np.load(os.path.join(od, n + ".grad.npy")),
              t[n].grad, 1e-12, 1e-14)


# --- attention's dropout in the blockwise kernels (f32) ------------------------

# Sites 0-3 in graph order; shapes that cross the kernels' blocks (64 query
# rows; 256 keys forward, 128 backward), batch dims, causal, a bool mask
# broadcast over heads and a float mask (an input: no gradient of its own).
ATT32 = """
graph att32
input  w0 : f32[2, 3, 67, 8]
input  w1 : f32[2, 2, 131, 16]
input  w2 : f32[2, 2, 67, 16]
input  w3 : f32[2, 2, 67, 16]
input  bm : bool[2, 1, 67, 131]
input  fm : f32[67, 131]
param  q0 : f32[2, 3, 67, 16]
param  k0 : f32[2, 3, 300, 16]
param  v0 : f32[2, 3, 300, 8]
param  q1 : f32[2, 2, 131, 16]
param  k1 : f32[2, 2, 131, 16]
param  v1 : f32[2, 2, 131, 16]
param  q2 : f32[2, 2, 67, 16]
param  k2 : f32[2, 2, 131, 16]
param  v2 : f32[2, 2, 131, 16]
a0 = sum(scaled_dot_product_attention(q0, k0, v0, dropout_p=0.3) * w0)
a1 = sum(scaled_dot_product_attention(q1, k1, v1, dropout_p=0.2, is_causal=true) * w1)
a2 = sum(scaled_dot_product_attention(q2, k2, v2, bm, dropout_p=0.5) * w2)
a3 = sum(scaled_dot_product_attention(q2, k2, v2, fm, dropout_p=0.1) * w3)
output loss = a0 + a1 + a2 + a3
"""


def case_attention_f32(tgc, tmp):
    """Attention's dropout_p in an f32 training build runs the blockwise
    kernels (attention_dropout and attention_backward redraw the mask per
    tile; no [L, S] tensor): the step's profile names them, and the
    gradients of q, k, v equal torch.autograd's at f64 given the mask the
    written-out form draws (keep_mask over the probabilities' [..., L, S],
    site, step 0, seed 0)."""
    src = os.path.join(tmp, "att32.tg")
    with open(src, "w") as f:
        f.write(ATT32)
    g = torch.Generator().manual_seed(7)
    sh = {"q0": (2, 3, 67, 16), "k0": (2, 3, 300, 16), "v0": (2, 3, 300, 8),
          "q1": (2, 2, 131, 16), "k1": (2, 2, 131, 16), "v1": (2, 2, 131, 16),
          "q2": (2, 2, 67, 16), "k2": (2, 2, 131, 16), "v2": (2, 2, 131, 16)}
    p0 = {n: torch.randn(*s, generator=g) for n, s in sh.items()}
    ins = {"w0": torch.randn(2, 3, 67, 8, generator=g),
           "w1": torch.randn(2, 2, 131, 16, generator=g),
           "w2": torch.randn(2, 2, 67, 16, generator=g),
           "w3": torch.randn(2, 2, 67, 16, generator=g),
           "bm": torch.rand(2, 1, 67, 131, generator=g) < 0.7,
           "fm": torch.randn(67, 131, generator=g)}
    wpath = os.path.join(tmp, "att32.safetensors")
    tensorio.write_safetensors(wpath, list(p0.items()))
    od = os.path.join(tmp, "att32_out")
    os.makedirs(od, exist_ok=True)
    cmd = [tgc, "run", src, "--weights", wpath, "--output-dir", od, "--train", "loss",
           "--optimizer", "none", "--profile"]
    for n, x in ins.items():
        cmd += ["--input", f"{n}=" + save_npy(tmp, "att32_" + n, x)]
    p = run(cmd)
    check(p.returncode == 0, "attention_f32: tgc run --train loss --optimizer none")
    if p.returncode:
        return
    prof = p.stdout + p.stderr
    check(prof.count("dropout per tile") >= 1 and "rt_attention_backward" in prof
          and "dropout_apply" not in prof,
          "attention_f32: the step runs attention_dropout and attention_backward "
          "(the profile names them; no dropout_apply over [L, S])")
    t = {n: v.double().requires_grad_() for n, v in p0.items()}
    d = {n: x.double() if x.dtype != torch.bool else x for n, x in ins.items()}

    def att(q, k, v, p, site, causal=False, mask=None):
        s = t[q] @ t[k].transpose(-2, -1) * (1 / np.sqrt(16))
        if causal:
            s = s.masked_fill(~torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril(),
                              float("-inf"))
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
        P = torch.softmax(s, dim=-1)
        return dropout_as(P, keep_mask(0, site, 0, tuple(P.shape), p), p) @ t[v]

    loss = ((att("q0", "k0", "v0", 0.3, 0) * d["w0"]).sum()
            + (att("q1", "k1", "v1", 0.2, 1, causal=True) * d["w1"]).sum()
            + (att("q2", "k2", "v2", 0.5, 2, mask=d["bm"]) * d["w2"]).sum()
            + (att("q2", "k2", "v2", 0.1, 3, mask=d["fm"]) * d["w3"]).sum())
    loss.backward()
    # f32 products over up to 300 keys: measured ~1e-6 of the scale;
    # allowed 1e-5 (a gradient without the backward's mask is off by O(1)).
    for n in t:
        close(f"attention_f32: d loss / d {n}", np.load(os.path.join(od, n + ".grad.npy")),
              t[n].grad, 1e-5, 1e-7)


# --- bad graphs under --train ----------------------------------------------------

BAD = {
    "a running statistic that is not a param": ("""
graph bad
input  x : f32[4, 3, 5]
param  rm : f32[3]
param  rv : f32[3]
output loss = mean(batch_norm(x, rm * 2, rv, training=true) ** 2)
""", "running_mean must be a param", "6:34"),
    "a running statistic two batch norms share": ("""
graph bad
input  x : f32[4, 3, 5]
param  rm : f32[3]
param  rv : f32[3]
param  rv2 : f32[3]
h = batch_norm(x, rm, rv, training=true)
output loss = mean(batch_norm(h, rm, rv2, training=true) ** 2)
""", "'rm' is the running statistic of two batch_norms", "4:8"),
    "a num_batches_tracked that is not a 0-d integer": ("""
graph bad
input  x : f32[4, 3, 5]
param  bn.running_mean : f32[3]
param  bn.running_var : f32[3]
param  bn.num_batches_tracked : f32[]
output loss = mean(batch_norm(x, bn.running_mean, bn.running_var, training=true, momentum=None))
""", "must then be a 0-d integer param", "6:8"),
}


def case_errors(tgc, tmp):
    for what, (text, msg, at) in BAD.items():
        src = os.path.join(tmp, "bad.tg")
        with open(src, "w") as f:
            f.write(text)
        p = run([tgc, "build", src, "-o", os.path.join(tmp, "bad"), "--train", "loss"], expect=1)
        check(p.returncode == 1 and msg in p.stderr and f"bad.tg:{at}:" in p.stderr
              and not os.path.exists(os.path.join(tmp, "bad")),
              f"errors: {what}: exit 1 at {at} ({p.stderr.strip().splitlines()[0][-90:] if p.stderr else ''})")


# --- the CUDA backend: compiled, not run (no GPU here) -----------------------

def case_cuda(tgc, tmp):
    """The encoder's training step builds for --target cuda: NVRTC compiles
    its kernels, dropout's (forward and backward) through the prelude's
    tg_philox, the CPU's Philox written in CUDA C. (Batch norm's training
    form is reductions and elementwise kernels the CUDA suite compiles
    already; one graph keeps the NVRTC time to about 8 s of CPU.)"""
    for name, text in [("bert", BERT.replace("=P", "=0.2"))]:
        src = os.path.join(tmp, name + "_cuda.tg")
        with open(src, "w") as f:
            f.write(text)
        em = os.path.join(tmp, name + "_cu")
        p = run([tgc, "build", src, "-o", os.path.join(tmp, name + "_cuda"), "--train", "loss",
                 "--optimizer", "adamw", "--target", "cuda", "--gpu-arch", "sm_90", "--emit", "cuda", em])
        if p.returncode and ("built without" in p.stderr or "not built" in p.stderr):
            print(f"skip cuda: {p.stderr.strip()[:120]}")  # tgc without CUDA support
            return
        ok = p.returncode == 0
        if ok and name == "bert":
            cu = "".join(open(os.path.join(em, f)).read() for f in os.listdir(em) if f.endswith(".cu"))
            ok = cu.count("tg_philox((tg_u64)") >= 4
        check(ok, f"cuda: {name} builds for --target cuda" + (
            " (dropout's kernels call tg_philox)" if name == "bert" else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-k", default="")
    args = ap.parse_args()
    tgc = os.path.abspath(args.tgc)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="tgc-bn-dropout-") as tmp:
        for name, fn in [("block", case_block), ("eval_bn", case_eval_bn), ("bn_f64", case_bn_f64),
                         ("nbt_param", case_nbt_param),
                         ("bert_p0", case_bert_p0),
                         ("bert", case_bert), ("mask", case_mask),
                         ("attention_f64", case_attention_f64),
                         ("attention_f32", case_attention_f32), ("errors", case_errors),
                         ("cuda", case_cuda)]:
            if args.k in name:
                fn(tgc, tmp)
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
