"""Diff cases of the convolution family (issue 13): convolutions, pools,
norms, pad, interpolate and pixel_(un)shuffle against torch.nn.functional.
The oracle maps each call to F.<name>, so the reference is PyTorch's own
kernel (f16/bf16: f32 on the rounded inputs, rounded once, see diff.py)."""

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
    return out
