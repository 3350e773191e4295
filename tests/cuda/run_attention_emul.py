#!/usr/bin/python3
"""The CUDA flash-attention kernel's values without a GPU: for each case
below, `tgc build --target cuda --emit cuda` writes the module's CUDA C;
the scaled_dot_product_attention kernel (codegen/cuda/cu_attention.c) is
cut out of it, compiled as C++20 for the host after attn_host.h (which
emulates threads, __syncthreads, shuffles and the f16/bf16 conversions:
256 host threads per block, blocks in turn), run on the case's inputs and
compared with PyTorch's math path in f64 on the same rounded inputs
(rounded once to the dtype). This checks the kernel's indexing, tiling,
masking, online softmax and rounding; not its speed, nor the GPU's own
exp/FMA (tests/gpu runs the diff corpus's attention cases on a GPU).

Each case's graph has only inputs and the attention's output, so the
kernel reads and writes the interface buffers: bufs[1..n] the inputs in
declaration order, bufs[n+1] the output (a kernel that reads the arena,
bufs[0], fails the case: views must be read in place).

Usage: run_attention_emul.py --tgc build/tgc [--cxx g++] [-k SUBSTRING] [--keep DIR]
Last line: `cuda_attention_emul: N passed, M failed`; exit 1 if M > 0, 77
(skipped) when tgc has no CUDA support or no C++20 compiler is found.
"""

import math
import os
import re
import subprocess
import sys

import torch

from emul_harness import compile_kernel, kernel_source, main, raw, run_kernel

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TOL = {"f32": (1e-4, 1e-5), "f16": (2e-2, 2e-3), "bf16": (1.6e-1, 2e-2)}

# name: (dtype, {tensor: (shape, kind)}, call, reference(t) -> (q, k, v, mask, causal, scale))
# kinds: x normal values, bool a mask (row 3 all False: NaN), float a mask with -inf entries
CASES = {
    "plain_f32_e64": ("f32", {"q": ([2, 3, 67, 64], "x"), "k": ([2, 3, 131, 64], "x"),
                              "v": ([2, 3, 131, 48], "x")},
                      "scaled_dot_product_attention(q, k, v)", {}),
    "causal_f16_e128": ("f16", {"q": ([1, 2, 70, 128], "x"), "k": ([1, 2, 70, 128], "x"),
                                "v": ([1, 2, 70, 128], "x")},
                        "scaled_dot_product_attention(q, k, v, is_causal=true)", {"causal": True}),
    "causal_l_gt_s_f32": ("f32", {"q": ([2, 90, 16], "x"), "k": ([2, 37, 16], "x"),
                                  "v": ([2, 37, 24], "x")},
                          "scaled_dot_product_attention(q, k, v, is_causal=true)", {"causal": True}),
    "bool_mask_bf16": ("bf16", {"q": ([2, 2, 67, 64], "x"), "k": ([2, 2, 131, 64], "x"),
                                "v": ([2, 2, 131, 64], "x"), "m": ([2, 1, 67, 131], "bool")},
                       "scaled_dot_product_attention(q, k, v, m)", {"mask": "m"}),
    "float_mask_f16": ("f16", {"q": ([2, 2, 67, 32], "x"), "k": ([2, 2, 131, 32], "x"),
                               "v": ([2, 2, 131, 32], "x"), "m": ([67, 131], "float")},
                       "scaled_dot_product_attention(q, k, v, attn_mask=m)", {"mask": "m"}),
    "broadcast_f32": ("f32", {"q": ([2, 4, 33, 16], "x"), "k": ([4, 70, 16], "x"),
                              "v": ([70, 20], "x")},
                      "scaled_dot_product_attention(q, k, v, scale=0.3)", {"scale": 0.3}),
    "strided_f32": ("f32", {"qt": ([2, 67, 3, 32], "x"), "kt": ([2, 3, 32, 131], "x"),
                            "v": ([2, 3, 131, 32], "x")},
                    "scaled_dot_product_attention(qt.transpose(1, 2), kt.mT, v)",
                    {"q": lambda t: t["qt"].transpose(1, 2), "k": lambda t: t["kt"].mT}),
    "e256_bf16": ("bf16", {"q": ([1, 1, 40, 256], "x"), "k": ([1, 1, 45, 256], "x"),
                           "v": ([1, 1, 45, 256], "x")},
                  "scaled_dot_product_attention(q, k, v, is_causal=true)", {"causal": True}),
    "two_d_f32": ("f32", {"q": ([20, 8], "x"), "k": ([30, 8], "x"), "v": ([30, 5], "x")},
                  "scaled_dot_product_attention(q, k, v)", {}),
    # Attention written out, recognised on --target cuda (passes/attention_fuse.c): the
    # module must then hold the sdpa kernel, reading q, k, v (and m) in place.
    "pattern_scale_f32": ("f32", {"q": ([2, 3, 67, 64], "x"), "k": ([2, 3, 131, 64], "x"),
                                  "v": ([2, 3, 131, 48], "x")},
                          "softmax(q @ k.transpose(-2, -1) * 0.125, dim = -1) @ v",
                          {"scale": 0.125}),
    "pattern_causal_tril_f16": ("f16", {"q": ([1, 2, 70, 32], "x"), "k": ([1, 2, 70, 32], "x"),
                                        "v": ([1, 2, 70, 32], "x")},
                                "softmax((q @ k.mT * 0.25).masked_fill("
                                "~tril(ones([70, 70], dtype = bool)), -inf), dim = -1) @ v",
                                {"causal": True, "scale": 0.25}),
    "pattern_bool_mask_bf16": ("bf16", {"q": ([2, 2, 67, 64], "x"), "k": ([2, 2, 131, 64], "x"),
                                        "v": ([2, 2, 131, 64], "x"),
                                        "m": ([2, 1, 67, 131], "bool")},
                               "softmax((q @ k.mT * 0.125).masked_fill(~m, -inf), dim = -1) @ v",
                               {"mask": "m", "scale": 0.125}),
}


