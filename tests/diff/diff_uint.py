#!/usr/bin/python3
"""The unsigned dtypes u16, u32 and u64 against numpy.

PyTorch 1.13 has none of them (2.3 has them as limited types), so unlike
diff.py the reference here is numpy 1.24, computed in this script, and the
graphs are written here rather than evaluated by the oracle. One graph per
dtype D covers what the dtype must do (docs/language.md, "Unsigned
integers"):
  - arithmetic wrapping modulo 2^bits (+, -, *, unary -, **, literals);
  - unsigned division and remainder (//, %, div(rounding_mode="trunc"/
    "floor")), x / 0 giving 0 as numpy's integer division does;
  - unsigned comparisons, maximum/minimum, where, clamp, abs (the identity),
    sign, bitwise and/or/not;
  - reductions: sum (i64; u64 keeps u64), amax/amin/argmax/argmin over all
    dims, the last dim and the leading dim (the column kernel);
  - casts to and from f64, f32, i64, i32 (wrapping as numpy's astype) and
    bool, float-to-unsigned truncating toward zero for in-range values and
    through int64 for negative ones (-1.5 -> 2^bits - 1); u64 from 2^63 up
    its own value;
  - promotion with signed and floating operands (numpy's rule for u16/u32/
    u64 with a signed type: u16+i32 -> i32, u32+i32 -> i64, u64+i32 -> f64;
    a float operand wins, PyTorch's rule).
An ONNX model with uint16/32/64 inputs, outputs, initializers (typed
fields and raw_data, u64 values above 2^63), Casts between them, Mod,
ScatterElements' max reduction and arithmetic on constants alone is imported and run too (`tgc run model.onnx`).
Each graph runs through `tgc run` (every output compared exactly with the
reference, dtype included); the u64 graph also through `tgc build` and the
executable; and, where tgc was built with CUDA, each graph is compiled with
`--target cuda --emit cuda` (NVRTC and ptxas accept the kernels; no GPU is
needed or used).

Usage: diff_uint.py --tgc build/tgc [--subset asan] [--keep DIR]. The asan
subset (sanitizer builds) runs the u32 graph through `tgc run` only. Last line
`diff_uint: N passed, M failed`; exit status 1 if M > 0.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np

warnings.filterwarnings("ignore")

TIMEOUT = 300
N = 12


def graph_text(d):
    """The graph for dtype name d ("u16", "u32", "u64")."""
    return """graph g
