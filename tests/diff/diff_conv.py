"""Diff cases of the convolution family (issue 13): convolutions, pools,
norms, pad, interpolate and pixel_(un)shuffle against torch.nn.functional.
The oracle maps each call to F.<name>, so the reference is PyTorch's own
kernel (f16/bf16: f32 on the rounded inputs, rounded once, see diff.py).

Every graph runs at f64, f32, f16 and bf16. Tolerance categories
(diff.FACTOR): convolutions, transposed convolutions and the conv ->
batch_norm -> relu -> + residual chains are "reduction" (sums of up to
~150 products whose order differs from PyTorch's: oneDNN's blocking,
batch norm folded into the conv's weights and bias, which changes only
rounding); pools and adaptive pools are "reduction" too (avg pools sum a
window; max pools are exact but share the graph). Conv weights are drawn
as randn * 0.3 so that outputs stay O(1) and the f32 atol is meaningful.

Sweeps (one graph each, many outputs):
  conv2d     strides, paddings (ints, tuples, "same" with odd and even
             kernels and dilations giving an odd total padding, "valid"),
             dilation, groups (grouped, depthwise, depthwise x2), bias or not
  conv_tiny  1x1 inputs, kernel == input, stride > input, unbatched input
  conv1d     the same for 1-d, unbatched
  convt      conv_transpose2d/1d: stride, padding, output_padding (below
             the stride, or below the dilation), groups, dilation, unbatched
  views      strided operands: a channels-last input (declared NHWC,
             permuted to NCHW), a cropped slice x[:, :, 1:, :-1], stepped
             slices, a transposed weight, an NHWC view of a conv's result
  pools      ceil_mode with a last window that would start in the padding
             (dropped, as PyTorch does) and one that runs past it,
             dilation, count_include_pad, divisor_override, 1-d and
             unbatched pools, adaptive pools with overlapping windows
  bn_chain   conv2d -> batch_norm -> relu -> conv2d -> batch_norm -> + x ->
             relu (only the last value is an output: the compiler may fold
             and fuse everything), and a ResNet downsample block (strided
             conv + BN on both paths)
ASan subset: every graph at f32, and the conv2d sweep and the chain at bf16.
"""

FLOATS = ["f64", "f32", "f16", "bf16"]

POOLS_NORMS = """
input x : {dt}[2, 3, 9, 10]
param m : {dt}[3]
param v : {dt}[3]
param w : {dt}[3]
param b : {dt}[3]
mp = max_pool2d(x, 3, stride=2, padding=1, ceil_mode=true)
mpd = max_pool2d(x, (2, 3), dilation=2)
ap = avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=true, count_include_pad=false)
ap2 = avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=true)
apd = avg_pool2d(x, 2, divisor_override=3)
aa = adaptive_avg_pool2d(x, (4, 3))
am = adaptive_max_pool2d(x, (4, 3))
a1 = adaptive_avg_pool2d(x, 1)
bn = batch_norm(x, m, v, w, b)
gn = group_norm(x, 3, w, b)
inn = instance_norm(x)
pr = pad(x, (1, 2, 2, 1), mode="reflect")
pc = pad(x, (1, -2, 2, 1), value=1.5)
pp = pad(x[0], (3, 2), mode="circular")
pe = pad(x, (1, 1, 2, 0), mode="replicate")
up = interpolate(x, scale_factor=2)
un = interpolate(x, size=(4, 7))
ue = interpolate(x, size=(13, 7), mode="nearest-exact")
ub = interpolate(x, size=(5, 17), mode="bilinear")
uc = interpolate(x, size=(5, 17), mode="bilinear", align_corners=true)
us = interpolate(x, scale_factor=1.7, mode="bilinear")
ps = pixel_shuffle(pixel_unshuffle(x[:, :, :8, :], 2), 2)
m1 = max_pool1d(x[0], 3)
a1d = avg_pool1d(x[0], 4, stride=3, padding=2)
aa1 = adaptive_avg_pool1d(x[0], 4)
am1 = adaptive_max_pool1d(x[0], 3)
ul = interpolate(x[0], scale_factor=1.5, mode="linear")
"""


def cases(Case):
    out = []
    for dt in FLOATS:
        out.append(Case("nn_pools_norms_%s" % dt, POOLS_NORMS.replace("{dt}", dt),
                        inputs={"v": "pos"}, tol="reduction", asan=dt == "f32", group="conv"))
    return out + smoke_cases(Case) + sweep_cases(Case)


CONV_SMOKE = """
input x : {dt}[2, 3, 12, 11]
param w : {dt}[8, 3, 3, 3]
param b : {dt}[8]
param m : {dt}[8]
param v : {dt}[8]
param g : {dt}[8]
param be : {dt}[8]
param w2 : {dt}[8, 8, 3, 3]
y = conv2d(x, w, b, stride=2, padding=1)
h = relu(batch_norm(conv2d(x, w, b, padding="same"), m, v, g, be))
z = relu(conv2d(h, w2, padding=1) + h)
"""


