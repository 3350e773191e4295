#!/usr/bin/python3
"""Loss gradients: tgc's gradients of the loss functions against
torch.autograd (ctest `grad_losses`).

tgc writes no kernel for a loss: each is lowered into primitive ops
(ir/lower_loss.c) and the gradient pass differentiates those. This suite
checks that the result is PyTorch's gradient, for every loss and option:
reductions, class weights, ignore_index (the ignored targets get no
gradient; all ignored: a NaN mean and zero gradients, as PyTorch),
label_smoothing, class-probability targets, K-dim and unbatched inputs,
pos_weight, extreme logits, and gradients with respect to the target where
PyTorch has one (mse, l1, smooth_l1, probabilities,
binary_cross_entropy_with_logits), at the kinks too (input == target for
l1, |input - target| == beta for smooth_l1, logit 0). A reduction "none"
loss is summed against a random cotangent input `g`, so its
vector-Jacobian product is exercised with a random vector rather than
ones.

Each case is a `.tg` graph with a 0-d output `loss`; the logits (and
differentiable targets) are params, class indices and weights are inputs
(PyTorch has no gradient for nll_loss's weight). tgc runs it with
`tgc run FILE --train loss --optimizer none`, which writes OUT/loss.npy and
OUT/NAME.grad.npy per param. The reference is the graph text itself,
evaluated by the oracle's evaluator through the differential suite
(tests/diff/diff.py: materialize draws and writes the inputs and weights,
evaluate runs the graph on them), the params fed as leaves with
requires_grad=True; `loss.backward()` gives each .grad.

f32 cases are differentiated in f64 on the reference side (the f32 values
converted exactly), so the tolerance bounds tgc's f32 error alone.
Tolerances, per element: |got - ref| <= rtol * |ref| + atol * scale, scale
the largest |ref| of that tensor (gradients of a mean are ~1/N and of a
softmax cancel to ~0 over a row, so small elements are judged against
their tensor's size); NaN must meet NaN:
  f64: rtol 1e-10, atol 1e-12 (f64 on both sides, sums in another order)
  f32: rtol 1e-4, atol 2e-5 (a log_softmax, a gather and a sum of a few
       dozen terms in f32 against the exact value)

Usage: test_losses.py --tgc build/tgc [-k SUBSTRING] [--keep DIR] [-v]
Prints one line per failing case, then `grad_losses: N passed, M failed`;
exit status 1 if M > 0, 77 (skipped) without torch.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))

try:
    import numpy as np
    import torch
except ImportError as e:
    print("grad_losses: skipped: %s (needs /usr/bin/python3 with torch)" % e)
    sys.exit(77)

import diff  # noqa: E402

TOLERANCE = {"f64": (1e-10, 1e-12), "f32": (1e-4, 2e-5)}
NP_DTYPE = {"f64": np.float64, "f32": np.float32}
TIMEOUT = 300

# (name, source with {dt}, input specs for diff.gen_tensor). Every param
# is differentiated.
CASES = [
    ("mse_mean", """
param x : {dt}[4, 5]
param y : {dt}[4, 5]
output loss = mse_loss(x, y)
""", {}),
    ("mse_sum_broadcast", """
param x : {dt}[4, 5]
param y : {dt}[5]
output loss = mse_loss(x, y, reduction="sum")
""", {}),
    ("mse_none", """
param x : {dt}[4, 5]
param y : {dt}[4, 5]
input g : {dt}[4, 5]
output loss = (mse_loss(x, y, reduction="none") * g).sum()
""", {}),
    ("l1_mean", """
param x : {dt}[4, 5]
param y : {dt}[4, 5]
output loss = l1_loss(x, y)
""", {}),
    ("l1_none", """
param x : {dt}[4, 5]
param y : {dt}[4, 5]
input g : {dt}[4, 5]
output loss = (l1_loss(x, y, reduction="none") * g).sum()
""", {}),
    ("smooth_l1_mean", """
param x : {dt}[4, 5]
param y : {dt}[4, 5]
output loss = smooth_l1_loss(x, y)
""", {}),
    ("smooth_l1_beta", """
param x : {dt}[4, 5]
param y : {dt}[4, 5]
input g : {dt}[4, 5]
a = smooth_l1_loss(x, y, reduction="sum", beta=0.5)
b = smooth_l1_loss(x, y, reduction="none", beta=2.0)
output loss = a + (b * g).sum()
""", {}),
    ("smooth_l1_beta0", """
param x : {dt}[4, 5]
param y : {dt}[4, 5]
output loss = smooth_l1_loss(x, y, beta=0.0)
""", {}),
    ("pointwise_ties", """
param x : {dt}[5]
param y : {dt}[5]
output loss = l1_loss(x, y) + smooth_l1_loss(x, y, reduction="sum") + mse_loss(x, y)
""", {"x": "vals:1,2,3,-1,0.5", "y": "vals:1,2,2,0,0"}),
    ("ce_mean", """
