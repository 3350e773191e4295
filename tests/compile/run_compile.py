#!/usr/bin/python3
"""Compile suite: `tgc compile` objects and headers used from C (cli.md,
"Object and header").

Two graphs are written to a temporary directory:
  cmlp   a 2-layer MLP ending in softmax (one f32 input, one f32 output,
         four params without initialisers);
  multi  three inputs of different dtypes (f32 features, i64 token ids used
         by embedding, a bool gate) and five outputs of different dtypes
         (f32 scores, i64 argmax, an f32 output that is a transposed view,
         i32 row sums of the ids, bool scores > 0); one param has an
         initialiser (bias = zeros).
with random weights as safetensors (written here: 8-byte little-endian
header length, JSON header, data) and random inputs. `tgc compile` makes
G.o and G.h for each; compile_main.c (C11, -Wall -Wextra -Werror
-Wpedantic) includes both headers, links both objects with libtgcrt,
OpenBLAS, cJSON, pthreads and libm, and:
  - creates two contexts per graph, A from the weights path and B from the
    same file read into memory, and runs all four at the same time on four
    threads (two per graph), ITERS iterations each on SETS input sets per
    thread (different sets per thread), alternating G_run and
    G_run_buffers; every repeated result must be bitwise identical to the
    first one for its set (checked in C);
  - exercises the error paths and prints what the API returned.
This script then checks, against PyTorch (1.13, /usr/bin/python3):
  - every output of every set of both threads: f32 within
    |tgc - torch| <= ATOL + RTOL * |torch| with RTOL = 1e-4, ATOL = 1e-5,
    integer and bool outputs exactly (input sets whose scores have an
    argmax gap or a |score| below 1e-3 are redrawn, so that a legitimate
    rounding difference cannot flip an exact output);
  - the queries: num_inputs/num_outputs, input_name/output_name and
    input_bytes/output_bytes against the graph's declarations, arena_bytes
    against `tgc report --json`'s activations.arena_bytes;
  - the error paths (return codes as the header documents them: 1 I/O,
    2 format, 3 shape, 4 dtype, 5 missing tensor; messages via G_error):
      a weights file that does not exist: 1, the message names the file;
      a file lacking a param without initialiser: 5, names the tensor
        (and the file, when created from the path);
      a param of the wrong shape: 3, a param of the wrong dtype: 4, both
        naming the tensor; each also through G_create_from_memory;
      a truncated image and one whose header length runs past the end
        (from memory): 2;
      after every failed create *out is a context, G_error works, running it
        returns nonzero, G_destroy frees it (leaks are errors under ASan);
      G_run_buffers with a NULL input, a NULL output, NULL arrays: nonzero,
        naming the input / output; the same context then runs correctly and
        G_error() is "" again;
      a file lacking only a param that has an initialiser (multi's bias =
        zeros): created, and the outputs match PyTorch with a zero bias;
      G_destroy(NULL) returns;
  - both headers compile as C++ (-std=c++11 -Wall -Wextra -Werror
    -Wpedantic) with g++, and a C++ program calling them links and runs
    (skipped, and said so, when no C++ compiler is found);
  - with --tsan (on by default when clang-14 can build with
    -fsanitize=thread): the runtime library's sources, compile_main.c and
    the two objects built with ThreadSanitizer, run with fewer iterations;
    no ThreadSanitizer report, exit 0, outputs again match PyTorch. (The
    kernels in the objects are not instrumented; the runtime's thread pool,
    contexts and the C program are.)

Usage: run_compile.py --tgc build/tgc --rtlib build/runtime/libtgcrt.a
         --rtinc runtime [--cc CC] [--sanitize-flags "..."] [--iters N]
         [--sets N] [--no-tsan] [--keep DIR]
With --sanitize-flags the C program is compiled and linked with them and
run with ASAN_OPTIONS=detect_leaks=1 (the runtime library is then
instrumented too). Last line: `compile: N passed, M failed`; exit status 1
if M > 0.
"""

