#!/usr/bin/python3
"""Training executables against torch.optim (issue 15).

Each case builds a `.tg` graph with `tgc build --train LOSS --optimizer ...`,
runs the executable for N steps on fixed data and compares every param it
saves (--save-weights) with the same model trained by PyTorch 1.13's
torch.optim from the same initial weights on the same batches.

The PyTorch model is written out by hand beside each graph (the same
arithmetic, op for op), so the two trajectories differ only by rounding:
f32 kernels that sum in another order. Those differences grow with the
number of steps; the tolerances below are per case and stated with it
(relative to the largest weight of the tensor, plus a small absolute term).

Also checked: --save-state/--load-state resume to the same weights as an
uninterrupted run (bit for bit), data sets cycled by their leading
dimension, --log-every, a NaN loss (exit 1 naming the step), --freeze.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "diff"))
import tensorio  # noqa: E402
sys.path.append(os.path.join(HERE, ".."))  # link_line.py
from link_line import link_libs  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def run(cmd, expect=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != expect:
        print("command:", " ".join(cmd))
        print(p.stdout[-3000:], p.stderr[-3000:])
    return p


def build(tgc, tmp, name, text, flags):
    src = os.path.join(tmp, name + ".tg")
    with open(src, "w") as f:
        f.write(text)
    exe = os.path.join(tmp, name)
    p = run([tgc, "build", src, "-o", exe] + flags)
    check(p.returncode == 0, f"{name}: tgc build {' '.join(flags)}")
    return exe if p.returncode == 0 else None


def close(name, got, want, rtol, atol):
    got = np.asarray(got, dtype=np.float64)
    want = want.detach().double().numpy()
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got - want).max() if got.size else 0.0
    ok = got.shape == want.shape and err <= rtol * scale + atol
    check(ok, f"{name}: max |tgc - torch| = {err:.3g} (scale {scale:.3g}, "
          f"allowed {rtol:g} * scale + {atol:g})")


def save_weights(path, params):
    tensorio.write_safetensors(path, [(k, v.detach().contiguous()) for k, v in params.items()])


# --- linear regression (the README's example), SGD -------------------------

def case_linear_regression(tgc, tmp):
    text = open(os.path.join(ROOT, "examples", "linear_regression.tg")).read()
    exe = build(tgc, tmp, "linreg", text,
                ["--train", "loss", "--optimizer", "sgd", "--lr", "0.001"])
    if not exe:
        return
    xs = os.path.join(ROOT, "examples", "data", "linreg_x.npy")
    ys = os.path.join(ROOT, "examples", "data", "linreg_y.npy")
    out = os.path.join(tmp, "linreg_fit.safetensors")
    p = run([exe, "--input", "x=" + xs, "--input", "y=" + ys, "--steps", "500",
             "--save-weights", out, "--log-every", "100"])
    check(p.returncode == 0, "linreg: 500 steps")
    if p.returncode:
        return
    lines = [l for l in p.stdout.splitlines() if l.startswith("step ")]
    check(len(lines) == 5 and lines[-1].startswith("step 500 loss "),
          f"linreg: --log-every 100 prints 5 lines ({len(lines)})")
    got = tensorio.read_safetensors(out)
    x = torch.tensor(np.load(xs))
    y = torch.tensor(np.load(ys))
    w = torch.zeros(1, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w, b], lr=0.001)
    for _ in range(500):
        opt.zero_grad()
        loss = ((x @ w + b - y) ** 2).sum()
        loss.backward()
        opt.step()
    # 500 f32 steps of a well-conditioned problem: rounding stays ~1e-6.
    close("linreg: w", got["w"], w, 1e-5, 1e-6)
    close("linreg: b", got["b"], b, 1e-5, 1e-6)
    check(abs(float(got["w"].flatten()[0]) - 2) < 0.05 and
          abs(float(got["b"].flatten()[0]) - 1) < 0.05,
          f"linreg: fits w = {float(got['w'].flatten()[0]):.4f} ~ 2, "
          f"b = {float(got['b'].flatten()[0]):.4f} ~ 1")


# --- examples/mlp_classifier.tg: cross_entropy, SGD with momentum --------

def case_mlp_example(tgc, tmp):
    text = open(os.path.join(ROOT, "examples", "mlp_classifier.tg")).read()
    exe = build(tgc, tmp, "mlp_example", text,
                ["--train", "loss", "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9"])
    if not exe:
        return
    xs = os.path.join(ROOT, "examples", "data", "blobs_x.npy")
    os_ = os.path.join(ROOT, "examples", "data", "blobs_onehot.npy")
    init = os.path.join(tmp, "mlp_example_init.safetensors")
    out = os.path.join(tmp, "mlp_example.safetensors")
    odir = os.path.join(tmp, "mlp_example_out")
    # steps 0 saves the initialisers' values: torch starts from the same
    p0 = run([exe, "--input", "x=" + xs, "--input", "onehot=" + os_, "--steps", "0",
              "--save-weights", init])
    p = run([exe, "--input", "x=" + xs, "--input", "onehot=" + os_, "--steps", "200",
             "--save-weights", out, "--output-dir", odir])
    check(p0.returncode == 0 and p.returncode == 0, "mlp_example: 200 steps over 4 batches")
    if p.returncode or p0.returncode:
        return
    got, start = tensorio.read_safetensors(out), tensorio.read_safetensors(init)
    x, onehot = torch.tensor(np.load(xs)), torch.tensor(np.load(os_))
    pt = {k: v.clone().requires_grad_(True) for k, v in start.items()}
    opt = torch.optim.SGD(list(pt.values()), lr=0.1, momentum=0.9)
    F = torch.nn.functional
    for s in range(200):
        i = s % 4
        opt.zero_grad()
        logits = F.linear(F.relu(F.linear(x[i * 64:(i + 1) * 64], pt["w1"], pt["b1"])), pt["w2"],
                          pt["b2"])
        F.cross_entropy(logits, onehot[i * 64:(i + 1) * 64]).backward()
        opt.step()
    # 200 momentum steps: rounding differences compound; measured ~1e-6 of
    # the scale, allowed 1e-5.
    for k in start:
        close(f"mlp_example: {k}", got[k], pt[k], 1e-5, 1e-6)
    acc = float(np.load(os.path.join(odir, "accuracy.npy")))
    check(acc >= 0.85, f"mlp_example: the last batch's accuracy {acc:.3f} >= 0.85")


# --- MLP classifier: SGD with momentum and weight decay, one param frozen --

MLP = """
graph mlp_train(batch = 16)
input  x      : f32[batch, 20]
input  onehot : f32[batch, 4]
param  w1 : f32[32, 20]
param  b1 : f32[32]
param  w2 : f32[4, 32]
param  b2 : f32[4]
h      = relu(linear(x, w1, b1))
logits = linear(h, w2, b2)
output loss = -mean(sum(log_softmax(logits, dim=1) * onehot, dim=1))
"""


def mlp_data(seed, batches, batch):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batches * batch, 20, generator=g)
    centers = torch.randn(4, 20, generator=g) * 2
    labels = torch.argmin(torch.cdist(x, centers), dim=1)
    onehot = torch.nn.functional.one_hot(labels, 4).float()
    return x, onehot


def mlp_params(seed):
    g = torch.Generator().manual_seed(seed)
    return {"w1": torch.randn(32, 20, generator=g) * 0.2, "b1": torch.randn(32, generator=g) * 0.1,
            "w2": torch.randn(4, 32, generator=g) * 0.2, "b2": torch.zeros(4)}


def torch_mlp(params, x, onehot, steps, batch, frozen, opt_fn):
    p = {k: v.clone().requires_grad_(k not in frozen) for k, v in params.items()}
    opt = opt_fn([v for k, v in p.items() if k not in frozen])
    nb = x.shape[0] // batch
    for s in range(steps):
        i = s % nb
        xb, ob = x[i * batch:(i + 1) * batch], onehot[i * batch:(i + 1) * batch]
        opt.zero_grad()
        h = torch.relu(torch.nn.functional.linear(xb, p["w1"], p["b1"]))
        logits = torch.nn.functional.linear(h, p["w2"], p["b2"])
        loss = -(torch.log_softmax(logits, dim=1) * ob).sum(dim=1).mean()
        loss.backward()
        opt.step()
    return p


def case_mlp_sgd(tgc, tmp):
    exe = build(tgc, tmp, "mlp_sgd", MLP,
                ["--train", "loss", "--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9",
                 "--weight-decay", "1e-3", "--freeze", "b1"])
    if not exe:
        return
    x, onehot = mlp_data(1, 3, 16)  # a data set of 3 batches, cycled
    params = mlp_params(2)
    w = os.path.join(tmp, "mlp_init.safetensors")
    save_weights(w, params)
    np.save(os.path.join(tmp, "mlp_x.npy"), x.numpy())
    np.save(os.path.join(tmp, "mlp_o.npy"), onehot.numpy())
    out = os.path.join(tmp, "mlp_out.safetensors")
    steps = 30
    p = run([exe, "--weights", w, "--input", "x=" + os.path.join(tmp, "mlp_x.npy"),
             "--input", "onehot=" + os.path.join(tmp, "mlp_o.npy"), "--steps", str(steps),
             "--save-weights", out])
    check(p.returncode == 0, "mlp_sgd: 30 steps over a 3-batch data set")
    if p.returncode:
        return
    got = tensorio.read_safetensors(out)
    want = torch_mlp(params, x, onehot, steps, 16, {"b1"},
                     lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3))
    # 30 f32 steps; products sum in another order than torch's BLAS does:
    # measured ~3e-7 of the scale; allowed 1e-5.
    for k in params:
        close(f"mlp_sgd: {k}", got[k], want[k], 1e-5, 1e-6)
    check(np.array_equal(got["b1"].numpy(), params["b1"].numpy()),
          "mlp_sgd: the frozen b1 is saved unchanged")


# --- a small causal language model: AdamW ---------------------------------

LM = """
graph lm_train(batch = 4, seq = 8)
input  tokens : i64[batch, seq]
input  target : f32[batch, seq, 16]
param  emb  : f32[16, 32]
param  pos  : f32[seq, 32]
param  ln_w : f32[32]
param  ln_b : f32[32]
param  wq   : f32[32, 32]
param  wk   : f32[32, 32]
param  wv   : f32[32, 32]
param  wo   : f32[32, 32]
param  head : f32[16, 32]
h      = embedding(tokens, emb) + pos
a      = layer_norm(h, [32], ln_w, ln_b)
q      = linear(a, wq).view(batch, seq, 2, 16).transpose(1, 2)
k      = linear(a, wk).view(batch, seq, 2, 16).transpose(1, 2)
v      = linear(a, wv).view(batch, seq, 2, 16).transpose(1, 2)
causal = tril(ones([seq, seq], dtype = bool))
att    = softmax((q @ k.transpose(-2, -1) * 0.25).masked_fill(~causal, -inf), dim = -1)
ctx    = (att @ v).transpose(1, 2).reshape(batch, seq, 32)
h2     = h + linear(ctx, wo)
logits = linear(h2, head)
output loss = -mean(sum(log_softmax(logits, dim=-1) * target, dim=-1))
"""


def lm_forward(p, tokens, target, batch=4, seq=8):
    F = torch.nn.functional
    h = F.embedding(tokens, p["emb"]) + p["pos"]
    a = F.layer_norm(h, [32], p["ln_w"], p["ln_b"])
    q = F.linear(a, p["wq"]).view(batch, seq, 2, 16).transpose(1, 2)
    k = F.linear(a, p["wk"]).view(batch, seq, 2, 16).transpose(1, 2)
    v = F.linear(a, p["wv"]).view(batch, seq, 2, 16).transpose(1, 2)
    causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
    att = torch.softmax((q @ k.transpose(-2, -1) * 0.25).masked_fill(~causal, float("-inf")), -1)
    ctx = (att @ v).transpose(1, 2).reshape(batch, seq, 32)
    h2 = h + F.linear(ctx, p["wo"])
    logits = F.linear(h2, p["head"])
    return -(torch.log_softmax(logits, dim=-1) * target).sum(dim=-1).mean()


LM_FLAGS = ["--train", "loss", "--optimizer", "adamw", "--lr", "0.01", "--betas", "0.9,0.95",
            "--weight-decay", "0.1"]


def lm_data():
    """The LM's initial params and a data set of 2 batches of 4 (tokens, one-hot targets)."""
    g = torch.Generator().manual_seed(3)
    params = {"emb": torch.randn(16, 32, generator=g) * 0.3,
              "pos": torch.randn(8, 32, generator=g) * 0.1,
              "ln_w": 1 + 0.1 * torch.randn(32, generator=g),
              "ln_b": 0.1 * torch.randn(32, generator=g)}
    for n in ("wq", "wk", "wv", "wo"):
        params[n] = torch.randn(32, 32, generator=g) * 0.15
    params["head"] = torch.randn(16, 32, generator=g) * 0.15
    seqs = torch.randint(0, 16, (2 * 4, 9), generator=g)  # 2 batches of next-token pairs
    tokens, nxt = seqs[:, :8].contiguous(), seqs[:, 1:]
    target = torch.nn.functional.one_hot(nxt, 16).float()
    return params, tokens, target


