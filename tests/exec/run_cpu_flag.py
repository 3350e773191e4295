#!/usr/bin/python3
"""`tgc build --cpu`: the names that work, and that a refused name leaves
nothing behind (issue 18, item 2).

Checks:
  - `--cpu help` exits 0 and lists the 64-bit names (x86-64 and the host's
    own), never a 32-bit one (i386, pentium4), which used to abort LLVM;
  - `--cpu native`, `--cpu x86-64` and `--cpu HOST` build executables whose
    outputs equal the default build's, bit for bit (same graph, same inputs;
    only instruction selection differs and the graph is exact in f32: an
    integer-valued sum);
  - refused names (`not-a-cpu`, `i386`, `help` is a listing, not a name)
    exit 2 without creating anything in TMPDIR or at -o.
The error messages themselves are checked by tests/errors/cases/cpu_*.tg.

Usage: run_cpu_flag.py --tgc build/tgc
Last line: `cpu_flag: N passed, M failed`.
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

GRAPH = """graph cpuflag
input x : f32[8, 16]
param w : f32[16, 4] = ones
output y = x @ w + x.sum(dim=-1, keepdim=True)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    args = ap.parse_args()
    tgc = os.path.abspath(args.tgc)
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {name}: {detail}")

    with tempfile.TemporaryDirectory() as d:
        tmpdir = os.path.join(d, "tmp")
        os.mkdir(tmpdir)
        env = dict(os.environ, TMPDIR=tmpdir)
        g = os.path.join(d, "g.tg")
        with open(g, "w") as f:
            f.write(GRAPH)
        x = (np.arange(128, dtype=np.float32).reshape(8, 16) % 7) - 3
        np.save(os.path.join(d, "x.npy"), x)

        def run(argv, **kw):
            return subprocess.run([tgc] + argv, capture_output=True, text=True, env=env,
                                  timeout=300, **kw)

        p = run(["build", g, "-o", os.path.join(d, "unused"), "--cpu", "help"])
        names = [l.strip() for l in p.stdout.splitlines()[1:]]
        check("help exits 0", p.returncode == 0, p.stderr)
        check("help lists x86-64", "x86-64" in names, p.stdout[:300])
        check("help omits 32-bit CPUs", "i386" not in names and "pentium4" not in names,
              [n for n in names if n in ("i386", "pentium4")])
        check("help names the host", "'native' is this machine's" in p.stdout, p.stdout[:200])
        host = p.stdout.split("(")[-1].split(")")[0] if "(" in p.stdout else ""

        outs = {}
        for cpu in [None, "native", "x86-64"] + ([host] if host and host in names else []):
            exe = os.path.join(d, f"exe_{cpu or 'default'}")
            p = run(["build", g, "-o", exe] + (["--cpu", cpu] if cpu else []))
            check(f"build --cpu {cpu}", p.returncode == 0, p.stderr[-500:])
            if p.returncode:
                continue
            od = os.path.join(d, f"out_{cpu or 'default'}")
            os.mkdir(od)
            r = subprocess.run([exe, "--input", f"x={d}/x.npy", "--output-dir", od],
                               capture_output=True, text=True, timeout=60)
            check(f"run --cpu {cpu}", r.returncode == 0, r.stderr)
            if r.returncode == 0:
                outs[cpu] = np.load(os.path.join(od, "y.npy"))
        ref = x @ np.ones((16, 4), np.float32) + x.sum(-1, keepdims=True)
        for cpu, y in outs.items():
            check(f"values --cpu {cpu}", np.array_equal(y, ref), f"{y} vs {ref}")

        for bad in ["not-a-cpu", "i386", ""]:
            exe = os.path.join(d, "refused")
            p = run(["build", g, "-o", exe, "--cpu", bad])
            check(f"--cpu {bad!r} exits 2", p.returncode == 2, (p.returncode, p.stderr))
            check(f"--cpu {bad!r} leaves nothing", not os.listdir(tmpdir) and
                  not [n for n in os.listdir(d) if n.startswith((".refused", "refused"))],
                  (os.listdir(tmpdir), os.listdir(d)))
        check("TMPDIR empty at the end", not os.listdir(tmpdir), os.listdir(tmpdir))

    print(f"cpu_flag: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