def smoke_cases(Case):
    return [Case("conv_smoke_%s" % dt, CONV_SMOKE.replace("{dt}", dt), inputs={"v": "pos"},
                 tol=CHAIN_TOL.get(dt, "reduction"), asan=dt == "f32", group="conv")
            for dt in FLOATS]


CONV2D = """
input x : {dt}[2, 4, 9, 8]
param w3 : {dt}[6, 4, 3, 3]
param w2 : {dt}[6, 4, 2, 2]
param w4 : {dt}[6, 4, 4, 3]
param w1 : {dt}[6, 4, 1, 1]
param wg : {dt}[6, 2, 3, 3]
param wd : {dt}[4, 1, 3, 3]
param wm : {dt}[8, 1, 3, 3]
param b : {dt}[6]
param b8 : {dt}[8]
c0 = conv2d(x, w3)
c1 = conv2d(x, w3, b, stride=2)
c2 = conv2d(x, w3, b, stride=(2, 3), padding=(1, 2))
c3 = conv2d(x, w3, padding=1, dilation=2)
c4 = conv2d(x, w3, b, padding="same")
c5 = conv2d(x, w2, b, padding="same")
c6 = conv2d(x, w4, padding="same", dilation=(3, 2))
c7 = conv2d(x, w4, b, padding="same")
c8 = conv2d(x, w3, b, padding="valid")
c9 = conv2d(x, w3, b, padding=(0, 3))
c10 = conv2d(x, wg, b, padding=1, groups=2)
c11 = conv2d(x, wd, stride=2, padding=1, groups=4)
c12 = conv2d(x, wm, b8, padding="same", groups=4)
c13 = conv2d(x, w1, b, stride=2)
c14 = conv2d(x, w3, b, stride=3, padding=2, dilation=(1, 2))
c15 = conv2d(x, w2, stride=(1, 2), dilation=(2, 3), groups=1)
"""

CONV_TINY = """
input t : {dt}[3, 4, 1, 1]
input k : {dt}[1, 4, 3, 5]
param w1 : {dt}[5, 4, 1, 1]
param w3 : {dt}[5, 4, 3, 3]
param wk : {dt}[5, 4, 3, 5]
param wd : {dt}[4, 1, 3, 5]
param b : {dt}[5]
s0 = conv2d(t, w1)
s1 = conv2d(t, w3, b, padding=1)
s2 = conv2d(t, w3, b, padding="same")
s3 = conv2d(k, wk, b)
s4 = conv2d(k, wk, padding="same")
s5 = conv2d(k, w3, stride=5, padding=1)
s6 = conv2d(k[0], w3, b, padding=1)
s7 = conv2d(k, wd, groups=4)
s8 = conv2d(t[1], w1, b)
"""

CONV1D = """
input x : {dt}[2, 6, 17]
param w : {dt}[4, 6, 3]
param wg : {dt}[6, 2, 5]
param wd : {dt}[6, 1, 4]
param w1 : {dt}[3, 6, 1]
param b : {dt}[4]
param b6 : {dt}[6]
d0 = conv1d(x, w)
d1 = conv1d(x, w, b, stride=2, padding=2)
d2 = conv1d(x, w, padding="same", dilation=3)
d3 = conv1d(x, wg, b6, padding="same", groups=3)
d4 = conv1d(x, wd, padding="same", groups=6)
d5 = conv1d(x, wd, b6, padding="same", dilation=3, groups=6)
d6 = conv1d(x[1], w, b, stride=3)
d7 = conv1d(x, w, b, padding="valid", stride=2, dilation=2)
d8 = conv1d(x, w1)
d9 = conv1d(x[:, :, 16:], w, b, padding=1)
"""