def torch_lm(params, tokens, target, steps):
    """torch.optim.AdamW with LM_FLAGS' settings, steps over the 2 batches, cycled."""
    pt = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    opt = torch.optim.AdamW(list(pt.values()), lr=0.01, betas=(0.9, 0.95), weight_decay=0.1)
    for s in range(steps):
        i = s % 2
        opt.zero_grad()
        lm_forward(pt, tokens[i * 4:(i + 1) * 4], target[i * 4:(i + 1) * 4]).backward()
        opt.step()
    return pt


def case_lm_adamw(tgc, tmp):
    exe = build(tgc, tmp, "lm_adamw", LM, LM_FLAGS)
    if not exe:
        return
    params, tokens, target = lm_data()
    w = os.path.join(tmp, "lm_init.safetensors")
    save_weights(w, params)
    np.save(os.path.join(tmp, "lm_tok.npy"), tokens.numpy())
    np.save(os.path.join(tmp, "lm_tgt.npy"), target.numpy())
    ins = ["--input", "tokens=" + os.path.join(tmp, "lm_tok.npy"),
           "--input", "target=" + os.path.join(tmp, "lm_tgt.npy")]
    steps = 20
    out = os.path.join(tmp, "lm_out.safetensors")
    p = run([exe, "--weights", w] + ins + ["--steps", str(steps), "--save-weights", out])
    check(p.returncode == 0, "lm_adamw: 20 steps")
    if p.returncode:
        return
    got = tensorio.read_safetensors(out)
    pt = torch_lm(params, tokens, target, steps)
    # AdamW normalises each step by sqrt(v): an element whose gradient is
    # tiny moves by about lr either way, so rounding can move it by a
    # fraction of lr; measured ~2e-6 of the scale, allowed 1e-5.
    for k in params:
        close(f"lm_adamw: {k}", got[k], pt[k], 1e-4, 1e-6)

    # --save-state / --load-state: 10 + 10 steps equal 20 steps, bit for bit.
    # The data set has 2 batches, so the second run starts at the same batch.
    mid_w, mid_s = os.path.join(tmp, "lm_mid.safetensors"), os.path.join(tmp, "lm_mid_state.safetensors")
    fin = os.path.join(tmp, "lm_fin.safetensors")
    p1 = run([exe, "--weights", w] + ins + ["--steps", "10", "--save-weights", mid_w,
                                            "--save-state", mid_s])
    p2 = run([exe, "--weights", mid_w, "--load-state", mid_s] + ins +
             ["--steps", "10", "--save-weights", fin])
    if p1.returncode == 0 and p2.returncode == 0:
        resumed = tensorio.read_safetensors(fin)
        same = all(np.array_equal(resumed[k].numpy(), got[k].numpy()) for k in params)
        check(same, "lm_adamw: 10 steps, --save-state, --load-state, 10 steps == 20 steps")
        state = tensorio.read_safetensors(mid_s)
        check("emb.exp_avg" in state and "emb.exp_avg_sq" in state and "__step" in state and
              float(state["__step"].reshape(-1)[0]) == 10.0,
              f"lm_adamw: the state file holds the moments and the step count ({sorted(state)[:4]}...)")
    else:
        check(False, "lm_adamw: save/load state runs")