def make_inputs(spec, dt, gen):
    out = {}
    for name, (shape, kind) in spec.items():
        if kind == "bool":
            m = torch.rand(shape, generator=gen) < 0.7
            m[..., 3, :] = False
            out[name] = m
            continue
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        if kind == "float":
            x[torch.rand(shape, generator=gen) < 0.2] = -math.inf
        out[name] = x.to(TORCH[dt])
    return out


def reference(t, ref):
    """PyTorch's math path in f64 (rounded inputs kept)."""
    q = ref["q"](t) if "q" in ref else t["q"]
    k = ref["k"](t) if "k" in ref else t["k"]
    v = t["v"]
    q, k, v = q.double(), k.double(), v.double()
    s = q @ k.transpose(-2, -1) * ref.get("scale", 1 / math.sqrt(q.shape[-1]))
    if ref.get("causal"):
        s = s.masked_fill(~torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril(),
                          -math.inf)
    if "mask" in ref:
        m = t[ref["mask"]]
        s = s.masked_fill(~m, -math.inf) if m.dtype == torch.bool else s + m.double()
    return torch.softmax(s, -1) @ v


def run_case(name, case, args, work):
    dt, spec, call, ref = case
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    decl = "".join("input %s : %s[%s]\n" % (n, "bool" if k == "bool" else dt,
                                            ", ".join(map(str, s)))
                   for n, (s, k) in spec.items())
    tg = os.path.join(d, "g.tg")
    with open(tg, "w") as f:
        f.write("graph g\n%soutput y = %s\n" % (decl, call))
    emit = os.path.join(d, "emit")
    p = subprocess.run([args.tgc, "build", tg, "-o", os.path.join(d, "g.exe"), "--target", "cuda",
                        "--emit", "cuda", emit], capture_output=True, text=True)
    if p.returncode != 0:
        return ["tgc build --target cuda: %s" % p.stderr.strip()]
    with open(os.path.join(emit, "g.cu")) as f:
        kname, ksrc = kernel_source(f.read(), "sdpa")
    if not kname:
        return ["no k*_sdpa kernel in the module"]
    if "bufs[0]" in ksrc:
        return ["the kernel reads the arena (an operand was copied, not read in place)"]
    br = int(re.search(r"BR = (\d+)", ksrc).group(1))
    q = spec["q"][0] if "q" in spec else None
    gen = torch.Generator().manual_seed(1234)
    t = make_inputs(spec, dt, gen)
    want = reference(t, ref)
    shape = list(want.shape)
    l = shape[-2]
    nb = math.prod(shape[:-2])
    grid = nb * ((l + br - 1) // br)
    del q
    exe, err = compile_kernel(args, d, kname, ksrc)
    if err:
        return [err]
    files = {}  # slot 0, the arena, gets no buffer: the kernel must not read it
    for slot, n in enumerate(spec, 1):
        files[slot] = os.path.join(d, n + ".bin")
        with open(files[slot], "wb") as f:
            f.write(raw(t[n]))
    out = os.path.join(d, "y.bin")
    with open(out, "wb") as f:
        f.write(b"\0" * (math.prod(shape) * torch.tensor([], dtype=TORCH[dt]).element_size()))
    files[len(files) + 1] = out
    err = run_kernel(exe, grid, len(files), files)
    if err:
        return [err]
    with open(out, "rb") as f:
        data = bytearray(f.read())
    if dt == "f32":
        got = torch.frombuffer(data, dtype=torch.float32)
    else:
        got = torch.frombuffer(data, dtype=torch.int16).view(TORCH[dt])
    got = got.reshape(shape).double()
    ref_r = want.to(TORCH[dt]).double()
    rtol, atol = TOL[dt]
    nan_ok = torch.equal(torch.isnan(got), torch.isnan(ref_r))
    fin = ~torch.isnan(ref_r)
    err = (got[fin] - ref_r[fin]).abs() - (rtol * ref_r[fin].abs() + atol)
    msgs = []
    if not nan_ok:
        msgs.append("NaN placement differs: got %d NaNs, expected %d" % (
            int(torch.isnan(got).sum()), int(torch.isnan(ref_r).sum())))
    if err.numel() and float(err.max()) > 0:
        i = int(err.argmax())
        msgs.append("%d elements differ; worst: got %r, expected %r" % (
            int((err > 0).sum()), float(got[fin][i]), float(ref_r[fin][i])))
    return msgs


if __name__ == "__main__":
    sys.exit(main("cuda_attention_emul", __doc__, CASES, run_case, "tgc_attn_emul_"))
