#!/usr/bin/python3
"""The forms of Det, DFT, the integer products (MatMulInteger, ConvInteger,
QLinearMatMul, QLinearConv), BatchNormalization's training mode, Dropout
and Compress that the ONNX backend suite's cases do not reach, each a
one-node model built with onnx.helper and compared with numpy's result
(the reference the suite's outputs come from):
  - Det of 5x5 matrices needing row swaps (a zero leading entry), a
    singular one (det 0) and f64 3x3;
  - DFT: dft_length zero-padding and truncating, onesided, complex input
    along a middle axis, inverse, opset 20's axis input (given and default);
  - int8 MatMulInteger with per-row and per-column zero points, and an
    N-d one with an N-d zero point; a
    QLinearMatMul with per-column scales and zero points, int8 output;
    a grouped, strided, dilated ConvInteger with per-channel zero points
    and SAME_UPPER padding; a QLinearConv with per-channel scales, a bias,
    pads and an int8 output: integers exactly;
  - BatchNormalization training_mode=1 over [N, C, L] with momentum 0.8;
  - Dropout with ratio 0 and training_mode true (known at import), mask;
  - Compress with a constant condition, along an axis and flattened;
  - RoiAlign's max mode and adaptive sampling (sampling_ratio 0), rois
    partly outside the image, two images, spatial_scale, against a loop
    transcription of ONNX Runtime's roi_align.cc (roialign_ref);
  - TfIdfVectorizer's IDF and TFIDF modes with weights, trigrams and
    permuted ngram_indexes, int64 tokens (tfidf_ref);
  - Resize's tf_crop_and_resize with scales (the output is the scaled
    roi's part), a roi initializer reaching outside the input, linear,
    extrapolation_value (crop_ref);
  - If whose branches compute from the outer graph's values, the
    condition a graph input (true and false); Scan with two states, a
    reversed scan input along axis 1, a reversed scan output along axis 1,
    at opsets 11 (Unsqueeze's attribute form) and 16, and opset 8's
    batched form over 2 entries.
Each case is written in the backend suite's layout and run by
run_backend.py's run_model (import, build, run, compare: same tolerances).

Usage: run_ops.py --tgc build/tgc [-k SUBSTRING]
Last line: `onnx_ops: N passed, M failed`; exit 1 if M > 0, 77 without onnx.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_backend as rb  # noqa: E402


def conv_ref(x, w, stride=1, pad=(0, 0, 0, 0), dil=1, group=1):
    """Integer 2-d convolution in int64 ([N, C, H, W] by [M, C/g, kh, kw])."""
    x = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    oh = (h - dil * (kh - 1) - 1) // stride + 1
    ow = (wd - dil * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, m, oh, ow), np.int64)
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(kh):
            for j in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, i * dil:i * dil + stride * (oh - 1) + 1:stride,
                          j * dil:j * dil + stride * (ow - 1) + 1:stride]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j].astype(np.int64))
    return y


def requant(acc, mult, zp, dt):
    info = np.iinfo(dt)
    return np.clip(np.rint(acc * mult.astype(np.float64)) + zp.astype(np.float64), info.min,
                   info.max).astype(dt)


def roialign_ref(x, rois, bi, oh, ow, sr, ss, half, mode):
    """ONNX's RoiAlign (ONNX Runtime's roi_align.cc), loop by loop, in float64."""
    n, c, h, w = x.shape
    y = np.zeros((len(rois), c, oh, ow))
    off = 0.5 if half else 0.0
    for r, roi in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = roi * ss - off
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = sr if sr > 0 else int(np.ceil(rh / oh))
        gw = sr if sr > 0 else int(np.ceil(rw / ow))
        count = max(gh * gw, 1)
        img = x[bi[r]].astype(np.float64)
        for ph in range(oh):
            for pw in range(ow):
                acc = np.zeros(c) if mode == "avg" else None
                for iy in range(gh):
                    yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                        if yy < -1.0 or yy > h or xx < -1.0 or xx > w:
                            taps = [np.zeros(c)]
                        else:
                            yv, xv = max(yy, 0.0), max(xx, 0.0)
                            yl, xl = int(yv), int(xv)
                            if yl >= h - 1:
                                yl = yhi = h - 1
                                yv = float(yl)
                            else:
                                yhi = yl + 1
                            if xl >= w - 1:
                                xl = xhi = w - 1
                                xv = float(xl)
                            else:
                                xhi = xl + 1
                            ly, lx = yv - yl, xv - xl
                            taps = [(1 - ly) * (1 - lx) * img[:, yl, xl], (1 - ly) * lx * img[:, yl, xhi],
                                    ly * (1 - lx) * img[:, yhi, xl], ly * lx * img[:, yhi, xhi]]
                        if mode == "avg":
                            acc += sum(taps)
                        else:
                            v = np.max(taps, axis=0) if len(taps) > 1 else taps[0]
                            acc = v if acc is None else np.maximum(acc, v)
                y[r, :, ph, pw] = acc / count if mode == "avg" else (0 if acc is None else acc)
    return y.astype(x.dtype)


def tfidf_ref(x, mn, mx, skips, counts, idx, pool, mode, weights):
    """ONNX Runtime's TfIdfVectorizer: every n-gram of sizes mn..mx at
    distances 1..skips+1 (unigrams once), counted into its pool entry's output."""
    rows = x.reshape(-1, x.shape[-1])
    grams = {}
    k = 0
    for lev in range(len(counts)):
        end = counts[lev + 1] if lev + 1 < len(counts) else len(pool)
        for s in range(counts[lev], end, lev + 1):
            grams[tuple(pool[s:s + lev + 1])] = idx[k]
            k += 1
    o = max(idx) + 1
    y = np.zeros((len(rows), o), np.float32)
    for b, row in enumerate(rows):
        for n in range(mn, mx + 1):
            for d in range(1, (skips + 2) if n > 1 else 2):
                for s in range(len(row) - (n - 1) * d):
                    g = tuple(int(v) for v in row[s:s + (n - 1) * d + 1:d])
                    if g in grams:
                        y[b, grams[g]] += 1
    w = np.array(weights, np.float32) if weights else np.ones(o, np.float32)
    if mode == "IDF":
        y = np.where(y > 0, w, 0).astype(np.float32)
    elif mode == "TFIDF":
        y = (y * w).astype(np.float32)
    return y.reshape(x.shape[:-1] + (o,))