# --- a conv net: conv2d, batch norm (eval), max pool, SGD ------------------

CONV = """
graph conv_train(batch = 4)
input  x      : f32[batch, 3, 12, 12]
input  onehot : f32[batch, 5]
param  c1 : f32[8, 3, 3, 3]
param  cb : f32[8]
param  bw : f32[8]
param  bb : f32[8]
param  rm : f32[8]
param  rv : f32[8]
param  c2 : f32[8, 4, 3, 3]
param  fc : f32[5, 288]
h1     = relu(batch_norm(conv2d(x, c1, cb, padding = 1), rm, rv, bw, bb))
h2     = max_pool2d(h1, 2)
h3     = conv2d(h2, c2, None, stride = 1, padding = 1, groups = 2)
logits = linear(relu(h3).flatten(1), fc)
output loss = -mean(sum(log_softmax(logits, dim = 1) * onehot, dim = 1))
"""


def case_convnet(tgc, tmp):
    exe = build(tgc, tmp, "conv_train", CONV,
                ["--train", "loss", "--lr", "0.05", "--momentum", "0.9", "--freeze", "rm,rv"])
    if not exe:
        return
    g = torch.Generator().manual_seed(11)
    params = {"c1": torch.randn(8, 3, 3, 3, generator=g) * 0.3, "cb": torch.randn(8, generator=g) * 0.1,
              "bw": 1 + 0.1 * torch.randn(8, generator=g), "bb": 0.1 * torch.randn(8, generator=g),
              "rm": 0.1 * torch.randn(8, generator=g), "rv": 1 + 0.2 * torch.rand(8, generator=g),
              "c2": torch.randn(8, 4, 3, 3, generator=g) * 0.2, "fc": torch.randn(5, 288, generator=g) * 0.1}
    x = torch.randn(2 * 4, 3, 12, 12, generator=g)
    onehot = torch.nn.functional.one_hot(torch.randint(0, 5, (8,), generator=g), 5).float()
    w = os.path.join(tmp, "conv_init.safetensors")
    save_weights(w, params)
    np.save(os.path.join(tmp, "conv_x.npy"), x.numpy())
    np.save(os.path.join(tmp, "conv_o.npy"), onehot.numpy())
    out = os.path.join(tmp, "conv_out.safetensors")
    p = run([exe, "--weights", w, "--input", "x=" + os.path.join(tmp, "conv_x.npy"),
             "--input", "onehot=" + os.path.join(tmp, "conv_o.npy"), "--steps", "6",
             "--save-weights", out])
    check(p.returncode == 0, "convnet: 6 steps")
    if p.returncode:
        return
    got = tensorio.read_safetensors(out)
    F = torch.nn.functional
    pt = {k: v.clone().requires_grad_(k not in ("rm", "rv")) for k, v in params.items()}
    opt = torch.optim.SGD([v for k, v in pt.items() if k not in ("rm", "rv")], lr=0.05, momentum=0.9)
    for s in range(6):
        xb, ob = x[(s % 2) * 4:(s % 2 + 1) * 4], onehot[(s % 2) * 4:(s % 2 + 1) * 4]
        opt.zero_grad()
        h = F.relu(F.batch_norm(F.conv2d(xb, pt["c1"], pt["cb"], padding=1), pt["rm"], pt["rv"],
                                pt["bw"], pt["bb"]))
        h = F.conv2d(F.max_pool2d(h, 2), pt["c2"], None, padding=1, groups=2)
        logits = F.linear(F.relu(h).flatten(1), pt["fc"])
        (-(torch.log_softmax(logits, dim=1) * ob).sum(dim=1).mean()).backward()
        opt.step()
    # oneDNN's convolutions sum in another order than torch's: ~1e-6 of the
    # scale per step (measured 2.4e-7 after 6 steps); allowed 1e-5.
    for k in params:
        close(f"convnet: {k}", got[k], pt[k], 1e-5, 1e-6)


