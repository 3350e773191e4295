#!/usr/bin/python3
"""Runs `tgc check` on every examples/*.tg; each must exit 0 with no output on
stdout required. (The oracle suite also compares each example's
`tgc show --json` with PyTorch: cases named example_*.)

Usage: examples_check.py --tgc build/tgc
Last line printed: `examples: N passed, M failed`; exit status 1 if M > 0."""

import argparse
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(ROOT, "examples", "*.tg")))
    if not files:
        print("no examples/*.tg found")
        return 1
    passed = failed = 0
    for f in files:
        try:
            p = subprocess.run([args.tgc, "check", f], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            rc, err = None, "timeout after 60 s"
        if rc == 0:
            passed += 1
        else:
            failed += 1
            print("FAIL tgc check %s: exit %s\n%s" % (os.path.relpath(f, ROOT), rc, err.rstrip()))
    print("examples: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
