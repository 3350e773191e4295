#!/usr/bin/python3
"""Exec suite: compiled executables (`tgc build`) given wrong inputs, bad
weights and bad flags, and their --print, --bench, --output-dir and
--random-inputs behaviour (cli.md, "Compiled executables").

Each test builds (once, shared) a small graph, runs the executable and
checks:
  - exit status: 0 success, 1 bad user input (inputs, weights), 2 bad
    command line; never a signal (a negative status from subprocess) and
    never 3 (an internal error);
  - on exit 1 the message on stderr names the offending tensor (the graphs
    use distinctive names: img, tokens, proj_w...), and, for a dtype or
    shape mismatch of an input, the expected and found dtype and shape;
  - on success nothing is printed unless --print or --bench is given.
`--print` is compared with PyTorch's own printing of the same values:
after removing whitespace, torch's `str(tensor)` body (the nested list of
formatted numbers) must appear in the output, with the output's name and
dtype. Safetensors files are written by tests/diff/tensorio.py, and broken
ones are made from valid images by editing bytes or the JSON header.

Usage: run_exec.py --tgc build/tgc [-k SUBSTRING] [--keep DIR]
Last line: `exec: N passed, M failed`; exit status 1 if M > 0.
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings

warnings.filterwarnings("ignore")
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorio  # noqa: E402

TIMEOUT = 300
QUICK = 30  # for what must fail at once (a FIFO must not be waited on)

GRAPHS = {
    # inputs of two dtypes, a param without initialiser (proj_w) and two with
    "basic": """
graph exec_basic
input img : f32[2, 3]
input tokens : i64[4]
param proj_w : f32[3, 5]
param proj_b : f32[5] = zeros
param gain : f16[5] = ones
output logits = (img @ proj_w + proj_b) * gain
output doubled = tokens * 2
""",
    # indexed reads whose index tensors the tests fill out of range
    "indexing": """
graph exec_indexing
input ids : i64[2, 4]
input sel : i32[3]
input g : i64[3, 2]
input h : i64[3, 2]
input x : f32[6, 3]
param table : f32[5, 3] = ones
output e = embedding(ids, table)
output s = index_select(x, 1, sel)
output q = gather(x, 0, g)
output r = x[sel]
output t = x[h.T]
""",
    "types": """
graph exec_types
input half_in : bf16[3]
input flags : bool[3]
input small : u8[2, 2]
output hb2 = half_in * 2
output notf = ~flags
output cnt = flags.sum()
output sq = small * small
""",
    "print": """
graph exec_print
input a : f32[2, 3]
input n : i32[4]
input m : bool[3]
input h : f16[2]
input w : f32[3]
output fa = a * 2
output ni = n + 1
output mb = ~m
output sc = a.sum()
output hh = h * 0.5
output sci = w * 1
output big = arange(1600, dtype = f32).view(40, 40) * a[0, 0]
output bh = a.to(bf16) * 3
output d64 = w.to(f64) / 3
""",
    "big": """
graph exec_big
input seed_val : f32[]
output big = zeros([1024, 1024]) + seed_val
""",
    "randinit": """