import argparse
import glob
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback
import warnings

warnings.filterwarnings("ignore")
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, ".."))  # link_line.py
from link_line import link_libs  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
MARGIN = 1e-3  # smallest argmax gap / |score| accepted in multi's inputs
TIMEOUT = 600
# The libraries after libtgcrt.a: `tgc compile --print-link-line`'s, set
# in main (every one: the TSan run compiles conv.c, oneDNN's, in too).
LIBS = []
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-g", "-O1"]

GRAPHS = {
    "cmlp": """# 2-layer MLP with softmax
graph cmlp(batch = 8)
input  x  : f32[batch, 64]
param  w1 : f32[64, 32]
param  b1 : f32[32]
param  w2 : f32[10, 32]
param  b2 : f32[10]
h = relu(x @ w1 + b1)
output probs = softmax(linear(h, w2, b2), dim=-1)
""",
    "multi": """# inputs and outputs of several dtypes
graph multi(rows = 4, seq = 6)
input  feats : f32[rows, 16]
input  ids   : i64[rows, seq]
input  gate  : bool[rows]
param  table : f32[50, 16]
param  proj  : f32[7, 16]
param  bias  : f32[7] = zeros
e = embedding(ids, table).mean(dim=1)
scores = linear(e + feats, proj, bias)
output scores
output pred = scores.argmax(dim=-1)
output kept = where(gate.unsqueeze(1), scores, 0.0).T
output count = ids.sum(dim=1).to(i32)
output pos = scores > 0
""",
}

# Declarations, in order: (name, numpy dtype, shape).
SPEC = {
    "cmlp": {
        "inputs": [("x", np.float32, (8, 64))],
        "params": [("w1", np.float32, (64, 32)), ("b1", np.float32, (32,)),
                   ("w2", np.float32, (10, 32)), ("b2", np.float32, (10,))],
        "outputs": [("probs", np.float32, (8, 10))],
    },
    "multi": {
        "inputs": [("feats", np.float32, (4, 16)), ("ids", np.int64, (4, 6)),
                   ("gate", np.bool_, (4,))],
        "params": [("table", np.float32, (50, 16)), ("proj", np.float32, (7, 16)),
                   ("bias", np.float32, (7,))],
        "outputs": [("scores", np.float32, (4, 7)), ("pred", np.int64, (4,)),
                    ("kept", np.float32, (7, 4)), ("count", np.int32, (4,)),
                    ("pos", np.bool_, (4, 7))],
    },
}

# The error-path files: (case, tensor the message must name, how the file
# differs from the good one, expected code).
ERROR_FILES = {
    "cmlp": {"missing": ("w2", 5), "shape": ("w1", 3), "dtype": ("b1", 4)},
    "multi": {"missing": ("proj", 5), "shape": ("table", 3), "dtype": ("table", 4)},
}
CODE_IO, CODE_FORMAT = 1, 2

ST_DTYPE = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64", np.dtype(np.int32): "I32",
            np.dtype(np.bool_): "BOOL", np.dtype(np.float64): "F64"}


# ---- results ----

class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}" + (f": {detail}" if detail else ""))
        sys.stdout.flush()
        return ok


def skip(what, why):
    print(f"SKIP {what}: {why}")
    sys.stdout.flush()


# ---- files ----

def write_safetensors(path, tensors):
    """tensors: list of (name, np.ndarray) in file order."""
    header, blobs, off = {}, [], 0
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        b = a.tobytes()
        header[name] = {"dtype": ST_DTYPE[a.dtype], "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def run(cmd, what, timeout=TIMEOUT, env=None, cwd=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, f"{what}: timed out after {timeout} s"
    return p, p.stdout + p.stderr


# ---- PyTorch's values ----

def reference(g, inputs, w):
    t = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in w.items()}
    if g == "cmlp":
        x = torch.from_numpy(inputs[0])
        h = torch.relu(x @ t["w1"] + t["b1"])
        return [torch.softmax(F.linear(h, t["w2"], t["b2"]), dim=-1).numpy()]
    feats, ids, gate = (torch.from_numpy(a) for a in inputs)
    e = F.embedding(ids, t["table"]).mean(dim=1)
    scores = F.linear(e + feats, t["proj"], t["bias"])
    return [scores.numpy(), scores.argmax(dim=-1).numpy(),
            torch.where(gate.unsqueeze(1), scores, 0.0).T.contiguous().numpy(),
            ids.sum(dim=1).to(torch.int32).numpy(), (scores > 0).numpy()]


