#!/usr/bin/env python3
"""File tests of libtgcrt through rt_probe (see rt_probe.c).

Writes .npy files with numpy (every dtype tgc has, format versions 1.0, 2.0
and 3.0) and safetensors files by hand (8-byte length, JSON, data), runs
rt_probe on them and checks that the runtime read exactly the bytes numpy /
torch hold (an FNV-1a hash of them), that what it writes numpy reads back
(byte-identical to np.save), and that every malformed file is exit 1 with a
message naming the file (and the tensor), never a crash. Ends with a few
hundred randomly corrupted files, which must give exit 0 or 1 only.

Run with /usr/bin/python3 (numpy and torch):
    run_runtime.py --probe build/tests/runtime/rt_probe
"""
import argparse
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

TIMEOUT = 60


class Suite:
    def __init__(self, probe, tmp):
        self.probe, self.tmp = probe, tmp
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        return ok

    def run(self, *args):
        p = subprocess.run([self.probe, *map(str, args)], capture_output=True, text=True,
                           errors="replace", timeout=TIMEOUT)
        return p.returncode, p.stdout, p.stderr

    def path(self, name):
        return os.path.join(self.tmp, name)


def fnv1a(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


NP_TO_TGC = {"float64": "f64", "float32": "f32", "float16": "f16", "int64": "i64", "int32": "i32",
             "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool"}


def expect_line(name, dtype, shape, data):
    shape_s = "[" + ", ".join(str(d) for d in shape) + "]"
    prefix = f"{name} " if name is not None else ""
    return f"{prefix}dtype={dtype} shape={shape_s} bytes={len(data)} fnv={fnv1a(data):016x}"


def sample(dtype, shape, rng):
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_).reshape(shape)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True).reshape(shape)
    a = (rng.standard_normal(n) * 100).astype(dtype)
    if n >= 4:
        a[:4] = [np.inf, -np.inf, np.nan, -0.0]
    return a.reshape(shape)


def npy_bytes(a, version=None):
    f = io.BytesIO()
    if version is None:
        np.save(f, a)
    else:
        np.lib.format.write_array(f, a, version=version)
    return f.getvalue()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def expect_error(s, name, args, needles, rc=1):
    """The probe must exit rc (1: the input is wrong) with every needle in
    its message, and nothing on stdout."""
    code, out, err = s.run(*args)
    msg = err.strip()
    ok = code == rc and all(n in msg for n in needles) and "Sanitizer" not in err and "runtime error" not in err
    s.check(name, ok, f"exit {code}, expected {rc} with {needles}; stderr: {msg[:400]!r}")


# ---------------------------------------------------------------- .npy reading

NPY_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_]
SHAPES = [(), (0,), (7,), (2, 3), (2, 0, 3), (1, 2, 3, 4)]