input a : {d}[{n}]
input b : {d}[{n}]
input f : f64[{n}]
input s : i32[{n}]
input m : {d}[3, 4]
output add = a + b
output sub = a - b
output mul = a * b
output neg = -a
output sq = a ** 2
output lit = a + 7
output litneg = a * -1
output fdiv = a // b
output rem = a % b
output tdiv = div(a, b, rounding_mode="trunc")
output flr = div(a, b, rounding_mode="floor")
output lt = a < b
output le = a <= b
output gt = a > b
output ge = a >= b
output eq = a == b
output ne = a != b
output mx = maximum(a, b)
output mn = minimum(a, b)
output wh = where(a < b, a, b)
output cl = a.clamp(min=3, max=60000)
output ab = a.abs()
output sg = a.sign()
output band = a & b
output bor = a | b
output bnot = ~a
output sm = a.sum()
output amx = a.amax()
output amn = a.amin()
output agx = a.argmax()
output agn = a.argmin()
output sm1 = m.sum(dim=1)
output amx0 = m.amax(dim=0)
output amn0 = m.amin(dim=0)
output agx1 = m.argmax(dim=1)
output agn0 = m.argmin(dim=0)
output tf64 = a.to(f64)
output tf32 = a.to(f32)
output ti64 = a.to(i64)
output ti32 = a.to(i32)
output tb = a.to(bool)
output fromf = f.to({d})
output fromf32 = f.to(f32).to({d})
output fromi = s.to({d})
output mixi = a + s
output mixf = a * f.to(f32)
output mixz = a + b.to(u8)
""".format(d=d, n=N)


NP = {"u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


def inputs(d):
    t = NP[d]
    bits = np.iinfo(t).bits
    top = np.iinfo(t).max
    half = 1 << (bits - 1)
    a = np.array([0, 1, 2, 7, 100, 3000, half - 1, half, half + 5, top - 1, top, 12345], t)
    b = np.array([5, 0, 3, 7, 3, half, 2, half + 1, 2, top, 3, 0], t)
    # Floats: fractions, the top of the range, and negatives (which go
    # through int64, wrapping). 2^63 + 2048 and 1.8e19 are u64 values above
    # int64's range; for u16/u32 the top values stay in range.
    big = [2.0**63 + 2048, 1.8e19] if d == "u64" else [float(top), float(top) - 0.5]
    f = np.array([0.0, 0.75, 1.5, 2.99, 100.5, 65535.0, -0.5, -1.5, -3.0, 40000.25] + big)
    s = np.array([0, 1, -1, -2, 7, 65536, 2**31 - 1, -(2**31), 300, -300, 5, 65535], np.int32)
    m = np.array([[3, top, 0, 9], [top - 1, 2, 1, 9], [4, 4, half, 0]], t)
    return {"a": a, "b": b, "f": f, "s": s, "m": m}


def float_to(x, t):
    """tgc's float -> unsigned cast (docs/language.md): truncation toward
    zero; below 2^63 through int64 (negative values wrap); u64 from 2^63 up
    its own value. numpy's astype for every in-range value."""
    x = np.asarray(x, np.float64)
    out = np.zeros(x.shape, np.uint64)
    lo = x < 2.0**63
    out[lo] = np.trunc(x[lo]).astype(np.int64).view(np.uint64)
    out[~lo] = x[~lo].astype(np.uint64)
    return out.astype(t)