graph exec_randinit
input q : f32[4]
param rw : f32[4] = randn(std = 1.0, seed = 7)
param ru : f32[4] = uniform(low = -1.0, high = 1.0, seed = 8)
output out = q * rw + ru
""",
}

WEIGHTS = {
    "proj_w": torch.arange(15, dtype=torch.float32).reshape(3, 5) / 8,
    "proj_b": torch.tensor([0.5, -0.5, 1.0, 0.0, 2.0]),
    "gain": torch.tensor([1, 2, 0.5, 1, 1], dtype=torch.float16),
}
IMG = torch.tensor([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])
TOKENS = torch.tensor([3, -1, 7, 0], dtype=torch.int64)


def expected_basic(w=WEIGHTS):
    logits = (IMG @ w["proj_w"] + w["proj_b"]) * w["gain"].to(torch.float32)
    return {"logits": logits.numpy(), "doubled": (TOKENS * 2).numpy()}


class Fail(Exception):
    pass


class Env:
    def __init__(self, tgc, tmp):
        self.tgc, self.tmp = tgc, tmp
        self.exes = {}
        self.n = 0

    def path(self, name):
        self.n += 1
        return os.path.join(self.tmp, "%03d_%s" % (self.n, name))

    def build(self, graph, extra=(), key=None):
        key = key or (graph, tuple(extra))
        if key in self.exes:
            return self.exes[key]
        tg = os.path.join(self.tmp, "%s.tg" % graph)
        with open(tg, "w") as f:
            f.write(GRAPHS[graph].lstrip())
        exe = self.path(graph + ".exe")
        rc, out, err = run([self.tgc, "build", tg, "-o", exe] + list(extra))
        if rc != 0:
            self.exes[key] = Fail("tgc build %s %s: exit %s: %s" % (graph, " ".join(extra), rc,
                                                                   err.strip()[:500]))
        else:
            self.exes[key] = exe
        return self.exes[key]

    def exe(self, graph, extra=()):
        e = self.build(graph, extra)
        if isinstance(e, Fail):
            raise e
        return e

    def anon(self, ext):
        """A file name that names no tensor (so that a message naming the
        tensor cannot pass by quoting the path)."""
        self.n += 1
        return os.path.join(self.tmp, "f%03d%s" % (self.n, ext))

    def npy(self, name, arr):
        p = self.anon(".npy")
        np.save(p, arr, allow_pickle=False)
        return p

    def raw(self, name, data):
        p = self.anon(os.path.splitext(name)[1])
        with open(p, "wb") as f:
            f.write(data)
        return p

    def weights(self, entries=None, name="w.safetensors"):
        entries = entries if entries is not None else list(WEIGHTS.items())
        return self.raw(name, tensorio.safetensors_image(entries))

    def basic_inputs(self):
        return ["--input", "img=%s" % self.npy("img", IMG.numpy()),
                "--input", "tokens=%s" % self.npy("tokens", TOKENS.numpy())]


def run(cmd, cwd=None, timeout=TIMEOUT):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, "", "timeout after %d s" % timeout
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check_exit(res, code, names=(), what=""):
    """Raises Fail unless res = (rc, out, err) exited `code` and (for code 1
    and 2) said why on stderr, naming every string in names."""
    rc, out, err = res
    if rc is None:
        raise Fail("%s: timed out" % what)
    if rc < 0:
        raise Fail("%s: killed by signal %d (a crash); stderr: %s" % (what, -rc, err.strip()[:400]))
    if rc != code:
        raise Fail("%s: exit %d, expected %d; stderr: %s" % (what, rc, code, err.strip()[:400]))
    if code in (1, 2) and not err.strip():
        raise Fail("%s: exit %d with nothing on stderr" % (what, code))
    for n in names:
        if n not in err:
            raise Fail("%s: stderr does not mention %r: %s" % (what, n, err.strip()[:400]))
    if "AddressSanitizer" in err or "runtime error:" in err:
        raise Fail("%s: sanitizer report: %s" % (what, err.strip()[:600]))


def check_outputs(d, expected, what):
    for n, e in expected.items():
        p = os.path.join(d, n + ".npy")
        if not os.path.exists(p):
            raise Fail("%s: %s.npy not written" % (what, n))
        g = np.load(p)
        if g.dtype != e.dtype or g.shape != e.shape:
            raise Fail("%s: %s is %s%s, expected %s%s" % (what, n, g.dtype, list(g.shape), e.dtype,
                                                           list(e.shape)))
        if not np.allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True):
            raise Fail("%s: %s = %s, expected %s" % (what, n, g.tolist(), e.tolist()))


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def bad_input_case(name, make, names):
    """A test: the basic graph run with `make(env)` giving its input args."""
    def t(env):
        exe = env.exe("basic")
        w = env.weights()
        args = make(env)
        check_exit(run([exe, "--weights", w, "--output-dir", env.tmp] + args), 1, names, name)
    t.__name__ = name
    TESTS.append(t)


def _img(env):
    return ["--input", "tokens=%s" % env.npy("tokens", TOKENS.numpy())]


bad_input_case("input_missing", _img, ["img"])
bad_input_case("input_unknown_name", lambda env: env.basic_inputs() + [
    "--input", "imgz=%s" % env.npy("imgz", IMG.numpy())], ["imgz"])
bad_input_case("input_wrong_dtype", lambda env: _img(env) + [
    "--input", "img=%s" % env.npy("img64", IMG.numpy().astype(np.float64))],
    ["img", "f32", "f64"])
bad_input_case("input_wrong_dtype_int", lambda env: [
    "--input", "img=%s" % env.npy("img", IMG.numpy()),
    "--input", "tokens=%s" % env.npy("tok32", TOKENS.numpy().astype(np.int32))],
    ["tokens", "i64", "i32"])
bad_input_case("input_wrong_shape", lambda env: _img(env) + [
    "--input", "img=%s" % env.npy("img32", IMG.numpy().T.copy())], ["img", "[2, 3]", "[3, 2]"])
bad_input_case("input_wrong_rank", lambda env: _img(env) + [
    "--input", "img=%s" % env.npy("img6", IMG.numpy().reshape(6))], ["img"])
bad_input_case("input_scalar_for_tensor", lambda env: _img(env) + [
    "--input", "img=%s" % env.npy("img0", np.float32(1.0))], ["img"])


def _trunc(env):
    p = env.npy("imgt", IMG.numpy())
    data = open(p, "rb").read()
    return _img(env) + ["--input", "img=%s" % env.raw("imgt_cut.npy", data[:-5])]


bad_input_case("input_truncated_npy", _trunc, ["img"])
bad_input_case("input_header_only_npy", lambda env: _img(env) + [
    "--input", "img=%s" % env.raw("hdr.npy", open(env.npy("h", IMG.numpy()), "rb").read()[:128])],
    ["img"])
bad_input_case("input_not_npy", lambda env: _img(env) + [
    "--input", "img=%s" % env.raw("img.txt", b"1.0 2.0 -1.0\n0.5 0.0 3.0\n")], ["img"])
bad_input_case("input_empty_file", lambda env: _img(env) + [
    "--input", "img=%s" % env.raw("empty.npy", b"")], ["img"])
bad_input_case("input_fortran_order", lambda env: _img(env) + [
    "--input", "img=%s" % env.npy("imgf", np.asfortranarray(IMG.numpy()))], ["img"])
bad_input_case("input_big_endian", lambda env: _img(env) + [
    "--input", "img=%s" % env.npy("imgbe", IMG.numpy().astype(">f4"))], ["img"])
bad_input_case("input_nonexistent_file", lambda env: _img(env) + [
    "--input", "img=%s" % os.path.join(env.tmp, "no_such_dir", "f.npy")], ["img"])
bad_input_case("input_directory", lambda env: _img(env) + ["--input", "img=%s" % env.tmp], ["img"])


def _not_regular(env):
    """(path, what the message calls it) for files that are not regular
    files: a FIFO nobody writes to (a plain open() would block forever), a
    directory and a character device."""
    fifo = env.anon(".npy")
    os.mkfifo(fifo)
    return [(fifo, "FIFO"), (env.tmp, "directory"), (os.devnull, "character device")]


@test
def input_not_regular_file(env):
    """An input that is a FIFO, a directory or /dev/null: exit 1 at once,
    naming the input, the path and what it is (issue 18, item 7)."""
    exe = env.exe("basic")
    w = env.weights()
    for path, kind in _not_regular(env):
        what = "--input img=%s (%s)" % (path, kind)
        res = run([exe, "--weights", w, "--output-dir", env.tmp] + _img(env)
                  + ["--input", "img=%s" % path], timeout=QUICK)
        check_exit(res, 1, ["img", path, kind, "not a regular file"], what)


def _corrupt_header(env):
    data = bytearray(open(env.npy("imgc", IMG.numpy()), "rb").read())
    i = data.index(b"'descr'")
    data[i:i + 7] = b"'dexxx'"
    return _img(env) + ["--input", "img=%s" % env.raw("imgc_bad.npy", bytes(data))]


bad_input_case("input_corrupt_npy_header", _corrupt_header, ["img"])


def _lying_header(env):
    data = bytearray(open(env.npy("imgl", IMG.numpy()), "rb").read())
    i = data.index(b"(2, 3)")
    data[i:i + 6] = b"(9, 9)"
    return ["--input", "tokens=%s" % env.npy("tokens", TOKENS.numpy()),
            "--input", "img=%s" % env.raw("imgl_bad.npy", bytes(data))]


bad_input_case("input_shape_lies_about_size", _lying_header, ["img"])


bad_input_case("input_given_twice", lambda env: env.basic_inputs() + [
    "--input", "img=%s" % env.npy("img2", IMG.numpy())], ["img"])


@test
def input_malformed_flag(env):
    """`--input img` without `=FILE`: a command-line error (2) or a bad
    input (1), never a crash."""
    exe = env.exe("basic")
    res = run([exe, "--weights", env.weights(), "--input", "img"])
    rc = res[0]
    if rc not in (1, 2):
        check_exit(res, 2, (), "--input img (no =FILE)")


# ---- weights ----------------------------------------------------------------

def bad_weights_case(name, make, names=("proj_w",), code=1):
    def t(env):
        exe = env.exe("basic")
        w = make(env)
        check_exit(run([exe, "--weights", w, "--output-dir", env.tmp] + env.basic_inputs()),
                   code, names, name)
    t.__name__ = name
    TESTS.append(t)


def _w_without(name):
    return lambda env: env.weights([(k, v) for k, v in WEIGHTS.items() if k != name])


def _w_header_edit(edit):
    """A weights file whose JSON header is edited by edit(header dict)."""
    def make(env):
        img = tensorio.safetensors_image(list(WEIGHTS.items()))
        n = struct.unpack("<Q", img[:8])[0]
        header = json.loads(img[8:8 + n])
        data = img[8 + n:]
        edit(header)
        return env.raw("edited.safetensors", tensorio.header_image(header, data))
    return make


bad_weights_case("weights_missing_param", _w_without("proj_w"))
bad_weights_case("weights_wrong_shape", lambda env: env.weights(
    [("proj_w", torch.zeros(5, 3)), ("proj_b", WEIGHTS["proj_b"]), ("gain", WEIGHTS["gain"])]))
bad_weights_case("weights_wrong_rank", lambda env: env.weights(
    [("proj_w", torch.zeros(15)), ("proj_b", WEIGHTS["proj_b"]), ("gain", WEIGHTS["gain"])]))
bad_weights_case("weights_int_for_float", lambda env: env.weights(
    [("proj_w", torch.zeros(3, 5, dtype=torch.int32)), ("proj_b", WEIGHTS["proj_b"]),
     ("gain", WEIGHTS["gain"])]))
bad_weights_case("weights_unknown_dtype", _w_header_edit(
    lambda h: h["proj_w"].update(dtype="F8_E4M3")))
bad_weights_case("weights_lowercase_dtype", _w_header_edit(
    lambda h: h["proj_w"].update(dtype="f32")))
bad_weights_case("weights_initialised_param_wrong_shape", lambda env: env.weights(
    list(WEIGHTS.items())[:1] + [("proj_b", torch.zeros(4)), ("gain", WEIGHTS["gain"])]),
    names=("proj_b",))
bad_weights_case("weights_offsets_past_end", _w_header_edit(
    lambda h: h["gain"].update(data_offsets=[h["gain"]["data_offsets"][0],
                                             h["gain"]["data_offsets"][1] + 64])), names=())
bad_weights_case("weights_offsets_inverted", _w_header_edit(
    lambda h: h["proj_b"].update(data_offsets=h["proj_b"]["data_offsets"][::-1])), names=())
bad_weights_case("weights_offsets_overlap", _w_header_edit(
    lambda h: h["proj_b"].update(data_offsets=[h["proj_b"]["data_offsets"][0] - 8,
                                               h["proj_b"]["data_offsets"][1] - 8])), names=())
bad_weights_case("weights_offsets_size_mismatch", _w_header_edit(
    lambda h: h["proj_w"].update(shape=[3, 4])), names=())
bad_weights_case("weights_negative_shape", _w_header_edit(
    lambda h: h["proj_w"].update(shape=[-3, -5])), names=())
bad_weights_case("weights_shape_not_list", _w_header_edit(
    lambda h: h["proj_w"].update(shape="3x5")), names=())
bad_weights_case("weights_offsets_huge", _w_header_edit(
    lambda h: h["gain"].update(data_offsets=[2 ** 62, 2 ** 62 + 10])), names=())


def _w_raw(fn):
    def make(env):
        return env.raw("raw.safetensors", fn(tensorio.safetensors_image(list(WEIGHTS.items()))))
    return make


def _n(img):
    return struct.unpack("<Q", img[:8])[0]


bad_weights_case("weights_truncated_data", _w_raw(lambda b: b[:-7]), names=())
bad_weights_case("weights_truncated_header", _w_raw(lambda b: b[:20]), names=())
bad_weights_case("weights_only_length", _w_raw(lambda b: b[:8]), names=())
bad_weights_case("weights_shorter_than_length", _w_raw(lambda b: b[:5]), names=())
bad_weights_case("weights_empty_file", _w_raw(lambda b: b""), names=())
bad_weights_case("weights_header_len_past_eof", _w_raw(
    lambda b: struct.pack("<Q", len(b) + 100) + b[8:]), names=())
bad_weights_case("weights_header_len_huge", _w_raw(
    lambda b: struct.pack("<Q", 2 ** 63 + 5) + b[8:]), names=())
bad_weights_case("weights_header_len_max", _w_raw(
    lambda b: b"\xff" * 8 + b[8:]), names=())
bad_weights_case("weights_corrupt_json", _w_raw(
    lambda b: b[:8] + b"[" + b[9:]), names=())
bad_weights_case("weights_json_garbage", _w_raw(
    lambda b: b[:8] + bytes(x if i % 7 != 3 else ord("}") for i, x in enumerate(b[8:8 + _n(b)]))
    + b[8 + _n(b):]), names=())
bad_weights_case("weights_json_unterminated", _w_raw(
    lambda b: b[:8] + b[8:8 + _n(b)].replace(b"}", b" ") + b[8 + _n(b):]), names=())
bad_weights_case("weights_json_missing_colon", _w_raw(
    lambda b: b[:8] + b[8:8 + _n(b)].replace(b'"dtype":', b'"dtype" ', 1) + b[8 + _n(b):]),
    names=())
DUPLICATE_KEY = ('{"proj_w":{"dtype":"F32","shape":[3,5],"data_offsets":[0,60]},'
                 '"proj_w":{"dtype":"F32","shape":[3,5],"data_offsets":[60,120]}}')
bad_weights_case("weights_json_duplicate_key", lambda env: env.raw(
    "dup.safetensors",
    tensorio.header_image(DUPLICATE_KEY, tensorio.tensor_bytes(WEIGHTS["proj_w"]) * 2)), names=())
bad_weights_case("weights_missing_field", _w_header_edit(lambda h: h["proj_w"].pop("data_offsets")),
                 names=())
bad_weights_case("weights_header_not_object", lambda env: env.raw(
    "arr.safetensors", tensorio.header_image("[1, 2, 3]", b"")), names=())
bad_weights_case("weights_invalid_utf8", _w_raw(
    lambda b: b[:9] + b"\xff\xfe" + b[11:]), names=())
bad_weights_case("weights_random_bytes", lambda env: env.raw(
    "rand.safetensors", bytes(np.random.default_rng(5).integers(0, 256, 300, dtype=np.uint8))),
    names=())
bad_weights_case("weights_nonexistent", lambda env: os.path.join(env.tmp, "nope.safetensors"),
                 names=("nope.safetensors",))


@test
def weights_not_regular_file(env):
    """--weights naming a FIFO, a directory or /dev/null: exit 1 at once,
    naming the path and what it is (issue 18, item 7)."""
    exe = env.exe("basic")
    for path, kind in _not_regular(env):
        res = run([exe, "--weights", path, "--output-dir", env.tmp] + env.basic_inputs(),
                  timeout=QUICK)
        check_exit(res, 1, [path, kind, "not a regular file"], "--weights %s (%s)" % (path, kind))


def _w_header_bytes(edit):
    """A weights file whose raw JSON header text is edited by edit(bytes)."""
    def make(env):
        img = tensorio.safetensors_image(list(WEIGHTS.items()), pad=False)
        n = _n(img)
        return env.raw("edited.safetensors", tensorio.header_image(edit(img[8:8 + n]), img[8 + n:]))
    return make


def _rename(old, new):
    def edit(h):
        h[new] = h.pop(old)
    return edit


# A name with a NUL must not be cut at it and bound to the param before it
# (issue 18, item 10): "proj_w\u0000zzz" is not "proj_w". The message quotes
# the name as the JSON spells it.
bad_weights_case("weights_name_with_nul_escape", _w_header_edit(_rename("proj_w", "proj_w\0zzz")),
                 names=("proj_w\\u0000zzz", "NUL"))
bad_weights_case("weights_name_with_raw_nul", _w_header_bytes(
    lambda t: t.replace(b'"proj_w"', b'"proj_w\x00zzz"')), names=("proj_w\\x00zzz", "NUL"))
bad_weights_case("weights_name_with_control_byte", _w_header_bytes(
    lambda t: t.replace(b'"proj_w"', b'"proj_w\x01"')), names=("proj_w",))
bad_weights_case("weights_dtype_with_nul", _w_header_edit(
    lambda h: h["proj_w"].update(dtype="F32\0junk")), names=("proj_w", "NUL"))
bad_weights_case("weights_name_invalid_utf8", _w_header_bytes(
    lambda t: t.replace(b'"proj_w"', b'"proj_w\xc3\x28"')), names=("UTF-8",))
bad_weights_case("weights_name_lone_surrogate", _w_header_bytes(
    lambda t: t.replace(b'"proj_w"', b'"proj_w\\ud800"')), names=())


@test
def weights_escapes_ok(env):
    """What is not a NUL stays valid: an escaped backslash before "u0000"
    in a name, non-ASCII names, and \u0000 inside __metadata__ (free-form,
    ignored, and accepted by the reference implementation)."""
    exe = env.exe("basic")
    img = tensorio.safetensors_image(list(WEIGHTS.items()) + [
        ("extra\\u0000", torch.zeros(1)), ("caf\u00e9", torch.zeros(1))])
    n = _n(img)
    header = json.loads(img[8:8 + n])
    header["__metadata__"] = {"format": "pt", "note": "a\0b", "k\0": "v"}
    p = env.raw("esc.safetensors", tensorio.header_image(header, img[8 + n:]))
    d = env.path("out_esc")
    os.makedirs(d)
    res = run([exe, "--weights", p, "--output-dir", d] + env.basic_inputs())
    check_exit(res, 0, (), "weights with escapes that are not NULs")
    check_outputs(d, expected_basic(), "weights with escapes")


@test
def weights_metadata_and_float_conversion_ok(env):
    """__metadata__ is ignored, params with initialisers may be absent, and
    a floating param stored as another floating dtype (f16 here) is
    converted (runtime/tgcrt.h, rt_context_create)."""
    exe = env.exe("basic")
    w16 = WEIGHTS["proj_w"].to(torch.float16)
    img = tensorio.safetensors_image([("proj_w", w16)])
    n = _n(img)
    header = json.loads(img[8:8 + n])
    header["__metadata__"] = {"format": "pt"}
    p = env.raw("meta.safetensors", tensorio.header_image(header, img[8 + n:]))
    d = env.path("out_meta")
    os.makedirs(d)
    res = run([exe, "--weights", p, "--output-dir", d] + env.basic_inputs())
    check_exit(res, 0, (), "weights with __metadata__, f16 proj_w, defaults for proj_b and gain")
    w = {"proj_w": w16.to(torch.float32), "proj_b": torch.zeros(5),
         "gain": torch.ones(5, dtype=torch.float16)}
    check_outputs(d, expected_basic(w), "metadata run")


@test
def weights_missing_file_flag_uses_nothing(env):
    """No --weights and nothing embedded: proj_w (no initialiser) is missing."""
    exe = env.exe("basic")
    check_exit(run([exe, "--output-dir", env.tmp] + env.basic_inputs()), 1, ["proj_w"],
               "no --weights")


# ---- flags --------------------------------------------------------------------

def bad_flag_case(name, args):
    def t(env):
        exe = env.exe("basic")
        check_exit(run([exe, "--weights", env.weights()] + env.basic_inputs() + args), 2, (), name)
    t.__name__ = name
    TESTS.append(t)


bad_flag_case("flag_unknown", ["--frobnicate"])
bad_flag_case("flag_positional", ["stray"])
bad_flag_case("flag_bench_without_n", ["--bench"])
bad_flag_case("flag_bench_not_number", ["--bench", "abc"])
bad_flag_case("flag_bench_negative", ["--bench", "-3"])
bad_flag_case("flag_threads_abc", ["--threads", "abc"])
bad_flag_case("flag_threads_without_n", ["--threads"])
bad_flag_case("flag_threads_trailing_garbage", ["--threads", "2x"])
bad_flag_case("flag_random_inputs_without_seed", ["--random-inputs"])
bad_flag_case("flag_random_inputs_abc", ["--random-inputs", "abc"])
bad_flag_case("flag_output_dir_without_arg", ["--output-dir"])
bad_flag_case("flag_weights_without_arg", ["--weights"])
bad_flag_case("flag_input_without_arg", ["--input"])


@test
def flag_help(env):
    exe = env.exe("basic")
    rc, out, err = run([exe, "--help"])
    check_exit((rc, out, err), 0, (), "--help")
    if "--weights" not in out + err or "--input" not in out + err:
        raise Fail("--help does not list the flags: %s" % (out + err)[:300])


# ---- behaviour ----------------------------------------------------------------

@test
def success_is_silent_and_correct(env):
    exe = env.exe("basic")
    d = env.path("out_ok")
    os.makedirs(d)
    rc, out, err = run([exe, "--weights", env.weights(), "--output-dir", d] + env.basic_inputs())
    check_exit((rc, out, err), 0, (), "valid run")
    if out or err:
        raise Fail("a successful run printed: %r" % (out + err)[:300])
    check_outputs(d, expected_basic(), "valid run")
    left = sorted(set(os.listdir(d)) - {"logits.npy", "doubled.npy"})
    if left:
        raise Fail("output dir holds more than the outputs: %s" % left)


@test
def default_output_dir_is_cwd(env):
    exe = env.exe("basic")
    d = env.path("cwd")
    os.makedirs(d)
    res = run([exe, "--weights", env.weights()] + env.basic_inputs(), cwd=d)
    check_exit(res, 0, (), "run without --output-dir")
    check_outputs(d, expected_basic(), "outputs in the working directory")


@test
def embedded_weights(env):
    w = env.weights(name="embed.safetensors")
    exe = env.build("basic", ("--weights", w, "--embed-weights"), key="basic-embed")
    if isinstance(exe, Fail):
        raise exe
    os.remove(w)  # the executable must not need the file any more
    d = env.path("out_embed")
    os.makedirs(d)
    res = run([exe, "--output-dir", d] + env.basic_inputs())
    check_exit(res, 0, (), "embedded weights, no --weights")
    if res[1] or res[2]:
        raise Fail("printed on success: %r" % (res[1] + res[2])[:300])
    check_outputs(d, expected_basic(), "embedded weights")


@test
def bf16_bool_u8_io(env):
    exe = env.exe("types")
    d = env.path("out_types")
    os.makedirs(d)
    hb = np.array([1.0, 1.00390625, -3.3333], dtype=np.float32)  # the second is a bf16 tie
    flags = np.array([True, False, True])
    small = np.array([[1, 2], [15, 16]], dtype=np.uint8)
    args = ["--input", "half_in=%s" % env.npy("hb", hb), "--input", "flags=%s" % env.npy("fl", flags),
            "--input", "small=%s" % env.npy("sm", small), "--output-dir", d]
    check_exit(run([exe] + args), 0, (), "bf16/bool/u8 run")
    hb_t = torch.tensor(hb).to(torch.bfloat16)
    check_outputs(d, {"hb2": (hb_t * 2).to(torch.float32).numpy(), "notf": ~flags,
                      "cnt": np.array(2, dtype=np.int64), "sq": (small * small).astype(np.uint8)},
                  "bf16/bool/u8")
    # a bf16 input must be given as float32
    bad = args[:1] + ["half_in=%s" % env.npy("hb16", hb.astype(np.float16))] + args[2:]
    check_exit(run([exe] + bad), 1, ["half_in"], "bf16 input given as float16")


def _torch_body(t):
    """torch's printed values of t: str(t) without `tensor(` and `, dtype=...)`,
    whitespace removed."""
    s = str(t)
    s = re.sub(r"^tensor\(", "", s)
    s = re.sub(r",\s*dtype=torch\.\w+\)$", "", s)
    s = re.sub(r"\)$", "", s)
    return re.sub(r"\s+", "", s)


@test
def print_matches_torch(env):
    """Every output's values appear exactly as torch prints them (str(t):
    precision 4, scientific notation, summarised with ... past 1000
    elements, `dtype=` suffix), after a line naming the output and giving
    its dtype, in declaration order."""
    exe = env.exe("print")
    a = np.array([[1.0, -2.5, 3.25], [0.125, 100.0, -0.0625]], dtype=np.float32)
    n = np.array([1, -2, 30, 400], dtype=np.int32)
    m = np.array([True, False, True])
    h = np.array([1.5, -3.0], dtype=np.float16)
    w = np.array([1e-5, 12345.678, 1.0], dtype=np.float32)
    d = env.path("out_print")
    os.makedirs(d)
    rc, out, err = run([exe, "--print", "--output-dir", d, "--input", "a=%s" % env.npy("a", a),
                        "--input", "n=%s" % env.npy("n", n), "--input", "m=%s" % env.npy("m", m),
                        "--input", "h=%s" % env.npy("h", h), "--input", "w=%s" % env.npy("w", w)])
    check_exit((rc, out, err), 0, (), "--print")
    ta, tn, tm, th, tw = (torch.tensor(v) for v in (a, n, m, h, w))
    expect = [("fa", ta * 2, ("f32", "float32")), ("ni", tn + 1, ("i32", "int32")),
              ("mb", ~tm, ("bool",)), ("sc", ta.sum(), ("f32", "float32")),
              ("hh", th * 0.5, ("f16", "float16")), ("sci", tw * 1, ("f32", "float32")),
              ("big", torch.arange(1600, dtype=torch.float32).view(40, 40) * ta[0, 0],
               ("f32", "float32")),
              ("bh", ta.to(torch.bfloat16) * 3, ("bf16", "bfloat16")),
              ("d64", tw.to(torch.float64) / 3, ("f64", "float64"))]
    pos = 0
    for name, t, dts in expect:
        want = str(t)
        i = out.find(want, pos)
        if i < 0:
            raise Fail("--print of %s does not show torch's %r (after the earlier outputs):\n%s"
                       % (name, want, out))
        head = out[pos:i]
        if name not in head or not any(dt in head for dt in dts):
            raise Fail("--print: no line naming %s and its dtype %s before its values:\n%s"
                       % (name, dts[0], out))
        pos = i + len(want)


@test
def bench_line(env):
    exe = env.exe("basic")
    rc, out, err = run([exe, "--weights", env.weights(), "--bench", "5", "--output-dir", env.tmp]
                       + env.basic_inputs())
    check_exit((rc, out, err), 0, (), "--bench 5")
    lines = [l for l in (out + err).splitlines() if l.strip()]
    num = r"(\d+(?:\.\d+)?)"
    if len(lines) != 1:
        raise Fail("--bench 5 printed %d lines, expected one: %r" % (len(lines), out + err))
    m = re.fullmatch(r"bench: runs=5 median_us=%s min_us=%s max_us=%s" % (num, num, num),
                     lines[0].strip())
    if not m:
        raise Fail("--bench line does not match the contract: %r" % lines[0])
    med, lo, hi = map(float, m.groups())
    if not lo <= med <= hi:
        raise Fail("--bench: min %g <= median %g <= max %g does not hold" % (lo, med, hi))


@test
def random_inputs_deterministic(env):
    exe = env.exe("basic")
    w = env.weights()
    outs = []
    for seed in ("11", "11", "12"):
        d = env.path("rand_%s" % seed)
        os.makedirs(d)
        check_exit(run([exe, "--weights", w, "--random-inputs", seed, "--output-dir", d]), 0, (),
                   "--random-inputs %s" % seed)
        outs.append({n: np.load(os.path.join(d, n + ".npy")) for n in ("logits", "doubled")})
    for n in outs[0]:
        if not np.array_equal(outs[0][n], outs[1][n], equal_nan=True):
            raise Fail("--random-inputs 11 twice gives different %s" % n)
    if all(np.array_equal(outs[0][n], outs[2][n]) for n in outs[0]):
        raise Fail("--random-inputs 11 and 12 give identical outputs")
    if not np.isfinite(outs[0]["logits"]).all():
        raise Fail("--random-inputs gives non-finite outputs: %s" % outs[0]["logits"])
    # an explicit --input overrides the random one
    d = env.path("rand_override")
    os.makedirs(d)
    check_exit(run([exe, "--weights", w, "--random-inputs", "11", "--output-dir", d]
                   + env.basic_inputs()), 0, (), "--random-inputs with --input")
    check_outputs(d, expected_basic(), "--random-inputs with explicit --input")


@test
def random_initialisers_deterministic(env):
    """randn/uniform initialisers: the same values on every run and in every
    build; uniform within [low, high)."""
    e1 = env.exe("randinit")
    e2 = env.build("randinit", (), key="randinit-second-build")
    if isinstance(e2, Fail):
        raise e2
    q = env.npy("q", np.array([0.0, 0.0, 0.0, 0.0], dtype=np.float32))
    q1 = env.npy("q1", np.array([1.0, 1.0, 1.0, 1.0], dtype=np.float32))
    res = []
    for exe, qq in ((e1, q), (e1, q), (e2, q), (e1, q1)):
        d = env.path("ri")
        os.makedirs(d)
        check_exit(run([exe, "--input", "q=%s" % qq, "--output-dir", d]), 0, (), "randinit run")
        res.append(np.load(os.path.join(d, "out.npy")))
    if not (np.array_equal(res[0], res[1]) and np.array_equal(res[0], res[2])):
        raise Fail("random initialisers differ between runs or builds: %s" % res[:3])
    ru = res[0]
    if not ((ru >= -1) & (ru < 1)).all():
        raise Fail("uniform(-1, 1) initialiser out of range: %s" % ru)
    rw = res[3] - ru
    if not np.isfinite(rw).all() or np.all(rw == 0):
        raise Fail("randn initialiser looks wrong: %s" % rw)


@test
def threads_flag(env):
    exe = env.exe("basic")
    for n in ("1", "2", "4"):
        d = env.path("thr%s" % n)
        os.makedirs(d)
        check_exit(run([exe, "--weights", env.weights(), "--threads", n, "--output-dir", d]
                       + env.basic_inputs()), 0, (), "--threads %s" % n)
        check_outputs(d, expected_basic(), "--threads %s" % n)


@test
def threads_limit(env):
    """--threads accepts 0 to 1024 (TGCRT_MAX_THREADS, the thread pool's
    limit): 1024 runs, 1025 is a command-line error naming the range."""
    exe = env.exe("basic")
    d = env.path("thr1024")
    os.makedirs(d)
    check_exit(run([exe, "--weights", env.weights(), "--threads", "1024", "--output-dir", d]
                   + env.basic_inputs()), 0, (), "--threads 1024")
    check_outputs(d, expected_basic(), "--threads 1024")
    check_exit(run([exe, "--weights", env.weights(), "--threads", "1025"] + env.basic_inputs()),
               2, ["1025", "0 to 1024"], "--threads 1025")


@test
def build_threads_limit(env):
    """`tgc build --threads N` accepts exactly what the executable's thread
    pool does (issue 18, item 3): 1024 builds a program that runs, 1025 is
    refused at build time rather than by every run of the program."""
    exe = env.build("basic", ("--threads", "1024"))
    if isinstance(exe, Fail):
        raise exe
    d = env.path("bthr1024")
    os.makedirs(d)
    check_exit(run([exe, "--weights", env.weights(), "--output-dir", d] + env.basic_inputs()),
               0, (), "built with --threads 1024")
    check_outputs(d, expected_basic(), "built with --threads 1024")
    tg = os.path.join(env.tmp, "basic.tg")
    res = run([env.tgc, "build", tg, "-o", env.path("bthr1025.exe"), "--threads", "1025"])
    check_exit(res, 2, ["1025", "1024"], "tgc build --threads 1025")


@test
def output_replaces_existing_file_whole(env):
    exe = env.exe("basic")
    d = env.path("out_replace")
    os.makedirs(d)
    with open(os.path.join(d, "logits.npy"), "wb") as f:
        f.write(b"garbage" * 1000)
    check_exit(run([exe, "--weights", env.weights(), "--output-dir", d] + env.basic_inputs()),
               0, (), "run over an existing output")
    check_outputs(d, expected_basic(), "replaced output")
    left = sorted(set(os.listdir(d)) - {"logits.npy", "doubled.npy"})
    if left:
        raise Fail("temporary files left behind: %s" % left)


@test
def output_unwritable_fails_cleanly(env):
    """An output whose path is a directory cannot be renamed over: exit 1
    naming it, and no temporary file is left."""
    exe = env.exe("basic")
    d = env.path("out_blocked")
    os.makedirs(os.path.join(d, "logits.npy"))
    res = run([exe, "--weights", env.weights(), "--output-dir", d] + env.basic_inputs())
    check_exit(res, 1, ["logits"], "output path is a directory")
    left = sorted(set(os.listdir(d)) - {"logits.npy", "doubled.npy"})
    if left:
        raise Fail("temporary files left behind: %s" % left)


@test
def output_dir_missing(env):
    """A missing --output-dir is created with its parents (mkdir -p, mode
    0777 less the umask) and the outputs are written there; a component that
    is a file is exit 1 naming it, and nothing is created under it."""
    exe = env.exe("basic")
    d = os.path.join(env.tmp, "no", "such", "dir")
    old = os.umask(0o027)
    try:
        res = run([exe, "--weights", env.weights(), "--output-dir", d] + env.basic_inputs())
    finally:
        os.umask(old)
    check_exit(res, 0, (), "--output-dir that does not exist")
    check_outputs(d, expected_basic(), "--output-dir created")
    for p in (d, os.path.join(env.tmp, "no")):
        mode = os.stat(p).st_mode & 0o777
        if mode != 0o750:
            raise Fail("created %s has mode %o, expected 750 (0777 less the umask 027)" % (p, mode))
    f = os.path.join(env.tmp, "a_file")
    open(f, "w").close()
    res = run([exe, "--weights", env.weights(), "--output-dir", os.path.join(f, "sub")]
              + env.basic_inputs())
    check_exit(res, 1, [f, "not a directory"], "--output-dir under a file")


@test
def index_out_of_range_names_value_position_range(env):
    """An index out of range is exit 1 naming the offending value, its
    position in the index tensor, the index tensor, the indexed tensor and
    dimension, and the valid range (negative indices only for x[idx])."""
    exe = env.exe("indexing")
    good = {"ids": np.array([[0, 1, 2, 3], [4, 0, 1, 2]], np.int64),
            "sel": np.array([0, 2, -1], np.int32),
            "g": np.array([[0, 5], [1, 2], [3, 4]], np.int64),
            "h": np.array([[0, -6], [1, 2], [3, 5]], np.int64),
            "x": np.arange(18, dtype=np.float32).reshape(6, 3)}

    def go(**bad):
        args = []
        for n, a in good.items():
            args += ["--input", "%s=%s" % (n, env.npy(n, bad.get(n, a)))]
        return run([exe, "--output-dir", env.tmp] + args)

    check_exit(go(sel=np.array([0, 2, 1], np.int32)), 0, (), "indices in range")
    ids = good["ids"].copy()
    ids[1, 3] = 7
    check_exit(go(ids=ids), 1, [
        "index 7 at position [1, 3] of 'ids'",
        "out of range for dimension 0 of 'table' (size 5): expected 0 to 4"], "embedding")
    check_exit(go(sel=np.array([0, 2, 1], np.int32), g=np.array([[0, 5], [1, 6], [3, 4]])), 1, [
        "index 6 at position [1, 1] of 'g'",
        "out of range for dimension 0 of 'x' (size 6): expected 0 to 5"], "gather")
    # index_select runs before x[sel]: -1 is out of its range, not x[sel]'s
    check_exit(go(), 1, ["index -1 at position [2] of 'sel'", "index_select",
                         "dimension 1 of 'x' (size 3): expected 0 to 2"], "index_select")
    # x[h.T]: negative indices count from the end; a transposed index
    # tensor reports the position in h.T, the tensor that indexes
    h = good["h"].copy()
    h[2, 0] = -7
    res = go(sel=np.array([0, 2, 1], np.int32), h=h)
    check_exit(res, 1, ["index -7 at position [0, 2] of", "out of range for dimension 0 of 'x' "
                        "(size 6): expected -6 to 5"], "x[h.T]")


@test
def output_over_input_refused(env):
    """An output NAME.npy that is, by device and inode, one of the run's
    --input files (also through a hard link or another spelling of the
    directory) or its --weights file: exit 1 naming both, before anything is
    written, and the input file is unchanged (issue 18, item 1)."""
    exe = env.exe("basic")
    d = env.path("out_over_input")
    os.makedirs(d)
    img = os.path.join(d, "logits.npy")  # the input img lives where logits would go
    np.save(img, IMG.numpy())
    before = open(img, "rb").read()
    tok = env.npy("tokens", TOKENS.numpy())
    for outdir, inp in ((d, img), (d + "/../" + os.path.basename(d), img)):
        res = run([exe, "--weights", env.weights(), "--output-dir", outdir,
                   "--input", "img=" + inp, "--input", "tokens=" + tok])
        check_exit(res, 1, ["logits", "img"], "output over an input")
    if open(img, "rb").read() != before:
        raise Fail("the input file was changed")
    link = os.path.join(d, "doubled.npy")  # a hard link of the tokens input
    tok2 = env.path("tokens_linked.npy")
    shutil.copy(tok, tok2)
    os.link(tok2, link)
    res = run([exe, "--weights", env.weights(), "--output-dir", d,
               "--input", "img=" + env.npy("img", IMG.numpy()), "--input", "tokens=" + tok2])
    check_exit(res, 1, ["doubled", "tokens"], "output over a hard link of an input")
    w = os.path.join(d, "logits.npy")
    os.unlink(w)
    shutil.copy(env.weights(), w)
    res = run([exe, "--weights", w, "--output-dir", d] + env.basic_inputs())
    check_exit(res, 1, ["logits", "weights"], "output over the weights file")
    if open(tok2, "rb").read() != open(tok, "rb").read():
        raise Fail("the linked input was changed")


@test
def run_long_graph_name(env):
    """`tgc run` names its temporary program after the graph: a graph name
    longer than a file name may be (255 bytes) still runs."""
    tg = env.anon(".tg")
    with open(tg, "w") as f:
        f.write("graph %s\ninput x : f32[2]\noutput y = x * 2\n" % ("g" * 300))
    x = env.npy("x", np.array([1.0, -2.0], np.float32))
    d = env.path("out_run_long")
    os.makedirs(d)
    check_exit(run([env.tgc, "run", tg, "--input", "x=" + x, "--output-dir", d]), 0, (),
               "tgc run, graph name of 300")
    check_outputs(d, {"y": np.array([2.0, -4.0], np.float32)}, "tgc run, graph name of 300")


@test
def outputs_written_atomically(env):
    """A reader polling DIR/big.npy while the executable rewrites it (4 MiB,
    eight runs) never sees a partial file: every read is a whole array."""
    exe = env.exe("big")
    d = env.path("out_atomic")
    os.makedirs(d)
    target = os.path.join(d, "big.npy")
    stop = threading.Event()
    problems, reads = [], [0]

    def reader():
        while not stop.is_set():
            try:
                with open(target, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            reads[0] += 1
            try:
                a = np.load(__import__("io").BytesIO(data))
                if a.shape != (1024, 1024) or not (a == a.flat[0]).all():
                    problems.append("inconsistent content")
            except Exception as e:
                problems.append("partial file (%d bytes): %s" % (len(data), e))
    th = threading.Thread(target=reader)
    th.start()
    try:
        for i in range(8):
            v = env.npy("sv%d" % i, np.float32(i))
            res = run([exe, "--input", "seed_val=%s" % v, "--output-dir", d])
            if res[0] != 0:
                check_exit(res, 0, (), "big run")
    finally:
        stop.set()
        th.join()
    if problems:
        raise Fail("a reader saw a non-atomic output: %s (of %d reads)" % (problems[0], reads[0]))
    left = sorted(set(os.listdir(d)) - {"big.npy"})
    if left:
        raise Fail("temporary files left behind: %s" % left)


# ---- generated C: non-finite initialisers, long and reserved names ----------
# (issue 18, item 5) The glue prints every initialiser as a C constant that
# reads back exactly, holds names at any length, and quotes paths for
# .incbin; values are compared bit for bit with PyTorch's.

NONFINITE_INITS = [("ninf", "-inf", -float("inf")), ("nan", "nan", float("nan")),
                   ("pinf", "inf", float("inf")), ("nzero", "-0.0", -0.0),
                   ("nnan", "-nan", -float("nan"))]
NONFINITE_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                    "f64": torch.float64}
NONFINITE_X = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)

for _dt in NONFINITE_DTYPES:
    GRAPHS["nonfinite_" + _dt] = "\n".join(
        ["graph exec_nonfinite_%s" % _dt, "input x : %s[3]" % _dt]
        + ["param p_%s : %s[3] = full(%s)" % (n, _dt, v) for n, v, _ in NONFINITE_INITS]
        + ["param r : %s[64] = randn(std = inf, seed = 5)" % _dt]
        + ["output o_%s = p_%s" % (n, n) for n, _, _ in NONFINITE_INITS]
        + ["output s = x + p_ninf", "output rr = r"]) + "\n"


def _same_bits(got, want):
    """Equal values with equal sign bits; NaN matches NaN of the same sign."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    nan = np.isnan(want)
    return (got.shape == want.shape and (np.isnan(got) == nan).all()
            and (np.signbit(got) == np.signbit(want)).all() and (got[~nan] == want[~nan]).all())


