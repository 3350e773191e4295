#!/usr/bin/env python3
"""Tests of compiled-program support in libtgcrt, against numpy and torch.

- rt_fake_exe (a hand-written RtProgram whose main is rt_main, see
  rt_fake_exe.c): outputs vs numpy, --print vs torch's str(), the --bench
  line, --random-inputs (determinism, and the documented generator
  recomputed here), --threads, --help; every bad input is exit 1 with the
  name in the message, every bad flag exit 2 with a usage line, and
  corrupted weights/inputs never give a signal.
- rt_probe print: rt_tensor_str vs torch's str() on many tensors.
- rt_probe to-f16: rt_f32_to_f16 vs torch on random floats.
- rt_probe matmul: rt_matmul vs torch.matmul (broadcast batches, every dtype).

Run with /usr/bin/python3 (numpy and torch):
    run_program.py --exe build/tests/runtime/rt_fake_exe --probe build/tests/runtime/rt_probe
"""
import argparse
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

TIMEOUT = 60


class Suite:
    def __init__(self, exe, probe, tmp):
        self.exe, self.probe, self.tmp = exe, probe, tmp
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        return ok

    def run(self, *args, prog=None):
        p = subprocess.run([prog or self.exe, *map(str, args)], capture_output=True, text=True,
                           errors="replace", timeout=TIMEOUT, cwd=self.tmp)
        return p.returncode, p.stdout, p.stderr

    def path(self, name):
        return os.path.join(self.tmp, name)


def clean(err):
    return "Sanitizer" not in err and "runtime error" not in err


def st_file(tensors, header=None):
    """tensors: list of (name, dtype, shape, bytes)."""
    h, data = {}, b""
    for name, dt, shape, raw in tensors:
        h[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    hb = (header if header is not None else json.dumps(h)).encode()
    hb += b" " * ((-len(hb)) % 8)
    return struct.pack("<Q", len(hb)) + hb + data


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


# ------------------------------------------------------------ the generator

M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def draw(key, i, j):
    return mix64((key + (2 * i + j + 1) * 0x9E3779B97F4A7C15) & M64)


def unit(x):
    return (x >> 11) * 2.0**-53


def normal(key, i):
    u1 = 1.0 - unit(draw(key, i, 0))
    u2 = unit(draw(key, i, 1))
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586476925286766559 * u2)


def gen_normal(seed, name, n):
    key = mix64(seed ^ fnv1a64(name))
    return np.array([normal(key, i) for i in range(n)], dtype=np.float64)


def gen_int10(seed, name, n):
    key = mix64(seed ^ fnv1a64(name))
    return np.array([((draw(key, i, 0) >> 32) * 10) >> 32 for i in range(n)], dtype=np.int64)


# ------------------------------------------------------------ the fake program

OUTPUTS = ["y", "h", "pos", "e", "total", "embo", "idx_out", "x_out", "grid"]
DESCS = {"y": "f32[2, 3]", "h": "bf16[2, 3]", "pos": "bool[2, 3]", "e": "f32[3, 2]", "total": "i64[]",
         "embo": "f32[10, 2]", "idx_out": "i64[3]", "x_out": "f32[2, 4]", "grid": "f32[40, 50]"}


def bf16_round(a):
    return torch.from_numpy(np.ascontiguousarray(a, np.float32)).to(torch.bfloat16).to(torch.float32).numpy()


def expected(x, idx, w, b, emb):
    y = (x.astype(np.float64) @ w.astype(np.float64) + b).astype(np.float32)
    e = np.array([emb[i] if 0 <= i < 10 else [0, 0] for i in idx], dtype=np.float32)
    grid = (np.float32(y[0, 0]) * np.arange(40, dtype=np.float32)[:, None]
            - np.arange(50, dtype=np.float32)[None, :] / np.float32(7)).astype(np.float32)
    return {"y": y, "h": bf16_round(y), "pos": y > 0, "e": e, "total": np.array(idx.sum(), np.int64),
            "embo": emb, "idx_out": idx, "x_out": x, "grid": grid}