def make_weights(g, rng):
    w = {}
    for name, dt, shape in SPEC[g]["params"]:
        w[name] = (rng.standard_normal(shape) * (0.3 if g == "cmlp" else 0.5)).astype(dt)
    return w


def make_inputs(g, rng, w):
    while True:
        if g == "cmlp":
            return [rng.standard_normal((8, 64)).astype(np.float32)]
        ins = [rng.standard_normal((4, 16)).astype(np.float32),
               rng.integers(0, 50, size=(4, 6)).astype(np.int64),
               rng.integers(0, 2, size=(4,)).astype(np.bool_)]
        s = reference(g, ins, w)[0].astype(np.float64)
        top = np.sort(s, axis=1)
        if (top[:, -1] - top[:, -2]).min() > MARGIN and np.abs(s).min() > MARGIN:
            return ins


def inputs_ok_zero_bias(ins, w):
    wz = dict(w, bias=np.zeros_like(w["bias"]))
    s = reference("multi", ins, wz)[0].astype(np.float64)
    top = np.sort(s, axis=1)
    return (top[:, -1] - top[:, -2]).min() > MARGIN and np.abs(s).min() > MARGIN


def split_outputs(g, raw, nsets):
    outs = SPEC[g]["outputs"]
    per = sum(int(np.prod(s)) * np.dtype(d).itemsize for _, d, s in outs)
    if len(raw) != per * nsets:
        raise ValueError(f"{len(raw)} bytes, expected {per * nsets} ({nsets} sets of {per})")
    sets = []
    for k in range(nsets):
        off, one = k * per, []
        for _, d, s in outs:
            n = int(np.prod(s)) * np.dtype(d).itemsize
            one.append(np.frombuffer(raw[off:off + n], dtype=d).reshape(s))
            off += n
        sets.append(one)
    return sets


def compare(g, got, want):
    """'' when every output matches, else where the first mismatch is."""
    for (name, dt, _), a, b in zip(SPEC[g]["outputs"], got, want):
        if np.dtype(dt).kind == "f":
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            bad = ~(np.abs(a64 - b64) <= ATOL + RTOL * np.abs(b64))
            if bad.any():
                i = tuple(int(v) for v in np.argwhere(bad)[0])
                return (f"output '{name}' {int(bad.sum())} of {bad.size} values off, first at {i}: "
                        f"tgc {a[i]!r} torch {b[i]!r}")
        else:
            b = b.astype(dt)
            if a.shape != b.shape or not np.array_equal(a, b):
                bad = a != b
                i = tuple(int(v) for v in np.argwhere(bad)[0])
                return (f"output '{name}' {int(bad.sum())} of {bad.size} values differ, first at {i}: "
                        f"tgc {a[i]!r} torch {b[i]!r}")
    return ""


# ---- the suite ----

