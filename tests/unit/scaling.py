#!/usr/bin/python3
"""Input sizes against time: `tgc check` on generated inputs of a size N/4
and N, for the shapes of input that once took quadratic or cubic time:

  onnx_colliding_names  N ONNX node outputs that sanitize to one identifier
                        ("y!", "y#", "y!!"...): each new name was checked
                        against every earlier one, once per suffix tried
  onnx_chain            a chain of N Relu nodes
  tg_params             a .tg with N params (their names' uniqueness)
  tg_dims               a .tg graph declaring N dims
  tg_defs               a .tg with N defs (each looked up by name)

Each case passes when the size-N input is checked (exit 0) within LIMIT_S
and takes at most GROWTH times as long as the N/4 one, plus SLACK_S for a
loaded machine. Linear work grows 4x; the old quadratic paths grew 16x and
took from 40 s to several minutes at these sizes, far past LIMIT_S, so a
slow machine does not make this fail, and a quadratic path does.
The ONNX cases need the onnx package (Debian's python3-onnx); without it
they are left out (printed). Prints one line per case; exits 1 on a failure.

    /usr/bin/python3 tests/unit/scaling.py --tgc build/tgc [-k NAME] [--limit S]
(--limit: LIMIT_S; the sanitizer build, 3 to 4 times slower, passes 60.)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

LIMIT_S = 20.0
GROWTH = 8.0
SLACK_S = 1.5

try:
    from onnx import TensorProto, helper
except ImportError:  # the ONNX cases are left out
    helper = None


def onnx_chain_model(names):
    """Relu nodes in a chain, node k writing names[k]."""
    nodes, prev = [], "x"
    for k, out in enumerate(names):
        nodes.append(helper.make_node("Relu", [prev], [out], name="n%d" % k))
        prev = out
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def colliding_names(n):
    """n distinct names of at most a few characters that all sanitize to "y"."""
    punct, out = "!#$%&*+-:;<=>?@^|~", []
    for k in range(n):
        s = "y"
        while True:
            s += punct[k % len(punct)]
            k //= len(punct)
            if not k:
                break
        out.append(s)
    return out


def tg_params(n):
    lines = ["graph g", "input x : f32[2]"] + ["param p%d : f32[2]" % k for k in range(n)]
    return ("\n".join(lines + ["output y = x + p0", ""])).encode()


def tg_dims(n):
    dims = ", ".join("d%d = 1" % k for k in range(n))
    return ("graph g(%s)\ninput x : f32[d0]\noutput y = relu(x)\n" % dims).encode()


def tg_defs(n):
    defs = "".join("def f%d(a):\n    return a\n" % k for k in range(n))
    return ("graph g\ninput x : f32[2]\n%soutput y = f%d(x)\n" % (defs, n - 1)).encode()


CASES = [  # name, size N, makes the file's bytes for a size, file suffix, needs onnx
    ("onnx_colliding_names", 8000, lambda n: onnx_chain_model(colliding_names(n)), ".onnx", True),
    ("onnx_chain", 80000, lambda n: onnx_chain_model(["t%d" % k for k in range(n)]), ".onnx", True),
    ("tg_params", 80000, tg_params, ".tg", False),
    ("tg_dims", 80000, tg_dims, ".tg", False),
    ("tg_defs", 80000, tg_defs, ".tg", False),
]


def timed_check(tgc, path, limit):
    """Seconds `tgc check path` took, or None (with the reason) when it failed."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([tgc, "check", path], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=limit)
    except subprocess.TimeoutExpired:
        return None, "still running after %.0f s (killed)" % limit
    dt = time.monotonic() - t0
    if p.returncode != 0:
        return None, "exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-400:])
    return dt, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-k", dest="pattern", default="", help="only cases whose name contains this")
    ap.add_argument("--limit", type=float, default=LIMIT_S, help="seconds the size-N input may take")
    a = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="tgc-scaling-") as work:
        for name, n, make, suffix, needs_onnx in CASES:
            if a.pattern not in name:
                continue
            if needs_onnx and helper is None:
                print("%-22s left out: no onnx package" % name)
                continue
            times = []
            for size in (n // 4, n):
                path = os.path.join(work, "%s_%d%s" % (name, size, suffix))
                with open(path, "wb") as f:
                    f.write(make(size))
                dt, why = timed_check(a.tgc, path, a.limit)
                if why:
                    print("%-22s FAIL at size %d: %s" % (name, size, why))
                    failed += 1
                    break
                times.append(dt)
            if len(times) < 2:
                continue
            small, big = times
            ok = big <= GROWTH * small + SLACK_S
            print("%-22s %s: size %d %.2f s, size %d %.2f s (%.1fx for 4x the input; at most %.0fx "
                  "+ %.1f s)" % (name, "ok" if ok else "FAIL", n // 4, small, n, big,
                                 big / max(small, 1e-3), GROWTH, SLACK_S))
            failed += not ok
    print("scaling: %d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