def load_outputs(d):
    return {n: np.load(os.path.join(d, n + ".npy")) for n in OUTPUTS}


def setup(s):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    idx = np.array([3, 0, 9], np.int64)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    np.save(s.path("x.npy"), x)
    np.save(s.path("idx.npy"), idx)
    write(s.path("w.safetensors"), st_file([("w", "F32", (4, 3), w.tobytes()),
                                             ("unused.extra", "I64", (2,), bytes(16))]))
    emb = gen_normal(3, "emb", 20).astype(np.float32).reshape(10, 2)
    return x, idx, w, emb


def test_run(s, x, idx, w, emb):
    out = s.path("out")
    os.makedirs(out, exist_ok=True)
    code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx.npy",
                       "--output-dir", out)
    s.check("run exits 0 silently", code == 0 and o == "" and e == "", f"exit {code} {o!r} {e!r}")
    got = load_outputs(out)
    want = expected(x, idx, w, np.zeros(3), emb)
    for n in OUTPUTS:
        g, wnt = got[n], want[n]
        dt_ok = g.dtype == (np.float32 if n == "h" else wnt.dtype)
        ok = dt_ok and g.shape == wnt.shape and (np.allclose(g, wnt, rtol=1e-6, atol=1e-6) if g.dtype.kind == "f"
                                                 else np.array_equal(g, wnt))
        s.check(f"output {n}", ok, f"{g.dtype}{g.shape} {g}\n want {wnt.dtype}{wnt.shape} {wnt}")
    s.check("emb initialiser follows the documented generator",
            np.allclose(got["embo"], emb, rtol=1e-6, atol=1e-7), f"{got['embo']} vs {emb}")
    s.check("bf16 output written as float32 holding bf16 values",
            got["h"].dtype == np.float32 and np.array_equal(got["h"], bf16_round(got["y"])), "")
    s.check("no temporary files left", not [f for f in os.listdir(out) if ".tmp" in f], str(os.listdir(out)))

    # Default output dir is ".", and a trailing slash is fine.
    code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx.npy")
    s.check("default output dir", code == 0 and os.path.exists(s.path("y.npy")), f"{code} {e}")
    code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx.npy",
                       "--output-dir", out + "/")
    s.check("output dir with a trailing slash", code == 0, f"{code} {e}")

    # Threads: same results for 1, 2, 0 (all cores), 7.
    for t in ["1", "0", "7"]:
        d = s.path(f"out_t{t}")
        os.makedirs(d, exist_ok=True)
        code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx.npy",
                           "--output-dir", d, "--threads", t)
        ok = code == 0 and all(np.array_equal(load_outputs(d)[n], got[n]) for n in OUTPUTS)
        s.check(f"--threads {t}", ok, f"{code} {e}")

    # An index outside the table: the forward's business, no crash.
    np.save(s.path("idx_big.npy"), np.array([100, -5, 2], np.int64))
    code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx_big.npy",
                       "--output-dir", out)
    s.check("indices outside the table", code == 0, f"{code} {e}")


def expect_print(got_outputs):
    parts = []
    for n in OUTPUTS:
        a = got_outputs[n]
        t = torch.from_numpy(np.array(a, copy=True))
        if n == "h":
            t = t.to(torch.bfloat16)
        parts.append(f"{n}: {DESCS[n]}\n{str(t)}")
    return "\n".join(parts) + "\n"