def prepare(d, rng, nsets):
    """Writes graphs, weights, the error-path files and inputs; returns
    (weights, inputs[g][thread][set])."""
    weights, inputs = {}, {}
    for g in GRAPHS:
        with open(os.path.join(d, f"{g}.tg"), "w") as f:
            f.write(GRAPHS[g])
        w = weights[g] = make_weights(g, rng)
        order = [p[0] for p in SPEC[g]["params"]]
        write_safetensors(os.path.join(d, f"{g}.safetensors"), [(n, w[n]) for n in order])
        for case, (tensor, _) in ERROR_FILES[g].items():
            ts = []
            for n in order:
                a = w[n]
                if n == tensor and case == "missing":
                    continue
                if n == tensor and case == "shape":
                    a = a.T.copy() if g == "cmlp" else a[:-1].copy()  # [32, 64] / [49, 16]
                if n == tensor and case == "dtype":
                    a = a.astype(np.int32 if g == "cmlp" else np.int64)
                ts.append((n, a))
            write_safetensors(os.path.join(d, f"{g}.{case}.safetensors"), ts)
        if g == "multi":
            write_safetensors(os.path.join(d, "multi.noinit.safetensors"),
                              [(n, w[n]) for n in order if n != "bias"])
        inputs[g] = []
        for t in range(2):
            sets = []
            while len(sets) < nsets:
                ins = make_inputs(g, rng, w)
                if g == "multi" and t == 0 and not sets and not inputs_ok_zero_bias(ins, w):
                    continue
                sets.append(ins)
            inputs[g].append(sets)
            with open(os.path.join(d, f"{g}.inputs.t{t}.bin"), "wb") as f:
                for ins in sets:
                    for a in ins:
                        f.write(np.ascontiguousarray(a).tobytes())
    return weights, inputs


def tgc_compile(R, args, d):
    ok = True
    for g in GRAPHS:
        p, out = run([args.tgc, "compile", os.path.join(d, f"{g}.tg"), "-o",
                      os.path.join(d, f"{g}.o"), "--header", os.path.join(d, f"{g}.h")],
                     f"tgc compile {g}")
        good = p is not None and p.returncode == 0 and os.path.isfile(os.path.join(d, f"{g}.o")) \
            and os.path.isfile(os.path.join(d, f"{g}.h"))
        ok &= R.check(good, f"tgc compile {g}.tg -o {g}.o --header {g}.h",
                      out.strip() if p is None else f"exit {p.returncode}: {out.strip()}")
    return ok


def reserved_name_checks(R, args, d):
    """A graph whose API would take a library's names (pthread_create: the
    object would interpose the C library's, and OpenBLAS's start-up dies
    before main) is refused with the prefix named, from .tg and from an
    ONNX model, which takes its file's name; a name beside a reserved
    prefix compiles (frontend/tg/graph_name.c)."""
    onnx = os.path.join(HERE, "..", "fuzz", "corpus_onnx", "mlp_dyn_17.onnx")
    model = os.path.join(d, "pthread.onnx")
    shutil.copyfile(onnx, model)
    for src in [model, os.path.join(d, "pthread_key.tg"), os.path.join(d, "pthreads.tg")]:
        if src.endswith(".tg"):
            with open(src, "w") as f:
                f.write("graph %s\ninput x : f32[2]\noutput y = x\n"
                        % os.path.basename(src)[:-3])
        obj = os.path.join(d, "reserved_probe.o")
        p, out = run([args.tgc, "compile", src, "-o", obj, "--header",
                      os.path.join(d, "reserved_probe.h")], f"tgc compile {src}")
        name = os.path.basename(src).rsplit(".", 1)[0]
        if name == "pthreads":
            R.check(p is not None and p.returncode == 0, f"graph {name} (beside 'pthread_') compiles",
                    out.strip())
        else:
            R.check(p is not None and p.returncode == 1 and "reserved" in out and
                    "'pthread_'" in out and "POSIX threads" in out and not os.path.exists(obj),
                    f"graph {name} ({os.path.basename(src)}): exit 1 naming the prefix "
                    f"'pthread_'", out.strip())


def expected_arena(args, d, g):
    p, out = run([args.tgc, "report", os.path.join(d, f"{g}.tg"), "--json"], "tgc report")
    if p is None or p.returncode != 0:
        return None
    return json.loads(p.stdout)["activations"]["arena_bytes"]