# --- mixed precision ------------------------------------------------------

def case_mixed(tgc, tmp):
    x, onehot = mlp_data(4, 1, 16)
    params = mlp_params(5)
    w = os.path.join(tmp, "mix_init.safetensors")
    save_weights(w, params)
    np.save(os.path.join(tmp, "mix_x.npy"), x.numpy())
    np.save(os.path.join(tmp, "mix_o.npy"), onehot.numpy())
    ins = ["--input", "x=" + os.path.join(tmp, "mix_x.npy"),
           "--input", "onehot=" + os.path.join(tmp, "mix_o.npy")]
    # mixed-bf16 against torch.autocast("cpu", bfloat16): f32 master
    # weights, products in bf16. bf16 keeps 8 bits: after 5 SGD steps the
    # weights agree to ~4e-4 of their scale (measured), allowed 2e-3.
    exe = build(tgc, tmp, "mix_bf16", MLP, ["--train", "loss", "--lr", "0.1", "--precision",
                                             "mixed-bf16"])
    out = os.path.join(tmp, "mix_bf16.safetensors")
    if exe and run([exe, "--weights", w] + ins + ["--steps", "5", "--save-weights", out]).returncode == 0:
        got = tensorio.read_safetensors(out)
        p = {k: v.clone().requires_grad_(True) for k, v in params.items()}
        opt = torch.optim.SGD(list(p.values()), lr=0.1)
        for _ in range(5):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                h = torch.relu(torch.nn.functional.linear(x, p["w1"], p["b1"]))
                logits = torch.nn.functional.linear(h, p["w2"], p["b2"])
            loss = -(torch.log_softmax(logits.float(), dim=1) * onehot).sum(dim=1).mean()
            loss.backward()
            opt.step()
        for k in params:
            check(got[k].dtype == torch.float32, f"mixed-bf16: {k} saved as f32 master weights")
            close(f"mixed-bf16: {k}", got[k], p[k], 2e-3, 1e-4)
    # mixed-f16 loss scaling: a loss this large overflows f16 gradients at
    # the initial scale 2^16, so the first step is skipped (weights as they
    # were) and the scale halves, as torch.cuda.amp.GradScaler does.
    big = MLP.replace("output loss = -mean", "output loss = -1e4 * mean")
    exe = build(tgc, tmp, "mix_f16", big, ["--train", "loss", "--lr", "0.1", "--precision",
                                           "mixed-f16"])
    out, st = os.path.join(tmp, "mix_f16.safetensors"), os.path.join(tmp, "mix_f16_state.safetensors")
    if exe and run([exe, "--weights", w] + ins + ["--steps", "1", "--save-weights", out,
                                                  "--save-state", st]).returncode == 0:
        got, state = tensorio.read_safetensors(out), tensorio.read_safetensors(st)
        check(all(np.array_equal(got[k].numpy(), params[k].numpy()) for k in params),
              "mixed-f16: an overflowing step leaves the weights unchanged")
        check(float(state["__loss_scale"]) == 32768.0,
              f"mixed-f16: the scale halves to 32768 ({float(state['__loss_scale'])})")