def test_print_bench(s):
    out = s.path("out_p")
    os.makedirs(out, exist_ok=True)
    code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx.npy",
                       "--output-dir", out, "--print")
    want = expect_print(load_outputs(out))
    s.check("--print matches torch's str()", code == 0 and o == want and e == "",
            f"exit {code} {e}\n--- got\n{o}\n--- want\n{want}")

    code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx.npy",
                       "--output-dir", out, "--bench", "5")
    m = re.fullmatch(r"bench: runs=5 median_us=(\d+\.\d) min_us=(\d+\.\d) max_us=(\d+\.\d)\n", o)
    ok = code == 0 and m is not None and e == ""
    if ok:
        med, lo, hi = map(float, m.groups())
        ok = lo <= med <= hi
    s.check("--bench 5 prints one line", ok, f"exit {code} {o!r} {e!r}")
    code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx.npy",
                       "--output-dir", out, "--bench", "0")
    s.check("--bench 0", code == 0 and o == "bench: runs=0 median_us=0.0 min_us=0.0 max_us=0.0\n", f"{code} {o!r} {e}")
    os.remove(os.path.join(out, "y.npy"))
    code, o, e = s.run("--weights", "w.safetensors", "--input", "x=x.npy", "--input", "idx=idx.npy",
                       "--output-dir", out, "--bench", "3", "--print")
    lines = o.split("\n")
    s.check("--bench with --print: values, then the bench line; outputs written",
            code == 0 and o.startswith(want) and lines[-2].startswith("bench: runs=3 ")
            and os.path.exists(os.path.join(out, "y.npy")), f"{code} {o!r}")

    code, o, e = s.run("--help")
    s.check("--help", code == 0 and o.startswith("usage: rt_fake_exe ") and "idx: i64[3]" in o and e == "",
            f"{code} {o!r} {e!r}")


def test_random_inputs(s, w, emb):
    dirs = []
    for i, seed in enumerate(["42", "42", "43"]):
        d = s.path(f"rand{i}")
        os.makedirs(d, exist_ok=True)
        code, o, e = s.run("--weights", "w.safetensors", "--random-inputs", seed, "--output-dir", d)
        s.check(f"--random-inputs {seed}", code == 0 and o == "" and e == "", f"{code} {e}")
        dirs.append(load_outputs(d))
    s.check("--random-inputs is deterministic",
            all(np.array_equal(dirs[0][n], dirs[1][n]) for n in OUTPUTS), "")
    s.check("--random-inputs depends on the seed", not np.array_equal(dirs[0]["y"], dirs[2]["y"]), "")
    for i, seed in [(0, 42), (2, 43)]:
        idx = dirs[i]["idx_out"]
        x = dirs[i]["x_out"]
        s.check(f"random integer input (seed {seed}) in [0, 10), as documented",
                np.array_equal(idx, gen_int10(seed, "idx", 3)), f"{idx} vs {gen_int10(seed, 'idx', 3)}")
        wx = gen_normal(seed, "x", 8).astype(np.float32).reshape(2, 4)
        s.check(f"random float input (seed {seed}) standard normal, as documented",
                np.allclose(x, wx, rtol=1e-6, atol=1e-7), f"{x} vs {wx}")
        want = expected(x, idx, w, np.zeros(3), emb)
        s.check(f"outputs on random inputs (seed {seed})",
                np.allclose(dirs[i]["y"], want["y"], rtol=1e-6, atol=1e-6)
                and np.array_equal(dirs[i]["e"], want["e"]), "")
    # Given inputs win over random ones.
    d = s.path("rand_mixed")
    os.makedirs(d, exist_ok=True)
    code, o, e = s.run("--weights", "w.safetensors", "--random-inputs", "42", "--input", "x=x.npy",
                       "--output-dir", d)
    got = load_outputs(d)
    s.check("--input with --random-inputs", code == 0 and np.array_equal(got["x_out"], np.load(s.path("x.npy")))
            and np.array_equal(got["idx_out"], dirs[0]["idx_out"]), f"{code} {e}")
    code, o, e = s.run("--weights", "w.safetensors", "--random-inputs", "18446744073709551615", "--output-dir", d)
    s.check("--random-inputs 2^64-1", code == 0, f"{code} {e}")


def expect_fail(s, name, args, needles, rc=1):
    code, o, e = s.run(*args)
    ok = code == rc and all(n in e for n in needles) and o == "" and clean(e)
    if rc == 2:
        ok = ok and "usage: " in e
    s.check(name, ok, f"exit {code}, expected {rc} with {needles}; stderr {e.strip()[:500]!r}")


