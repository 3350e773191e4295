#!/usr/bin/python3
"""Attention's gradient without the [L, S] matrix (issue 28 item 3):
`tgc run --train` gradients of scaled_dot_product_attention's query, key
and value, computed by the attention_backward node (ir/vjp_attention.c,
runtime/attention_bwd.c: FlashAttention-2's backward), against
torch.autograd in float64 on the same values, and `tgc report --train` at
sequence lengths whose [L, S] matrix would not fit in memory.

Reference: PyTorch 1.13 has no F.scaled_dot_product_attention; it is
written by hand in float64: softmax(q @ k^T * scale + mask, -1) @ v (-inf
where a bool mask is False or is_causal hides key j > i); the loss is
sum(out * w) with w a random input, so each gradient is d(loss)/d(operand).

Tolerance, per element |got - ref| <= rtol * |ref| + atol * max|ref|:
  f32:  rtol 1e-4, atol 1e-5: f32 products over up to 300 keys, the
        probabilities recomputed from an f32 log-sum-exp (measured worst
        ~0.1 of the bound);
  mixed-bf16: rtol 3e-2, atol 1e-2: the attention's operands, output and
        output gradient in bf16 (8 bits) under autocast, the kernel in f32
        between (measured worst ~0.7 of the bound, at the float mask).
Sharp: the gradient scaled by 1.01 must fail the f32 bound.

Cases, all in one graph (one build): L != S with two query blocks and two
key blocks and Ev != E (batch 2, 3 heads); is_causal with L = S and with
L < S; a bool mask broadcast over heads; a float mask (an input: no
gradient of its own, so the kernel serves it) with -inf entries; batch
dims broadcast between query, key and value (their gradients summed); an
explicit scale on 3-D operands; 2-D operands; causal attention written
out (softmax(q @ k^T * c).masked_fill(~tril(ones)) @ v, as
examples/llama.tg), which a training build recognises before the gradient. The graph also runs under
--precision mixed-bf16 (attention in bf16, f32 master weights).

CUDA: the same kernels' CUDA form is run on the host by
tests/cuda/run_attention_bwd_emul.py.

Memory: `tgc report --train --json` of one causal head at seq 40960 and
81920, as scaled_dot_product_attention, written out, and with dropout_p
(the mask applied per tile, never an [L, S] tensor): its [L, S] f32 matrix is 25 GiB at 81920 (more than this machine's
memory), the plan's peak must stay under 1% of it and grow at most 2.2x
when the sequence doubles (linear, not quadratic).

A sanitizer build (CMakeLists: --subset asan) runs the f32 gradients only,
so that the kernel runs under ASan/UBSan.

Usage: run_attention_grad.py --tgc build/tgc [--subset full|asan] [-v]; last line
`attention_grad: N passed, M failed`, exit 1 when M > 0.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "diff"))
import tensorio  # noqa: E402

TOL = {"f32": (1e-4, 1e-5), "mixed-bf16": (3e-2, 1e-2)}
TORCH = {"f32": torch.float32, "mixed-bf16": torch.bfloat16}

# name: ({param: shape}, mask (shape, kind) or None, call, causal, scale)
CASES = {
    "plain": ({"q": [2, 3, 67, 32], "k": [2, 3, 131, 32], "v": [2, 3, 131, 24]}, None,
              "scaled_dot_product_attention({q}, {k}, {v})", False, None),
    "causal": ({"q": [2, 2, 131, 16], "k": [2, 2, 131, 16], "v": [2, 2, 131, 16]}, None,
               "scaled_dot_product_attention({q}, {k}, {v}, is_causal=true)", True, None),
    "causal_l_lt_s": ({"q": [1, 2, 67, 16], "k": [1, 2, 300, 16], "v": [1, 2, 300, 8]}, None,
                      "scaled_dot_product_attention({q}, {k}, {v}, is_causal=true)", True, None),
    "bool_mask": ({"q": [2, 2, 67, 16], "k": [2, 2, 131, 16], "v": [2, 2, 131, 16]},
                  ([2, 1, 67, 131], "bool"),
                  "scaled_dot_product_attention({q}, {k}, {v}, attn_mask={m})", False, None),
    "float_mask": ({"q": [2, 2, 67, 16], "k": [2, 2, 131, 16], "v": [2, 2, 131, 16]},
                   ([67, 131], "float"), "scaled_dot_product_attention({q}, {k}, {v}, {m})",
                   False, None),
    "broadcast": ({"q": [2, 4, 33, 16], "k": [1, 4, 70, 16], "v": [4, 70, 16]}, None,
                  "scaled_dot_product_attention({q}, {k}, {v})", False, None),
    "scale": ({"q": [3, 40, 16], "k": [3, 50, 16], "v": [3, 50, 16]}, None,
              "scaled_dot_product_attention({q}, {k}, {v}, scale=0.3)", False, 0.3),
    "two_d": ({"q": [20, 8], "k": [30, 8], "v": [30, 5]}, None,
              "scaled_dot_product_attention({q}, {k}, {v})", False, None),
    # written out, as examples/llama.tg is: recognised before the gradient
    "written_causal": ({"q": [2, 2, 67, 16], "k": [2, 2, 67, 16], "v": [2, 2, 67, 8]}, None,
                       "softmax((({q} @ {k}.transpose(-2, -1)) * 0.25).masked_fill("
                       "~tril(ones([67, 67], dtype = bool)), -inf), dim = -1) @ {v}", True, 0.25),
}


def run(cmd, verbose):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if verbose or p.returncode:
        print("$", " ".join(cmd), "->", p.returncode, p.stderr.strip()[:2000])
    return p


def close(got, ref, rtol, atol):
    scale = max(ref.abs().max().item(), 1e-30)
    bound = rtol * ref.abs() + atol * scale
    worst = ((got - ref).abs() / bound).max().item()
    return worst <= 1.0, worst


def make(gen):
    """Params, inputs (masks and loss weights) and the .tg text."""
    params, inputs, lines, outs = {}, {}, ["graph attn_grad"], []
    for case, (shapes, mask, call, _, _) in CASES.items():
        names = {n: "%s_%s" % (case, n) for n in shapes}
        for n, s in shapes.items():
            params[names[n]] = torch.randn(s, generator=gen)
            lines.append("param %s : f32%s" % (names[n], s))
        if mask:
            shape, kind = mask
            names["m"] = case + "_m"
            if kind == "bool":
                m = torch.rand(shape, generator=gen) < 0.7
                m[..., 0] = True  # no row fully masked (its gradient is NaN everywhere)
                lines.append("input %s : bool%s" % (names["m"], shape))
            else:
                m = torch.randn(shape, generator=gen) * 2
                m[torch.rand(shape, generator=gen) < 0.2] = -math.inf
                m[..., 0] = 0.0
                lines.append("input %s : f32%s" % (names["m"], shape))
            inputs[names["m"]] = m
        y = case + "_y"
        lines.append("%s = %s" % (y, call.format(**names)))
        out_shape = reference(case, params, inputs, dry=True)
        inputs[case + "_w"] = torch.randn(out_shape, generator=gen)
        lines.append("input %s_w : f32%s" % (case, list(out_shape)))
        outs.append("(%s * %s_w).sum()" % (y, case))
    lines.append("output loss = " + " + ".join(outs))
    return params, inputs, "\n".join(lines) + "\n"


def reference(case, params, inputs, dry=False):
    """The case's output in float64 from leaves (params) that require grad."""
    shapes, mask, _, causal, scale = CASES[case]
    q, k, v = (params["%s_%s" % (case, n)] for n in ("q", "k", "v"))
    if dry:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        return list(batch) + [q.shape[-2], v.shape[-1]]
    sc = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * sc
    if causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        s = s.masked_fill(~keep, -math.inf)
    if mask:
        m = inputs[case + "_m"]
        s = s.masked_fill(~m, -math.inf) if m.dtype == torch.bool else s + m.double()
    return torch.softmax(s, -1) @ v