def test_npy_read(s):
    rng = np.random.default_rng(1)
    for dt in NPY_DTYPES:
        for shape in SHAPES:
            a = sample(dt, shape, rng)
            want = expect_line(None, NP_TO_TGC[np.dtype(dt).name], shape, a.tobytes())
            for version in [(1, 0), (2, 0), (3, 0)]:
                p = write(s.path(f"r_{np.dtype(dt).name}_{len(shape)}_{version[0]}.npy"), npy_bytes(a, version))
                modes = ["npy", "npy-mem"] if version == (1, 0) else ["npy"]
                for mode in modes:
                    code, out, err = s.run(mode, p)
                    s.check(f"npy read {np.dtype(dt).name}{list(shape)} v{version} {mode}",
                            code == 0 and out.strip() == want, f"exit {code}\n got  {out.strip()}\n want {want}\n{err}")
    # Headers numpy does not write but that are valid: double quotes, odd
    # spacing, no trailing comma, a version 2.0 header of any length.
    a = np.arange(6, dtype="<i4").reshape(2, 3)
    for header in ['{"descr": "<i4", "fortran_order": False, "shape": (2, 3)}',
                   "{ 'shape':(2,3) ,'fortran_order' :False,'descr':'<i4' ,}",
                   "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }"]:
        p = write(s.path("hdr.npy"), raw_npy(header, a.tobytes()))
        code, out, err = s.run("npy", p)
        s.check(f"npy header {header!r}", code == 0 and out.strip() == expect_line(None, "i32", (2, 3), a.tobytes()),
                f"exit {code} {out} {err}")
    # A 1-byte type may carry any byte-order mark.
    p = write(s.path("i1.npy"), raw_npy("{'descr': '<i1', 'fortran_order': False, 'shape': (3,), }", b"\x01\xff\x02"))
    code, out, err = s.run("npy", p)
    s.check("npy '<i1'", code == 0 and out.strip() == expect_line(None, "i8", (3,), b"\x01\xff\x02"), f"{code} {out} {err}")
    # b1 bytes other than 0 and 1 read as True, as numpy reads them.
    raw = bytes([0, 1, 2, 255])
    p = write(s.path("b1.npy"), raw_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", raw))
    code, out, err = s.run("npy", p)
    s.check("npy bool normalised", code == 0 and out.strip() == expect_line(None, "bool", (4,), bytes([0, 1, 1, 1])),
            f"{code} {out} {err}")


def raw_npy(header, data, version=(1, 0), hlen=None):
    h = header.encode("latin1")
    pre = 10 if version[0] == 1 else 12
    pad = (-(pre + len(h) + 1)) % 64
    h = h + b" " * pad + b"\n"
    n = len(h) if hlen is None else hlen
    if version[0] == 1:
        lenb = struct.pack("<H", n)
    else:
        lenb = struct.pack("<I", n)
    return b"\x93NUMPY" + bytes(version) + lenb + h + data


def test_npy_errors(s):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    good = npy_bytes(a)
    hdr = lambda d, shape="(2, 3)", fo="False": f"{{'descr': '{d}', 'fortran_order': {fo}, 'shape': {shape}, }}"
    cases = [
        ("truncated data", good[:-5], ["truncated", "header says 24 bytes of data", "file has 19"]),
        ("trailing bytes", good + b"xyz", ["trailing bytes"]),
        ("bad magic", b"\x93NUMPZ" + good[6:], ["not an .npy file", "magic"]),
        ("text file", b"hello world, this is not numpy\n", ["not an .npy file"]),
        ("empty file", b"", ["not an .npy file"]),
        ("magic only", good[:6], ["truncated"]),
        ("no header length", good[:9], ["truncated", "header length"]),
        ("header length past EOF", good[:8] + struct.pack("<H", 60000) + good[10:], ["header length is 60000", "only"]),
        ("v2 header length past EOF", raw_npy(hdr("<f4"), a.tobytes(), (2, 0), hlen=0xFFFFFFF0),
         ["larger than"]),
        ("version 4.0", good[:6] + b"\x04\x00" + good[8:], ["version 4.0", "expected 1.0, 2.0 or 3.0"]),
        ("version 1.1", good[:6] + b"\x01\x01" + good[8:], ["version 1.1"]),
        ("fortran order", npy_bytes(np.asfortranarray(a)), ["Fortran"]),
        ("fortran order 1-d", raw_npy(hdr("<f4", "(6,)", "True"), a.tobytes()), ["Fortran"]),
        ("big-endian", npy_bytes(a.astype(">f4")), ["big-endian", "'>f4'", "'<f4'"]),
        ("big-endian i8", npy_bytes(np.arange(3, dtype=">i8")), ["big-endian"]),
        ("native-order mark", raw_npy(hdr("=f4"), a.tobytes()), ["byte order"]),
        ("uint16 big-endian", npy_bytes(np.arange(3, dtype=">u2")), ["big-endian", "'>u2'", "'<u2'"]),
        ("complex", npy_bytes(np.zeros(2, np.complex64)), ["unsupported dtype"]),
        ("unicode", npy_bytes(np.array(["ab", "cd"])), ["unsupported dtype"]),
        ("structured", npy_bytes(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])), ["structured"]),
        ("shape > data", raw_npy(hdr("<f4", "(4, 3)"), a.tobytes()), ["truncated", "header says 48 bytes", "file has 24"]),
        ("huge shape", raw_npy(hdr("<f4", "(4611686018427387904, 4)"), a.tobytes()), ["overflows"]),
        ("dimension overflow", raw_npy(hdr("<f4", "(99999999999999999999999,)"), a.tobytes()), ["too large"]),
        ("negative dim", raw_npy(hdr("<f4", "(-2, 3)"), a.tobytes()), ["negative dimension"]),
        ("shape not a tuple", raw_npy(hdr("<f4", "(6)"), a.tobytes()), ["not a tuple"]),
        ("shape a list", raw_npy(hdr("<f4", "[2, 3]"), a.tobytes()), ["shape tuple"]),
        ("33 dims", raw_npy(hdr("<f4", "(" + "1, " * 33 + ")"), a.tobytes()[:4]), ["more than 32 dimensions"]),
        ("missing key", raw_npy("{'descr': '<f4', 'shape': (2, 3), }", a.tobytes()), ["'fortran_order' is missing"]),
        ("extra key", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", a.tobytes()),
         ["unexpected key 'x'"]),
        ("duplicate key", raw_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
                                  a.tobytes()), ["appears twice"]),
        ("not a dict", raw_npy("[1, 2, 3]", a.tobytes()), ["expected '{'"]),
        ("unterminated dict", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", a.tobytes()),
         ["bad .npy header"]),
        ("garbage after dict", raw_npy(hdr("<f4") + " junk", a.tobytes()), ["only padding"]),
        ("unquoted descr", raw_npy("{'descr': f4, 'fortran_order': False, 'shape': (2, 3)}", a.tobytes()),
         ["quoted dtype"]),
        ("fortran_order not bool", raw_npy(hdr("<f4", fo="0"), a.tobytes()), ["True or False"]),
        ("missing colon", raw_npy("{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}", a.tobytes()),
         ["':'"]),
        ("binary header", raw_npy("{'descr': '\x00\x01\xfe', 'fortran_order': False, 'shape': (2, 3)}", a.tobytes()),
         ["unsupported dtype", "\\x00"]),
    ]
    for name, data, needles in cases:
        p = write(s.path("bad_" + name.replace(" ", "_").replace(">", "gt") + ".npy"), data)
        for mode in ["npy", "npy-mem"]:
            expect_error(s, f"npy error: {name} ({mode})", [mode, p], [os.path.basename(p)] + needles)
    expect_error(s, "npy missing file", ["npy", s.path("nope.npy")], ["nope.npy", "cannot open"])
    expect_error(s, "npy directory", ["npy", s.tmp], ["not a regular file"])