def test_errors(s):
    base = ["--weights", "w.safetensors"]
    inp = ["--input", "x=x.npy", "--input", "idx=idx.npy"]
    np.save(s.path("x64.npy"), np.zeros((2, 4)))
    np.save(s.path("x42.npy"), np.zeros((4, 2), np.float32))
    with open(s.path("x.npy"), "rb") as f:
        good = f.read()
    write(s.path("xtrunc.npy"), good[:-3])
    expect_fail(s, "missing input", base + ["--input", "x=x.npy"], ["missing input 'idx'", "i64[3]", "--random-inputs"])
    expect_fail(s, "unknown input", base + inp + ["--input", "z=x.npy"], ["unknown input 'z'", "x, idx"])
    expect_fail(s, "duplicate input", base + inp + ["--input", "x=x42.npy"], ["input 'x' is given twice"])
    expect_fail(s, "wrong input dtype", base + ["--input", "x=x64.npy", "--input", "idx=idx.npy"],
                ["input 'x'", "expected f32[2, 4], found f64[2, 4]"])
    expect_fail(s, "wrong input shape", base + ["--input", "x=x42.npy", "--input", "idx=idx.npy"],
                ["input 'x'", "expected f32[2, 4], found f32[4, 2]"])
    expect_fail(s, "truncated input", base + ["--input", "x=xtrunc.npy", "--input", "idx=idx.npy"],
                ["xtrunc.npy", "truncated"])
    expect_fail(s, "missing input file", base + ["--input", "x=nope.npy", "--input", "idx=idx.npy"],
                ["nope.npy", "cannot open"])
    expect_fail(s, "input is a directory", base + ["--input", "x=out", "--input", "idx=idx.npy"], ["out"])

    w = np.ones((4, 3), np.float32).tobytes()
    cases = [
        ("no weights", None, ["no weights given", "missing tensor 'w'", "f32[4, 3]", "no initialiser"]),
        ("weights without w", st_file([("b", "F32", (3,), bytes(12))]), ["missing tensor 'w'", "f32[4, 3]"]),
        ("w of the wrong shape", st_file([("w", "F32", (3, 4), w)]), ["tensor 'w'", "expected f32[4, 3], found f32[3, 4]"]),
        ("w of the wrong rank", st_file([("w", "F32", (12,), w)]), ["tensor 'w'", "found f32[12]"]),
        ("w of an integer dtype", st_file([("w", "I32", (4, 3), w)]), ["tensor 'w'", "found i32[4, 3]"]),
        ("b of the wrong shape", st_file([("w", "F32", (4, 3), w), ("b", "F32", (4,), bytes(16))]),
         ["tensor 'b'", "expected f32[3], found f32[4]"]),
        ("truncated weights", st_file([("w", "F32", (4, 3), w)])[:-7], ["tensor 'w'", "past the end"]),
        ("truncated header", st_file([("w", "F32", (4, 3), w)])[:30], ["past the end"]),
        ("corrupted header", st_file([], header='{"w": {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 48]') + w,
         ["not valid JSON"]),
        ("offsets past the end", st_file([], header='{"w": {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 96]}}') + w,
         ["tensor 'w'", "past the end"]),
        ("unknown dtype", st_file([("w", "F8_E4M3", (4, 3), w[:12])]), ["tensor 'w'", "unknown dtype"]),
        ("empty weights file", b"", ["too short"]),
    ]
    for name, data, needles in cases:
        if data is None:
            expect_fail(s, name, inp, needles)
            continue
        p = write(s.path("bad.safetensors"), data)
        expect_fail(s, name, ["--weights", p] + inp, ["bad.safetensors"] + needles)
    expect_fail(s, "missing weights file", ["--weights", "nope.safetensors"] + inp, ["nope.safetensors", "cannot open"])
    expect_fail(s, "weights is a directory", ["--weights", "out"] + inp, ["not a regular file"])
    # A missing output dir is created with its parents (mkdir -p); one under a file is exit 1.
    code, o, e = s.run(*(base + inp + ["--output-dir", "no/such"]))
    s.check("missing output dir is created", code == 0 and os.path.isfile(s.path("no/such/y.npy")),
            f"exit {code}; stderr {e.strip()[:300]!r}")
    expect_fail(s, "output dir under a file", base + inp + ["--output-dir", "x.npy/sub"],
                ["output directory 'x.npy/sub'", "'x.npy' exists and is not a directory"])
    expect_fail(s, "output dir is a file", base + inp + ["--output-dir", "x.npy"], ["'x.npy' is not a directory"])
    if os.geteuid() != 0:
        ro = s.path("readonly")
        os.makedirs(ro, exist_ok=True)
        os.chmod(ro, 0o500)
        expect_fail(s, "unwritable output dir", base + inp + ["--output-dir", ro], ["not writable"])
        os.chmod(ro, 0o700)

    usage = [
        ("unknown flag", ["--frobnicate"], ["unknown option '--frobnicate'"]),
        ("short unknown flag", ["-x"], ["unknown option '-x'"]),
        ("positional argument", ["foo.npy"], ["unexpected argument 'foo.npy'"]),
        ("missing argument", base + inp + ["--bench"], ["--bench needs an argument"]),
        ("missing --input argument", ["--input"], ["--input needs an argument"]),
        ("non-numeric bench", base + inp + ["--bench", "x"], ["--bench x"]),
        ("negative bench", base + inp + ["--bench", "-1"], ["--bench -1"]),
        ("fractional bench", base + inp + ["--bench", "1.5"], ["--bench 1.5"]),
        ("empty bench", base + inp + ["--bench", ""], ["--bench"]),
        ("bench with a sign", base + inp + ["--bench", "+3"], ["--bench +3"]),
        ("negative threads", base + inp + ["--threads", "-1"], ["--threads -1"]),
        ("too many threads", base + inp + ["--threads", "99999"], ["--threads 99999"]),
        ("non-numeric threads", base + inp + ["--threads", "two"], ["--threads two"]),
        ("negative seed", base + ["--random-inputs", "-5"], ["--random-inputs -5"]),
        ("seed past 2^64", base + ["--random-inputs", "18446744073709551616"], ["--random-inputs"]),
        ("input without =", base + ["--input", "x.npy"], ["expected NAME=FILE.npy"]),
        ("input with an empty name", base + ["--input", "=x.npy"], ["expected NAME=FILE.npy"]),
        ("input with an empty file", base + ["--input", "x="], ["expected NAME=FILE.npy"]),
        ("weights twice", base + base + inp, ["--weights is given twice"]),
        ("bench twice", base + inp + ["--bench", "1", "--bench", "2"], ["--bench is given twice"]),
    ]
    for name, args, needles in usage:
        expect_fail(s, f"bad command line: {name}", args, needles, rc=2)


