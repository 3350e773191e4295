#!/usr/bin/python3
"""The CUDA quantized products' values without a GPU (codegen/cuda/cu_qmatmul.c).

For each case below, `tgc build --target cuda --quantize ... --emit cuda`
writes the module's CUDA C. Its k*_qmm kernel (few rows: reads int8/int4
weights in place) or k*_qdeq kernel (more rows: dequantizes the weight
into the arena's scratch for cuBLAS) is cut out of it, compiled as C++20
for the host after attn_host.h (which emulates 256 threads per block,
__syncthreads, shuffles and the f16/bf16 conversions), and run:

- k*_qmm on the case's x, a random q (int8 in [-127, 127], or int4 in
  [-8, 7] packed two per byte, low nibble first) and random f32 scales,
  with y holding linear's bias when there is one (the broadcast kernel
  before it is the elementwise code the diff corpus covers). The result is
  compared with PyTorch in f64 on the same x, q and scales: w = q * scale
  in f32 (as the kernel and the CPU's rt_qmatmul), y = x @ w^T (+ bias).
  Tolerance: |got - ref| <= u_out * |ref| + 1e-5 * (|x| @ |w|^T), where
  u_out is the output dtype's unit roundoff (f32 2^-24, f16 2^-11, bf16
  2^-8: one rounding of the result) and 1e-5 * sum |x w| covers f32
  accumulation in another order over at most a few thousand terms (its
  bound, k * 2^-24 ~ 7e-5 at k = 1100, is never reached by random signs;
  a wrong term is off by |x w|, far above it).
- k*_qdeq: the scratch must hold q * scale rounded once to x's dtype,
  bit for bit (the matrix product after it is cuBLAS's, run by tests/gpu).
  `tgc report --target cuda --json` must count that scratch in the arena.

The weights file given to tgc only lets the build quantize; the kernel is
fed this script's q and scales (the driver's quantization is checked by
the precision suite). Which regime a case takes follows from its rows
(codegen/kernel_desc.h's CG_CUDA_QMM_DIRECT_ROWS = 16); each case states
the one it expects, and a module without that kernel fails the case.

Usage: run_qmatmul_emul.py --tgc build/tgc [--cxx g++] [-k SUBSTRING] [--keep DIR]
Last line: `cuda_qmatmul_emul: N passed, M failed`; exit 1 if M > 0, 77
(skipped) when tgc has no CUDA support or no C++20 compiler is found.
"""

import json
import os
import re
import struct
import subprocess
import sys

import torch

from emul_harness import compile_kernel, kernel_source, main, raw, run_kernel

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
UNIT_ROUNDOFF = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}

# name: (dtype, kernel, {input: shape}, {param: shape}, output expression, flags,
#        x(t) -> the product's x [..., k], (n, k), bias param or None)
CASES = {
    # 6 rows (one block of rows), per-group scales, 4-byte loads (k % 4 == 0)
    "int8_f32_bias_g32": ("f32", "qmm", {"x": [2, 3, 200]}, {"w": [40, 200], "b": [40]},
                          "linear(x, w, b)", ["--quantize", "int8", "--group-size", "32"],
                          lambda t: t["x"], (40, 200), "b"),
    # int4, odd k: bytes per row not a multiple of 4 (byte loads), a short
    # last group, a scale per weight (group 6 does not hold whole units of 8)
    "int4_f32_odd_k_g6": ("f32", "qmm", {"x": [5, 203]}, {"w": [33, 203]},
                          "linear(x, w)", ["--quantize", "int4", "--group-size", "6"],
                          lambda t: t["x"], (33, 203), None),
    # bf16, 16 rows (two blocks of 8), k over two tiles of 512, per channel
    "int8_bf16_16rows_k1100": ("bf16", "qmm", {"x": [16, 1100]}, {"w": [1100, 24]},
                               "x @ w", ["--quantize", "int8"],
                               lambda t: t["x"], (24, 1100), None),
    # f16, int4 group 32, x a transposed view: rows that do not fold (batch dims)
    "int4_f16_strided_x": ("f16", "qmm", {"xt": [3, 4, 64]}, {"w": [20, 64], "b": [20]},
                           "linear(xt.transpose(0, 1), w, b)", ["--quantize", "int4",
                                                                  "--group-size", "32"],
                           lambda t: t["xt"].transpose(0, 1), (20, 64), "b"),
    # one row (decoding), int8, k % 4 != 0 (byte loads), bias in bf16
    "int8_bf16_gemv_k30": ("bf16", "qmm", {"x": [1, 30]}, {"w": [7, 30], "b": [7]},
                           "linear(x, w, b)", ["--quantize", "int8"],
                           lambda t: t["x"], (7, 30), "b"),
    # more rows: dequantized into the scratch for cuBLAS
    "deq_int8_bf16_g32": ("bf16", "qdeq", {"x": [40, 96]}, {"w": [48, 96]},
                          "linear(x, w)", ["--quantize", "int8", "--group-size", "32"],
                          lambda t: t["x"], (48, 96), None),
    "deq_int4_f32_odd_k": ("f32", "qdeq", {"x": [2, 20, 75]}, {"w": [75, 30]},
                           "x @ w", ["--quantize", "int4", "--group-size", "16"],
                           lambda t: t["x"], (30, 75), None),
    "deq_int4_f16_per_channel": ("f16", "qdeq", {"x": [17, 64]}, {"w": [9, 64]},
                                 "linear(x, w)", ["--quantize", "int4", "--group-size", "64"],
                                 lambda t: t["x"], (9, 64), None),
}


