#!/usr/bin/python3
"""The CUDA attention backward kernels' values without a GPU: for each case
below, `tgc build --train loss --target cuda --emit cuda` of
loss = sum(scaled_dot_product_attention(q, k, v, ...) * w) writes the
module's CUDA C; its two attention_backward kernels
(codegen/cuda/cu_attention_bwd.c: k*_sdpa_bwd_q, then k*_sdpa_bwd_kv) are
cut out, compiled for the host after attn_host.h (one program, TG_KERNEL
picking the kernel) and run in turn on one
arena file holding the forward's output and the output's gradient where
the module places them (the offsets read from the kernels' own pointer
expressions), with q, k, v and the mask in their interface buffers. The
packed result's dq, dk and dv are compared with torch.autograd in f64 on
the same values (the forward's output given to the kernels is PyTorch's,
rounded to the dtype, as the GPU's would be within its tolerance).

Tolerance, per element |got - ref| <= rtol * |ref| + atol * max|ref|:
f32 (1e-4, 1e-5); f16 (2e-2, 2e-3): operands, output and its gradient
rounded to f16, the kernels in f32. Sharp: the reference scaled by 1.01
must fail at f32.

Usage: run_attention_bwd_emul.py --tgc build/tgc [--cxx g++] [-k SUBSTRING] [--keep DIR]
Last line: `cuda_attention_bwd_emul: N passed, M failed`; exit 1 if M > 0,
77 (skipped) when tgc has no CUDA support or no C++20 compiler is found.
"""

import math
import os
import re
import subprocess
import sys

import torch

from emul_harness import HERE, kernel_source, main, raw, run_kernel

TORCH = {"f32": torch.float32, "f16": torch.float16}
TOL = {"f32": (1e-4, 1e-5), "f16": (2e-2, 2e-3)}

# name: (dtype, q, k, v shapes, mask (shape, kind) or None, causal, scale)
CASES = {
    "causal_f32": ("f32", [2, 2, 37, 16], [2, 2, 37, 16], [2, 2, 37, 8], None, True, 0.5),
    "bool_mask_f32": ("f32", [2, 2, 33, 16], [2, 2, 50, 16], [2, 2, 50, 16],
                      ([2, 1, 33, 50], "bool"), False, None),
    "float_mask_f16": ("f16", [2, 2, 33, 32], [2, 2, 50, 32], [2, 2, 50, 32],
                       ([33, 50], "float"), False, None),
    "broadcast_f32": ("f32", [2, 4, 17, 16], [1, 4, 30, 16], [4, 30, 16], None, False, 0.3),
}

PTR = re.compile(r"const auto \*(\w+) = \(\(\(const [\w ]+? \*\)(?:bufs\[(\d+)\]|\(bufs\[(\d+)\] \+ "
                 r"(\d+)\))\) \+ (\d+)\);|float \*(rp) = \(\(\(float \*\)(?:bufs\[(\d+)\]|"
                 r"\(bufs\[(\d+)\] \+ (\d+)\))\) \+ (\d+)\);")


def pointers(src):
    """{name: (slot, byte offset, element offset)} of the kernel's pointers."""
    out = {}
    for m in PTR.finditer(src):
        g = m.groups()
        if g[0]:
            slot = int(g[1] or g[2])
            out[g[0]] = (slot, int(g[3] or 0), int(g[4]))
        else:
            slot = int(g[6] or g[7])
            out["rp"] = (slot, int(g[8] or 0), int(g[9]))
    return out