def crop_ref(x, roi, sizes, extrap):
    """ONNX's linear tf_crop_and_resize, one axis at a time in float64;
    outside the input along any axis: extrap."""
    y = x.astype(np.float64)
    inside = np.ones(sizes, bool)
    r = x.ndim
    for a in range(r):
        n_in, n_out = x.shape[a], sizes[a]
        o = np.arange(n_out, dtype=np.float64)
        if n_out > 1:
            c = roi[a] * (n_in - 1) + o * (roi[r + a] - roi[a]) * (n_in - 1) / (n_out - 1)
        else:
            c = np.full(1, 0.5 * (roi[a] + roi[r + a]) * (n_in - 1))
        ok = (c >= 0) & (c <= n_in - 1)
        cc = np.clip(c, 0, n_in - 1)
        lo = np.floor(cc).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        w = cc - lo
        shp = [1] * r
        shp[a] = n_out
        y = np.take(y, lo, axis=a) * (1 - w).reshape(shp) + np.take(y, hi, axis=a) * w.reshape(shp)
        inside &= ok.reshape(shp)
    return np.where(inside, y, extrap).astype(x.dtype)


def cases():
    from onnx import TensorProto, helper
    rng = np.random.default_rng(7)
    F, D = TensorProto.FLOAT, TensorProto.DOUBLE
    out = []

    def add(name, node, ins, outs, opset=17, inits=()):
        """ins, outs: [(name, array)]; inits: graph initializers (onnx tensors)."""
        from onnx import mapping
        def vi(n, a):
            return helper.make_tensor_value_info(n, mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
        g = helper.make_graph([node], name, [vi(n, a) for n, a in ins], [vi(n, a) for n, a in outs],
                              initializer=list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tgc-tests")
        m.ir_version = 8
        out.append((name, m, ins, outs))

    def const(name, a):
        from onnx import numpy_helper
        return numpy_helper.from_array(np.asarray(a), name)

    # Det: pivoting (zero leading entries), a singular matrix, f64
    a = rng.standard_normal((4, 5, 5)).astype(np.float32)
    a[1, 0, 0] = 0.0
    a[2, :, 0] = [0.0, 0.0, 0.0, 2.0, -1.0]
    a[3, 4] = a[3, 1]  # two equal rows: det 0
    add("det_5x5", helper.make_node("Det", ["x"], ["y"]), [("x", a)],
        [("y", np.linalg.det(a.astype(np.float64)).astype(np.float32))])
    b = rng.standard_normal((3, 3))
    add("det_f64", helper.make_node("Det", ["x"], ["y"]), [("x", b)], [("y", np.array(np.linalg.det(b)))])

    # DFT
    def cplx(z):
        return np.stack([z.real, z.imag], -1).astype(np.float32)
    s = rng.standard_normal((2, 12, 1)).astype(np.float32)
    add("dft_pad_onesided", helper.make_node("DFT", ["x", "n"], ["y"], axis=1, onesided=1), [("x", s)],
        [("y", cplx(np.fft.rfft(s[..., 0].astype(np.float64), n=16, axis=1)))],
        inits=[const("n", np.int64(16))])
    z = rng.standard_normal((2, 3, 10)) + 1j * rng.standard_normal((2, 3, 10))
    add("dft_trunc_complex", helper.make_node("DFT", ["x", "n"], ["y"], axis=1), [("x", cplx(z).transpose(0, 2, 1, 3).copy())],
        [("y", cplx(np.fft.fft(z, n=8, axis=2)).transpose(0, 2, 1, 3).copy())],
        inits=[const("n", np.int64(8))])
    z2 = rng.standard_normal((1, 6, 5)) + 1j * rng.standard_normal((1, 6, 5))
    add("dft_inverse_opset20_axis", helper.make_node("DFT", ["x", "", "ax"], ["y"], inverse=1),
        [("x", cplx(z2))], [("y", cplx(np.fft.ifft(z2, axis=1)))], opset=20,
        inits=[const("ax", np.int64(1))])
    add("dft_opset20_default_axis", helper.make_node("DFT", ["x"], ["y"]), [("x", cplx(z2))],
        [("y", cplx(np.fft.fft(z2, axis=2)))], opset=20)

    # MatMulInteger: int8, per-row (A) and per-column (B) zero points
    A = rng.integers(-128, 128, (4, 5), dtype=np.int8)
    B = rng.integers(-128, 128, (2, 5, 3), dtype=np.int8)
    za = rng.integers(-128, 128, (4,), dtype=np.int8)
    zb = rng.integers(-128, 128, (3,), dtype=np.int8)
    y = np.matmul(A.astype(np.int64) - za[:, None], B.astype(np.int64) - zb).astype(np.int32)
    add("matmulinteger_int8_zero_points", helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"]),
        [("a", A), ("b", B), ("za", za), ("zb", zb)], [("y", y)])
    # ONNX's N-d per-row zero point of an N-d A: [D, M, 1]
    A3 = rng.integers(0, 256, (2, 4, 5), dtype=np.uint8)
    B3 = rng.integers(0, 256, (5, 3), dtype=np.uint8)
    za3 = rng.integers(0, 256, (2, 4, 1), dtype=np.uint8)
    add("matmulinteger_nd_zero_point", helper.make_node("MatMulInteger", ["a", "b", "za"], ["y"]),
        [("a", A3), ("b", B3), ("za", za3)],
        [("y", np.matmul(A3.astype(np.int64) - za3, B3.astype(np.int64)).astype(np.int32))])
    # QLinearMatMul: per-column b scale and zero point, int8
    sa, sb, sy = np.float32(0.02), rng.uniform(0.01, 0.03, 3).astype(np.float32), np.float32(0.5)
    zy = np.int8(-3)
    acc = np.matmul(A.astype(np.int64) - np.int64(za[0]), B[0].astype(np.int64) - zb)
    add("qlinearmatmul_per_column",
        helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"]),
        [("a", A), ("sa", np.array(sa)), ("za", za[:1].copy()), ("b", B[0].copy()), ("sb", sb), ("zb", zb),
         ("sy", np.array(sy)), ("zy", np.array(zy))],
        [("y", requant(acc, sa * sb / sy, zy, np.int8))])
    # ConvInteger: groups, stride, dilation, SAME_UPPER, per-channel w zero points
    X = rng.integers(0, 256, (2, 4, 9, 9), dtype=np.uint8)
    W = rng.integers(0, 256, (6, 2, 3, 3), dtype=np.uint8)
    zx, zw = np.uint8(17), rng.integers(0, 256, (6,), dtype=np.uint8)
    # SAME_UPPER, stride 2, dilation 2: output 5, total pad (5-1)*2 + 5 - 9 = 4
    y = conv_ref(X.astype(np.int64) - zx, W.astype(np.int64) - zw[:, None, None, None], stride=2,
                 pad=(2, 2, 2, 2), dil=2, group=2).astype(np.int32)
    add("convinteger_grouped_same_upper",
        helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], group=2, strides=[2, 2],
                         dilations=[2, 2], auto_pad="SAME_UPPER"),
        [("x", X), ("w", W), ("zx", np.array(zx)), ("zw", zw)], [("y", y)])
    # QLinearConv: per-channel scales, a bias, asymmetric pads, int8
    Xq = rng.integers(-128, 128, (1, 3, 6, 6), dtype=np.int8)
    Wq = rng.integers(-128, 128, (4, 3, 2, 2), dtype=np.int8)
    Bq = rng.integers(-5000, 5000, (4,), dtype=np.int32)
    sx, sw, sy2 = np.float32(0.05), rng.uniform(0.01, 0.02, 4).astype(np.float32), np.float32(0.9)
    zx2, zw2, zy2 = np.int8(3), np.int8(0), np.int8(10)
    acc = conv_ref(Xq.astype(np.int64) - zx2, Wq.astype(np.int64), pad=(1, 0, 0, 1)) + Bq[None, :, None, None]
    add("qlinearconv_per_channel_bias",
        helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"], ["y"],
                         pads=[1, 0, 0, 1]),
        [("x", Xq), ("sx", np.array(sx)), ("zx", np.array(zx2)), ("w", Wq), ("sw", sw), ("zw", np.array(zw2)),
         ("sy", np.array(sy2)), ("zy", np.array(zy2)), ("b", Bq)],
        [("y", requant(acc, (sx * sw / sy2)[None, :, None, None], zy2, np.int8))])

    # BatchNormalization training_mode=1 over [N, C, L]
    xb = rng.standard_normal((4, 3, 7)).astype(np.float32)
    sc, bi = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    mn, vr = rng.standard_normal(3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32)
    bm, bv = xb.mean(axis=(0, 2)), xb.var(axis=(0, 2))
    yb = (xb - bm[:, None]) / np.sqrt(bv[:, None] + 1e-3) * sc[:, None] + bi[:, None]
    add("batchnorm_training_momentum",
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1,
                         momentum=0.8, epsilon=1e-3),
        [("x", xb), ("s", sc), ("b", bi), ("m", mn), ("v", vr)],
        [("y", yb.astype(np.float32)), ("rm", (mn * 0.8 + bm * 0.2).astype(np.float32)),
         ("rv", (vr * 0.8 + bv * 0.2).astype(np.float32))], opset=15)

    # Dropout: ratio 0 in training mode, known at import: nothing dropped
    xd = rng.standard_normal((3, 4)).astype(np.float32)
    add("dropout_training_ratio_0", helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"]), [("x", xd)],
        [("y", xd), ("mask", np.ones((3, 4), bool))], opset=13,
        inits=[const("r", np.float32(0)), const("t", np.bool_(True))])

    # Compress with a condition known at import
    xc = rng.standard_normal((3, 5)).astype(np.float32)
    cond = np.array([False, True, True, False])  # shorter than the axis: the rest dropped
    add("compress_axis", helper.make_node("Compress", ["x", "c"], ["y"], axis=-1), [("x", xc)],
        [("y", np.compress(cond, xc, axis=1))], inits=[const("c", cond)])
    cond2 = np.array([True, False, False, True, True, False, True])
    add("compress_flat", helper.make_node("Compress", ["x", "c"], ["y"]), [("x", xc)],
        [("y", np.compress(cond2, xc))], inits=[const("c", cond2)])

    # RoiAlign: max mode, adaptive grids (rois inside the image, one of
    # them empty in half_pixel), two images, spatial_scale
    xr = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    rois = np.array([[0, 0, 9, 11], [2.5, 1.2, 7.3, 6.1], [-3, -2, 4, 3], [8, 4, 8, 4]], np.float32)
    bidx = np.array([0, 1, 1, 0], np.int64)
    for mode, sr, half, ss in (("max", 2, False, 1.0), ("avg", 0, True, 1.0), ("max", 0, False, 1.0),
                               ("avg", 3, True, 0.5)):
        name = "roialign_%s_sr%d_%s" % (mode, sr, "half_pixel" if half else "output_half_pixel")
        add(name, helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], mode=mode, output_height=3,
                                   output_width=2, sampling_ratio=sr, spatial_scale=ss,
                                   coordinate_transformation_mode="half_pixel" if half
                                   else "output_half_pixel"),
            [("x", xr), ("rois", rois), ("b", bidx)],
            [("y", roialign_ref(xr, rois, bidx, 3, 2, sr, ss, half, mode))], opset=16)

    # TfIdfVectorizer: weights, a trigram level, outputs in another order
    toks = rng.integers(0, 5, (3, 9)).astype(np.int64)
    # (a pool longer than any rank-bounded attribute list)
    pool = [1, 2, 3, 4, 1, 2, 2, 3, 3, 1, 4, 4, 0, 4, 4, 0, 2, 2, 1, 2, 3, 0, 1, 1, 2, 2, 2, 3, 3, 3]
    counts, idx = [0, 4, 18], [5, 0, 2, 7, 1, 3, 10, 9, 11, 12, 4, 6, 8, 13, 14]
    wts = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 2.5, 4.0, 1.25, 0.125, 5.0, 6.0, 0.5, 7.0]
    for mode, mn, mx, skips in (("IDF", 1, 3, 2), ("TFIDF", 1, 3, 1)):
        add("tfidf_%s_weights" % mode.lower(),
            helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode=mode, min_gram_length=mn,
                             max_gram_length=mx, max_skip_count=skips, ngram_counts=counts,
                             ngram_indexes=idx, pool_int64s=pool, weights=wts),
            [("x", toks)], [("y", tfidf_ref(toks, mn, mx, skips, counts, idx, pool, mode, wts))],
            opset=9)

    # Resize tf_crop_and_resize: scales over the roi's part, a roi past
    # the input's end on one axis, extrapolation_value
    xi = rng.standard_normal((1, 2, 6, 5)).astype(np.float32)
    roi = np.array([0, 0, 0.1, 0.3, 1, 1, 0.8, 1.4], np.float32)
    sc = np.array([1, 1, 2, 1.5], np.float32)
    osz = [int(np.floor(xi.shape[k] * (roi[4 + k] - roi[k]) * sc[k])) for k in range(4)]
    add("resize_tf_crop_and_resize_scales",
        helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear",
                         coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.5),
        [("x", xi)], [("y", crop_ref(xi, roi.astype(np.float64), osz, -3.5))], opset=13,
        inits=[const("roi", roi), const("scales", sc)])

    # If: branches reading the outer graph's x; the condition at run time
    xf = rng.standard_normal((2, 3)).astype(np.float32)
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"]),
                               helper.make_node("Add", ["t", "x"], ["t2"])], "then", [],
                              [helper.make_tensor_value_info("t2", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", F, [2, 3])])
    for cv in (True, False):
        add("if_outer_values_%s" % str(cv).lower(),
            helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
            [("x", xf), ("c", np.array(cv))], [("y", xf * xf + xf if cv else -xf)], opset=13)

    # Scan: states s (sum) and p (product), input read backwards along
    # axis 1, the running sum written backwards along output axis 1
    xs = rng.uniform(0.5, 1.5, (2, 4, 3)).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "v"], ["s_out"]), helper.make_node("Mul", ["p_in", "v"], ["p_out"]),
         helper.make_node("Identity", ["s_out"], ["scan_s"])], "body",
        [helper.make_tensor_value_info(n, F, [2, 3]) for n in ("s_in", "p_in", "v")],
        [helper.make_tensor_value_info(n, F, [2, 3]) for n in ("s_out", "p_out", "scan_s")])
    s0, p0 = np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)
    seq = xs[:, ::-1, :]
    run_s = np.cumsum(seq, axis=1)
    for opset in (11, 16):
        add("scan_reverse_axis1_opset%d" % opset,
            helper.make_node("Scan", ["s0", "p0", "x"], ["s", "p", "ys"], body=body, num_scan_inputs=1,
                             scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1],
                             scan_output_directions=[1]),
            [("s0", s0), ("p0", p0), ("x", xs)],
            [("s", seq.sum(axis=1)), ("p", np.prod(seq.astype(np.float64), axis=1).astype(np.float32)),
             ("ys", run_s[:, ::-1, :].copy())], opset=opset)
    # opset 8's batched Scan: [batch, length, ...], one scan per entry,
    # the first input read backwards (directions)
    add("scan8_batch2_reverse",
        helper.make_node("Scan", ["", "s0", "p0", "x"], ["s", "p", "ys"], body=body, num_scan_inputs=1,
                         directions=[1]),
        [("s0", np.zeros((2, 2, 3), np.float32)), ("p0", np.ones((2, 2, 3), np.float32)),
         ("x", np.stack([xs.transpose(1, 0, 2), xs.transpose(1, 0, 2) * 0.5]))],
        [("s", np.stack([seq.sum(axis=1), (seq * 0.5).sum(axis=1)])),
         ("p", np.stack([np.prod(seq.astype(np.float64), axis=1),
                         np.prod(seq.astype(np.float64) * 0.5, axis=1)]).astype(np.float32)),
         ("ys", np.stack([np.cumsum(seq, axis=1).transpose(1, 0, 2),
                          np.cumsum(seq * 0.5, axis=1).transpose(1, 0, 2)]))], opset=8)
    return out