def reference(d, v):
    t = NP[d]
    a, b, f, s, m = v["a"], v["b"], v["f"], v["s"], v["m"]
    zero = t(0)
    safe = np.where(b == 0, t(1), b)
    q = np.where(b == 0, zero, a // safe).astype(t)
    r = np.where(b == 0, zero, a % safe).astype(t)
    i64 = np.int64
    sum_t = np.uint64 if d == "u64" else i64
    mixi_t = {"u16": np.int32, "u32": np.int64, "u64": np.float64}[d]
    ref = {
        "add": a + b,
        "sub": a - b,
        "mul": a * b,
        "neg": (zero - a).astype(t),
        "sq": (a * a).astype(t),
        "lit": (a + t(7)).astype(t),
        "litneg": (zero - a).astype(t),
        "fdiv": q,
        "rem": r,
        "tdiv": q,
        "flr": q,
        "lt": a < b,
        "le": a <= b,
        "gt": a > b,
        "ge": a >= b,
        "eq": a == b,
        "ne": a != b,
        "mx": np.maximum(a, b),
        "mn": np.minimum(a, b),
        "wh": np.where(a < b, a, b),
        "cl": np.clip(a, t(3), t(60000)),
        "ab": a.copy(),
        "sg": (a != 0).astype(t),
        "band": a & b,
        "bor": a | b,
        "bnot": ~a,
        "sm": np.array(a.astype(sum_t).sum(dtype=sum_t), sum_t),
        "amx": np.array(a.max(), t),
        "amn": np.array(a.min(), t),
        "agx": np.array(a.argmax(), i64),
        "agn": np.array(a.argmin(), i64),
        "sm1": m.astype(sum_t).sum(axis=1, dtype=sum_t),
        "amx0": m.max(axis=0),
        "amn0": m.min(axis=0),
        "agx1": m.argmax(axis=1).astype(i64),
        "agn0": m.argmin(axis=0).astype(i64),
        "tf64": a.astype(np.float64),
        "tf32": a.astype(np.float32),
        "ti64": a.astype(i64),
        "ti32": a.astype(np.int32),
        "tb": a != 0,
        "fromf": float_to(f, t),
        "fromf32": float_to(f.astype(np.float32).astype(np.float64), t),
        "fromi": s.astype(t),
        "mixi": (a.astype(mixi_t) + s.astype(mixi_t)).astype(mixi_t),
        "mixz": (a + b.astype(np.uint8).astype(t)).astype(t),
        "mixf": a.astype(np.float32) * f.astype(np.float32),
    }
    return ref


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def compare(d, outdir, ref):
    msgs = []
    for name, want in ref.items():
        path = os.path.join(outdir, name + ".npy")
        if not os.path.exists(path):
            msgs.append("%s %s: no output file" % (d, name))
            continue
        got = np.load(path)
        want = np.asarray(want)
        if got.dtype != want.dtype or got.shape != want.shape:
            msgs.append("%s %s: %s%s, expected %s%s" % (d, name, got.dtype, list(got.shape),
                                                        want.dtype, list(want.shape)))
            continue
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        if bad.size:
            i = int(bad[0])
            msgs.append("%s %s: element %d is %r, expected %r (%d differ)" % (
                d, name, i, got.reshape(-1)[i], want.reshape(-1)[i], bad.size))
    return msgs


def onnx_case(tgc, work):
    """Messages for the ONNX model (empty when it matches), or None when the
    onnx package is missing."""
    try:
        import onnx
        from onnx import TensorProto as T, helper, numpy_helper
    except ImportError:
        return None
    vi = helper.make_tensor_value_info
    c32 = np.array([1, 4000000000, 7, 0], np.uint32)
    c64 = np.array([2**64 - 1, 2**63 + 1, 3, 0], np.uint64)
    c16 = np.array([65535, 1, 2, 3], np.uint16)
    c32b = np.array([2, 1, 7, 5], np.uint32)
    nodes = [
        helper.make_node("Add", ["x", "c32"], ["s"]),
        helper.make_node("Cast", ["s"], ["s64"], to=T.UINT64),
        helper.make_node("Add", ["s64", "c64"], ["y"]),
        helper.make_node("Cast", ["x"], ["x16"], to=T.UINT16),
        helper.make_node("Mul", ["x16", "c16"], ["z"]),
        helper.make_node("Cast", ["y"], ["w"], to=T.FLOAT),
        helper.make_node("Mod", ["y", "c64"], ["r"]),
        helper.make_node("ScatterElements", ["x", "si", "c32"], ["sc"], axis=0,
                         reduction="max"),
        # constants only: what the importer may fold must wrap and compare
        # unsigned (1 - 2 is 2^32 - 1, above 1)
        helper.make_node("Sub", ["c32", "c32b"], ["d"]),
        helper.make_node("Greater", ["d", "c32"], ["above"]),
        helper.make_node("Where", ["above", "x", "d"], ["sel"]),
        helper.make_node("Add", ["x", "d"], ["xd"]),
    ]
    inits = [helper.make_tensor("c32", T.UINT32, [4], c32.tolist()),  # uint64_data
             helper.make_tensor("c64", T.UINT64, [4], c64.tolist()),
             numpy_helper.from_array(c16, "c16"),  # raw_data
             numpy_helper.from_array(np.array([1, 1, 3, 0], np.int64), "si"),
             numpy_helper.from_array(c32b, "c32b")]
    g = helper.make_graph(nodes, "u", [vi("x", T.UINT32, [4])],
                          [vi("y", T.UINT64, [4]), vi("z", T.UINT16, [4]),
                           vi("w", T.FLOAT, [4]), vi("r", T.UINT64, [4]),
                           vi("sc", T.UINT32, [4]), vi("sel", T.UINT32, [4]),
                           vi("xd", T.UINT32, [4])], inits)
    model = os.path.join(work, "u.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), model)
    x = np.array([5, 300000000, 4294967295, 65537], np.uint32)
    np.save(os.path.join(work, "x.npy"), x)
    od = os.path.join(work, "out")
    rc, out, err = run([tgc, "run", model, "--input", "x=" + os.path.join(work, "x.npy"),
                        "--output-dir", od])
    if rc:
        return ["onnx: exit %d: %s" % (rc, (err or out).strip()[-400:])]
    y = (x + c32).astype(np.uint64) + c64
    safe = np.where(c64 == 0, np.uint64(1), c64)
    ref = {"y": y, "z": x.astype(np.uint16) * c16, "w": y.astype(np.float32),
           "r": np.where(c64 == 0, np.uint64(0), y % safe), "sc": x.copy(),
           "sel": np.where((c32 - c32b) > c32, x, c32 - c32b), "xd": x + (c32 - c32b)}
    for i, u in zip([1, 1, 3, 0], c32):  # ScatterElements' max, unsigned
        ref["sc"][i] = max(ref["sc"][i], u)
    return compare("onnx", od, ref)


def cuda_available(tgc, tmp):
    g = os.path.join(tmp, "probe.tg")
    with open(g, "w") as fh:
        fh.write("graph p\ninput x : f32[2]\noutput y = x + 1\n")
    rc, _, _ = run([tgc, "build", g, "--target", "cuda", "-o", os.path.join(tmp, "probe")])
    return rc == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--subset", choices=["full", "asan"], default="full")
    ap.add_argument("--keep")
    args = ap.parse_args()
    tgc = os.path.abspath(args.tgc)
    tmp = tempfile.mkdtemp(prefix="diff_uint.")
    passed, failed = 0, 0
    try:
        asan = args.subset == "asan"
        cuda = not asan and cuda_available(tgc, tmp)
        for d in ("u32",) if asan else ("u16", "u32", "u64"):
            work = os.path.join(tmp, d)
            os.makedirs(work)
            g = os.path.join(work, "g.tg")
            with open(g, "w") as fh:
                fh.write(graph_text(d))
            v = inputs(d)
            in_args = []
            for name, arr in v.items():
                p = os.path.join(work, name + ".npy")
                np.save(p, arr)
                in_args += ["--input", "%s=%s" % (name, p)]
            ref = reference(d, v)
            checks = [("run", [tgc, "run", g] + in_args)]
            if d == "u64":
                exe = os.path.join(work, "g_exe")
                checks.append(("build", [tgc, "build", g, "-o", exe]))
                checks.append(("exe", [exe] + in_args))
            for what, cmd in checks:
                od = os.path.join(work, "out_" + what)
                if what != "build":
                    cmd = cmd + ["--output-dir", od]
                rc, out, err = run(cmd)
                msgs = ["%s %s: exit %d: %s" % (d, what, rc, (err or out).strip()[-400:])] \
                    if rc else []
                if not rc and what != "build":
                    msgs = compare(d, od, ref)
                if what == "build" and not rc:
                    continue
                if msgs:
                    failed += 1
                    print("FAIL %s %s" % (d, what))
                    for s in msgs:
                        print("  " + s)
                else:
                    passed += 1
            if cuda:
                cu = os.path.join(work, "cu")
                rc, out, err = run([tgc, "build", g, "--target", "cuda", "--gpu-arch", "sm_80",
                                    "--emit", "cuda", cu, "-o", os.path.join(work, "g_cuda")])
                if rc:
                    failed += 1
                    print("FAIL %s cuda: exit %d: %s" % (d, rc, (err or out).strip()[-2000:]))
                else:
                    passed += 1
        if not asan:
            work = os.path.join(tmp, "onnx")
            os.makedirs(work)
            msgs = onnx_case(tgc, work)
            if msgs is None:
                print("note: no onnx package; the ONNX model was skipped")
            elif msgs:
                failed += 1
                print("FAIL onnx")
                for s in msgs:
                    print("  " + s)
            else:
                passed += 1
        if not cuda and not asan:
            print("note: tgc has no CUDA target here; the CUDA builds were skipped")
    finally:
        if args.keep:
            shutil.rmtree(args.keep, ignore_errors=True)
            shutil.copytree(tmp, args.keep)
        shutil.rmtree(tmp, ignore_errors=True)
    print("diff_uint: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