def test_mutations(s, count):
    """Corrupted weights and inputs: exit 0 or 1, never a signal."""
    rng = random.Random(5)
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    seeds = [("w", st_file([("w", "F32", (4, 3), w.tobytes()), ("b", "F32", (3,), bytes(12))])),
             ("x", open(s.path("x.npy"), "rb").read())]
    bad = 0
    for i in range(count):
        which, seed = seeds[i % 2]
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            op, pos = rng.randrange(3), rng.randrange(len(data))
            if op == 0:
                data[pos] = rng.randrange(256)
            elif op == 1:
                del data[pos:pos + rng.randint(1, 16)]
            else:
                j = data.find(rng.choice([b"2", b"3", b"4", b"[", b"]", b",", b"'", b'"']), pos)
                if j >= 0:
                    data[j] = ord(rng.choice("0123456789[](),:'\" -"))
        p = write(s.path("mut.safetensors" if which == "w" else "mut.npy"), bytes(data))
        args = (["--weights", p, "--input", "x=x.npy"] if which == "w" else
                ["--weights", "w.safetensors", "--input", f"x={p}"])
        code, o, e = s.run(*args, "--input", "idx=idx.npy", "--output-dir", "out")
        if code not in (0, 1) or not clean(e) or (code == 1 and not e.strip()):
            bad += 1
            print(f"FAIL mutation {i}: exit {code}: {e[:300]}")
    s.check(f"{count} corrupted weights/inputs give exit 0 or 1", bad == 0, f"{bad} failures")


# ------------------------------------------------------------ rt_tensor_str