def write_case(root, name, model, ins, outs):
    import onnx
    from onnx import numpy_helper
    src = os.path.join(root, "cases", name)
    ds = os.path.join(src, "test_data_set_0")
    os.makedirs(ds)
    onnx.save(model, os.path.join(src, "model.onnx"))
    for k, (n, a) in enumerate(ins):
        with open(os.path.join(ds, "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for k, (n, a) in enumerate(outs):
        with open(os.path.join(ds, "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    return src


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-k", default="")
    a = ap.parse_args()
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("onnx_ops: skipped: python3-onnx is not installed")
        return rb.SKIP
    tgc = os.path.abspath(a.tgc)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="tgc_onnx_ops_") as root:
        for name, model, ins, outs in cases():
            if a.k not in name:
                continue
            src = write_case(root, name, model, ins, outs)
            w = os.path.join(root, "work", name)
            os.makedirs(w)
            rb.ORIG_INPUTS[src] = [n for n, _ in ins]
            mp = os.path.join(src, "model.onnx")
            rc, _, err = rb.run([tgc, "import", mp, "-o", os.path.join(w, "m.tg")])
            cls, detail = rb.run_model(tgc, src, w, mp, set(), rc, err)
            ok = cls == "pass"
            passed += ok
            failed += not ok
            print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": %s: %s" % (cls, detail)))
    print("onnx_ops: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