CONVT = """
input x : {dt}[2, 4, 5, 6]
input y : {dt}[2, 4, 7]
param wt : {dt}[4, 3, 3, 3]
param wg : {dt}[4, 2, 3, 2]
param wk : {dt}[4, 3, 2, 4]
param bt : {dt}[3]
param b4 : {dt}[4]
param w1 : {dt}[4, 5, 3]
param w1g : {dt}[4, 1, 4]
param b5 : {dt}[5]
t0 = conv_transpose2d(x, wt)
t1 = conv_transpose2d(x, wt, bt, stride=2)
t2 = conv_transpose2d(x, wt, bt, stride=2, padding=1, output_padding=1)
t3 = conv_transpose2d(x, wt, stride=(3, 2), padding=(2, 1), output_padding=(2, 0))
t4 = conv_transpose2d(x, wg, b4, stride=2, groups=2)
t5 = conv_transpose2d(x, wt, bt, padding=1, dilation=2)
t6 = conv_transpose2d(x, wt, stride=2, output_padding=1, dilation=2)
t7 = conv_transpose2d(x[0], wt, bt, stride=2)
t8 = conv_transpose2d(x, wk, bt, stride=2, padding=(0, 1))
t9 = conv_transpose2d(x, wt, stride=1, output_padding=1, dilation=(2, 2))
u0 = conv_transpose1d(y, w1, b5, stride=2, padding=1, output_padding=1)
u1 = conv_transpose1d(y, w1g, stride=3, groups=4, dilation=2)
u2 = conv_transpose1d(y[1], w1, padding=2)
u3 = conv_transpose1d(y, w1, b5)
"""

VIEWS = """
input xh : {dt}[2, 7, 6, 4]
input xc : {dt}[2, 4, 8, 9]
param w : {dt}[5, 4, 3, 3]
param wt : {dt}[4, 3, 3, 3]
param b : {dt}[5]
v0 = conv2d(xh.permute(0, 3, 1, 2), w, b, padding=1)
v1 = conv2d(xc[:, :, 1:, :-1], w, b, stride=2)
v2 = conv2d(xc.transpose(2, 3), w, padding="same")
v3 = conv2d(xc[:, :, ::2, ::3], w, b, padding=1)
v4 = conv2d(xc.permute(0, 2, 3, 1).permute(0, 3, 1, 2), w, b)
v5 = conv2d(xc, w.transpose(2, 3), b, padding=1)
v6 = conv2d(xc[1:], w[1:4], padding="same")
v7 = conv2d(xc, w, b, padding=1).permute(0, 2, 3, 1)
v8 = conv_transpose2d(xh.permute(0, 3, 1, 2), wt, stride=2)
v9 = conv1d(xc[:, :, 2], w[:, :, 1], b, padding="same")
v10 = max_pool2d(xh.permute(0, 3, 1, 2), 3, stride=2, padding=1)
v11 = avg_pool2d(xc[:, :, 1:, :-1], 2, ceil_mode=true)
"""

POOLS = """
input x : {dt}[2, 3, 7, 8]
p0 = max_pool2d(x, 2, stride=2, padding=1, ceil_mode=true)
p1 = avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=true)
p2 = avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=true, count_include_pad=false)
p3 = avg_pool2d(x, 2, stride=2, padding=1, ceil_mode=true)
p4 = avg_pool2d(x, (3, 2), stride=(2, 3), padding=1, ceil_mode=true, divisor_override=5)
p5 = max_pool2d(x, 3, stride=1, padding=1, dilation=2)
p6 = max_pool2d(x, (2, 3), stride=(3, 2), dilation=(2, 1), ceil_mode=true)
p7 = avg_pool2d(x, 2, stride=1)
p8 = avg_pool2d(x, (1, 3), padding=(0, 1), count_include_pad=false)
p9 = avg_pool2d(x, 3, stride=2, padding=1, divisor_override=2)
p10 = max_pool1d(x[0], 3, stride=2, padding=1, dilation=2, ceil_mode=true)
p11 = avg_pool1d(x[1], 3, stride=3, padding=1, ceil_mode=true, count_include_pad=false)
p12 = max_pool2d(x[0], 2)
p13 = adaptive_avg_pool2d(x, (3, 5))
p14 = adaptive_max_pool2d(x, (5, 3))
p15 = adaptive_avg_pool2d(x, (7, 8))
p16 = adaptive_max_pool1d(x[0], 5)
p17 = adaptive_avg_pool1d(x[1], 3)
p18 = max_pool2d(x, 1)
p19 = adaptive_avg_pool2d(x, (7, 4))
p20 = adaptive_max_pool2d(x, (1, 2))
p21 = adaptive_avg_pool1d(x[0], 4)
p22 = adaptive_avg_pool2d(x, 1)
"""

BN_CHAIN = """
input x : {dt}[2, 8, 10, 9]
param w : {dt}[8, 8, 3, 3]
param m : {dt}[8]
param v : {dt}[8]
param g : {dt}[8]
param be : {dt}[8]
param w2 : {dt}[8, 8, 3, 3]
param b2 : {dt}[8]
param m2 : {dt}[8]
param v2 : {dt}[8]
param g2 : {dt}[8]
param be2 : {dt}[8]
h = relu(batch_norm(conv2d(x, w, padding=1), m, v, g, be))
r = batch_norm(conv2d(h, w2, b2, padding=1), m2, v2, g2, be2, eps=1e-3)
output y = relu(r + x)
"""