def check_queries(R, args, d, lines):
    for g in GRAPHS:
        q = [ln.split()[2:] for ln in lines if ln.startswith(f"QUERY {g} ")]
        got = {}
        for parts in q:
            if parts[0] in ("input", "output"):
                got[(parts[0], int(parts[1]))] = (parts[2], int(parts[3]))
            else:
                got[parts[0]] = int(parts[1])
        ins, outs = SPEC[g]["inputs"], SPEC[g]["outputs"]
        R.check(got.get("num_inputs") == len(ins) and got.get("num_outputs") == len(outs),
                f"{g}: num_inputs/num_outputs = {len(ins)}/{len(outs)}",
                f"got {got.get('num_inputs')}/{got.get('num_outputs')}")
        for kind, decl in (("input", ins), ("output", outs)):
            want = [(n, int(np.prod(s)) * np.dtype(dt).itemsize) for n, dt, s in decl]
            have = [got.get((kind, i)) for i in range(len(decl))]
            R.check(have == want, f"{g}: {kind}_name/{kind}_bytes = {want}", f"got {have}")
        arena = expected_arena(args, d, g)
        R.check(arena is not None and got.get("arena_bytes") == arena,
                f"{g}: arena_bytes = tgc report's activations.arena_bytes ({arena})",
                f"got {got.get('arena_bytes')}")
        with open(os.path.join(d, f"{g}.h")) as f:
            h = f.read()
        R.check(arena is not None and f"({arena} bytes)" in h,
                f"{g}.h: states the arena size ({arena} bytes)")


def check_cases(R, d, lines, weights, inputs):
    cases = {}
    for ln in lines:
        if ln.startswith("CASE "):
            _, g, name, rc, *msg = ln.split(" ", 4)
            cases[(g, name)] = (int(rc), msg[0] if msg else "")

    def case(g, name, want_rc, needles, what):
        if (g, name) not in cases:
            return R.check(False, f"{g} {name}: {what}", "the C program did not report this case")
        rc, msg = cases[(g, name)]
        ok_rc = rc == want_rc if want_rc is not None else rc != 0
        missing = [n for n in needles if n not in msg]
        R.check(ok_rc and not missing, f"{g} {name}: {what}",
                f"rc {rc}, message {msg!r}" + (f" lacks {missing}" if missing else ""))

    for g in GRAPHS:
        case(g, "missing_file", CODE_IO, [f"{g}_absent.safetensors"],
             "a weights file that does not exist: code 1, the message names the file")
        for c, (tensor, code) in ERROR_FILES[g].items():
            fname = f"{g}.{c}.safetensors"
            case(g, c, code, [f"'{tensor}'", fname],
                 f"{c} tensor in the file: code {code}, names '{tensor}' and the file")
            case(g, c + "_mem", code, [f"'{tensor}'"],
                 f"{c} tensor in the image (create_from_memory): code {code}, names '{tensor}'")
        case(g, "truncated_mem", CODE_FORMAT, [], "a truncated image: code 2 (format)")
        case(g, "bad_header_mem", CODE_FORMAT, [],
             "an image whose header length runs past its end: code 2 (format)")
        last_in, first_out = SPEC[g]["inputs"][-1][0], SPEC[g]["outputs"][0][0]
        case(g, "null_input", None, [f"'{last_in}'"], f"a NULL input: nonzero, names '{last_in}'")
        case(g, "null_output", None, [f"'{first_out}'"],
             f"a NULL output: nonzero, names '{first_out}'")
        case(g, "null_arrays", None, [], "NULL input and output arrays: nonzero")
        case(g, "recover_run", 0, [], "a good run on the context after those errors succeeds")
        want = reference(g, inputs[g][0][0], weights[g])
        path = os.path.join(d, f"{g}.recover.out.bin")
        if os.path.exists(path):
            with open(path, "rb") as f:
                got = split_outputs(g, f.read(), 1)[0]
            diff = compare(g, got, want)
            R.check(not diff, f"{g} recover_run: outputs match PyTorch", diff)
        else:
            R.check(False, f"{g} recover_run: outputs match PyTorch", "no output file")
    # multi's bias has an initialiser (zeros): a file without it is fine.
    case("multi", "noinit_create", 0, [], "a file lacking only a param with an initialiser: created")
    case("multi", "noinit_run", 0, [], "... and it runs")
    path = os.path.join(d, "multi.noinit.out.bin")
    w = dict(weights["multi"], bias=np.zeros(7, np.float32))
    if os.path.exists(path):
        with open(path, "rb") as f:
            got = split_outputs("multi", f.read(), 1)[0]
        diff = compare("multi", got, reference("multi", inputs["multi"][0][0], w))
        R.check(not diff, "multi noinit_run: outputs match PyTorch with the zero bias", diff)
    else:
        R.check(False, "multi noinit_run: outputs match PyTorch with the zero bias", "no output file")


