#!/usr/bin/python3
"""Builds the training trajectories for a GPU machine (README.md here,
"Training").

The cases of tests/train/run_train.py that run a compiled training step
against torch.optim, built with `tgc build --target cuda --train ...`:
linear regression (SGD, 500 steps), the MLP (SGD with momentum, weight
decay and a frozen param, over a data set of 3 batches), the small causal
language model (AdamW; 10 + 10 steps through --save-state/--load-state
must equal 20 steps bit for bit) and the MLP under --precision mixed-bf16;
and inference of a quantized MLP (--quantize int8/int4, both CUDA forms of
the quantized product: see quantized()).
The references are computed here, with PyTorch 1.13 on the CPU, exactly
as run_train.py computes them, and shipped as safetensors: the GPU side
needs only numpy (train_check.py). Tolerances are run_train.py's, widened
where the GPU's summation order differs (stated in each case).

Writes DATA_DIR/train-cases.tar.xz; run it there with
`bash tests/gpu/train_on_gpu.sh DATA_DIR`. `--target cpu` builds CPU
executables instead: train_on_gpu.sh then checks the harness here.

Usage: train_prepare.py --tgc BUILD/tgc --out DATA_DIR [--archs sm_90] [--target cuda|cpu]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "train"))
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))
sys.path.insert(0, HERE)

import prepare  # noqa: E402  (copy_libs)
import run_train as rt  # noqa: E402  (the cases' graphs, data and references)
import tensorio  # noqa: E402

BUNDLE = "train-cases"


class Stage:
    def __init__(self, root, tgc, target, archs):
        self.root, self.tgc, self.target, self.archs = root, tgc, target, archs
        self.cases = []

    def build(self, name, text, flags):
        src = os.path.join(self.root, name + ".tg")
        with open(src, "w") as f:
            f.write(text)
        exe = name + ".exe"
        cmd = [self.tgc, "build", src, "-o", os.path.join(self.root, exe), "--target",
               self.target] + flags
        if self.target == "cuda":
            cmd += ["--gpu-arch", self.archs]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit("train_prepare: %s failed:\n%s" % (" ".join(cmd), p.stderr))
        os.remove(src)
        return exe

    def npy(self, name, array):
        np.save(os.path.join(self.root, name), np.asarray(array))
        return name

    def weights(self, name, params):
        tensorio.write_safetensors(os.path.join(self.root, name),
                                   [(k, v.detach().contiguous()) for k, v in params.items()])
        return name

    def case(self, name, runs, compare, equal=()):
        """runs: argument lists (the executable first), in order; compare:
        (file, expected file, rtol, atol, why); equal: (file, file) pairs."""
        self.cases.append({"name": name, "runs": runs,
                           "compare": [dict(zip(("file", "expected", "rtol", "atol", "why"), c))
                                       for c in compare],
                           "equal": [list(e) for e in equal]})


def linreg(st):
    exe = st.build("linreg", open(os.path.join(ROOT, "examples", "linear_regression.tg")).read(),
                   ["--train", "loss", "--optimizer", "sgd", "--lr", "0.001"])
    x = np.load(os.path.join(ROOT, "examples", "data", "linreg_x.npy"))
    y = np.load(os.path.join(ROOT, "examples", "data", "linreg_y.npy"))
    xs, ys = st.npy("linreg_x.npy", x), st.npy("linreg_y.npy", y)
    w = torch.zeros(1, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w, b], lr=0.001)
    xt, yt = torch.tensor(x), torch.tensor(y)
    for _ in range(500):
        opt.zero_grad()
        ((xt @ w + b - yt) ** 2).sum().backward()
        opt.step()
    ref = st.weights("linreg_ref.safetensors", {"w": w, "b": b})
    st.case("linreg", [[exe, "--input", "x=" + xs, "--input", "y=" + ys, "--steps", "500",
                        "--save-weights", "linreg_out.safetensors"]],
            [("linreg_out.safetensors", ref, 1e-5, 1e-6,
              "500 f32 steps of a well-conditioned problem (run_train.py's tolerance)")])


def mlp_sgd(st):
    exe = st.build("mlp_sgd", rt.MLP, ["--train", "loss", "--optimizer", "sgd", "--lr", "0.05",
                                       "--momentum", "0.9", "--weight-decay", "1e-3",
                                       "--freeze", "b1"])
    x, onehot = rt.mlp_data(1, 3, 16)
    params = rt.mlp_params(2)
    w = st.weights("mlp_init.safetensors", params)
    xs, os_ = st.npy("mlp_x.npy", x.numpy()), st.npy("mlp_o.npy", onehot.numpy())
    want = rt.torch_mlp(params, x, onehot, 30, 16, {"b1"},
                        lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3))
    ref = st.weights("mlp_ref.safetensors", want)
    st.case("mlp_sgd", [[exe, "--weights", w, "--input", "x=" + xs, "--input", "onehot=" + os_,
                         "--steps", "30", "--save-weights", "mlp_out.safetensors"]],
            [("mlp_out.safetensors", ref, 1e-5, 1e-6,
              "30 f32 steps; products summed in another order (run_train.py's tolerance)")])


def lm_adamw(st):
    exe = st.build("lm_adamw", rt.LM, rt.LM_FLAGS)
    params, tokens, target = rt.lm_data()
    w = st.weights("lm_init.safetensors", params)
    ins = ["--input", "tokens=" + st.npy("lm_tok.npy", tokens.numpy()),
           "--input", "target=" + st.npy("lm_tgt.npy", target.numpy())]
    pt = rt.torch_lm(params, tokens, target, 20)
    ref = st.weights("lm_ref.safetensors", pt)
    st.case("lm_adamw",
            [[exe, "--weights", w] + ins + ["--steps", "20", "--save-weights", "lm_out.safetensors"],
             [exe, "--weights", w] + ins + ["--steps", "10", "--save-weights", "lm_mid.safetensors",
                                            "--save-state", "lm_mid_state.safetensors"],
             [exe, "--weights", "lm_mid.safetensors", "--load-state", "lm_mid_state.safetensors"] +
             ins + ["--steps", "10", "--save-weights", "lm_fin.safetensors"]],
            [("lm_out.safetensors", ref, 1e-4, 1e-6,
              "AdamW moves a tiny-gradient element by ~lr either way (run_train.py's tolerance)")],
            [("lm_out.safetensors", "lm_fin.safetensors")])


def mixed_bf16(st):
    exe = st.build("mix_bf16", rt.MLP, ["--train", "loss", "--lr", "0.1", "--precision",
                                        "mixed-bf16"])
    x, onehot = rt.mlp_data(4, 1, 16)
    params = rt.mlp_params(5)
    w = st.weights("mix_init.safetensors", params)
    ins = ["--input", "x=" + st.npy("mix_x.npy", x.numpy()),
           "--input", "onehot=" + st.npy("mix_o.npy", onehot.numpy())]
    p = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    opt = torch.optim.SGD(list(p.values()), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = torch.relu(torch.nn.functional.linear(x, p["w1"], p["b1"]))
            logits = torch.nn.functional.linear(h, p["w2"], p["b2"])
        (-(torch.log_softmax(logits.float(), dim=1) * onehot).sum(dim=1).mean()).backward()
        opt.step()
    ref = st.weights("mix_ref.safetensors", p)
    st.case("mixed_bf16", [[exe, "--weights", w] + ins + ["--steps", "5", "--save-weights",
                                                         "mix_out.safetensors"]],
            [("mix_out.safetensors", ref, 2e-3, 1e-4,
              "bf16 products against CPU autocast: 8 bits, rounding at other places "
              "(run_train.py's tolerance)")])


QMLP = """graph qmlp
input x : f32[{b}, 256]
param w1 : f32[192, 256]
param b1 : f32[192]
param w2 : f32[10, 192]
param b2 : f32[10]
output y = linear(relu(linear(x, w1, b1)), w2, b2)
"""


def quantized(st):
    """Inference with --quantize (codegen/cuda/cu_qmatmul.c): batch 1 and 4
    read the int8/int4 weights in place (k*_qmm), batch 64 dequantizes them
    for cuBLAS (k*_qdeq + a product step). The reference is the MLP in f64
    with the weights dequantized as tgc's driver does (run_precision.py's
    quantize, which the precision suite checks against the driver)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "precision"))
    import run_precision as rp  # noqa: E402
    gen = torch.Generator().manual_seed(11)
    params = {"w1": torch.randn(192, 256, generator=gen) * 0.06,
              "b1": torch.randn(192, generator=gen) * 0.1,
              "w2": torch.randn(10, 192, generator=gen) * 0.07,
              "b2": torch.randn(10, generator=gen) * 0.1}
    w = st.weights("q_weights.safetensors", params)
    # (name, batch, bits, group, flags, rtol, why)
    for name, b, bits, group, extra, rtol, why in (
            ("q_int8_b1", 1, 8, 0, [], 1e-5,
             "f32 sums of 256 terms in another order (the CPU's qmatmul tolerance)"),
            ("q_int4_g32_b4", 4, 4, 32, [], 1e-5,
             "f32 sums of 256 terms in another order (the CPU's qmatmul tolerance)"),
            ("q_int8_b64", 64, 8, 0, [], 1e-5,
             "cuBLAS sgemm on the dequantized f32 weight (TF32 off): f32 sums in its order"),
            ("q_int8_bf16_b64", 64, 8, 0, ["--precision", "bf16"], 3e-2,
             "bf16 activations and a bf16 dequantized weight: a few bf16 roundings (2^-8) of "
             "the hidden layer and the output, against the f64 reference rounded once")):
        flags = ["--quantize", "int%d" % bits, "--weights", os.path.join(st.root, w)] + extra
        if group:
            flags += ["--group-size", str(group)]
        exe = st.build(name, QMLP.format(b=b), flags)
        x = torch.randn(b, 256, generator=gen)
        xs = name + "_x.npy"
        tensorio.write_npy(os.path.join(st.root, xs), x)
        deq = {k: rp.quantize(params[k], bits, group)[2].double() for k in ("w1", "w2")}
        h = torch.relu(x.double() @ deq["w1"].T + params["b1"].double())
        y = h @ deq["w2"].T + params["b2"].double()
        ref = st.weights(name + "_ref.safetensors", {"y": y.float()})
        st.case(name, [[exe, "--input", "x=" + xs, "--output-dir", name + "_out"]],
                [(name + "_out/y.npy", ref, rtol, 1e-6, why)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--archs", default="sm_80,sm_90")
    ap.add_argument("--target", choices=["cuda", "cpu"], default="cuda")
    args = ap.parse_args()
    torch.set_num_threads(1)
    top = tempfile.mkdtemp(prefix="tgc-train-stage-")
    try:
        stage = os.path.join(top, BUNDLE)
        os.makedirs(stage)
        st = Stage(stage, os.path.abspath(args.tgc), args.target, args.archs)
        for fn in (linreg, mlp_sgd, lm_adamw, mixed_bf16, quantized):
            fn(st)
        exes = sorted(os.path.join(stage, f) for f in os.listdir(stage) if f.endswith(".exe"))
        libs = prepare.copy_libs(exes[:1], os.path.join(stage, "lib"))
        for e in exes:
            subprocess.run(["strip", "--strip-unneeded", e])
        for f in ("tests/gpu/train_check.py", "tests/diff/tensorio.py"):
            shutil.copy2(os.path.join(ROOT, f), os.path.join(stage, os.path.basename(f)))
        with open(os.path.join(stage, "manifest.json"), "w") as f:
            json.dump({"target": args.target, "archs": args.archs, "cases": st.cases,
                       "libs": libs}, f, indent=1)
        os.makedirs(args.out, exist_ok=True)
        tarball = os.path.join(args.out, BUNDLE + ".tar.xz")
        subprocess.run(["tar", "--sort=name", "--owner=0", "--group=0", "-cJf", tarball, "-C",
                        top, BUNDLE], check=True)
        print("train_prepare: %d cases, --target %s; %s: %.1f MiB" % (
            len(st.cases), args.target, tarball, os.path.getsize(tarball) / 2 ** 20))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