DOWN_BLOCK = """
input x : {dt}[2, 8, 9, 10]
param w1 : {dt}[12, 8, 3, 3]
param w2 : {dt}[12, 12, 3, 3]
param wd : {dt}[12, 8, 1, 1]
param m1 : {dt}[12]
param v1 : {dt}[12]
param g1 : {dt}[12]
param b1 : {dt}[12]
param m2 : {dt}[12]
param v2 : {dt}[12]
param g2 : {dt}[12]
param b2 : {dt}[12]
param md : {dt}[12]
param vd : {dt}[12]
param gd : {dt}[12]
param bd : {dt}[12]
h = relu(batch_norm(conv2d(x, w1, stride=2, padding=1), m1, v1, g1, b1))
idn = batch_norm(conv2d(x, wd, stride=2), md, vd, gd, bd)
output y = relu(batch_norm(conv2d(h, w2, padding=1), m2, v2, g2, b2) + idn)
output p = adaptive_avg_pool2d(y, 1).flatten(1)
"""

W = "randn:0.3"  # conv weights: outputs O(1)

# Two convolutions in a row at f16/bf16: the reference rounds the first
# one's result (and the batch norm's) to the low dtype before the second
# sums over it, and tgc may not (batch norm folded into the weights, f32
# kept inside a fused kernel). Where the second sum cancels, that one
# rounding of ~72 terms of size ~1 shows as an absolute error of a few
# Every fused activation after a conv, on oneDNN's jit kernels: the stem
# conv (3 channels) and the depthwise conv run on NHWC copies, p, q and r
# are read only by convs and so are stored channels-last between them
# (codegen/conv_desc.c), d is read by a pool and a product and stays NCHW;
# hardsigmoid (three eltwise post-ops as PyTorch writes it gave values off
# by 8 on oneDNN 2.6's NHWC jit kernels) after a 1x1 conv of a 1x1 map and
# after a 3x3 conv.
POST_ACTS = """
input x : {dt}[2, 3, 13, 12]
param w0 : {dt}[16, 3, 3, 3]
param b0 : {dt}[16]
param wd : {dt}[16, 1, 5, 5]
param w1 : {dt}[8, 16, 1, 1]
param b1 : {dt}[8]
param w2 : {dt}[16, 8, 1, 1]
param b2 : {dt}[16]
param w3 : {dt}[16, 16, 1, 1]
param w4 : {dt}[16, 16, 3, 3]
param b4 : {dt}[16]
s = hardswish(conv2d(x, w0, b0, stride=2, padding=1))
d = hardswish(conv2d(s, wd, padding=2, groups=16))
e = hardsigmoid(conv2d(relu(conv2d(adaptive_avg_pool2d(d, 1), w1, b1)), w2, b2)) * d
p = conv2d(e, w3)
q = relu(conv2d(p, w4, b4, padding=1) + p)
r = hardsigmoid(conv2d(q, w4, b4, padding=1))
output y = leaky_relu(conv2d(r, w3) + q, 0.1)
"""

# ulps of the terms: `diff.py --self-check` (an f64 evaluation) exceeds
# "reduction" by up to 6x at f16 there, so these chains are "long".
CHAIN_TOL = {"f16": "long", "bf16": "long"}


def _specs(src, extra=None):
    """Input specs: every 4-d/3-d param (a conv weight) randn * 0.3, every
    running_var-like param (v*) positive."""
    sp = {}
    for line in src.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "param":
            name, ty = parts[1], " ".join(parts[3:])
            if ty.count(",") >= 2:
                sp[name] = W
            elif name.startswith("v"):
                sp[name] = "pos"
    sp.update(extra or {})
    return sp


SWEEPS = [  # (name, source, add_outputs, ASan dtypes, chain)
    ("conv2d", CONV2D, True, ("f32", "bf16"), False),
    ("conv_tiny", CONV_TINY, True, ("f32",), False),
    ("conv1d", CONV1D, True, ("f32",), False),
    ("convt", CONVT, True, ("f32",), False),
    ("conv_views", VIEWS, True, ("f32",), False),
    ("conv_pools", POOLS, True, ("f32",), False),
    ("conv_bn_chain", BN_CHAIN, False, ("f32", "bf16"), True),
    ("conv_down_block", DOWN_BLOCK, False, ("f32",), True),
    ("conv_post_acts", POST_ACTS, False, ("f32",), True),
]


def sweep_cases(Case):
    out = []
    for name, src, add, asan, chain in SWEEPS:
        for dt in FLOATS:
            body = src.replace("{dt}", dt)
            tol = CHAIN_TOL.get(dt, "reduction") if chain else "reduction"
            out.append(Case("%s_%s" % (name, dt), body, inputs=_specs(body), tol=tol,
                            add_outputs=add, asan=dt in asan, group="conv"))
    return out