# --- tgc compile --train: the header's API --------------------------------

def case_compile(tgc, tmp, args):
    if not args.rtlib:
        print("skip compile: no --rtlib given")
        return
    src = os.path.join(ROOT, "examples", "linear_regression.tg")
    obj, hdr = os.path.join(tmp, "linreg.o"), os.path.join(tmp, "linear_regression.h")
    p = run([tgc, "compile", src, "-o", obj, "--header", hdr, "--train", "loss", "--lr", "0.001"])
    check(p.returncode == 0, "compile --train: object and header")
    if p.returncode:
        return
    exe = os.path.join(tmp, "train_api")
    libs = link_libs([tgc, "compile", src, "--train", "loss"])
    p = run([args.cc, "-std=c11", "-I", tmp, "-I", args.rtinc, os.path.join(HERE, "train_api.c"),
             obj, args.rtlib] + libs + ["-o", exe] + args.cflags.split())
    check(p.returncode == 0, "compile --train: train_api.c links")
    if p.returncode:
        return
    p = run([exe])
    check(p.returncode == 0, "compile --train: 500 steps through NAME_train_step")
    if p.returncode:
        return
    f = p.stdout.split()
    got = {f[i]: float(f[i + 1]) for i in range(0, len(f), 2)}
    x = (torch.arange(100, dtype=torch.float32) / 100).reshape(100, 1)
    y = 2 * x + 1
    w = torch.zeros(1, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w, b], lr=0.001)
    for _ in range(500):
        opt.zero_grad()
        ((x @ w + b - y) ** 2).sum().backward()
        opt.step()
    check(abs(got["w"] - w.item()) <= 1e-5 * abs(w.item()) and
          abs(got["b"] - b.item()) <= 1e-5 * abs(b.item()) + 1e-6,
          f"compile --train: w {got['w']:.6f} b {got['b']:.6f} == torch's {w.item():.6f} {b.item():.6f}")
    check(got["params"] == 2 and got["states"] == 0,
          f"compile --train: 2 params, no optimizer state for plain SGD ({p.stdout.strip()})")


# --- bad input ------------------------------------------------------------

NAN = """
graph nan_train(n = 4)
input x : f32[n]
param w : f32[n] = full(-1.0)
output loss = sum(log(w * x))
"""


def case_errors(tgc, tmp):
    exe = build(tgc, tmp, "nan_train", NAN, ["--train", "loss"])
    if exe:
        np.save(os.path.join(tmp, "ones.npy"), np.ones(4, np.float32))
        p = run([exe, "--input", "x=" + os.path.join(tmp, "ones.npy"), "--steps", "3"], expect=1)
        check(p.returncode == 1 and "step 1" in p.stderr and "nan" in p.stderr,
              f"nan loss: exit 1 naming step 1 ({p.stderr.strip()[:120]})")
    src = os.path.join(tmp, "nan_train.tg")
    p = run([tgc, "build", src, "-o", os.path.join(tmp, "x"), "--train", "loss", "--freeze",
             "nope"], expect=1)
    check(p.returncode == 1 and "nope" in p.stderr, "--freeze of an unknown name: exit 1")
    p = run([tgc, "build", src, "-o", os.path.join(tmp, "x"), "--train", "w"], expect=1)
    check(p.returncode == 1 and "not an output" in p.stderr, "--train of a non-output: exit 1")
    p = run([tgc, "build", src, "-o", os.path.join(tmp, "x"), "--lr", "0.1"], expect=1)
    check(p.returncode == 1 and "--train" in p.stderr, "--lr without --train: exit 1")


