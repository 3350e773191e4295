#!/usr/bin/env python3
"""Runs the training bundle that train_prepare.py made (README.md here,
"Training"): each case's executables in order, in the bundle's folder,
then its saved weights against the PyTorch references shipped with it
(max |got - want| <= rtol * max|want| + atol, per tensor) and the pairs of
files that must be equal bit for bit (a resumed run against an
uninterrupted one). Prints `ok`/`FAIL` per check and
`train-check: N passed, M failed`; exit 1 on any failure.

Usage: train_check.py --dir BUNDLE [--expect-no-driver] [-k SUBSTRING]
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

import tensorio


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("-k", default="")
    ap.add_argument("--expect-no-driver", action="store_true",
                    help="no GPU here: every executable must fail saying so (exit 1)")
    args = ap.parse_args()
    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    passed, failed = 0, []

    def check(cond, what):
        nonlocal passed
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if cond:
            passed += 1
        else:
            failed.append(what)

    for case in manifest["cases"]:
        name = case["name"]
        if args.k not in name:
            continue
        ok = True
        for run in case["runs"]:
            cmd = [os.path.join(args.dir, run[0])] + run[1:]
            p = subprocess.run(cmd, cwd=args.dir, capture_output=True, text=True)
            if args.expect_no_driver:
                check(p.returncode == 1 and "CUDA driver" in p.stderr,
                      "%s: exits 1 naming the missing driver (%d: %s)" % (
                          name, p.returncode, p.stderr.strip()[:160]))
                ok = False
                break
            if p.returncode:
                check(False, "%s: %s exited %d: %s" % (name, " ".join(run), p.returncode,
                                                       p.stderr.strip()[-600:]))
                ok = False
                break
        if not ok:
            continue
        for c in case["compare"]:
            path = os.path.join(args.dir, c["file"])
            if path.endswith(".npy"):  # an inference output: {its name: the array}
                got = {os.path.basename(path)[:-4]: np.load(path, allow_pickle=False)}
            else:
                got = tensorio.read_safetensors(path)
            want = tensorio.read_safetensors(os.path.join(args.dir, c["expected"]))
            for k in sorted(want):
                w = np.asarray(tensorio.to_numpy(want[k]), dtype=np.float64)
                if k not in got:
                    check(False, "%s: %s lacks %s" % (name, c["file"], k))
                    continue
                g = got[k] if isinstance(got[k], np.ndarray) else tensorio.to_numpy(got[k])
                g = np.asarray(g, dtype=np.float64)
                scale = max(float(np.abs(w).max()) if w.size else 0.0, 1e-30)
                err = float(np.abs(g - w).max()) if w.size and g.shape == w.shape else float("inf")
                check(err <= c["rtol"] * scale + c["atol"],
                      "%s: %s: max |tgc - torch| = %.3g (scale %.3g, allowed %g * scale + %g: %s)"
                      % (name, k, err, scale, c["rtol"], c["atol"], c["why"]))
        for a, b in case["equal"]:
            ta = tensorio.read_safetensors(os.path.join(args.dir, a))
            tb = tensorio.read_safetensors(os.path.join(args.dir, b))
            same = sorted(ta) == sorted(tb) and all(
                np.array_equal(tensorio.to_numpy(ta[k]), tensorio.to_numpy(tb[k])) for k in ta)
            check(same, "%s: %s == %s bit for bit" % (name, a, b))
    print("train-check: %d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