# ------------------------------------------------------------ inputs and bf16

def bf16_bits(a):
    """torch's bf16 bits for a, except that every NaN is 0x7fc0 (c10's scalar
    rounding; torch's vectorised path writes 0xffff, another NaN)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = torch.from_numpy(a).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).copy()
    b[np.isnan(a)] = 0x7FC0
    return b.tobytes()


def bf16_test_values():
    # Ties in both directions, values just off ties, subnormals, overflow to
    # infinity, NaNs with payloads, signed zeros.
    bits = [0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF,
            0x00008000, 0x00018000, 0x80000001, 0x7FC00001, 0xFF800001, 0x7F800001, 0x80000000, 0x00000000,
            0x7F800000, 0xFF800000, 0x3F800000, 0xC0490FDB]
    rng = np.random.default_rng(7)
    more = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([np.array(bits, dtype=np.uint32), more]).view(np.float32)


def test_inputs(s):
    vals = bf16_test_values()
    a = vals.reshape(-1, 1)
    p = write(s.path("in_f32.npy"), npy_bytes(a))
    shape = list(a.shape)
    desc = lambda dt, sh=shape: f"{dt}[{','.join(map(str, sh))}]"
    code, out, err = s.run("input", p, desc("bf16"))
    want = expect_line(None, "bf16", a.shape, bf16_bits(a))
    s.check("bf16 input rounds to nearest even like torch", code == 0 and out.strip() == want,
            f"{code}\n got  {out.strip()}\n want {want}\n{err}")
    code, out, err = s.run("input", p, desc("f32"))
    s.check("f32 input", code == 0 and out.strip() == expect_line(None, "f32", a.shape, a.tobytes()), f"{code} {out} {err}")
    # Versions 2.0 and 3.0 inputs too.
    for v in [(2, 0), (3, 0)]:
        q = write(s.path(f"in_v{v[0]}.npy"), npy_bytes(a, v))
        code, out, err = s.run("input", q, desc("bf16"))
        s.check(f"bf16 input v{v}", code == 0 and out.strip() == want, f"{code} {out} {err}")
    base = os.path.basename(p)
    expect_error(s, "input dtype mismatch", ["input", p, desc("f64")],
                 [f"input 'x' ({p})", f"expected f64[{shape[0]}, 1], found f32[{shape[0]}, 1]"])
    expect_error(s, "input shape mismatch", ["input", p, desc("f32", [shape[0], 2])],
                 [base, f"expected f32[{shape[0]}, 2], found f32[{shape[0]}, 1]"])
    q = write(s.path("in_f64.npy"), npy_bytes(np.zeros((2, 3))))
    expect_error(s, "bf16 input from f64", ["input", q, "bf16[2,3]"],
                 ["input 'x'", "expected bf16[2, 3] as a float32 array, found f64[2, 3]"])
    q = write(s.path("in_trunc.npy"), npy_bytes(np.zeros((2, 3), np.float32))[:-1])
    expect_error(s, "input truncated", ["input", q, "f32[2,3]"], ["in_trunc.npy", "truncated"])
    q = write(s.path("in_bool.npy"), raw_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b"\x00\x07\x01"))
    code, out, err = s.run("input", q, "bool[3]")
    s.check("bool input normalised", code == 0 and out.strip() == expect_line(None, "bool", (3,), b"\x00\x01\x01"),
            f"{code} {out} {err}")


# ---------------------------------------------------------------- .npy writing

def test_npy_write(s):
    rng = np.random.default_rng(2)
    outdir = s.path("out")
    os.makedirs(outdir, exist_ok=True)
    for dt in NPY_DTYPES:
        for shape in SHAPES + [(3, 1, 1, 1, 1, 1, 1, 2), (12345, 0)]:
            a = sample(dt, shape, rng)
            src = write(s.path("w_src.npy"), npy_bytes(a, (2, 0)))
            dst = os.path.join(outdir, f"w_{np.dtype(dt).name}_{len(shape)}.npy")
            code, out, err = s.run("copy", src, dst)
            if not s.check(f"npy write {np.dtype(dt).name}{list(shape)}", code == 0, f"exit {code} {err}"):
                continue
            with open(dst, "rb") as f:
                got = f.read()
            s.check(f"npy write {np.dtype(dt).name}{list(shape)} is np.save's bytes", got == npy_bytes(a),
                    f"\n got  {got[:128]!r}\n want {npy_bytes(a)[:128]!r}")
            b = np.load(dst)
            s.check(f"npy write {np.dtype(dt).name}{list(shape)} loads back",
                    b.dtype == a.dtype and b.shape == a.shape and b.tobytes() == a.tobytes(), "values differ")
    # bf16 outputs are written as float32: torch's bf16 values, widened.
    vals = bf16_test_values()
    src = write(s.path("w_bf16_src.npy"), npy_bytes(vals))
    dst = os.path.join(outdir, "w_bf16.npy")
    code, out, err = s.run("write-bf16", src, dst)
    if s.check("npy write bf16", code == 0, f"exit {code} {err}"):
        b = np.load(dst)
        want = (np.frombuffer(bf16_bits(vals), dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        s.check("npy write bf16 as float32", b.dtype == np.float32 and b.tobytes() == want.tobytes(), "values differ")
        tw = torch.from_numpy(vals).to(torch.bfloat16).to(torch.float32).numpy()
        s.check("npy write bf16 equals torch's values", np.array_equal(b, tw, equal_nan=True), "values differ")
    # Overwriting replaces the file whole; no temporary file is left behind.
    small = write(s.path("w_small.npy"), npy_bytes(np.arange(3, dtype=np.int64)))
    code, _, err = s.run("copy", small, dst)
    s.check("npy overwrite", code == 0 and np.array_equal(np.load(dst), np.arange(3)), f"{code} {err}")
    leftovers = [f for f in os.listdir(outdir) if ".tmp" in f or ".tgc-" in f]
    s.check("npy write leaves no temporary files", not leftovers, str(leftovers))
    expect_error(s, "npy write into a missing directory", ["copy", small, s.path("no/such/dir/o.npy")],
                 ["o.npy", "cannot create"])
    expect_error(s, "npy write over a directory", ["copy", small, outdir], ["out", "cannot write"])
    leftovers = [f for f in os.listdir(s.tmp) if ".tmp" in f or ".tgc-" in f]
    s.check("failed npy write leaves no temporary files", not leftovers, str(leftovers))


# ---------------------------------------------------------------- safetensors

ST_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
             "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
ST_TO_TGC = {"F64": "f64", "F32": "f32", "F16": "f16", "BF16": "bf16", "I64": "i64", "I32": "i32",
             "I16": "i16", "I8": "i8", "U8": "u8", "BOOL": "bool"}


def st_file(tensors, metadata=None, header=None, align=8, extra=b""):
    """tensors: list of (name, dtype, shape, bytes); offsets in this order."""
    h, data = {}, b""
    if metadata is not None:
        h["__metadata__"] = metadata
    for name, dt, shape, raw in tensors:
        h[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    hb = (header if header is not None else json.dumps(h)).encode("utf-8") if not isinstance(header, bytes) else header
    hb += b" " * ((-len(hb)) % align)
    return struct.pack("<Q", len(hb)) + hb + data + extra


def st_header(entries, data_len, metadata=None):
    """A file from a raw entries dict, with data_len zero bytes of data."""
    h = dict(entries)
    if metadata is not None:
        h["__metadata__"] = metadata
    hb = json.dumps(h).encode()
    return struct.pack("<Q", len(hb)) + hb + bytes(data_len)


def test_st_read(s):
    rng = np.random.default_rng(3)
    tensors = []
    shapes = [(2, 3), (), (0,), (5,), (2, 0, 4), (1, 1, 3)]
    for i, (st_dt, np_dt) in enumerate(ST_DTYPES.items()):
        shape = shapes[i % len(shapes)]
        tensors.append((f"layer.{i}.{st_dt.lower()}", st_dt, shape, sample(np_dt, shape, rng).tobytes()))
    bf = torch.randn(4, 5).to(torch.bfloat16)
    tensors.append(("bf16.weight", "BF16", (4, 5), bf.view(torch.int16).numpy().tobytes()))
    tensors.append(("unicode.ünï", "F32", (3,), np.arange(3, dtype=np.float32).tobytes()))
    # Not in offset order in the header: tiling is checked on sorted ranges.
    tensors.reverse()
    p = write(s.path("model.safetensors"), st_file(tensors, metadata={"format": "pt", "note": "ignored"}))
    want = [expect_line(n, ST_TO_TGC[dt], sh, raw) for n, dt, sh, raw in tensors]
    for mode in ["st", "st-mem"]:
        code, out, err = s.run(mode, p)
        s.check(f"safetensors read ({mode})", code == 0 and out.strip().split("\n") == want,
                f"exit {code}\n got  {out}\n want {want}\n{err}")
    for n, dt, sh, raw in tensors[:3]:
        code, out, err = s.run("st", p, n)
        s.check(f"safetensors lookup {n}", code == 0 and out.strip() == expect_line(n, ST_TO_TGC[dt], sh, raw),
                f"{code} {out} {err}")
    expect_error(s, "safetensors lookup of a missing name", ["st", p, "nope"], ["model.safetensors", "'nope'"])
    code, out, err = s.run("st-expect", p, "bf16.weight", "bf16[4,5]")
    s.check("safetensors expect", code == 0, f"{code} {err}")
    expect_error(s, "safetensors expect shape", ["st-expect", p, "bf16.weight", "bf16[5,4]"],
                 ["model.safetensors", "tensor 'bf16.weight'", "expected bf16[5, 4], found bf16[4, 5]"])
    expect_error(s, "safetensors expect dtype", ["st-expect", p, "bf16.weight", "f32[4,5]"],
                 ["tensor 'bf16.weight'", "expected f32[4, 5], found bf16[4, 5]"])
    expect_error(s, "safetensors expect missing", ["st-expect", p, "fc9.bias", "f32[4]"],
                 ["missing tensor 'fc9.bias'", "expected f32[4]"])
    # Files with no tensors, with no padding, with newlines in the header.
    for name, data in [("empty object", st_header({}, 0)), ("metadata only", st_header({}, 0, {"a": "b"})),
                       ("unpadded", st_file(tensors[:2], align=1)),
                       ("pretty header", st_file(tensors[:2], header=json.dumps(
                           {n: {"dtype": dt, "shape": list(sh), "data_offsets": [o, o + len(r)]}
                            for (n, dt, sh, r), o in zip(tensors[:2], [0, len(tensors[0][3])])}, indent=2)))]:
        p = write(s.path("ok.safetensors"), data)
        code, out, err = s.run("st", p)
        s.check(f"safetensors {name}", code == 0, f"{code} {err}")


def test_st_errors(s):
    f32 = lambda shape, off: {"dtype": "F32", "shape": shape, "data_offsets": off}
    good = st_file([("w", "F32", (2, 3), bytes(24)), ("b", "F32", (3,), bytes(12))])
    hlen = struct.unpack("<Q", good[:8])[0]
    cases = [
        ("empty file", b"", ["too short"]),
        ("short file", b"\x10\x00\x00", ["too short"]),
        ("huge header length", struct.pack("<Q", 2**63) + good[8:], ["header length 9223372036854775808", "100 MiB"]),
        ("max header length", b"\xff" * 8 + good[8:], ["100 MiB"]),
        ("header length past end", struct.pack("<Q", len(good)) + good[8:], ["past the end"]),
        ("header over 100 MiB", struct.pack("<Q", 101 << 20) + good[8:], ["larger than the 100 MiB limit"]),
        ("zero header length", struct.pack("<Q", 0) + good[8:], ["not a JSON object"]),
        ("header not an object", st_file([], header="[1, 2]"), ["expected '{'"]),
        ("leading space", st_file([], header=' {"w": 1}'), ["expected '{'"]),
        ("invalid JSON", st_file([], header='{"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]'),
         ["not valid JSON"]),
        ("invalid JSON 2", st_file([], header='{"w": {dtype: F32}}'), ["not valid JSON"]),
        ("trailing characters", st_file([], header='{} {}'), ["characters after"]),
        ("invalid UTF-8", st_file([], header=b'{"w\xff": 1}'), ["UTF-8"]),
        ("entry not an object", st_header({"w": [1, 2]}, 0), ["tensor 'w'", "expected an object"]),
        ("missing dtype", st_header({"w": {"shape": [1], "data_offsets": [0, 4]}}, 4), ["tensor 'w'", "'dtype' is missing"]),
        ("missing shape", st_header({"w": {"dtype": "F32", "data_offsets": [0, 4]}}, 4), ["'shape' is missing"]),
        ("missing offsets", st_header({"w": {"dtype": "F32", "shape": [1]}}, 4), ["'data_offsets' is missing"]),
        ("unknown dtype", st_header({"w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}}, 4),
         ["tensor 'w'", "unknown dtype \"F8_E4M3\""]),
        ("lowercase dtype", st_header({"w": {"dtype": "f32", "shape": [1], "data_offsets": [0, 4]}}, 4), ["unknown dtype"]),
        ("dtype not a string", st_header({"w": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}}, 4),
         ["dtype must be a string"]),
        ("negative dim", st_header({"w": f32([-1, 3], [0, 12])}, 12), ["tensor 'w'", "non-negative integers", "[-1,3]"]),
        ("fractional dim", st_header({"w": f32([1.5], [0, 4])}, 4), ["non-negative integers"]),
        ("string dim", st_header({"w": f32(["3"], [0, 12])}, 12), ["non-negative integers"]),
        ("shape not a list", st_header({"w": f32(3, [0, 12])}, 12), ["shape must be a list"]),
        ("dim above 2^53", st_header({"w": f32([2**60], [0, 0])}, 0), ["below 2^53"]),
        ("size overflow", st_header({"w": f32([2**52, 2**52, 2**52], [0, 0])}, 0), ["tensor 'w'", "overflows"]),
        ("33 dims", st_header({"w": f32([1] * 33, [0, 4])}, 4), ["at most 32"]),
        ("offsets not a pair", st_header({"w": f32([3], [0, 4, 12])}, 12), ["tensor 'w'", "[begin, end]"]),
        ("offsets negative", st_header({"w": f32([3], [-12, 0])}, 12), ["[begin, end]"]),
        ("offsets fractional", st_header({"w": f32([1], [0.5, 4.5])}, 5), ["[begin, end]"]),
        ("offsets huge", st_header({"w": f32([1], [2**62, 2**62 + 4])}, 4), ["[begin, end]"]),
        ("begin > end", st_header({"w": f32([0], [8, 4])}, 8), ["tensor 'w'", "begin > end"]),
        ("offsets past the end", st_header({"w": f32([3], [0, 12])}, 8), ["tensor 'w'", "past the end of the data section (8 bytes)"]),
        ("size mismatch", st_header({"w": f32([2, 3], [0, 20])}, 20), ["tensor 'w'", "hold 20 bytes", "F32 [2, 3] needs 24"]),
        ("overlap", st_header({"a": f32([4], [0, 16]), "b": f32([4], [8, 24])}, 24), ["'a'", "'b'", "overlap"]),
        ("aliasing", st_header({"a": f32([4], [0, 16]), "b": f32([4], [0, 16])}, 16), ["overlap"]),
        ("hole", st_header({"a": f32([2], [0, 8]), "b": f32([2], [16, 24])}, 24), ["bytes [8, 16)", "belong to no tensor"]),
        ("hole at the start", st_header({"a": f32([2], [8, 16])}, 16), ["bytes [0, 8)"]),
        ("trailing data", good + b"polyglot", ["8 trailing bytes"]),
        ("truncated data", good[:-4], ["tensor 'b'", "past the end"]),
        ("duplicate names", st_file([], header='{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                                              '"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}') + bytes(8),
         ["'w' appears twice"]),
        ("deep nesting", st_file([], header='{"__metadata__": ' + "[" * 5000 + "]" * 5000 + "}"), ["not valid JSON"]),
    ]
    assert hlen > 0
    for name, data, needles in cases:
        p = write(s.path("bad_" + name.replace(" ", "_").replace(">", "gt").replace("^", "") + ".safetensors"), data)
        for mode in ["st", "st-mem"]:
            expect_error(s, f"safetensors error: {name} ({mode})", [mode, p], [os.path.basename(p)] + needles)
    expect_error(s, "safetensors missing file", ["st", s.path("nope.safetensors")], ["nope.safetensors", "cannot open"])
    expect_error(s, "safetensors directory", ["st", s.tmp], ["not a regular file"])


# ------------------------------------------------------------- conversions

def test_f16(s):
    want = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32).tobytes()
    code, out, err = s.run("f16-table")
    s.check("f16 -> f32 on all 65536 values", code == 0 and out.strip() == f"fnv={fnv1a(want):016x}", f"{code} {out} {err}")


# ------------------------------------------------------------ corrupted files

def test_mutations(s, count):
    rng = random.Random(11)
    seeds = [("npy", npy_bytes(np.arange(24, dtype=np.float32).reshape(2, 3, 4))),
             ("npy", npy_bytes(np.arange(5, dtype=np.int16), (2, 0))),
             ("st", st_file([("a", "F32", (2, 3), bytes(24)), ("b", "I64", (2,), bytes(16)),
                             ("c", "BF16", (), bytes(2))], metadata={"k": "v"}))]
    bad = 0
    for i in range(count):
        mode, seed = seeds[i % len(seeds)]
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(4)
            pos = rng.randrange(len(data)) if data else 0
            if op == 0 and data:
                data[pos] = rng.randrange(256)
            elif op == 1:
                del data[pos:pos + rng.randint(1, 16)]
            elif op == 2:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            else:
                # A header digit or bracket swapped for a plausible one.
                j = data.find(rng.choice([b"2", b"3", b"4", b"[", b"]", b",", b"'", b'"']), pos)
                if j >= 0:
                    data[j] = ord(rng.choice("0123456789[](),:'\" -"))
        p = write(s.path(f"mut.{'npy' if mode == 'npy' else 'safetensors'}"), bytes(data))
        for m in ([mode, f"{mode}-mem"] if mode == "st" else [mode, "npy-mem"]):
            code, out, err = s.run(m, p)
            ok = code in (0, 1) and "Sanitizer" not in err and "runtime error" not in err and (code == 0 or err.strip())
            if not ok:
                bad += 1
                write(s.path(f"crash_{i}.bin"), bytes(data))
                print(f"FAIL mutation {i} ({m}): exit {code}: {err[:300]}")
    s.check(f"{count} corrupted files give exit 0 or 1 with a message", bad == 0, f"{bad} failures")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--mutations", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tgcrt-") as tmp:
        s = Suite(os.path.abspath(args.probe), tmp)
        for t in [test_npy_read, test_npy_errors, test_inputs, test_npy_write, test_st_read, test_st_errors, test_f16]:
            t(s)
        test_mutations(s, args.mutations)
    print(f"runtime: {s.passed} passed, {s.failed} failed")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
