"""Diff cases of the loss functions (issue 15): mse_loss, l1_loss,
smooth_l1_loss, nll_loss, cross_entropy and binary_cross_entropy_with_logits
against torch.nn.functional (the oracle maps each call to F.<name>, so the
reference is PyTorch's own kernel; f16/bf16: f32 on the rounded inputs,
rounded once, see diff.py).

Every graph runs at f64 and f32 (and f16/bf16, where PyTorch's reference is
computed in f32 and rounded once, as tgc computes losses). Tolerance
category "reduction" (diff.FACTOR): each loss sums a few dozen terms in an
order that differs from ATen's (cascade sums), after a log_softmax or
exp/log for the cross entropies.

Graphs (one each, every named value an output):
  pointwise   mse/l1/smooth_l1 with reduction none/mean/sum, beta 0 (l1),
              0.5 and 2, a broadcast target, the deprecated size_average /
              reduce arguments (positional and keyword)
  indices     cross_entropy and nll_loss with class-index targets: [N, C],
              3-d [N, C, d] and 4-d [N, C, h, w] inputs, an unbatched [C]
              input with a 0-d target, class weights, ignore_index (the
              default -100 inside the targets, and another class), all
              targets ignored (mean: NaN, as PyTorch), label_smoothing with
              and without weights for every reduction, u8 targets
  probs       cross_entropy with class-probability targets (softmax rows and
              unnormalised ones), weights, label_smoothing, K-dim, unbatched
  bce         binary_cross_entropy_with_logits: weight [C] and full-shape,
              pos_weight, both, hard and soft targets, logits of +-200
              (the stable form's range)
  mixed       promotion: an f32 input with an f64 target (mse, l1,
              smooth_l1), an f64 input with f32 probabilities (cross
              entropy; ATen smooths them in f32 first, so `--self-check`,
              which evaluates everything in f64, flags m_cen by design),
              integer l1_loss (sum and none)
ASan subset: every graph at f32, and the mixed graph.
"""

FLOATS = ["f64", "f32", "f16", "bf16"]

POINTWISE = """
input x : {dt}[4, 5]
input y : {dt}[4, 5]
input yb : {dt}[5]
mse_m = mse_loss(x, y)
mse_s = mse_loss(x, y, reduction="sum")
mse_n = mse_loss(x, y, reduction="none")
mse_b = mse_loss(x, yb, reduction="none")
mse_bm = mse_loss(yb, x)
l1_m = l1_loss(x, y)
l1_s = l1_loss(x, y, reduction="sum")
l1_n = l1_loss(x, y, reduction="none")
sl1_m = smooth_l1_loss(x, y)
sl1_s = smooth_l1_loss(x, y, reduction="sum", beta=0.5)
sl1_n = smooth_l1_loss(x, y, reduction="none", beta=2.0)
sl1_0 = smooth_l1_loss(x, y, beta=0.0)
sl1_b = smooth_l1_loss(x, yb, reduction="none", beta=0.7)
leg_none = mse_loss(x, y, None, false)
leg_sum = l1_loss(x, y, size_average=false)
leg_mean = smooth_l1_loss(x, y, true, true, "none")
"""

INDICES = """
input x : {dt}[6, 5]
input t : i64[6]
input ti : i64[6]
input tall : i64[6]
input t8 : u8[6]
param w : {dt}[5]
input x3 : {dt}[2, 5, 3]
input t3 : i64[2, 3]
input xk : {dt}[2, 5, 3, 4]
input tk : i64[2, 3, 4]
input tk1 : i64[2, 3, 4]
input xu : {dt}[5]
input tu : i64[]
input tn : i64[]
ce_m = cross_entropy(x, t)
ce_s = cross_entropy(x, t, reduction="sum")
ce_n = cross_entropy(x, t, reduction="none")
ce_w = cross_entropy(x, t, w)
ce_ws = cross_entropy(x, t, w, reduction="sum")
ce_wn = cross_entropy(x, t, w, reduction="none")
ce_ii = cross_entropy(x, ti, w, ignore_index=2)
ce_iin = cross_entropy(x, ti, ignore_index=2, reduction="none")
ce_all = cross_entropy(x, tall)
ce_alls = cross_entropy(x, tall, w, reduction="sum")
ce_ls = cross_entropy(x, t, label_smoothing=0.1)
ce_lsw = cross_entropy(x, t, w, label_smoothing=0.25)
ce_lss = cross_entropy(x, t, w, reduction="sum", label_smoothing=0.3)
ce_lsn = cross_entropy(x, t, w, reduction="none", label_smoothing=0.3)
ce_lsnn = cross_entropy(x, ti, ignore_index=2, reduction="none", label_smoothing=1.0)
ce_lsall = cross_entropy(x, tall, label_smoothing=0.2)
ce_lsneg = cross_entropy(x, t, label_smoothing=-0.5)
ce_u8 = cross_entropy(x, t8, w)
ce_3 = cross_entropy(x3, t3, w)
ce_3n = cross_entropy(x3, t3, reduction="none", label_smoothing=0.2)
ce_k = cross_entropy(xk, tk)
ce_kw = cross_entropy(xk, tk1, w, ignore_index=1, label_smoothing=0.2)
ce_kn = cross_entropy(xk, tk, w, reduction="none")
ce_u = cross_entropy(xu, tu)
ce_uw = cross_entropy(xu, tu, w, reduction="none", label_smoothing=0.3)
ce_un = cross_entropy(xu, tn)
ce_uns = cross_entropy(xu, tn, w, reduction="sum", label_smoothing=0.3)
lp = log_softmax(x, dim=1)
nll_m = nll_loss(lp, t)
nll_w = nll_loss(lp, t, w)
nll_n = nll_loss(lp, t, w, reduction="none")
nll_raw = nll_loss(x, ti, w, None, 2, None, "sum")
nll_all = nll_loss(x, tall, w)
nll_3 = nll_loss(x3, t3, w, reduction="none")
nll_k = nll_loss(xk, tk, w)
nll_u = nll_loss(xu, tu, w)
nll_un = nll_loss(xu, tn, reduction="sum")
nll_leg = nll_loss(x, t, w, reduce=false)
nll_u8 = nll_loss(x, t8, reduction="sum")
"""
INDICES_SPECS = {
    "t": "vals:0,4,-100,2,1,3", "ti": "vals:0,4,2,2,1,3", "tall": "const:-100",
    "t8": "vals:1,0,4,3,3,2", "w": "pos", "t3": "idx:5", "tk": "vals:0,1,2,3,4,1,-100",
    "tk1": "vals:0,1,2,3,4,1,2",
    "tu": "const:3", "tn": "const:-100",
}