def grad_cases(tgc, tmp, verbose, dt):
    gen = torch.Generator().manual_seed(28)
    params, inputs, text = make(gen)
    tmp = os.path.join(tmp, dt)
    os.makedirs(tmp, exist_ok=True)
    tg = os.path.join(tmp, "grad.tg")
    open(tg, "w").write(text)
    wp = os.path.join(tmp, "w.safetensors")
    open(wp, "wb").write(tensorio.safetensors_image(list(params.items())))
    cmd = [tgc, "run", tg, "--train", "loss", "--optimizer", "none", "--weights", wp,
           "--output-dir", os.path.join(tmp, "out")]
    if dt != "f32":
        cmd += ["--precision", dt]
    for n, x in inputs.items():
        p = os.path.join(tmp, n + ".npy")
        np.save(p, x.numpy())
        cmd += ["--input", "%s=%s" % (n, p)]
    if run(cmd, verbose).returncode:
        return [("%s/run" % dt, False, "tgc run --train failed")]
    # The reference sees the values tgc computes from: rounded to dt.
    leaf = {n: x.to(TORCH[dt]).double().requires_grad_() for n, x in params.items()}
    ins = {n: x.to(TORCH[dt]).double() if x.dtype != torch.bool else x for n, x in inputs.items()}
    loss = sum((reference(c, leaf, ins) * ins[c + "_w"]).sum() for c in CASES)
    loss.backward()
    results = []
    for n, x in leaf.items():
        got = torch.tensor(np.load(os.path.join(tmp, "out", n + ".grad.npy")).astype(np.float64))
        ok, worst = close(got, x.grad, *TOL[dt])
        sharp = dt != "f32" or not close(got, x.grad * 1.01, *TOL[dt])[0]
        why = "worst %.3g of tolerance%s" % (worst, "" if sharp else "; x1.01 passes too")
        results.append(("grad/%s/%s" % (dt, n), ok and sharp, why))
    return results