def print_cases():
    rng = np.random.default_rng(0)
    c = [np.array([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]], np.float32), np.float32(3.5).reshape(()),
         np.array(2.0), np.array([1., 2., 3.], np.float32), np.array([1e-5, 1.0], np.float32),
         np.array([1e9, 1.0], np.float32), np.array([1e9, 2e9], np.float32),
         np.array([0., np.inf, -np.inf, np.nan], np.float32), np.array([0., -0.], np.float32),
         np.array([1.5, np.nan, -np.inf], np.float32), np.array([100., 1.], np.float32),
         np.array([1000.5, 1.], np.float32), np.array([1e-4, 1.], np.float32),
         np.array([-1e-4, 0.1], np.float32), rng.standard_normal((4, 5)).astype(np.float32),
         rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 3, 4, 2)),
         rng.standard_normal(40).astype(np.float32), rng.standard_normal(1001).astype(np.float32),
         (rng.standard_normal((40, 30)) * 1e5).astype(np.float32),
         rng.standard_normal((10, 10, 11)).astype(np.float32), rng.standard_normal((3, 400)).astype(np.float32),
         rng.standard_normal((400, 3)).astype(np.float16), rng.integers(-100, 100, (5, 7)),
         rng.integers(-100, 100, 50).astype(np.int32), rng.integers(0, 255, (30, 40)).astype(np.uint8),
         rng.integers(-128, 127, (2, 2)).astype(np.int8), rng.integers(-3000, 3000, (2, 2)).astype(np.int16),
         rng.integers(0, 2, (3, 4)).astype(np.bool_), rng.integers(0, 2, 2000).astype(np.bool_),
         np.zeros((2, 0), np.float32), np.zeros(0, np.int64), np.zeros(0, np.float32),
         np.zeros((3, 0, 2), np.bool_), np.zeros((0, 4), np.float16), np.array(7), np.array(True),
         np.array(5, np.int32), np.arange(12, dtype=np.float32).reshape(3, 4),
         np.arange(5000, dtype=np.float32).reshape(50, 100), np.array([123456789.0, 1.0]),
         np.array([1.0, 1001.0], np.float32), np.array([-5.0, 3.0, 0.0], np.float32),
         np.array([1e30, -1e-30], np.float32), np.full((3, 3), np.nan, np.float32),
         np.array([[1e-8]], np.float32), rng.standard_normal((1, 1, 1, 8)).astype(np.float32),
         rng.standard_normal((7, 1)).astype(np.float32), np.array(np.nan, np.float32), np.array(-np.inf),
         rng.integers(-2**62, 2**62, (3, 9)), np.array([0.00012345, 0.5], np.float32),
         np.array([65504.0, -0.001], np.float16), np.array([[[1.0]]]),
         rng.standard_normal((8, 9, 10)).astype(np.float32), rng.integers(0, 2, (20, 60)).astype(np.bool_),
         np.array([-np.nan, 1.0], np.float32), rng.standard_normal((2, 2000)).astype(np.float32),
         (rng.standard_normal(30) * 1e-6).astype(np.float32), np.array([2.5, 0.5, -1.5], np.float32),
         np.full(9, 1e8, np.float32), np.full(9, 123456.0, np.float32)]
    return [(a, False) for a in c] + [(rng.standard_normal((5, 7)).astype(np.float32), True),
                                      (np.array([1.0, 2.0, 1e10], np.float32), True)]


def test_print(s):
    bad = 0
    for i, (a, bf) in enumerate(print_cases()):
        p = s.path(f"print{i}.npy")
        np.save(p, np.asarray(a))
        code, o, e = s.run("print", p, *(["bf16"] if bf else []), prog=s.probe)
        t = torch.from_numpy(np.array(a, copy=True))
        if bf:
            t = t.to(torch.bfloat16)
        want = str(t) + "\n"
        if code != 0 or o != want:
            bad += 1
            print(f"--- print case {i} {np.asarray(a).dtype}{np.asarray(a).shape}\ngot:\n{o}want:\n{want}{e}")
    s.check(f"rt_tensor_str matches torch's str() on {len(print_cases())} tensors", bad == 0, f"{bad} differ")