def run_case(name, case, args, work):
    dt, qs, ks, vs, mask, causal, scale = case
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    gen = torch.Generator().manual_seed(2028)
    t = {n: torch.randn(s, generator=gen).to(TORCH[dt]) for n, s in (("q", qs), ("k", ks),
                                                                     ("v", vs))}
    decl = "".join("param %s : %s%s\n" % (n, dt, s) for n, s in (("q", qs), ("k", ks), ("v", vs)))
    call = "scaled_dot_product_attention(q, k, v"
    if mask:
        shape, kind = mask
        if kind == "bool":
            m = torch.rand(shape, generator=gen) < 0.7
            m[..., 0] = True
        else:
            m = torch.randn(shape, generator=gen)
            m[torch.rand(shape, generator=gen) < 0.2] = -math.inf
            m[..., 0] = 0.0
            m = m.to(TORCH[dt])
        t["m"] = m
        decl += "input m : %s%s\n" % ("bool" if kind == "bool" else dt, shape)
        call += ", attn_mask = m"
    if causal:
        call += ", is_causal = true"
    if scale is not None:
        call += ", scale = %r" % scale
    call += ")"
    oshape = list(torch.broadcast_shapes(qs[:-2], ks[:-2], vs[:-2])) + [qs[-2], vs[-1]]
    t["w"] = torch.randn(oshape, generator=gen).to(TORCH[dt])
    tg = os.path.join(d, "g.tg")
    with open(tg, "w") as f:
        f.write("graph g\n%sinput w : %s%s\ny = %s\noutput loss = (y * w).sum()\n"
                % (decl, dt, oshape, call))
    emit = os.path.join(d, "emit")
    p = subprocess.run([args.tgc, "build", tg, "--train", "loss", "--optimizer", "none", "-o",
                        os.path.join(d, "g.exe"), "--target", "cuda", "--emit", "cuda", emit],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return ["tgc build --target cuda: %s" % p.stderr.strip()]
    with open(os.path.join(emit, "g.cu")) as f:
        cu = f.read()
    kq, srcq = kernel_source(cu, "sdpa_bwd_q")
    kkv, srckv = kernel_source(cu, "sdpa_bwd_kv")
    if not kq or not kkv:
        return ["no k*_sdpa_bwd_q / k*_sdpa_bwd_kv kernel in the module"]
    ptr = pointers(srcq)
    if set(ptr) != {"qp", "kp", "vp", "op", "gp", "rp"} | ({"mp"} if mask else set()):
        return ["unexpected pointers in the kernel: %s" % sorted(ptr)]

    # The reference and the forward's output the kernels read.
    leaf = {n: t[n].double().requires_grad_() for n in ("q", "k", "v")}
    sc = scale if scale is not None else 1 / math.sqrt(qs[-1])
    s = leaf["q"] @ leaf["k"].mT * sc
    if causal:
        s = s.masked_fill(~torch.ones(qs[-2], ks[-2], dtype=torch.bool).tril(), -math.inf)
    if mask:
        s = s.masked_fill(~t["m"], -math.inf) if t["m"].dtype == torch.bool else s + t["m"].double()
    y = torch.softmax(s, -1) @ leaf["v"]
    (y * t["w"].double()).sum().backward()
    vals = {"qp": t["q"], "kp": t["k"], "vp": t["v"], "op": y.detach().to(TORCH[dt]),
            "gp": t["w"], "mp": t.get("m")}
    # Slot 0 (the arena) as one file: the forward's output, its gradient and
    # the packed result where the module put them; the others whole.
    E, Ev, L, S = qs[-1], vs[-1], qs[-2], ks[-2]
    W = max(E, Ev) + 2
    nb = math.prod(oshape[:-2])
    rbytes = nb * (L + 2 * S) * W * 4
    arena = bytearray(max([off + el * 4 + rbytes for n, (sl, off, el) in ptr.items() if sl == 0]
                          + [off + len(raw(vals[n])) for n, (sl, off, el) in ptr.items()
                             if sl == 0 and n != "rp"]))
    files, slots = {}, {}
    for n, (sl, off, el) in ptr.items():
        if n == "rp":
            continue
        data = raw(vals[n])
        esz = vals[n].element_size() if vals[n].dtype != torch.bool else 1
        if sl == 0:
            at = off + el * esz
            arena[at:at + len(data)] = data
        else:
            slots[sl] = data
    for sl, data in slots.items():
        files[sl] = os.path.join(d, "slot%d.bin" % sl)
        with open(files[sl], "wb") as f:
            f.write(data)
    files[0] = os.path.join(d, "arena.bin")
    with open(files[0], "wb") as f:
        f.write(arena)
    rslot, roff, rel = ptr["rp"]
    if rslot != 0:
        return ["the packed result is not in the arena"]
    # Both kernels in one program (one compile): TG_KERNEL picks one.
    src = ('#include "attn_host.h"\n%s\n%s\n#define main tg_main_q\nTG_HOST_MAIN(%s)\n'
           '#undef main\n#define main tg_main_kv\nTG_HOST_MAIN(%s)\n#undef main\n'
           'int main(int argc, char **argv) {\n'
           '    const char *k = getenv("TG_KERNEL");\n'
           '    return k && !strcmp(k, "kv") ? tg_main_kv(argc, argv) : tg_main_q(argc, argv);\n'
           '}\n' % (srcq, srckv, kq, kkv))
    exe = os.path.join(d, "k")
    with open(exe + ".cpp", "w") as f:
        f.write(src)
    p = subprocess.run([args.cxx, "-std=c++20", "-O1", "-pthread", "-w", "-I", HERE, exe + ".cpp",
                        "-o", exe], capture_output=True, text=True)
    if p.returncode:
        return ["%s: %s" % (args.cxx, p.stderr.strip()[:2000])]
    for which, rows in (("q", L), ("kv", S)):
        os.environ["TG_KERNEL"] = which
        err = run_kernel(exe, (nb * rows + 255) // 256, 0, files)
        if err:
            return [err]
    with open(files[0], "rb") as f:
        data = bytearray(f.read())
    at = roff + rel * 4
    r = torch.frombuffer(data[at:at + rbytes], dtype=torch.float32).double()
    r = r.reshape(oshape[:-2] + [L + 2 * S, W])
    got = {"q": r[..., :L, :E], "k": r[..., L:L + S, :E], "v": r[..., L + S:, :Ev]}
    rtol, atol = TOL[dt]
    msgs = []
    for n in ("q", "k", "v"):
        g = got[n]
        ref = leaf[n].grad
        # the kernels give the broadcast batch shape; the pass sums it down
        while g.dim() > ref.dim():
            g = g.sum(0)
        for i in range(g.dim()):
            if ref.shape[i] == 1 and g.shape[i] != 1:
                g = g.sum(i, keepdim=True)
        bound = rtol * ref.abs() + atol * ref.abs().max()
        worst = float(((g - ref).abs() / bound).max())
        if worst > 1:
            msgs.append("d%s: worst %.3g of the tolerance" % (n, worst))
        elif dt == "f32" and float(((g - ref * 1.01).abs() / bound).max()) <= 1:
            msgs.append("d%s: the reference x 1.01 passes too" % n)
    return msgs


if __name__ == "__main__":
    sys.exit(main("cuda_attention_bwd_emul", __doc__, CASES, run_case, "tgc_attn_bwd_emul_"))