def case_report(tgc, tmp):
    src = os.path.join(tmp, "mlp_train.tg")
    with open(src, "w") as f:
        f.write(MLP)
    p = run([tgc, "report", src, "--train", "loss", "--optimizer", "adamw", "--json"])
    check(p.returncode == 0, "report --train --json")
    if p.returncode:
        return
    r = json.loads(p.stdout)
    t = r.get("training", {})
    n = 32 * 20 + 32 + 4 * 32 + 4
    check(t.get("trainable_params") == n, f"report: trainable_params {t.get('trainable_params')} == {n}")
    check(t.get("grads_bytes") == 4 * n, f"report: grads_bytes {t.get('grads_bytes')} == {4 * n}")
    # exp_avg + exp_avg_sq per param, plus the f32 step count
    check(t.get("optimizer_state_bytes") == 8 * n + 4,
          f"report: optimizer_state_bytes {t.get('optimizer_state_bytes')} == {8 * n + 4}")
    check(t.get("saved_activations_bytes", 0) > 0, "report: saved activations counted")
    check(r["peak_bytes"] >= r["params"]["bytes"] + r["activations"]["arena_bytes"],
          "report: the peak includes params and the arena")

    # --checkpoint auto: the transformer block at batch 8 peaks at ~33 MiB;
    # asked to fit 30 MiB it recomputes activations until it does.
    tb = open(os.path.join(ROOT, "examples", "transformer_block.tg")).read()
    tb = tb.replace("graph transformer_block(batch = 1, seq = 128)",
                    "graph tb_train(batch = 8, seq = 128)")
    tb = tb.replace("output y = x1 + linear(up, w_proj, b_proj)",
                    "y = x1 + linear(up, w_proj, b_proj)\noutput loss = mean(y * y)")
    src = os.path.join(tmp, "tb_train.tg")
    with open(src, "w") as f:
        f.write(tb)
    budget = 30 * 2**20
    p = run([tgc, "report", src, "--train", "loss", "--optimizer", "adamw", "--budget", "30MiB",
             "--checkpoint", "auto", "--json"])
    check(p.returncode == 0, "report --checkpoint auto")
    if p.returncode:
        return
    r = json.loads(p.stdout)
    ck = r["training"].get("checkpoint", {})
    check(ck.get("peak_bytes_without", 0) > budget and ck.get("fits") and
          r["peak_bytes"] <= budget and ck.get("recomputed", 0) >= 1 and ck.get("extra_flops", 0) > 0,
          f"report --checkpoint auto: {ck.get('peak_bytes_without', 0) / 2**20:.2f} MiB -> "
          f"{r['peak_bytes'] / 2**20:.2f} MiB <= 30 MiB, {ck.get('recomputed')} recomputed, "
          f"+{ck.get('extra_flops', 0)} FLOPs")
    # The checkpointed step computes the same numbers: 2 steps of both
    # builds give bit-identical weights.
    outs = []
    for extra in ([], ["--checkpoint", "auto", "--budget", "30MiB"]):
        exe = os.path.join(tmp, "tb_ck" if extra else "tb_plain")
        p = run([tgc, "build", src, "-o", exe, "--train", "loss", "--optimizer", "adamw",
                 "-D", "batch=8"] + extra)
        if p.returncode:
            check(False, "build --checkpoint auto")
            return
        np.save(os.path.join(tmp, "tb_x.npy"),
                np.random.default_rng(1).standard_normal((8, 128, 256), np.float32))
        out = exe + ".safetensors"
        p = run([exe, "--input", "x=" + os.path.join(tmp, "tb_x.npy"), "--steps", "2",
                 "--save-weights", out])
        outs.append(tensorio.read_safetensors(out) if p.returncode == 0 else None)
    check(outs[0] is not None and outs[1] is not None and
          all(np.array_equal(outs[0][k].numpy(), outs[1][k].numpy()) for k in outs[0]),
          "build --checkpoint auto: the recomputing step gives the same weights, bit for bit")
    p = run([tgc, "report", src, "--train", "loss", "--checkpoint", "auto"], expect=1)
    check(p.returncode == 1 and "--budget" in p.stderr, "--checkpoint auto without a budget: exit 1")


def case_segments(tgc, tmp):
    """--checkpoint auto by segments: a 16-layer tanh MLP whose peak no
    single recomputed value lowers (each value's operand is itself an
    activation the backward reads); the sqrt(n) rule's segments, each
    recomputed from the kept value before it, fit a budget 2 MiB below the
    plain peak, and the step computes the same weights bit for bit."""
    lines = ["graph deep(batch = 512)", "input x : f32[batch, 256]"]
    for i in range(16):
        lines.append(f"param w{i} : f32[256, 256] = randn(std = 0.05, seed = {i + 1})")
    h = "x"
    for i in range(16):
        lines.append(f"h{i} = tanh(linear({h}, w{i}))")
        h = f"h{i}"
    lines.append(f"output loss = mean({h} * {h})")
    src = os.path.join(tmp, "deep.tg")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = run([tgc, "report", src, "--train", "loss", "--budget", "12MiB", "--checkpoint", "auto",
             "--json"])
    if p.returncode:
        check(False, "segments: report --checkpoint auto")
        return
    r = json.loads(p.stdout)
    ck = r["training"].get("checkpoint", {})
    check(ck.get("fits") and ck.get("segments", 0) >= 1 and r["peak_bytes"] <= 12 * 2**20 <
          ck.get("peak_bytes_without", 0),
          f"segments: {ck.get('peak_bytes_without', 0) / 2**20:.2f} MiB -> "
          f"{r['peak_bytes'] / 2**20:.2f} MiB <= 12 MiB in {ck.get('segments')} segments of "
          f"{ck.get('segment_len')} ({ck.get('recomputed')} values, {ck.get('evaluations')} tries)")
    outs = []
    np.save(os.path.join(tmp, "deep_x.npy"),
            np.random.default_rng(2).standard_normal((512, 256), np.float32))
    for extra in ([], ["--checkpoint", "auto", "--budget", "12MiB"]):
        exe = os.path.join(tmp, "deep_ck" if extra else "deep_plain")
        p = run([tgc, "build", src, "-o", exe, "--train", "loss", "--lr", "0.1"] + extra)
        if p.returncode:
            check(False, "segments: build " + " ".join(extra))
            return
        out = exe + ".safetensors"
        p = run([exe, "--input", "x=" + os.path.join(tmp, "deep_x.npy"), "--steps", "2",
                 "--save-weights", out])
        outs.append(tensorio.read_safetensors(out) if p.returncode == 0 else None)
    check(outs[0] is not None and outs[1] is not None and
          all(np.array_equal(outs[0][k].numpy(), outs[1][k].numpy()) for k in outs[0]),
          "segments: the recomputing step gives the same weights, bit for bit")