@test
def nonfinite_initialisers_match_torch(env):
    """full(-inf), full(nan), full(inf), full(-0.0), full(-nan) and
    randn(std = inf) in every floating dtype build, run and give PyTorch's
    values (torch.full; normal_ with std inf gives +-inf)."""
    for dt, tdt in NONFINITE_DTYPES.items():
        exe = env.exe("nonfinite_" + dt)
        xin = NONFINITE_X.to(tdt)
        x = env.npy("x", xin.float().numpy() if dt == "bf16" else xin.numpy())
        d = env.path("out_nonfinite_" + dt)
        os.makedirs(d)
        check_exit(run([exe, "--input", "x=%s" % x, "--output-dir", d]), 0, (), dt)
        want = {"o_" + n: torch.full((3,), v, dtype=tdt) for n, _, v in NONFINITE_INITS}
        want["s"] = xin + torch.full((3,), -float("inf"), dtype=tdt)
        for name, w in want.items():
            got = np.load(os.path.join(d, name + ".npy"))
            if not _same_bits(got, w.double().numpy()):
                raise Fail("%s: %s = %s, PyTorch gives %s (sign bits %s vs %s)"
                           % (dt, name, got.tolist(), w.tolist(), np.signbit(got).tolist(),
                              np.signbit(w.double().numpy()).tolist()))
        # std * N(0, 1) with std = inf: +-inf, both signs in 64 draws. (The
        # generators differ, so only the kind of value is compared; PyTorch's
        # f16/bf16 normal_ also gives a NaN now and then, from Box-Muller
        # on uniforms rounded to the low dtype.)
        rr = np.load(os.path.join(d, "rr.npy"))
        t = torch.empty(64, dtype=tdt)
        torch.nn.init.normal_(t, 0.0, float("inf"))
        if not np.isinf(rr).all() or not (rr > 0).any() or not (rr < 0).any() \
                or torch.isfinite(t).any():
            raise Fail("%s: randn(std = inf) gives %s; PyTorch's normal_ gives +-inf: %s"
                       % (dt, rr.tolist()[:8], t.tolist()[:8]))