PROBS = """
input x : {dt}[6, 5]
input p : {dt}[6, 5]
param w : {dt}[5]
input xk : {dt}[2, 5, 3, 4]
input pk : {dt}[2, 5, 3, 4]
input xu : {dt}[5]
input pu : {dt}[5]
ps = softmax(p, dim=1)
cp_m = cross_entropy(x, ps)
cp_s = cross_entropy(x, ps, reduction="sum")
cp_n = cross_entropy(x, ps, reduction="none")
cp_raw = cross_entropy(x, p)
cp_w = cross_entropy(x, p, w)
cp_wn = cross_entropy(x, ps, w, reduction="none")
cp_ls = cross_entropy(x, ps, label_smoothing=0.2)
cp_lsw = cross_entropy(x, p, w, reduction="sum", label_smoothing=0.15)
cp_lsn = cross_entropy(x, ps, w, reduction="none", label_smoothing=1.0)
cp_k = cross_entropy(xk, pk, w)
cp_kn = cross_entropy(xk, softmax(pk, dim=1), reduction="none", label_smoothing=0.1)
cp_u = cross_entropy(xu, pu)
cp_un = cross_entropy(xu, pu, w, reduction="none", label_smoothing=0.3)
"""
PROBS_SPECS = {"p": "pos", "pk": "pos", "pu": "pos", "w": "pos"}

BCE = """
input x : {dt}[4, 6]
input y : {dt}[4, 6]
input yh : {dt}[4, 6]
param w : {dt}[6]
param wf : {dt}[4, 6]
param pw : {dt}[6]
input xe : {dt}[8]
input ye : {dt}[8]
ys = sigmoid(y)
b_m = binary_cross_entropy_with_logits(x, ys)
b_s = binary_cross_entropy_with_logits(x, yh, reduction="sum")
b_n = binary_cross_entropy_with_logits(x, ys, reduction="none")
b_w = binary_cross_entropy_with_logits(x, yh, w)
b_wf = binary_cross_entropy_with_logits(x, ys, wf, reduction="none")
b_pw = binary_cross_entropy_with_logits(x, ys, pos_weight=pw, reduction="none")
b_pwm = binary_cross_entropy_with_logits(x, yh, pos_weight=pw)
b_wpw = binary_cross_entropy_with_logits(x, ys, w, reduction="sum", pos_weight=pw)
b_leg = binary_cross_entropy_with_logits(x, yh, None, false)
b_e = binary_cross_entropy_with_logits(xe, ye, reduction="none")
b_epw = binary_cross_entropy_with_logits(xe, ye, pos_weight=pw[:1], reduction="none")
"""
BCE_SPECS = {"yh": "bool:0.5", "w": "pos", "wf": "pos", "pw": "pos",
             "xe": "vals:-200,200,0,-30,30,0.001,-60,15", "ye": "vals:1,0,0.5,1,0,1,0.25,0"}

MIXED = """
input x : f32[4, 5]
input y : f64[4, 5]
input xd : f64[6, 5]
input p : f32[6, 5]
input a : i32[4, 5]
input b : i64[4, 5]
m_mse = mse_loss(x, y)
m_l1 = l1_loss(y, x, reduction="none")
m_sl1 = smooth_l1_loss(x, y, reduction="sum")
m_ce = cross_entropy(xd, p)
m_cen = cross_entropy(xd, p, reduction="none", label_smoothing=0.1)
i_l1s = l1_loss(a, b, reduction="sum")
i_l1n = l1_loss(a, a, reduction="none")
i_mse = mse_loss(x, b)
"""
MIXED_SPECS = {"p": "pos", "a": "ints:-9:9", "b": "ints:-9:9"}


def cases(Case):
    out = []
    graphs = [("pointwise", POINTWISE, {}), ("indices", INDICES, INDICES_SPECS),
              ("probs", PROBS, PROBS_SPECS), ("bce", BCE, BCE_SPECS)]
    for name, src, specs in graphs:
        for dt in FLOATS:
            out.append(Case("loss_%s_%s" % (name, dt), src.replace("{dt}", dt), inputs=specs,
                            tol="reduction", asan=dt == "f32", group="loss"))
    out.append(Case("loss_mixed", MIXED, inputs=MIXED_SPECS, tol="reduction", asan=True,
                    group="loss"))
    out.append(Case("loss_indices_build", INDICES.replace("{dt}", "f32"), inputs=INDICES_SPECS,
                    tol="reduction", mode="build", group="loss"))
    return out