BLOCKS = """
graph blocks(batch = 512, n = 8)
input x : f32[batch, 256]
def Block(x):
    param fc1.weight : f32[256, 256] = randn(std = 0.05, seed = 1)
    param fc2.weight : f32[256, 256] = randn(std = 0.05, seed = 2)
    h = tanh(linear(x, fc1.weight))
    g = tanh(linear(h.view(batch, 16, 16).reshape(batch, 256), fc2.weight))
    return x + g * h
h = repeat(Block, n, x, prefix = "blocks")
output loss = mean(h * h)
"""


def case_blocks(tgc, tmp, builds=True):
    """--checkpoint auto by segments per repeated block: 8 calls of a def
    (two tanh layers, a view between them, a residual) peak at 17.75 MiB;
    asked to fit 12 MiB, whole calls are recomputed, each from its kept
    input (the views inside recomputed too: a view the backward reads would
    keep its original alive), the first calls first, found in a few
    compilations; the report's figures are the rebuilt step's, and the
    step computes the same weights bit for bit (not under the sanitizers:
    two builds that the segments case already makes of their kind)."""
    src = os.path.join(tmp, "blocks.tg")
    with open(src, "w") as f:
        f.write(BLOCKS)
    budget = 12 * 2**20
    p = run([tgc, "report", src, "--train", "loss", "--budget", "12MiB", "--checkpoint", "auto",
             "--json"])
    if p.returncode:
        check(False, "blocks: report --checkpoint auto")
        return
    r = json.loads(p.stdout)
    ck = r["training"].get("checkpoint", {})
    calls = [b["call"] for b in ck.get("blocks", [])]
    check(ck.get("fits") and r["peak_bytes"] == ck.get("peak_bytes") <= budget <
          ck.get("peak_bytes_without", 0) and 1 <= len(calls) < 8 and
          calls == [f"blocks.{i}" for i in range(len(calls))] and
          all(b["def"] == "Block" and b["values"] > 0 and b["flops"] > 0 for b in ck["blocks"]) and
          ck.get("evaluations", 99) <= 4 and ck.get("extra_flops", 0) > 0,
          f"blocks: {ck.get('peak_bytes_without', 0) / 2**20:.2f} MiB -> "
          f"{r['peak_bytes'] / 2**20:.2f} MiB <= 12 MiB recomputing the calls {calls} "
          f"({ck.get('recomputed')} values, +{ck.get('extra_flops')} FLOPs, "
          f"{ck.get('evaluations')} compilations)")
    p = run([tgc, "report", src, "--train", "loss", "--budget", "12MiB", "--checkpoint", "auto"])
    check(p.returncode == 0 and "def calls" in p.stdout and "blocks.0 (Block" in p.stdout,
          "blocks: the text report names the recomputed def calls")
    if not builds:
        return
    outs = []
    np.save(os.path.join(tmp, "blocks_x.npy"),
            np.random.default_rng(3).standard_normal((512, 256), np.float32))
    for extra in ([], ["--checkpoint", "auto", "--budget", "12MiB"]):
        exe = os.path.join(tmp, "blocks_ck" if extra else "blocks_plain")
        p = run([tgc, "build", src, "-o", exe, "--train", "loss", "--lr", "0.1"] + extra)
        if p.returncode:
            check(False, "blocks: build " + " ".join(extra))
            return
        out = exe + ".safetensors"
        p = run([exe, "--input", "x=" + os.path.join(tmp, "blocks_x.npy"), "--steps", "2",
                 "--save-weights", out])
        outs.append(tensorio.read_safetensors(out) if p.returncode == 0 else None)
    check(outs[0] is not None and outs[1] is not None and
          all(np.array_equal(outs[0][k].numpy(), outs[1][k].numpy()) for k in outs[0]),
          "blocks: the recomputing step gives the same weights, bit for bit")


BIG = """
graph big_train(batch = 256)
input  x : f32[batch, 1024]
input  t : f32[batch, 256]
param  w1 : f32[2048, 1024] = randn(std = 0.02, seed = 1)
param  w2 : f32[2048, 2048] = randn(std = 0.02, seed = 2)
param  w3 : f32[256, 2048]  = randn(std = 0.02, seed = 3)
h1 = relu(linear(x, w1))
h2 = relu(linear(h1, w2))
output loss = mean((linear(h2, w3) - t) ** 2)
"""