def check_outputs(R, d, weights, inputs, nsets, label=""):
    for g in GRAPHS:
        for t in range(2):
            path = os.path.join(d, f"{g}.out.t{t}.bin")
            what = f"{label}{g} thread {t} ({'A: path' if t == 0 else 'B: memory'}): " \
                   f"outputs of {nsets} input sets match PyTorch"
            if not os.path.exists(path):
                R.check(False, what, "no output file")
                continue
            try:
                with open(path, "rb") as f:
                    sets = split_outputs(g, f.read(), nsets)
            except ValueError as e:
                R.check(False, what, str(e))
                continue
            diff = ""
            for k in range(nsets):
                diff = compare(g, sets[k], reference(g, inputs[g][t][k], weights[g]))
                if diff:
                    diff = f"set {k}: {diff}"
                    break
            R.check(not diff, what, diff)


def c_program_checks(R, lines, label=""):
    for ln in lines:
        if ln.startswith("CHECK ok "):
            R.check(True, label + ln[len("CHECK ok "):])
        elif ln.startswith("CHECK FAIL "):
            R.check(False, label + ln[len("CHECK FAIL "):])


def build_c(R, args, d, exe, cc, extra, what):
    objs = [os.path.join(d, f"{g}.o") for g in GRAPHS]
    cmd = [cc] + CFLAGS + extra + ["-I", d, "-I", args.rtinc, os.path.join(HERE, "compile_main.c")] \
        + objs + [args.rtlib] + LIBS + ["-o", exe]
    if "-fsanitize=thread" in extra:
        cmd.remove(args.rtlib)
    p, out = run(cmd, what)
    return R.check(p is not None and p.returncode == 0, what,
                   out.strip() if p is None else f"{shlex.join(cmd)}\n{out.strip()}")


def run_c(R, exe, d, iters, nsets, env, what):
    p, out = run([exe, d, str(iters), str(nsets)], what, env=env)
    if p is None:
        R.check(False, what, out)
        return []
    lines = p.stdout.splitlines()
    print("\n".join("    " + ln for ln in lines if not ln.startswith("CHECK ok")))
    R.check(p.returncode == 0 and not sanitizer_report(p.stderr), what,
            f"exit {p.returncode}; stderr:\n{p.stderr.strip()[-6000:]}")
    return lines


def sanitizer_report(err):
    return any(s in err for s in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                  "runtime error:", "WARNING: ThreadSanitizer",
                                  "ERROR: ThreadSanitizer"))


