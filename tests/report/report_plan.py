#!/usr/bin/python3
"""The arena plan, checked from `tgc report --json`:
  - random graphs (fixed seeds, three precisions): no two values live at one
    step overlap in the arena, every value lies inside it, arena >= lower
    bound, the lower bound and per-step live bytes recomputed;
  - every example: the same invariants, and arena <= 1.10 x lower bound;
  - --fit: the value fits and value + 1 does not (checked by re-running the
    report at both values), on examples and devices of several sizes.
The closing note lists, per example, arena / lower bound.

Usage: report_plan.py --tgc build/tgc [--graphs N]
Last line printed: `report_plan: N passed, M failed`; exit status 1 if M > 0."""

import argparse
import glob
import os
import re

from rtest import EXAMPLES, MODEL_EXAMPLES, Checks, Tgc, check_plan, main_guard, random_graph, write_tmp


def random_graphs(c, tgc, n, tmp):
    for seed in range(1, n + 1):
        src = random_graph(seed, 4 + seed % 50, 3 + seed % 23)
        path = write_tmp(src, tmpdir=tmp)
        for prec in ("f32", "f16", "bf16"):
            rep, rc, err = tgc.report(path, "--precision", prec)
            if not c.check(rep is not None, "random seed %d %s: report" % (seed, prec), "exit %s %s" % (rc, err[-300:])):
                print(src)
                continue
            check_plan(c, rep, "random seed %d %s" % (seed, prec))
        os.unlink(path)


def examples(c, tgc):
    rows = []
    for f in sorted(glob.glob(os.path.join(EXAMPLES, "*.tg"))):
        if os.path.basename(f) in MODEL_EXAMPLES:
            continue
        name = os.path.basename(f)
        for prec in ("f32", "f16"):
            rep, rc, err = tgc.report(f, "--precision", prec)
            if not c.check(rep is not None, "%s %s: report" % (name, prec), err[-300:]):
                continue
            check_plan(c, rep, "%s %s" % (name, prec))
            a = rep["activations"]
            # convolutions' scratch is one region at the arena's tail, outside the slots
            planned = a["arena_bytes"] - a.get("conv_scratch_bytes", 0)
            ratio = planned / a["lower_bound_bytes"] if a["lower_bound_bytes"] else 1.0
            c.check(ratio <= 1.10, "%s %s: arena <= 1.10 x lower bound" % (name, prec), "%.4f" % ratio)
            rows.append((name, prec, a["arena_bytes"], a["lower_bound_bytes"], ratio, a["unplanned_bytes"]))
    return rows


def fit_cases(c, tgc):
    """--fit on each example's first dimension, against a few budgets and
    devices: value fits (peak <= budget) and value + 1 does not."""
    cases = []
    for f in sorted(glob.glob(os.path.join(EXAMPLES, "*.tg"))):
        if os.path.basename(f) in MODEL_EXAMPLES:
            continue
        with open(f) as fh:
            m = re.search(r"^graph\s+\w+\s*\(([^)]*)\)", fh.read(), re.M)
        if not m:
            continue
        for dim in [d.split("=")[0].strip() for d in m.group(1).split(",")]:
            cases.append((f, dim, ["--device", "t4"]))
            cases.append((f, dim, ["--budget", "64MiB"]))
            cases.append((f, dim, ["--budget", "3GB", "--precision", "bf16", "--target", "cpu"]))
    for f, dim, args in cases:
        what = "--fit %s %s %s" % (dim, os.path.basename(f), " ".join(args))
        rep, rc, err = tgc.report(f, "--fit", dim, *args)
        if not c.check(rep is not None, what + ": report", err[-300:]):
            continue
        fit, budget = rep["max_fit"], rep["budget"]["bytes"]
        v = fit["value"]
        if fit["capped"]:
            c.check(v == fit["search_cap"], what + ": capped at the cap")
            continue
        if v >= 1:
            at, _, _ = tgc.report(f, "-D", "%s=%d" % (dim, v), *args)
            c.check(at is not None and at["peak_bytes"] <= budget and at["peak_bytes"] == fit["peak_bytes"],
                    what + ": fits at %d" % v, "peak %s budget %d" % (at and at["peak_bytes"], budget))
        nxt, _, err = tgc.report(f, "-D", "%s=%d" % (dim, v + 1), *args)
        if nxt is not None:
            c.check(nxt["peak_bytes"] > budget and nxt["peak_bytes"] == fit["next_peak_bytes"],
                    what + ": does not fit at %d" % (v + 1), "peak %d budget %d" % (nxt["peak_bytes"], budget))
        else:
            c.check(fit["next_peak_bytes"] is None, what + ": value + 1 does not compile and is reported so")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--graphs", type=int, default=120)
    args = ap.parse_args()
    tgc = Tgc(args.tgc)
    c = Checks("report_plan")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        random_graphs(c, tgc, args.graphs, tmp)
    rows = examples(c, tgc)
    fit_cases(c, tgc)
    print("arena / lower bound per example:")
    for name, prec, arena, lb, ratio, unplanned in rows:
        print("  %-26s %-4s arena %10d  lower bound %10d  = %.4f  (unplanned %d)" % (name, prec, arena, lb, ratio, unplanned))
    return c.finish()


if __name__ == "__main__":
    main_guard(main)