param x : {dt}[6, 5]
input t : i64[6]
output loss = cross_entropy(x, t)
""", {"t": "vals:0,4,-100,2,1,3"}),
    ("ce_weight", """
param x : {dt}[6, 5]
input t : i64[6]
input w : {dt}[5]
output loss = cross_entropy(x, t, w)
""", {"t": "vals:0,4,-100,2,1,3", "w": "pos"}),
    ("ce_ignore_sum", """
param x : {dt}[6, 5]
input t : i64[6]
input w : {dt}[5]
output loss = cross_entropy(x, t, w, ignore_index=2, reduction="sum")
""", {"t": "vals:0,4,2,2,1,3", "w": "pos"}),
    ("ce_none", """
param x : {dt}[6, 5]
input t : i64[6]
input w : {dt}[5]
input g : {dt}[6]
output loss = (cross_entropy(x, t, w, reduction="none") * g).sum()
""", {"t": "vals:0,4,-100,2,1,3", "w": "pos"}),
    ("ce_smoothing", """
param x : {dt}[6, 5]
input t : i64[6]
output loss = cross_entropy(x, t, label_smoothing=0.1)
""", {"t": "vals:0,4,-100,2,1,3"}),
    ("ce_smoothing_weight", """
param x : {dt}[6, 5]
input t : i64[6]
input w : {dt}[5]
input g : {dt}[6]
a = cross_entropy(x, t, w, label_smoothing=0.25)
b = cross_entropy(x, t, w, reduction="none", label_smoothing=0.3)
output loss = a + (b * g).sum()
""", {"t": "vals:0,4,-100,2,1,3", "w": "pos"}),
    ("ce_kdim", """
param x : {dt}[2, 5, 3, 4]
input t : i64[2, 3, 4]
input w : {dt}[5]
output loss = cross_entropy(x, t, w, ignore_index=1, label_smoothing=0.2)
""", {"t": "vals:0,1,2,3,4,1,2", "w": "pos"}),
    ("ce_3d_none", """
param x : {dt}[2, 5, 3]
input t : i64[2, 3]
input g : {dt}[2, 3]
output loss = (cross_entropy(x, t, reduction="none") * g).sum()
""", {"t": "idx:5"}),
    ("ce_unbatched", """
param x : {dt}[5]
input t : i64[]
input w : {dt}[5]
output loss = cross_entropy(x, t, w, label_smoothing=0.3)
""", {"t": "const:3", "w": "pos"}),
    ("ce_all_ignored", """
param x : {dt}[4, 5]
input t : i64[4]
output loss = cross_entropy(x, t, label_smoothing=0.1) + nll_loss(x, t, reduction="sum")
""", {"t": "const:-100"}),
    ("nll_mean", """
param x : {dt}[6, 5]
input t : i64[6]
output loss = nll_loss(log_softmax(x, dim=1), t)
""", {"t": "vals:0,4,-100,2,1,3"}),
    ("nll_raw_weight_sum", """
param x : {dt}[6, 5]
input t : i64[6]
input w : {dt}[5]
output loss = nll_loss(x, t, w, reduction="sum")
""", {"t": "vals:0,4,-100,2,1,3", "w": "pos"}),
    ("nll_kdim", """
param x : {dt}[2, 5, 3, 4]
input t : i64[2, 3, 4]
input w : {dt}[5]
output loss = nll_loss(x, t, w)
""", {"t": "vals:0,1,2,3,4,1,-100", "w": "pos"}),
    ("probs_mean", """
param x : {dt}[6, 5]
param p : {dt}[6, 5]
output loss = cross_entropy(x, softmax(p, dim=1))
""", {}),
    ("probs_weight_smoothing", """
param x : {dt}[6, 5]
param p : {dt}[6, 5]
input w : {dt}[5]
output loss = cross_entropy(x, p, w, reduction="sum", label_smoothing=0.15)
""", {"p": "pos", "w": "pos"}),
    ("probs_none_kdim", """
param x : {dt}[2, 5, 3, 4]
param p : {dt}[2, 5, 3, 4]
input g : {dt}[2, 3, 4]
output loss = (cross_entropy(x, p, reduction="none") * g).sum()
""", {"p": "pos"}),
    ("probs_unbatched", """
param x : {dt}[5]
param p : {dt}[5]
output loss = cross_entropy(x, p, label_smoothing=0.3)
""", {"p": "pos"}),
    ("bce_mean", """
param x : {dt}[4, 6]
param y : {dt}[4, 6]
output loss = binary_cross_entropy_with_logits(x, sigmoid(y))
""", {}),
    ("bce_weight", """
param x : {dt}[4, 6]
input y : {dt}[4, 6]
input w : {dt}[6]
output loss = binary_cross_entropy_with_logits(x, y, w, reduction="sum")
""", {"y": "bool:0.5", "w": "pos"}),
    ("bce_pos_weight", """
param x : {dt}[4, 6]
param y : {dt}[4, 6]
input pw : {dt}[6]
output loss = binary_cross_entropy_with_logits(x, sigmoid(y), pos_weight=pw)
""", {"pw": "pos"}),
    ("bce_both_none", """