def save_safetensors(path, tensors):
    hdr, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        hdr[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def from_raw(data, dt, shape):
    data = bytearray(data)
    if dt == "f32":
        return torch.frombuffer(data, dtype=torch.float32).reshape(shape)
    return torch.frombuffer(data, dtype=torch.int16).view(TORCH[dt]).reshape(shape)


def make_q(gen, n, k, bits, group):
    """Random q [n][k] (int values), its stored bytes and f32 scales [n][groups]."""
    lo, hi = (-127, 127) if bits == 8 else (-8, 7)
    q = torch.randint(lo, hi + 1, (n, k), generator=gen, dtype=torch.int64)
    if bits == 8:
        stored = q.to(torch.int8).numpy().tobytes()
    else:
        u = (q & 15).to(torch.uint8)
        if k % 2:
            u = torch.cat([u, torch.zeros(n, 1, dtype=torch.uint8)], 1)
        stored = (u[:, 0::2] | (u[:, 1::2] << 4)).numpy().tobytes()
    ng = (k + group - 1) // group
    scales = (torch.rand(n, ng, generator=gen) * 0.02 + 0.001).to(torch.float32)
    return q, stored, scales


def slot_of(ksrc, var):
    m = re.search(r"\*%s = \(.*?bufs\[(\d+)\]\) \+ (\d+)\)" % var, ksrc)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def run_case(name, case, args, work):
    dt, kind, inputs, params, expr, flags, xof, (n, k), bias = case
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    gen = torch.Generator().manual_seed(4321)
    decl = "".join("input %s : %s[%s]\n" % (i, dt, ", ".join(map(str, s)))
                   for i, s in inputs.items())
    decl += "".join("param %s : %s[%s]\n" % (p, dt, ", ".join(map(str, s)))
                    for p, s in params.items())
    tg = os.path.join(d, "g.tg")
    with open(tg, "w") as f:
        f.write("graph g\n%soutput y = %s\n" % (decl, expr))
    weights = {p: torch.randn(s, generator=gen) for p, s in params.items()}
    wpath = os.path.join(d, "w.safetensors")
    save_safetensors(wpath, weights)
    emit = os.path.join(d, "emit")
    p = subprocess.run([args.tgc, "build", tg, "-o", os.path.join(d, "g.exe"), "--target", "cuda",
                        "--weights", wpath, "--emit", "cuda", emit] + flags,
                       capture_output=True, text=True)
    if p.returncode != 0:
        return ["tgc build --target cuda: %s" % p.stderr.strip()]
    with open(os.path.join(emit, "g.cu")) as f:
        cu_text = f.read()
    kname, ksrc = kernel_source(cu_text, kind)
    if not kname:
        return ["no k*_%s kernel in the module" % kind]
    other = "qdeq" if kind == "qmm" else "qmm"
    if kernel_source(cu_text, other)[0]:
        return ["the module also has a k*_%s kernel" % other]
    consts = dict((a, int(b)) for a, b in re.findall(r"\b([A-Z_]+) = (-?\d+)", ksrc))
    bits = 8 if "int8" in flags else 4
    group = consts["GROUP"]
    q, stored, scales = make_q(gen, n, k, bits, group)
    w32 = (q.to(torch.float32) * scales.repeat_interleave(group, 1)[:, :k])  # f32 products
    t = {i: torch.randn(s, generator=gen, dtype=torch.float64).to(TORCH[dt])
         for i, s in inputs.items()}
    x = xof(t)
    files = {}

    def put(slot, name, data):
        path = os.path.join(d, name + ".bin")
        with open(path, "wb") as f:
            f.write(data)
        files[slot] = path

    qs, qo = slot_of(ksrc, "qp")
    ss, so = slot_of(ksrc, "sp")
    if qs is None or ss is None or qo or so:
        return ["cannot find q and scales (bufs[i] + 0) in the kernel"]
    put(qs, "q", stored)
    put(ss, "scales", raw(scales))
    if kind == "qdeq":
        arena = consts["OUT_OFFSET"] + n * k * torch.tensor([], dtype=TORCH[dt]).element_size()
        put(0, "arena", b"\0" * arena)
        exe, err = compile_kernel(args, d, kname, ksrc)
        if err:
            return [err]
        err = run_kernel(exe, consts["GRID"], 0, files)
        if err:
            return [err]
        with open(files[0], "rb") as f:
            got = from_raw(f.read()[consts["OUT_OFFSET"]:], dt, [n, k])
        want = w32.to(TORCH[dt])
        msgs = []
        if not torch.equal(raw_view(got), raw_view(want)):
            bad = (raw_view(got) != raw_view(want)).nonzero()
            i, j = bad[0].tolist()
            msgs.append("%d weights differ; first [%d, %d]: got %r, expected %r" % (
                len(bad), i, j, float(got[i, j]), float(want[i, j])))
        rep = subprocess.run([args.tgc, "report", tg, "--target", "cuda", "--json"] + flags,
                             capture_output=True, text=True)
        if rep.returncode != 0:
            msgs.append("tgc report: %s" % rep.stderr.strip())
        else:
            r = json.loads(rep.stdout)
            need = n * k * torch.tensor([], dtype=TORCH[dt]).element_size()
            got_s = find_key(r, "qmm_scratch_bytes")
            arena_b = find_key(r, "arena_bytes")
            if got_s is None or got_s < need or arena_b is None or arena_b < arena:
                msgs.append("tgc report: qmm_scratch_bytes %r, arena %r; expected >= %d, >= %d"
                            % (got_s, arena_b, need, arena))
        return msgs
    xs, xo = slot_of(ksrc, "xp")
    ys, yo = slot_of(ksrc, "yp")
    if xs is None or ys is None or xo or yo:
        return ["cannot find x and y (bufs[i] + 0) in the kernel"]
    inp = next(iter(inputs))
    put(xs, "x", raw(t[inp]))
    out_shape = list(x.shape[:-1]) + [n]
    ref = x.double() @ w32.double().T
    if bias:
        bv = weights[bias].to(TORCH[dt])
        y0 = bv.expand(out_shape).contiguous()
        ref = ref + bv.double()
    else:
        y0 = torch.zeros(out_shape, dtype=TORCH[dt])
    put(ys, "y", raw(y0))
    exe, err = compile_kernel(args, d, kname, ksrc)
    if err:
        return [err]
    err = run_kernel(exe, consts["GRID"], ys, files)
    if err:
        return [err]
    with open(files[ys], "rb") as f:
        got = from_raw(f.read(), dt, out_shape).double()
    mag = x.double().abs() @ w32.double().abs().T
    bound = UNIT_ROUNDOFF[dt] * ref.abs() + 1e-5 * mag
    err = (got - ref).abs() - bound
    if not torch.isfinite(got).all():
        return ["non-finite values in the result"]
    if float(err.max()) > 0:
        i = int(err.argmax())
        return ["%d elements differ; worst: got %r, expected %r" % (
            int((err > 0).sum()), float(got.flatten()[i]), float(ref.flatten()[i]))]
    return []


def raw_view(x):
    return x.view(torch.int32) if x.dtype == torch.float32 else x.view(torch.int16)


def find_key(obj, key):
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = find_key(v, key)
            if r is not None:
                return r
    return None


if __name__ == "__main__":
    sys.exit(main("cuda_qmatmul_emul", __doc__, CASES, run_case, "tgc_qmm_emul_"))