def cxx_check(R, args, d, cc):
    src = os.path.join(d, "cxx_main.cpp")
    with open(src, "w") as f:
        f.write("""// Both headers, included by C++ (extern "C" linkage).
#include <cstdio>
#include <cstring>
#include "cmlp.h"
#include "multi.h"
int main() {
    cmlp_ctx *a = nullptr;
    int rc = cmlp_create(&a, "/nonexistent/cmlp.safetensors", 1);
    bool ok = rc != cmlp_OK && a != nullptr && std::strstr(cmlp_error(a), "cmlp.safetensors");
    cmlp_destroy(a);
    multi_destroy(nullptr);
    ok = ok && cmlp_num_inputs() == 1 && multi_num_outputs() == 5 &&
         std::strcmp(multi_input_name(1), "ids") == 0 && multi_output_bytes(1) == 4 * 8;
    int (*run)(multi_ctx *, const float *, const int64_t *, const uint8_t *, float *, int64_t *,
               float *, int32_t *, uint8_t *) = multi_run;
    ok = ok && run != nullptr;
    std::printf("%s\\n", ok ? "cxx ok" : "cxx FAIL");
    return ok ? 0 : 1;
}
""")
    gxx = shutil.which("g++")
    if not gxx:
        skip("C++ header check", "g++ not found")
        return
    flags = ["-std=c++11", "-Wall", "-Wextra", "-Werror", "-Wpedantic"]
    p, out = run([gxx] + flags + ["-I", d, "-c", src, "-o", os.path.join(d, "cxx_main.o")],
                 "g++ on the headers")
    R.check(p is not None and p.returncode == 0,
            "both headers compile as C++ (g++ -std=c++11 -Wall -Wextra -Werror -Wpedantic)",
            out.strip())
    # Link and run it with a C++ compiler of the same family as the C one
    # (the sanitizer runtimes must match an instrumented libtgcrt).
    base = os.path.basename(cc)
    cxx = None
    if "clang" in base:
        cxx = shutil.which(os.path.join(os.path.dirname(cc), base.replace("clang", "clang++"))) \
            or shutil.which(base.replace("clang", "clang++"))
    elif not args.sanitize_flags:
        cxx = gxx
    elif "gcc" in base:
        cxx = shutil.which(os.path.join(os.path.dirname(cc), base.replace("gcc", "g++")))
    if not cxx:
        skip("C++ link and run", f"no C++ compiler matching {cc}")
        return
    exe = os.path.join(d, "cxx_main")
    cmd = [cxx] + flags + shlex.split(args.sanitize_flags) + ["-I", d, src] + \
        [os.path.join(d, f"{g}.o") for g in GRAPHS] + [args.rtlib] + LIBS + ["-o", exe]
    p, out = run(cmd, "C++ link")
    if not R.check(p is not None and p.returncode == 0, f"a C++ program links with both objects "
                   f"({os.path.basename(cxx)})", out.strip()):
        return
    p, out = run([exe], "C++ program", env=san_env(args))
    R.check(p is not None and p.returncode == 0 and "cxx ok" in p.stdout
            and not sanitizer_report(p.stderr),
            "the C++ program runs: create/error/destroy and the queries", out.strip())


def san_env(args):
    env = dict(os.environ)
    if args.sanitize_flags:
        env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0:" + env.get("ASAN_OPTIONS", "")
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:" + env.get("UBSAN_OPTIONS", "")
    return env


