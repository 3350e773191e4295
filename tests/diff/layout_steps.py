"""The layout pass's plan, seen through the profiler (issue 25): the
depthwise-separable block of diff_layout.py (se_block, f32), built with
and without the pass, run once with --profile.

With the pass (tgc's default), every convolution but the first (which
reads the graph's NCHW input: the one reorder at entry) runs on the real
tensors, not "staged" through copies in another layout, and none runs
oneDNN's im2col kernel (gemm); depthwise ones run jit_dw. With `--layout
nchw` some are staged: the check can tell the two apart.

The kernels that read and write those channels-last maps walk them in
memory order, C innermost (--emit llvm's .ll of the channels-last build):
the max pool's window max is the columns kernel (k_reduce_cols.c: its
"cloop" blocks) and it and every cat (the max pool's padding, the
explicit pad) are vectorised (`x float>` operations). In the logical
order each step of W jumps C elements: ResNet-50's max pool and its two
padding cats took 34 of 255 ms at batch 1, scalar (issue 25).

usage: layout_steps.py --tgc TGC
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import diff_layout  # noqa: E402
import tensorio  # noqa: E402


def weights(src):
    g = torch.Generator().manual_seed(0)
    out = []
    for line in src.splitlines():
        m = re.match(r"param (\w+) : f32\[([\d, ]+)\]", line.strip())
        if not m:
            continue
        shape = [int(s) for s in m.group(2).split(",")]
        t = torch.randn(shape, generator=g) * 0.3
        if m.group(1).startswith("v"):
            t = t.abs() + 0.5
        out.append((m.group(1), t))
    return out


def conv_rows(tgc, d, src, layout, emit=None):
    tg = os.path.join(d, "g.tg")
    if not os.path.exists(tg):
        with open(tg, "w") as f:
            f.write(src)
        tensorio.write_safetensors(os.path.join(d, "w.safetensors"), weights(src))
    exe = os.path.join(d, "g_" + layout)
    subprocess.run([tgc, "build", tg, "-o", exe, "--layout", layout] +
                   (["--emit", "llvm", emit] if emit else []), check=True)
    r = subprocess.run([exe, "--weights", os.path.join(d, "w.safetensors"), "--random-inputs",
                        "0", "--output-dir", d, "--profile", "--threads", "2"],
                       capture_output=True, text=True, check=True)
    return [ln for ln in r.stdout.splitlines() if "rt_conv" in ln]


def kernel_bodies(ll_dir):
    """{kernel name: its .ll text} of the generated kernels (kN_op)."""
    out = {}
    for name in os.listdir(ll_dir):
        if name.endswith(".ll"):
            with open(os.path.join(ll_dir, name)) as f:
                for fn in f.read().split("\ndefine ")[1:]:
                    m = re.search(r"@(k\d+_\w+)\(", fn.split("\n")[0])
                    if m:
                        out[m.group(1)] = fn
    return out


def memory_order_fails(kernels):
    fails = []
    pools = [k for k in kernels if k.endswith("_max_pool2d")]
    cats = [k for k in kernels if k.endswith("_cat")]
    if len(pools) != 1 or len(cats) < 2:
        return ["expected one max_pool2d kernel and cats, got %s" % sorted(kernels)]
    if not re.search(r"^cloop", kernels[pools[0]], re.M):
        fails.append("%s is not the columns kernel (k_reduce_cols.c): it walks the "
                     "channels-last windows with W innermost" % pools[0])
    scalar = [k for k in pools + cats if "x float>" not in kernels[k]]
    if scalar:
        fails.append("not vectorised over C (channels-last walked in the logical order): " +
                     ", ".join(scalar))
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    args = ap.parse_args()
    src = "graph se_block\n" + diff_layout.SE_BLOCK.replace("{outputs}", diff_layout.HEAD).replace(
        "{dt}", "f32")
    fails = []
    with tempfile.TemporaryDirectory() as d:
        ll_dir = os.path.join(d, "ll")
        cl = conv_rows(args.tgc, d, src, "channels-last", ll_dir)
        nchw = conv_rows(args.tgc, d, src, "nchw")
        kernels = kernel_bodies(ll_dir)
    fails += memory_order_fails(kernels)
    if len(cl) != 6 or len(nchw) != 6:
        fails.append("expected 6 convolution steps, got %d and %d" % (len(cl), len(nchw)))
    staged = [r for r in cl if "staged" in r]
    # The entry: the one conv reading the graph's input x (f32[2, 8, 12, 11]).
    if len(staged) != 1 or "<- f32[2, 8, 12, 11]" not in staged[0]:
        fails.append("channels-last: only the first convolution may be staged:\n  " +
                     "\n  ".join(staged))
    gemm = [r for r in cl if "gemm" in r]
    if gemm:
        fails.append("channels-last: im2col (gemm) convolutions:\n  " + "\n  ".join(gemm))
    dw = [r for r in cl if "groups" in r or "f32[16, 1, 3, 3]" in r]
    if len(dw) != 2 or not all("jit_dw" in r for r in dw):
        fails.append("channels-last: the depthwise convolutions are not jit_dw:\n  " +
                     "\n  ".join(dw))
    if not any("staged" in r for r in nchw):
        fails.append("--layout nchw: no convolution staged (the check cannot tell the layouts "
                     "apart)")
    for f in fails:
        print("FAIL " + f)
    if not fails:
        print("ok: %d convolutions, 1 staged at entry with the pass, %d without; the max pool "
              "and the cats walk C innermost" % (len(cl), sum("staged" in r for r in nchw)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