param x : {dt}[4, 6]
input y : {dt}[4, 6]
input w : {dt}[4, 6]
input pw : {dt}[6]
input g : {dt}[4, 6]
a = binary_cross_entropy_with_logits(x, y, w, reduction="none", pos_weight=pw)
output loss = (a * g).sum()
""", {"y": "bool:0.5", "w": "pos", "pw": "pos"}),
    ("bce_extremes", """
param x : {dt}[8]
input y : {dt}[8]
input pw : {dt}[1]
a = binary_cross_entropy_with_logits(x, y, reduction="sum")
b = binary_cross_entropy_with_logits(x, y, pos_weight=pw)
output loss = a + b
""", {"x": "vals:-200,200,0,-30,30,0.001,-60,15", "y": "vals:1,0,0.5,1,0,1,0.25,0",
      "pw": "const:3"}),
]


def widen(src):
    return re.sub(r"(:\s*)f32(\s*\[)", r"\1f64\2", src)


def reference(m, src, wide):
    """(loss, {param: grad}) from torch.autograd on the values in m."""
    feed, leaves = [], {}
    for (kind, name, _), t in zip(m.files, m.feed):
        t = t.detach().clone()
        if wide and t.dtype == torch.float32:
            t = t.to(torch.float64)
        if kind == "param":
            t.requires_grad_(True)
            leaves[name] = t
        feed.append(t)
    loss = diff.evaluate(widen(src) if wide else src, {}, feed)["loss"]
    loss.backward()
    return loss.detach(), {n: t.grad for n, t in leaves.items()}


def compare(what, ref, got, dt):
    exp = ref.detach().to(torch.float64).numpy()
    if got.dtype != NP_DTYPE[dt] or list(got.shape) != list(exp.shape):
        return "%s: %s%s, expected %s%s" % (what, got.dtype, list(got.shape), dt, list(exp.shape))
    g = got.astype(np.float64)
    rtol, atol = TOLERANCE[dt]
    fin = np.isfinite(exp)
    scale = np.max(np.abs(exp[fin])) if fin.any() else 0.0
    allowed = rtol * np.abs(exp) + atol * (scale if scale > 0 else 1.0)
    err = np.where(fin & np.isfinite(g), np.abs(g - exp), np.inf)
    err = np.where(~fin & ((np.isnan(exp) & np.isnan(g)) | (exp == g)), 0.0, err)
    bad = err > allowed
    if not bad.any():
        return None
    i = np.unravel_index(int(np.argmax(np.where(bad, err / allowed, -1))), g.shape)
    return "%s: %d of %d elements differ; worst at %s: got %r, expected %r (allowed %.3g)" % (
        what, int(bad.sum()), g.size, [int(k) for k in i], g[i].item(), exp[i].item(), allowed[i])


def run_case(tgc, name, src, specs, dt, workdir):
    """A list of failure messages (empty: pass)."""
    case = diff.DiffCase(name, src.replace("{dt}", dt), inputs=specs, add_outputs=False)
    m = diff.materialize(case, workdir)
    out = os.path.join(m.dir, "out")
    cmd = [tgc, "run", m.tg, "--train", "loss", "--optimizer", "none", "--output-dir", out]
    cmd += m.in_args + (["--weights", m.wpath] if m.wpath else [])
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return ["tgc run timed out"]
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().replace("\n", " | ")
        return ["tgc run exited %d: %s" % (p.returncode, err[:800])]
    loss, grads = reference(m, m.src, dt == "f32")
    msgs = []
    files = {"loss": loss}
    files.update({"%s.grad" % n: g for n, g in grads.items()})
    for what, ref in files.items():
        path = os.path.join(out, what + ".npy")
        if not os.path.exists(path):
            msgs.append("%s.npy: not written" % what)
            continue
        r = compare(what, ref, np.load(path), dt)
        if r:
            msgs.append(r)
    extra = sorted(set(f[:-4] for f in os.listdir(out)) - set(files))
    if extra:
        msgs.append("unexpected files: %s" % ", ".join(extra))
    return msgs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-k", dest="pattern")
    ap.add_argument("--keep", help="keep each case's files here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    workdir = args.keep or tempfile.mkdtemp(prefix="tgc-grad-losses-")
    passed = failed = 0
    try:
        for name, src, specs in CASES:
            for dt in ("f32", "f64"):
                full = "%s_%s" % (name, dt)
                if args.pattern and args.pattern not in full:
                    continue
                try:
                    msgs = run_case(args.tgc, full, src, specs, dt, workdir)
                except Exception as e:  # a harness error fails the case, not the suite
                    msgs = ["harness error: %s: %s" % (type(e).__name__, e)]
                if msgs:
                    failed += 1
                    print("FAIL %s: %s" % (full, msgs[0]))
                    for msg in msgs[1:] if args.verbose else []:
                        print("     %s" % msg)
                else:
                    passed += 1
                    if args.verbose:
                        print("ok   %s" % full)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print("grad_losses: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