def max_rss_bytes(cmd):
    """The child's maximum resident set (ru_maxrss of a fresh process)."""
    import resource
    code = ("import resource, subprocess, sys; "
            "r = subprocess.run(sys.argv[1:], capture_output=True); "
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", code] + cmd, capture_output=True, text=True)
    rc, kb = p.stdout.split()
    return int(rc), int(kb) * 1024


def baseline_rss(tgc, tmp):
    """(exit code, maximum RSS) of a tiny training program
    (examples/linear_regression.tg, 2 steps): the executables' own code and
    libraries, which the RSS cases subtract; (1, 0) when it does not
    build."""
    tiny = build(tgc, tmp, "tiny_train", open(os.path.join(ROOT, "examples", "linear_regression.tg")).read(),
                 ["--train", "loss"])
    if not tiny:
        return 1, 0
    xs = os.path.join(ROOT, "examples", "data", "linreg_x.npy")
    ys = os.path.join(ROOT, "examples", "data", "linreg_y.npy")
    return max_rss_bytes([tiny, "--input", "x=" + xs, "--input", "y=" + ys, "--steps", "2",
                          "--threads", "1"])


def case_rss(tgc, tmp):
    """The report's peak against the executable's measured maximum resident
    memory: a 6.3M-parameter MLP trained with AdamW (about 100 MB of
    params, states, gradients and activations). The executable's own code
    and libraries (OpenBLAS, oneDNN) are measured on a tiny training
    program and subtracted; the rest must be within 10% of the report's
    peak (pages of the arena that the plan reserves but a step never
    touches, and allocator rounding, make up the difference)."""
    exe = build(tgc, tmp, "big_train", BIG, ["--train", "loss", "--optimizer", "adamw"])
    if not exe:
        return
    src = os.path.join(tmp, "big_train.tg")
    p = run([tgc, "report", src, "--train", "loss", "--optimizer", "adamw", "--json"])
    if p.returncode:
        check(False, "rss: report")
        return
    peak = json.loads(p.stdout)["peak_bytes"]
    g = np.random.default_rng(0)
    np.save(os.path.join(tmp, "big_x.npy"), g.standard_normal((256, 1024), np.float32))
    np.save(os.path.join(tmp, "big_t.npy"), g.standard_normal((256, 256), np.float32))
    rc, rss = max_rss_bytes([exe, "--input", "x=" + os.path.join(tmp, "big_x.npy"), "--input",
                             "t=" + os.path.join(tmp, "big_t.npy"), "--steps", "2", "--threads", "1"])
    rc0, base = baseline_rss(tgc, tmp)
    got = rss - base
    check(rc == 0 and rc0 == 0 and abs(got - peak) <= 0.10 * peak,
          f"rss: measured {got / 2**20:.1f} MiB (max RSS {rss / 2**20:.1f} - baseline "
          f"{base / 2**20:.1f}) vs report peak {peak / 2**20:.1f} MiB (within 10%)")


DEEP = """
graph deep(batch = 4096)
input x : f32[batch, 256]

def Layer(h):
    param w : f32[256, 256] = randn(std = 0.06, seed = 1)
    return tanh(linear(h, w))

h = repeat(Layer, 12, x, prefix = "l")
output loss = mean(h ** 2)
"""


def case_checkpoint_rss(tgc, tmp):
    """What a checkpointed executable allocates is what the report says:
    twelve tanh layers whose saved activations (4 MiB each) make the
    training peak (59 MiB), built plain and with --checkpoint auto
    --budget 40MiB; each executable's maximum resident memory less a tiny
    training program's (its code and libraries) is within 10% of its
    report's peak (measured: 1.004 and 1.007), and the checkpointed peak
    is under the budget."""
    src = os.path.join(tmp, "deep.tg")
    with open(src, "w") as f:
        f.write(DEEP)
    rc0, base = baseline_rss(tgc, tmp)
    x = os.path.join(tmp, "deep_x.npy")
    np.save(x, np.random.default_rng(0).standard_normal((4096, 256), np.float32))
    budget = 40 * 2**20
    for what, extra in (("plain", []), ("checkpointed", ["--checkpoint", "auto", "--budget", "40MiB"])):
        p = run([tgc, "report", src, "--train", "loss", "--json"] + extra)
        exe = build(tgc, tmp, "deep_" + what, DEEP, ["--train", "loss"] + extra)
        if p.returncode or not exe or rc0:
            check(False, f"checkpoint rss {what}: report, build and baseline")
            continue
        peak = json.loads(p.stdout)["peak_bytes"]
        if extra:
            check(peak <= budget, f"checkpoint rss: the checkpointed peak {peak / 2**20:.2f} MiB "
                  f"fits the 40 MiB budget")
        rc, rss = max_rss_bytes([exe, "--input", "x=" + x, "--steps", "2", "--threads", "1"])
        got = rss - base
        check(rc == 0 and abs(got - peak) <= 0.10 * peak,
              f"checkpoint rss {what}: measured {got / 2**20:.1f} MiB (max RSS {rss / 2**20:.1f} - "
              f"baseline {base / 2**20:.1f}) vs report peak {peak / 2**20:.1f} MiB (within 10%)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-k", default="")
    ap.add_argument("--rtlib", help="libtgcrt.a, for the tgc compile --train case")
    ap.add_argument("--rtinc", help="the runtime's headers (tgcrt.h)")
    ap.add_argument("--cc", default=os.environ.get("CC") or "cc")
    ap.add_argument("--cflags", default="", help="extra flags (sanitizers) for the C test program")
    args = ap.parse_args()
    tgc = os.path.abspath(args.tgc)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="tgc-train-") as tmp:
        for name, fn in [("linear_regression", case_linear_regression),
                         ("mlp_example", case_mlp_example), ("mlp_sgd", case_mlp_sgd),
                         ("lm_adamw", case_lm_adamw), ("convnet", case_convnet),
                         ("mixed", case_mixed),
                         ("compile", lambda t, d: case_compile(t, d, args)),
                         ("errors", case_errors),
                         ("report", case_report), ("segments", case_segments),
                         ("blocks", lambda t, d: case_blocks(t, d, "sanitize" not in args.cflags)),
                         ("rss", lambda t, d: case_rss(t, d) if "sanitize" not in args.cflags
                          else print("skip rss: sanitizers change the resident memory")),
                         ("checkpoint_rss", lambda t, d: case_checkpoint_rss(t, d)
                          if "sanitize" not in args.cflags
                          else print("skip checkpoint_rss: sanitizers change the resident memory"))]:
            if args.k in name:
                fn(tgc, tmp)
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