# ------------------------------------------------------------ f16, matmul

def test_f16(s):
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    scale = rng.choice([1e-7, 1e-5, 1e-3, 1, 100, 6e4], 100000)
    near = (rng.standard_normal(100000) * scale).astype(np.float32)
    edges = np.array([65504, 65519.99, 65520, 65536, 6.1035156e-05, 5.9604645e-08, 2.9802322e-08,
                      2.9802326e-08, 1e-8, -0.0, 0.0, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    x = np.concatenate([bits, near, edges])
    np.save(s.path("f.npy"), x)
    code, o, e = s.run("to-f16", s.path("f.npy"), s.path("h.npy"), prog=s.probe)
    if not s.check("to-f16 runs", code == 0, e):
        return
    got = np.load(s.path("h.npy")).view(np.uint16)
    want = torch.from_numpy(x).to(torch.float16).view(torch.int16).numpy().view(np.uint16)
    s.check("rt_f32_to_f16 equals torch on 300000 floats (NaNs included)", np.array_equal(got, want),
            f"{int((got != want).sum())} differ, e.g. {x[got != want][:5]}")


def test_matmul(s):
    rng = np.random.default_rng(1)
    bad = []

    def run(a, b, c=None, tol=1e-5, name=""):
        np.save(s.path("ma.npy"), a)
        np.save(s.path("mb.npy"), b)
        args = ["matmul", s.path("ma.npy"), s.path("mb.npy"), s.path("mo.npy")]
        if c is not None:
            np.save(s.path("mc.npy"), c)
            args.append(s.path("mc.npy"))
        code, o, e = s.run(*args, prog=s.probe)
        if code:
            bad.append(f"{name}: exit {code} {e}")
            return
        got = np.load(s.path("mo.npy"))
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        if a.dtype == np.float16:  # torch 1.13 has no CPU f16 matmul: f32, rounded once
            want = (torch.matmul(ta.float(), tb.float()) + (torch.from_numpy(c).float() if c is not None else 0)).half()
        else:
            want = torch.matmul(ta, tb) + (torch.from_numpy(c) if c is not None else 0)
        want = want.numpy()
        ok = got.shape == want.shape and (np.array_equal(got, want) if a.dtype.kind in "iub"
                                          else np.allclose(got, want, rtol=tol, atol=tol))
        if not ok:
            bad.append(f"{name}: {a.dtype} {a.shape} @ {b.shape}")

    shapes = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 4), (4, 1)),
              ((64, 128), (128, 96)), ((7, 0), (0, 3)), ((3, 5, 2), (3, 2, 6)), ((4, 1, 8), (8, 1))]
    for dt in [np.float32, np.float64]:
        for sa, sb in shapes:
            run(rng.standard_normal(sa).astype(dt), rng.standard_normal(sb).astype(dt), name="float")
    for dt in [np.int64, np.int32, np.int16, np.int8, np.uint8]:
        a = rng.integers(-100, 100, (2, 3, 40)).astype(dt)
        b = rng.integers(-100, 100, (40, 5)).astype(dt)
        run(a, b, name="int (wrapping)")
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    run(a, b, rng.standard_normal((3, 5)).astype(np.float32), name="accumulate")
    a = rng.standard_normal((2, 5, 16)).astype(np.float16)
    b = rng.standard_normal((16, 3)).astype(np.float16)
    run(a, b, tol=2e-3, name="f16")
    s.check("rt_matmul equals torch.matmul", not bad, "; ".join(bad))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--mutations", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tgcrt-prog-") as tmp:
        s = Suite(os.path.abspath(args.exe), os.path.abspath(args.probe), tmp)
        x, idx, w, emb = setup(s)
        test_run(s, x, idx, w, emb)
        test_print_bench(s)
        test_random_inputs(s, w, emb)
        test_errors(s)
        test_mutations(s, args.mutations)
        test_print(s)
        test_f16(s)
        test_matmul(s)
    print(f"runtime: {s.passed} passed, {s.failed} failed")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