LONG_TG = """graph attn_long(seq = 4096)
input x : f32[1, seq, 64]
param wq : f32[64, 64]
param wk : f32[64, 64]
param wv : f32[64, 64]
q = (x @ wq).view(1, seq, 1, 64).transpose(1, 2)
k = (x @ wk).view(1, seq, 1, 64).transpose(1, 2)
v = (x @ wv).view(1, seq, 1, 64).transpose(1, 2)
output loss = scaled_dot_product_attention(q, k, v, is_causal=true).sum()
"""
# The same attention written out (passes/attention_fuse.c recognises it
# before the gradient pass in a training build).
LONG_WRITTEN_TG = LONG_TG.replace(
    "scaled_dot_product_attention(q, k, v, is_causal=true)",
    "(softmax(((q @ k.mT) * 0.125).masked_fill(~tril(ones([seq, seq], dtype = bool)), -inf), "
    "dim = -1) @ v)")
# With dropout_p: attention_dropout, the mask redrawn per tile in both
# kernels (tests/train/run_bn_dropout.py checks its values).
LONG_DROPOUT_TG = LONG_TG.replace("is_causal=true)", "dropout_p=0.1, is_causal=true)")


def long_case(tgc, tmp, verbose):
    results = []
    for name, text in (("sdpa", LONG_TG), ("written", LONG_WRITTEN_TG),
                       ("dropout", LONG_DROPOUT_TG)):
        tg = os.path.join(tmp, "long_%s.tg" % name)
        open(tg, "w").write(text)
        peak = {}
        for seq in (40960, 81920):
            p = run([tgc, "report", tg, "--train", "loss", "--json", "-D", "seq=%d" % seq],
                    verbose)
            if p.returncode:
                return [("report/long_%s" % name, False, "tgc report --train failed")]
            peak[seq] = json.loads(p.stdout)["peak_bytes"]
        ls = 81920 * 81920 * 4
        ok = peak[81920] < ls / 100 and peak[81920] <= 2.2 * peak[40960]
        why = "peak %d B at seq 40960, %d B at 81920 ([L, S] f32: %d B)" % (
            peak[40960], peak[81920], ls)
        results.append(("report/train_peak_linear_%s" % name, ok, why))
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--subset", choices=("full", "asan"), default="full")
    a = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for dt in ("f32", "mixed-bf16") if a.subset == "full" else ("f32",):
            results += grad_cases(a.tgc, tmp, a.v, dt)
        if a.subset == "full":
            results += long_case(a.tgc, tmp, a.v)
    failed = [r for r in results if not r[1]]
    for name, ok, why in results:
        if a.v or not ok:
            print("%s %s: %s" % ("ok  " if ok else "FAIL", name, why))
    print("attention_grad: %d passed, %d failed" % (len(results) - len(failed), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