@test
def long_names_build_and_run(env):
    """Graph names of 191 to 5000 characters (the forward function's symbol
    was cut at 199) and input and param names of 5000 build and run; an
    output name of 240 (a file name must fit in 255 bytes) is written."""
    inp, par, out = "i" * 5000, "p" * 5000, "o" * 240
    x = env.npy("x", np.array([1.0, -2.0], np.float32))
    for n in (191, 255, 1000, 5000):
        tg = env.anon(".tg")
        with open(tg, "w") as f:
            f.write("graph %s\ninput %s : f32[2]\nparam %s : f32[2] = full(0.25)\n"
                    "output %s = %s + %s\n" % ("g" * n, inp, par, out, inp, par))
        exe = env.path("long%d.exe" % n)
        check_exit(run([env.tgc, "build", tg, "-o", exe]), 0, (), "build, graph name of %d" % n)
        d = env.path("out_long%d" % n)
        os.makedirs(d)
        check_exit(run([exe, "--input", "%s=%s" % (inp, x), "--output-dir", d]), 0, (),
                   "run, graph name of %d" % n)
        check_outputs(d, {out: np.array([1.25, -1.75], np.float32)}, "graph name of %d" % n)


@test
def long_names_compile_header(env):
    """tgc compile with a 5000-character graph name and input name: the
    object defines the API and the forward function under the whole name,
    and a C11 program using the header compiles (-Wall -Werror -pedantic)."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    g, inp = "G" * 5000, "x" * 5000
    tg = env.anon(".tg")
    with open(tg, "w") as f:
        f.write("graph %s\ninput %s : f32[2]\nparam w : f32[2] = full(-inf)\n"
                "output y = %s * w\n" % (g, inp, inp))
    obj, hdr = env.anon(".o"), env.anon(".h")
    check_exit(run([env.tgc, "compile", tg, "-o", obj, "--header", hdr]), 0, (), "tgc compile")
    rc, syms, err = run(["nm", obj])
    if rc == 0:
        for s in (g + "_create", g + "_run", g + "__forward"):
            if not re.search(r"\bT %s\b" % s, syms):
                raise Fail("the object does not define %s...%s (%d chars): %s"
                           % (s[:8], s[-12:], len(s), err[:200]))
    if not cc:
        return
    src = env.anon(".c")
    with open(src, "w") as f:
        f.write('#include "%s"\nint use(const float *x, float *y) {\n'
                "    %s_ctx *c = 0;\n    int s = %s_create(&c, 0, 1);\n"
                "    if (!s) s = %s_run(c, x, y);\n    %s_destroy(c);\n    return s;\n}\n"
                % (os.path.basename(hdr), g, g, g, g))
    res = run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only",
               "-I", os.path.dirname(hdr), src])
    check_exit(res, 0, (), "a C program including the header")


@test
def reserved_graph_names(env):
    """A graph whose `tgc compile` API (NAME_create, NAME_OK...) would be one
    of the runtime's names (runtime/tgcrt.h) is a located error at check
    time, not a C compiler error at build time. The API's suffixes come
    from a compiled header, so a new runtime function is covered too."""
    tg, hdr = env.anon(".tg"), env.anon(".h")
    with open(tg, "w") as f:
        f.write("graph probe\ninput x : f32[2]\noutput y = x\n")
    check_exit(run([env.tgc, "compile", tg, "-o", env.anon(".o"), "--header", hdr]), 0, (),
               "tgc compile probe")
    suffixes = set(m[len("probe"):] for m in re.findall(r"\bprobe_\w+", open(hdr).read()))
    rt = "".join(open(os.path.join(ROOT, "runtime", h)).read()
                 for h in ("tgcrt.h", "tgcrt_abi.h", "tgcrt_cuda.h"))
    names = set(re.findall(r"\b[A-Za-z_]\w*\b", re.sub(r"/\*.*?\*/", "", rt, flags=re.S)))
    clash = sorted(set(n[:-len(s)] for n in names for s in suffixes
                       if n.endswith(s) and re.match(r"[A-Za-z_]\w*$", n[:-len(s)])))
    if not clash:
        raise Fail("no clash derived (suffixes %s): the derivation is broken" % sorted(suffixes))
    for name in clash:
        with open(tg, "w") as f:
            f.write("graph %s\ninput x : f32[2]\noutput y = x\n" % name)
        res = run([env.tgc, "check", tg])
        check_exit(res, 1, ["reserved", "%s:1:7:" % tg], "graph %s" % name)


@test
def embedded_weights_odd_path(env):
    """--embed-weights quotes the weights' path twice (C, then .incbin's
    string): quotes, backslashes, '??=' (a trigraph), a newline and
    non-ASCII bytes in it still build, and the program needs no --weights."""
    d = env.path("odd dir")
    os.makedirs(d)
    p = os.path.join(d, 'w "q" \\ ??= caf\u00e9\n.safetensors')
    with open(p, "wb") as f:
        f.write(tensorio.safetensors_image(list(WEIGHTS.items())))
    tg = env.anon(".tg")
    with open(tg, "w") as f:
        f.write(GRAPHS["basic"].lstrip())
    exe = env.path("odd_embed.exe")
    check_exit(run([env.tgc, "build", tg, "-o", exe, "--weights", p, "--embed-weights"]), 0, (),
               "build with an odd weights path")
    out = env.path("out_odd_embed")
    os.makedirs(out)
    check_exit(run([exe, "--output-dir", out] + env.basic_inputs()), 0, (), "run embedded")
    check_outputs(out, expected_basic(), "embedded weights from an odd path")


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-k", dest="pattern")
    ap.add_argument("--keep", help="keep the executables and files here")
    args = ap.parse_args()
    t0 = time.time()
    tmp = args.keep or tempfile.mkdtemp(prefix="tgc-exec-")
    os.makedirs(tmp, exist_ok=True)
    env = Env(os.path.abspath(args.tgc), tmp)
    tests = [t for t in TESTS if not args.pattern or args.pattern in t.__name__]
    passed = failed = 0
    rc, _, err = run([env.tgc, "build", "--help"])
    if rc != 0:
        print("FAIL %s has no working `build` subcommand (`tgc build --help` exits %s): %s"
              % (args.tgc, rc, err.strip()[:200]))
        print("exec: 0 passed, %d failed" % len(tests))
        return 1
    try:
        for t in tests:
            try:
                t(env)
                passed += 1
            except Fail as e:
                failed += 1
                print("FAIL %s: %s" % (t.__name__, e))
            except Exception:
                failed += 1
                print("FAIL %s: harness error: %s" % (t.__name__, traceback.format_exc()))
            sys.stdout.flush()
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("time: %.1f s" % (time.time() - t0))
    print("exec: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