def tsan_check(R, args, d, weights, inputs, nsets):
    clang = shutil.which("clang-14")
    if not clang:
        skip("ThreadSanitizer run", "clang-14 not found")
        return
    p, out = run(["pkg-config", "--cflags", "openblas", "libcjson"], "pkg-config")
    pcflags = shlex.split(p.stdout) if p is not None and p.returncode == 0 else []
    probe = os.path.join(d, "tsan_probe.c")
    with open(probe, "w") as f:
        f.write("int main(void) { return 0; }\n")
    p, out = run([clang, "-fsanitize=thread", probe, "-o", os.path.join(d, "tsan_probe")],
                 "tsan probe")
    if p is None or p.returncode != 0:
        skip("ThreadSanitizer run", "clang-14 -fsanitize=thread cannot link here: " + out.strip())
        return
    p, out = run([os.path.join(d, "tsan_probe")], "tsan probe run")
    if p is None or p.returncode != 0:
        # e.g. "unexpected memory mapping" on kernels with more mmap
        # randomisation than clang-14's TSan supports
        skip("ThreadSanitizer run", "an empty -fsanitize=thread program fails here: " + out.strip())
        return
    # The runtime library rebuilt with ThreadSanitizer (its sources are
    # compiled straight into the program). The generated glue and kernels in
    # the objects are not instrumented, which TSan tolerates.
    td = os.path.join(d, "tsan")
    os.makedirs(td, exist_ok=True)
    for f in glob.glob(os.path.join(d, "*.bin")) + glob.glob(os.path.join(d, "*.safetensors")):
        if ".out." not in f:
            shutil.copy(f, td)
    # libtgcrt's sources: runtime/*.c, and the libc-only helpers of support/
    # it compiles too (TGC_SUPPORT_RUNTIME_SOURCES in CMakeLists.txt),
    # included as "support/NAME.h" from the repository root.
    root = os.path.dirname(os.path.abspath(args.rtinc))
    rt_srcs = sorted(glob.glob(os.path.join(args.rtinc, "*.c"))) + \
        [os.path.join(root, "support", f) for f in ("atomic_file.c", "tmp_registry.c", "file_id.c")] + \
        ["-I", root]
    exe = os.path.join(d, "compile_main_tsan")
    ok = build_c(R, args, d, exe, clang,
                 # the project's own definition (CMakeLists.txt's add_compile_options)
                 ["-fsanitize=thread", "-fno-omit-frame-pointer", "-D_POSIX_C_SOURCE=200809L", "-w"]
                 + pcflags + rt_srcs,
                 "compile_main.c + runtime sources built with clang-14 -fsanitize=thread")
    if not ok:
        return
    env = dict(os.environ)
    env["TSAN_OPTIONS"] = "halt_on_error=1:exitcode=66:second_deadlock_stack=1:" + \
        env.get("TSAN_OPTIONS", "")
    iters = max(nsets, min(args.iters, 40))
    lines = run_c(R, exe, td, iters, nsets, env,
                  f"ThreadSanitizer: compile_main ({iters} iterations per thread) exits 0, "
                  "no race reported")
    c_program_checks(R, lines, "tsan: ")
    check_outputs(R, td, weights, inputs, nsets, "tsan: ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--rtlib", required=True)
    ap.add_argument("--rtinc", required=True)
    ap.add_argument("--cc", default=os.environ.get("CC") or "cc")
    ap.add_argument("--sanitize-flags", default="")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--sets", type=int, default=10)
    ap.add_argument("--no-tsan", action="store_true")
    ap.add_argument("--keep", help="keep the files in this directory")
    args = ap.parse_args()
    args.tgc = os.path.abspath(args.tgc)
    LIBS[:] = link_libs([args.tgc, "compile"])
    args.rtlib = os.path.abspath(args.rtlib)
    args.rtinc = os.path.abspath(args.rtinc)
    R = Results()
    if args.keep:
        d = os.path.abspath(args.keep)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    else:
        d = tempfile.mkdtemp(prefix="tgc-compile-")
    try:
        rng = np.random.default_rng(20240601)
        weights, inputs = prepare(d, rng, args.sets)
        if tgc_compile(R, args, d):
            exe = os.path.join(d, "compile_main")
            san = shlex.split(args.sanitize_flags)
            if build_c(R, args, d, exe, args.cc, san,
                       f"compile_main.c builds ({os.path.basename(args.cc)} "
                       f"{' '.join(CFLAGS + san)})"):
                lines = run_c(R, exe, d, args.iters, args.sets, san_env(args),
                              f"compile_main ({args.iters} iterations per thread, 4 threads at "
                              f"once{', ASan+UBSan, detect_leaks=1' if san else ''}) exits 0"
                              + (", no sanitizer report" if san else ""))
                c_program_checks(R, lines)
                check_queries(R, args, d, lines)
                check_outputs(R, d, weights, inputs, args.sets)
                check_cases(R, d, lines, weights, inputs)
            cxx_check(R, args, d, args.cc)
            reserved_name_checks(R, args, d)
            if args.no_tsan:
                skip("ThreadSanitizer run", "--no-tsan")
            else:
                tsan_check(R, args, d, weights, inputs, args.sets)
    except Exception:
        R.check(False, "the suite ran to the end", traceback.format_exc())
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    print(f"compile: {R.passed} passed, {R.failed} failed")
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
