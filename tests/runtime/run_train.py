#!/usr/bin/env python3
"""A training executable's command line (rt_train_main), against numpy.

rt_fake_train is the hand-written training program of train_prog.h
(y = x @ w + b + off, MSE loss, SGD with momentum 0.9 and lr 0.05, written
in its forward) with main = rt_main. Checked here:

- N steps: the losses --log-every prints and the params and state
  --save-weights / --save-state write, against the same update in float64
  (tolerance TOL, relative to 1 + |value|); --output-dir writes the user
  outputs only; data sets of k batches are cycled one batch per step;
- resuming (--weights W --load-state S) gives bit-identical params;
- --steps 0 saves the params as loaded and writes no output;
- --help; every bad command line is exit 2 with a usage line; every bad
  input exit 1 naming it; every file written that is a file read (or
  another written) exit 1 before anything runs, with nothing changed;
- a NaN loss is exit 1 "step S: the loss is nan", with nothing written.

    run_train.py --exe build/tests/runtime/rt_fake_train
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

TIMEOUT = 60
TOL = 1e-5
LR, MU = 0.05, 0.9


class Suite:
    def __init__(self, exe, tmp):
        self.exe, self.tmp = exe, tmp
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        return ok

    def run(self, *args):
        p = subprocess.run([self.exe, *map(str, args)], capture_output=True, text=True,
                           errors="replace", timeout=TIMEOUT, cwd=self.tmp)
        return p.returncode, p.stdout, p.stderr

    def path(self, name):
        return os.path.join(self.tmp, name)


# ------------------------------------------------------------ safetensors

DT = {"F32": np.float32, "F64": np.float64, "I64": np.int64}


def st_read(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + end], DT[e["dtype"]]).reshape(e["shape"])
    return out


def st_write(path, tensors):
    h, data = {}, b""
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[a.dtype]
        h[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [len(data), len(data) + a.nbytes]}
        data += a.tobytes()
    hb = json.dumps(h).encode()
    hb += b" " * ((-len(hb)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + data)
    return path


# ------------------------------------------------------------ the reference

def ref_train(p, xs, ts, steps):
    """p: dict of float64 arrays (w, b, off, wm, bm, step); returns the losses."""
    losses = []
    for s in range(steps):
        x, t = xs[s % len(xs)].astype(np.float64), ts[s % len(ts)].astype(np.float64)
        y = x @ p["w"] + p["b"] + p["off"]
        d = y - t
        losses.append(float((d * d).mean()))
        dy = 2 * d / d.size
        p["wm"] = MU * p["wm"] + x.T @ dy
        p["bm"] = MU * p["bm"] + dy.sum(0)
        p["w"] = p["w"] - LR * p["wm"]
        p["b"] = p["b"] - LR * p["bm"]
        p["step"] += 1
    return losses


def close(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= TOL * (1 + np.abs(b))))


def setup(s):
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
    ts = [(x @ np.array([[2, -1.5], [0, 0], [1, 1]], np.float32) + 0.1 * rng.standard_normal((4, 2))).astype(np.float32)
          for x in xs]
    np.save(s.path("x.npy"), xs[0])
    np.save(s.path("t.npy"), ts[0])
    np.save(s.path("ds_x.npy"), np.concatenate(xs))
    np.save(s.path("ds_t.npy"), np.concatenate(ts))
    w0 = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": np.zeros(2, np.float32),
          "off": np.full(2, 0.25, np.float32)}
    st_write(s.path("w0.safetensors"), w0)
    return xs, ts, w0


def start(w0):
    return {"w": w0["w"].astype(np.float64), "b": w0["b"].astype(np.float64), "off": w0["off"].astype(np.float64),
            "wm": np.zeros((3, 2)), "bm": np.zeros(2), "step": 0}


def parse_log(out):
    lines = [l.split() for l in out.splitlines()]
    if not all(len(l) == 4 and l[0] == "step" and l[2] == "loss" for l in lines):
        return None
    return [(int(l[1]), float(l[3])) for l in lines]


# ------------------------------------------------------------ tests

def test_train(s, xs, ts, w0):
    out = s.path("out")
    code, o, e = s.run("--weights", "w0.safetensors", "--input", "x=x.npy", "--input", "t=t.npy",
                       "--steps", 5, "--save-weights", "w5.safetensors", "--save-state", "s5.safetensors",
                       "--output-dir", out, "--log-every", 2)
    s.check("5 steps exit 0, quiet on stderr", code == 0 and e == "", f"{code} {e!r}")
    p = start(w0)
    losses = ref_train(p, xs[:1], ts[:1], 5)
    log = parse_log(o)
    s.check("--log-every 2 logs steps 2, 4 and the last (5)", log is not None and [n for n, _ in log] == [2, 4, 5],
            repr(o))
    if log:
        s.check("logged losses match float64", all(close(l, losses[n - 1]) for n, l in log),
                f"{log} vs {losses}")
        s.check("losses printed with %.9g", all(l == float(f"{np.float32(l):.9g}") for _, l in log), repr(o))
    w = st_read(s.path("w5.safetensors"))
    s.check("--save-weights holds every param, trained and frozen", sorted(w) == ["b", "off", "w"], str(sorted(w)))
    s.check("trained params match float64", close(w["w"], p["w"]) and close(w["b"], p["b"]),
            f"{w['w']} vs {p['w']}")
    s.check("the frozen param is unchanged", np.array_equal(w["off"], w0["off"]), str(w["off"]))
    st = st_read(s.path("s5.safetensors"))
    s.check("--save-state holds the optimizer state",
            sorted(st) == ["__step", "b.momentum_buffer", "w.momentum_buffer"] and int(st["__step"]) == 5
            and close(st["w.momentum_buffer"], p["wm"]), str(st))
    files = sorted(os.listdir(out))
    s.check("--output-dir writes the user outputs only", files == ["loss.npy", "y.npy"], str(files))
    loss = np.load(os.path.join(out, "loss.npy"))
    s.check("loss.npy is the last step's loss", loss.shape == () and loss.dtype == np.float32
            and close(loss, losses[-1]), str(loss))

    # Resuming: 3 steps, then 2 from the saved weights and state = 5 steps, bit for bit.
    code, o, e = s.run("--weights", "w0.safetensors", "--input", "x=x.npy", "--input", "t=t.npy",
                       "--steps", 3, "--save-weights", "w3.safetensors", "--save-state", "s3.safetensors")
    s.check("3 steps, silent without --log-every", code == 0 and o == "" and e == "", f"{code} {o!r} {e!r}")
    code, o, e = s.run("--weights", "w3.safetensors", "--load-state", "s3.safetensors", "--input", "x=x.npy",
                       "--input", "t=t.npy", "--steps", 2, "--save-weights", "w32.safetensors",
                       "--save-state", "s32.safetensors")
    a, b = st_read(s.path("w32.safetensors")), st_read(s.path("w5.safetensors"))
    sa, sb = st_read(s.path("s32.safetensors")), st_read(s.path("s5.safetensors"))
    s.check("3 + 2 resumed steps equal 5 steps bit for bit",
            code == 0 and all(np.array_equal(a[k], b[k]) for k in b) and all(np.array_equal(sa[k], sb[k]) for k in sb),
            f"{code} {e}")

    # A data set of 3 batches, cycled over 7 steps.
    code, o, e = s.run("--weights", "w0.safetensors", "--input", "x=ds_x.npy", "--input", "t=ds_t.npy",
                       "--steps", 7, "--save-weights", "wd.safetensors", "--log-every", 1)
    p = start(w0)
    losses = ref_train(p, xs, ts, 7)
    log = parse_log(o)
    s.check("a data set of 3 batches: batch s mod 3 at step s",
            code == 0 and log is not None and len(log) == 7 and all(close(l, losses[n - 1]) for n, l in log)
            and close(st_read(s.path("wd.safetensors"))["w"], p["w"]), f"{code} {o!r} {e}")

    # --steps 0: saved as loaded, nothing else.
    out0 = s.path("out0")
    code, o, e = s.run("--weights", "w0.safetensors", "--input", "x=x.npy", "--input", "t=t.npy",
                       "--steps", 0, "--save-weights", "w00.safetensors", "--output-dir", out0, "--log-every", 1)
    w = st_read(s.path("w00.safetensors"))
    s.check("--steps 0 saves the params as loaded, logs and writes nothing else",
            code == 0 and o == "" and all(np.array_equal(w[k], w0[k]) for k in w0) and os.listdir(out0) == [],
            f"{code} {o!r} {e}")

    # /dev/null twice is not "the same file".
    code, o, e = s.run("--input", "x=x.npy", "--input", "t=t.npy", "--steps", 1,
                       "--save-weights", "/dev/null", "--save-state", "/dev/null")
    s.check("/dev/null as both --save-weights and --save-state", code == 0, f"{code} {e}")

    code, o, e = s.run("--help")
    want = ["usage: rt_fake_train ", "--steps N", "optimizer sgd", "loss 'loss'", "x: f32[4, 3]",
            "w: f32[3, 2], trained", "off: f32[2], frozen", "w.momentum_buffer: f32[3, 2]", "y: f32[4, 2]"]
    s.check("--help", code == 0 and all(n in o for n in want) and "w.new" not in o and e == "",
            f"{code} {[n for n in want if n not in o]} {o!r}")


def expect_fail(s, name, args, needles, rc=1, absent=()):
    code, o, e = s.run(*args)
    ok = code == rc and all(n in e for n in needles) and o == ""
    if rc == 2:
        ok = ok and "usage: " in e
    ok = ok and not any(os.path.exists(s.path(f)) for f in absent)
    s.check(name, ok, f"exit {code}, expected {rc} with {needles}; stderr {e.strip()[:400]!r}")


def test_errors(s, xs, ts):
    inp = ["--input", "x=x.npy", "--input", "t=t.npy"]
    base = ["--weights", "w0.safetensors"] + inp
    usage = [
        ("no --steps", base, ["--steps N is required"]),
        ("negative steps", base + ["--steps", "-1"], ["--steps -1"]),
        ("non-numeric steps", base + ["--steps", "x"], ["--steps x"]),
        ("steps twice", base + ["--steps", "1", "--steps", "2"], ["--steps is given twice"]),
        ("--log-every 0", base + ["--steps", "1", "--log-every", "0"], ["--log-every 0"]),
        ("--random-inputs", ["--random-inputs", "1", "--steps", "1"], ["unknown option '--random-inputs'"]),
        ("--print", base + ["--steps", "1", "--print"], ["unknown option '--print'"]),
        ("--bench", base + ["--steps", "1", "--bench", "2"], ["unknown option '--bench'"]),
        ("empty --save-weights", base + ["--steps", "1", "--save-weights", ""], ["--save-weights needs a file"]),
        ("--save-state twice", base + ["--steps", "1", "--save-state", "a", "--save-state", "b"],
         ["--save-state is given twice"]),
        ("missing argument", base + ["--steps"], ["--steps needs an argument"]),
        ("positional argument", base + ["--steps", "1", "w.safetensors"], ["unexpected argument"]),
    ]
    for name, args, needles in usage:
        expect_fail(s, f"bad command line: {name}", args, needles, rc=2)

    np.save(s.path("x42.npy"), np.zeros((4, 2), np.float32))
    np.save(s.path("x10.npy"), np.zeros((10, 3), np.float32))
    np.save(s.path("x64.npy"), np.zeros((4, 3)))
    np.save(s.path("x3d.npy"), np.zeros((1, 4, 3), np.float32))
    steps = ["--steps", "1", "--save-weights", "never.safetensors"]
    bad = [
        ("missing input", ["--input", "x=x.npy"], ["missing input 't' (expected f32[4, 2]): pass --input t=FILE.npy"]),
        ("unknown input", inp + ["--input", "z=x.npy"], ["unknown input 'z'"]),
        ("wrong shape", ["--input", "x=x42.npy", "--input", "t=t.npy"],
         ["input 'x' (x42.npy): expected f32[4, 3], or a data set f32[k*4, 3] of k batches, found f32[4, 2]"]),
        ("data set not a multiple", ["--input", "x=x10.npy", "--input", "t=t.npy"], ["input 'x'", "found f32[10, 3]"]),
        ("extra dimension", ["--input", "x=x3d.npy", "--input", "t=t.npy"], ["input 'x'", "found f32[1, 4, 3]"]),
        ("wrong dtype", ["--input", "x=x64.npy", "--input", "t=t.npy"], ["input 'x'", "found f64[4, 3]"]),
        ("missing input file", ["--input", "x=nope.npy", "--input", "t=t.npy"], ["input 'x'", "nope.npy"]),
        ("--load-state without the state", inp + ["--load-state", "w0.safetensors"],
         ["w0.safetensors: missing tensor 'w.momentum_buffer'"]),
        ("--load-state missing", inp + ["--load-state", "nope.safetensors"], ["nope.safetensors"]),
    ]
    for name, args, needles in bad:
        expect_fail(s, f"bad input: {name}", ["--weights", "w0.safetensors"] + args + steps, needles,
                    absent=["never.safetensors"])

    # Same file: refused before anything runs, every file unchanged.
    os.makedirs(s.path("sf"), exist_ok=True)
    np.save(s.path("sf/loss.npy"), xs[0])
    before = {f: open(s.path(f), "rb").read() for f in ["w0.safetensors", "s5.safetensors", "x.npy", "sf/loss.npy"]}
    same = [
        ("--save-weights is --weights", ["--weights", "w0.safetensors", "--save-weights", "./w0.safetensors"],
         ["the weights (--save-weights) would be written to './w0.safetensors', which is the weights file "
          "'w0.safetensors'; choose another --save-weights"]),
        ("--save-state is --load-state", ["--load-state", "s5.safetensors", "--save-state", "s5.safetensors"],
         ["the optimizer state (--save-state)", "the --load-state file 's5.safetensors'"]),
        ("--save-state is --save-weights (new)", ["--save-weights", "new.st", "--save-state", "./new.st"],
         ["'./new.st', which is also where the weights (--save-weights) would be written"]),
        ("--save-weights is an input", ["--save-weights", "x.npy"], ["the file of input 'x' ('x.npy')"]),
        ("an output is an input", ["--output-dir", "sf", "--input", "x=sf/loss.npy"],
         ["output 'loss' would be written to 'sf/loss.npy', which is the file of input 'x'"]),
    ]
    for name, args, needles in same:
        a = list(args)
        if "--input" not in a:
            a += ["--input", "x=x.npy"]
        a += ["--input", "t=t.npy", "--steps", "1"]
        expect_fail(s, f"same file: {name}", a, needles, absent=["new.st"])
    after = {f: open(s.path(f), "rb").read() for f in before}
    s.check("same file: nothing changed", after == before, "")

    # A NaN loss at step 2 (batch 1 of a data set): nothing written.
    tn = np.concatenate(ts[:2])
    tn[5, 1] = np.nan
    np.save(s.path("tnan.npy"), tn)
    expect_fail(s, "NaN loss", ["--input", "x=ds_x.npy", "--input", "t=tnan.npy", "--steps", "3",
                                "--save-weights", "nan_w.st", "--save-state", "nan_s.st", "--output-dir", "nan_out"],
                ["rt_fake_train: error: step 2: the loss is nan"], absent=["nan_w.st", "nan_s.st", "nan_out/y.npy"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tgcrt-train-") as tmp:
        s = Suite(os.path.abspath(args.exe), tmp)
        xs, ts, w0 = setup(s)
        test_train(s, xs, ts, w0)
        test_errors(s, xs, ts)
    print(f"runtime: {s.passed} passed, {s.failed} failed")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
