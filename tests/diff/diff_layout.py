"""Diff cases of the layout pass (passes/layout.c, issue 25): convolution
networks whose activations the CPU build stores channels-last (NHWC
strides over the logical NCHW shape), against PyTorch, with the pass
(tgc's default) and without it (`--layout nchw`).

  se_block   a depthwise-separable block as EfficientNet writes it: stem
             conv + batch norm + silu, depthwise conv + batch norm + silu,
             squeeze-excite (global average pool, two 1x1 convs, sigmoid,
             broadcast multiply), pointwise conv + batch norm, residual add,
             then a max pool (pad + windows + max), an explicit pad, a
             second depthwise conv, x 2 and hardswish (not a conv
             epilogue: a generated kernel) and the pooling head (adaptive
             average pool, flatten, linear)
  se_block_mid  the same with values inside the channels-last region as
             outputs too (the block's sum, the squeeze-excite product and
             a permuted view of the depthwise result), and a product
             reading the last activation through a flatten: outputs keep
             the user's layout, a value read by an output view or by a
             product stays NCHW, and the kernel writing it NCHW from the
             channels-last conv result must not take that buffer over in
             place (passes/memplan.c)
  se_block_cl_input  the input declared NHWC and permuted to NCHW, so the
             first convolution reads channels-last and the rest follows

  pad_interp reflect and replicate pads and nearest and bilinear
             interpolation (index_select gathers) between convolutions,
             stored channels-last like them (their values, whatever the
             strides the gather kernel stores by)

Every graph runs at f32 (the dtype the pass changes) and f16 (untouched,
for the record), tolerance "reduction" (sums in another order, batch norm
folded into the convolutions), as the conv chains of diff_conv.py.
"""

W = "randn:0.3"  # conv weights: outputs O(1)

SE_BLOCK = """
input x : {dt}[2, 8, 12, 11]
param w0 : {dt}[16, 8, 3, 3]
param m0 : {dt}[16]
param v0 : {dt}[16]
param g0 : {dt}[16]
param b0 : {dt}[16]
param wd : {dt}[16, 1, 3, 3]
param m1 : {dt}[16]
param v1 : {dt}[16]
param g1 : {dt}[16]
param b1 : {dt}[16]
param ws1 : {dt}[4, 16, 1, 1]
param bs1 : {dt}[4]
param ws2 : {dt}[16, 4, 1, 1]
param bs2 : {dt}[16]
param wp : {dt}[16, 16, 1, 1]
param m2 : {dt}[16]
param v2 : {dt}[16]
param g2 : {dt}[16]
param b2 : {dt}[16]
param wd2 : {dt}[16, 1, 3, 3]
param bd2 : {dt}[16]
param wf : {dt}[10, 16]
param bf : {dt}[10]
param wm : {dt}[30, 5]
h = silu(batch_norm(conv2d(x, w0, padding=1), m0, v0, g0, b0))
d = silu(batch_norm(conv2d(h, wd, padding=1, groups=16), m1, v1, g1, b1))
s = sigmoid(conv2d(silu(conv2d(adaptive_avg_pool2d(d, 1), ws1, bs1)), ws2, bs2))
e = d * s
r = batch_norm(conv2d(e, wp), m2, v2, g2, b2) + h
q = pad(max_pool2d(relu(r), 3, stride=2, padding=1), (1, 0, 1, 1))
u = hardswish(conv2d(q, wd2, bd2, groups=16) * 2)
{outputs}
"""

HEAD = "output y = linear(adaptive_avg_pool2d(u, 1).flatten(1), wf, bf)"
MID = HEAD + """
output rr = r
output ee = e * 2
output dp = d.permute(0, 2, 3, 1)
output um = u.flatten(2) @ wm"""

CL_INPUT = SE_BLOCK.replace("input x : {dt}[2, 8, 12, 11]",
                            "input xl : {dt}[2, 12, 11, 8]\nx = xl.permute(0, 3, 1, 2)")

PAD_INTERP = """
input x : {dt}[2, 8, 9, 7]
param w0 : {dt}[16, 8, 3, 3]
param w1 : {dt}[16, 16, 3, 3]
param wd : {dt}[16, 1, 3, 3]
param w2 : {dt}[8, 16, 1, 1]
h = relu(conv2d(x, w0, padding=1))
a = relu(conv2d(pad(h, (1, 2, 1, 0), mode="reflect"), w1))
n = interpolate(a, scale_factor=2.0, mode="nearest")
b = conv2d(pad(n, (1, 1, 2, 1), mode="replicate"), wd, groups=16)
c = interpolate(b, size=(11, 13), mode="bilinear")
output y = conv2d(c, w2)
"""


def _specs(src):
    sp = {}
    for line in src.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "param":
            name, ty = parts[1], " ".join(parts[3:])
            if ty.count(",") >= 2:
                sp[name] = W
            elif name.startswith("v"):
                sp[name] = "pos"
    return sp


GRAPHS = [("se_block", SE_BLOCK, HEAD), ("se_block_mid", SE_BLOCK, MID),
          ("se_block_cl_input", CL_INPUT, HEAD), ("pad_interp", PAD_INTERP, "")]


def cases(Case):
    out = []
    for name, src, outs in GRAPHS:
        for dt in ("f32", "f16"):
            body = src.replace("{outputs}", outs).replace("{dt}", dt)
            for layout in ("channels-last", "nchw"):
                tag = "cl" if layout == "channels-last" else "nchw"
                out.append(Case("layout_%s_%s_%s" % (name, tag, dt), body, inputs=_specs(body),
                                tol="reduction" if dt == "f32" else "long", add_outputs=False,
                                mode="build", asan=dt == "f32", group="conv",
                                flags=["--layout", layout]))
    return out
