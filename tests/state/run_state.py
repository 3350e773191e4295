#!/usr/bin/python3
"""State suite: `state` declarations and slice_scatter (graph-language
"State"; docs/language.md).

1. slice_scatter against PyTorch 1.13: one graph holding every case (int
   start/end/step on several dims, negative dims and starts, f32, i64 and
   bf16, strided operands, the method and positional forms, a tensor start
   of i64 and of i32), built once with `tgc build`, run at tensor starts
   0, 2 and 4 (the largest valid); every output equals
   torch.ops.aten.slice_scatter on the same inputs exactly (a copy: no
   arithmetic; bf16 compared after the exact round trip through f32).
   (torch.slice_scatter's Python binding in 1.13 reads its start and end
   wrongly, "cannot be represented as a SymInt"; the aten op is the same
   function with positional arguments.)
2. A run-time start out of range (5, past the end; -1) exits 1 with a
   message naming the start, the op and the valid range, and writes no
   output.
3. docs/language.md's State example (a decode step over a KV cache)
   builds, and one step equals attention over the keys it wrote; `state`
   is still a plain name where no name follows it.
4. --target cuda: the slice write NVRTC compiles, and the kernel cut out
   of the emitted module and run on the host (a minimal CUDA shim) writes
   the slice in place at starts 0, 2 and 4, and at 5 and -1 writes nothing
   and sets the error cell (skipped without CUDA support or a C++
   compiler).
5. --train: a state gets no gradient (w's, through the update, is 2 x^2)
   and --freeze does not match it.
6. --precision (mixed and uniform): the update stays a view of the state
   (src is cast to the state's dtype, not the state to src's).
7. A state kept between runs and updated in place, through `tgc compile`:
   state_main.c (see its header) runs at positions 0, 1, 2, reads the
   state back, resets it, and checks every value against what it computes
   from the inputs it chose.
Last line: "state: N passed, M failed"; exit 1 when M > 0.

Usage: run_state.py --tgc TGC --rtlib LIBTGCRT.a --rtinc RUNTIME_DIR --cc CC
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, ".."))  # link_line.py
from link_line import link_libs  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

TIMEOUT = 300

# name, dtype, input shape, src shape, call (after "slice_scatter(x, s, "
# or as written), strided: the operands are transposed views
CASES = [
    ("rows", "f32", [5, 6], [3, 6], "dim=0, start=1, end=4", (0, 1, 4, 1)),
    ("neg_dim_step", "f32", [4, 6, 3], [4, 2, 3], "dim=-2, start=-4, step=2", (1, -4, None, 2)),
    ("i64_step3", "i64", [3, 8], [3, 2], "dim=1, start=2, end=7, step=3", (1, 2, 7, 3)),
    ("bf16_last", "bf16", [2, 5, 4], [2, 5, 2], "dim=2, end=2", (2, None, 2, 1)),
    ("i64_neg_start", "i64", [2, 7], [2, 3], "dim=-1, start=-3", (1, -3, None, 1)),
    ("clamped_end", "f32", [6, 2], [2, 2], "0, 4, 100", (0, 4, 100, 1)),  # positional
    ("whole", "f32", [3, 4], [3, 4], "dim=1", (1, None, None, 1)),
]
TSHAPE, TSRC = [2, 3, 6, 4], [2, 3, 2, 4]  # the tensor-start cases: dim 2


def graph():
    lines = ["graph ss"]
    for i, (name, dt, shp, sshp, call, _) in enumerate(CASES):
        io = "f32" if dt == "bf16" else dt
        lines += [f"input x{i} : {io}{shp}", f"input s{i} : {io}{sshp}"]
        x, s = f"x{i}", f"s{i}"
        if dt == "bf16":
            x, s = f"x{i}.to(bf16)", f"s{i}.to(bf16)"
        r = f"slice_scatter({x}, {s}, {call})"
        if dt == "bf16":
            r = f"{r}.to(f32)"
        lines.append(f"output r_{name} = {r}")
    # strided operands: transposed views of the inputs
    lines += ["input xt : f32[6, 5]", "input st : f32[2, 5]",
              "output r_strided = xt.transpose(0, 1).slice_scatter(st.transpose(0, 1), 1, 1, 5, 2)"]
    lines += [f"input xp : f32{TSHAPE}", f"input sp : f32{TSRC}", "input pos : i64[]",
              "input pos32 : i32[]", f"input sq : i64{TSRC}", f"input xq : i64{TSHAPE}",
              "output r_pos = slice_scatter(xp, sp, dim=2, start=pos)",
              "output r_pos32 = slice_scatter(xq, sq, 2, pos32)"]
    return "\n".join(lines) + "\n"


def data(rng):
    feed = {}
    for i, (name, dt, shp, sshp, _, _) in enumerate(CASES):
        for key, shape in (("x", shp), ("s", sshp)):
            if dt == "i64":
                a = rng.integers(-50, 50, size=shape).astype(np.int64)
            else:
                a = rng.standard_normal(shape).astype(np.float32)
                if dt == "bf16":  # values bf16 holds exactly: the round trip is exact
                    a = torch.from_numpy(a).to(torch.bfloat16).float().numpy()
            feed[f"{key}{i}"] = a
    feed["xt"] = rng.standard_normal([6, 5]).astype(np.float32)
    feed["st"] = rng.standard_normal([2, 5]).astype(np.float32)
    feed["xp"] = rng.standard_normal(TSHAPE).astype(np.float32)
    feed["sp"] = rng.standard_normal(TSRC).astype(np.float32)
    feed["xq"] = rng.integers(-9, 9, size=TSHAPE).astype(np.int64)
    feed["sq"] = rng.integers(100, 200, size=TSRC).astype(np.int64)
    return feed


def aten(x, s, dim, start, end, step):
    return torch.ops.aten.slice_scatter(x, s, dim, start, end, step)


def reference(feed, pos):
    t = {k: torch.from_numpy(v) for k, v in feed.items()}
    ref = {}
    for i, (name, dt, _, _, _, (dim, start, end, step)) in enumerate(CASES):
        x, s = t[f"x{i}"], t[f"s{i}"]
        if dt == "bf16":
            x, s = x.to(torch.bfloat16), s.to(torch.bfloat16)
        r = aten(x, s, dim, start, end, step)
        ref[f"r_{name}"] = r.float() if dt == "bf16" else r
    ref["r_strided"] = aten(t["xt"].t(), t["st"].t(), 1, 1, 5, 2)
    ref["r_pos"] = aten(t["xp"], t["sp"], 2, pos, pos + TSRC[2], 1)
    ref["r_pos32"] = aten(t["xq"], t["sq"], 2, pos, pos + TSRC[2], 1)
    return {k: v.numpy() for k, v in ref.items()}


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}" + (f"\n  {detail}" if detail else ""))
        return ok


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT, **kw)


def diff_cases(R, args, d):
    src = os.path.join(d, "ss.tg")
    with open(src, "w") as f:
        f.write(graph())
    exe = os.path.join(d, "ss")
    p = run([args.tgc, "build", src, "-o", exe])
    if not R.check(p.returncode == 0, "tgc build of the slice_scatter graph", p.stdout):
        return
    feed = data(np.random.default_rng(27))
    for k, v in feed.items():
        np.save(os.path.join(d, f"{k}.npy"), v)
    ins = []
    for k in feed:
        ins += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
    for pos in (0, 2, TSHAPE[2] - TSRC[2]):
        np.save(os.path.join(d, "pos.npy"), np.array(pos, dtype=np.int64))
        np.save(os.path.join(d, "pos32.npy"), np.array(pos, dtype=np.int32))
        out = os.path.join(d, f"out{pos}")
        os.makedirs(out, exist_ok=True)
        pins = ["--input", f"pos={d}/pos.npy", "--input", f"pos32={d}/pos32.npy"]
        p = run([exe] + ins + pins + ["--output-dir", out])
        if not R.check(p.returncode == 0, f"the executable at start {pos}", p.stdout):
            continue
        for name, want in reference(feed, pos).items():
            got = np.load(os.path.join(out, f"{name}.npy"))
            same = got.dtype == want.dtype and got.shape == want.shape and \
                np.array_equal(got, want)
            R.check(same, f"{name} at start {pos} equals aten.slice_scatter",
                    f"got {got.dtype}{list(got.shape)}, expected {want.dtype}"
                    f"{list(want.shape)}; max |diff| "
                    f"{np.abs(got.astype(np.float64) - want).max() if got.shape == want.shape else '-'}")
    # A run-time start out of range: exit 1, named, no output written.
    for pos in (TSHAPE[2] - TSRC[2] + 1, -1):
        np.save(os.path.join(d, "pos.npy"), np.array(pos, dtype=np.int64))
        np.save(os.path.join(d, "pos32.npy"), np.array(0, dtype=np.int32))
        out = os.path.join(d, f"bad{pos}")
        os.makedirs(out, exist_ok=True)
        p = run([exe] + ins + ["--input", f"pos={d}/pos.npy", "--input", f"pos32={d}/pos32.npy",
                               "--output-dir", out])
        line = graph().split("\n").index(
            "output r_pos = slice_scatter(xp, sp, dim=2, start=pos)") + 1
        msg = f"start {pos} of 'pos' (slice_scatter, line {line}) is out of range for a slice of " \
            "length 2 along dimension 2 of 'xp' (size 6): expected 0 to 4"
        R.check(p.returncode == 1 and msg in p.stdout
                and not os.listdir(out),
                f"start {pos} out of range exits 1 naming it, writing nothing",
                f"rc {p.returncode}: {p.stdout.strip()}")


KV = """graph kv
input x : f32[1, 1, 8]
input pos : i64[]
state cache : f32[1, 4, 8]
c2 = slice_scatter(cache, x * 2, dim=1, start=pos)
output y = c2.sum(dim=1)
state seen : f32[1, 4, 8]
unread = slice_scatter(seen, x, dim=1, start=pos)
"""


def state_cases(R, args, d):
    src = os.path.join(d, "kv.tg")
    with open(src, "w") as f:
        f.write(KV)
    obj, hdr = os.path.join(d, "kv.o"), os.path.join(d, "kv.h")
    p = run([args.tgc, "compile", src, "-o", obj, "--header", hdr])
    if not R.check(p.returncode == 0, "tgc compile of the state graph", p.stdout):
        return
    R.check("warning" not in p.stdout, "an update no output reads is no dead value", p.stdout)
    exe = os.path.join(d, "state_main")
    cmd = [args.cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1", "-I", d, "-I",
           args.rtinc, os.path.join(HERE, "state_main.c"), obj, args.rtlib] + \
        link_libs([args.tgc, "compile"]) + args.sanitize_flags.split() + ["-o", exe]
    p = run(cmd)
    if not R.check(p.returncode == 0, "state_main.c builds against kv.h", p.stdout):
        return
    p = run([exe])
    R.check(p.returncode == 0 and "state_main: ok" in p.stdout,
            "a state persists across runs, is written in place, resets to zeros", p.stdout)


def doc_example(R, args, d):
    """docs/language.md's State example: one decode step at pos 3 from an
    empty cache equals attention over the keys written there."""
    with open(os.path.join(HERE, "..", "..", "docs", "language.md")) as f:
        text = f.read()
    start = text.index("graph decode(")
    src = text[start:text.index("```", start)]
    path = os.path.join(d, "decode.tg")
    with open(path, "w") as f:
        f.write(src)
    exe = os.path.join(d, "decode")
    p = run([args.tgc, "build", path, "-o", exe])
    if not R.check(p.returncode == 0, "docs/language.md's State example builds", p.stdout):
        return
    rng = np.random.default_rng(3)
    feed = {k: rng.standard_normal([1, 4, 1, 16]).astype(np.float32) for k in "qkv"}
    feed["pos"] = np.array(3, dtype=np.int64)
    ins = []
    for k, a in feed.items():
        np.save(os.path.join(d, f"dec_{k}.npy"), a)
        ins += ["--input", f"{k}={os.path.join(d, 'dec_' + k + '.npy')}"]
    out = os.path.join(d, "dec_out")
    os.makedirs(out, exist_ok=True)
    p = run([exe] + ins + ["--output-dir", out])
    if not R.check(p.returncode == 0, "docs/language.md's State example runs", p.stdout):
        return
    t = {k: torch.from_numpy(v) for k, v in feed.items()}
    kc, vc = torch.zeros(1, 4, 64, 16), torch.zeros(1, 4, 64, 16)
    kc[:, :, 3:4], vc[:, :, 3:4] = t["k"], t["v"]
    scores = (t["q"] @ kc.transpose(-2, -1)) / 4.0
    scores[..., 4:] = float("-inf")
    want = (torch.softmax(scores, -1) @ vc).numpy()
    got = np.load(os.path.join(out, "out.npy"))
    R.check(np.allclose(got, want, rtol=1e-5, atol=1e-6),
            "docs/language.md's State example equals attention over the written cache",
            f"max |diff| {np.abs(got - want).max()}")
    # 'state' is a keyword only before a name: a value may be called state.
    path = os.path.join(d, "named.tg")
    with open(path, "w") as f:
        f.write("graph named\ninput x : f32[2]\nstate = x * 2\noutput y = state + 1\n")
    p = run([args.tgc, "check", path])
    R.check(p.returncode == 0, "a value may be named state", p.stdout)


KVC = """graph kvc
input x : f32[2, 3, 2, 4]
input pos : i64[]
input a : f32[3, 7]
input b : f32[3, 3]
state cache : f32[2, 3, 6, 4]
c = slice_scatter(cache, x, dim=2, start=pos)
output y = c.sum(dim=2)
output z = slice_scatter(a, b, dim=1, start=1, step=2)
"""
# bufs: the arena, the inputs, the params, the outputs, the error cell
SLOT_X, SLOT_POS, SLOT_A, SLOT_B, SLOT_CACHE, SLOT_Y, SLOT_Z, SLOT_ERR = range(1, 9)
# Enough of CUDA for a grid-stride kernel run on the host, block after
# block, thread after thread (the slice write needs no barrier).
HOST = r"""#include <cstdio>
#include <cstdlib>
#include <vector>
struct Idx { unsigned x, y, z; };
static Idx threadIdx, blockIdx, blockDim = {256, 1, 1}, gridDim = {1, 1, 1};
#define __global__
#define __launch_bounds__(n)
static unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp,
                                    unsigned long long val) {
    unsigned long long old = *p;
    if (old == cmp) *p = val;
    return old;
}
"""
HOST_MAIN = r"""
// argv: a file per slot of bufs; slot OUT (argv[1]) and the error cell
// (slot ERR, argv[2]) are written back after the run.
int main(int argc, char **argv) {
    int out = atoi(argv[1]), err = atoi(argv[2]), n = argc - 3;
    std::vector<std::vector<char>> data(n);
    std::vector<char *> bufs(n);
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(argv[3 + i], "rb");
        if (!f) return 2;
        fseek(f, 0, SEEK_END);
        data[i].resize((size_t)ftell(f));
        fseek(f, 0, SEEK_SET);
        if (fread(data[i].data(), 1, data[i].size(), f) != data[i].size()) return 2;
        fclose(f);
        bufs[i] = data[i].data();
    }
    for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++)
        for (threadIdx.x = 0; threadIdx.x < 256; threadIdx.x++)
            KERNEL(bufs.data());
    for (int i : {out, err}) {
        FILE *f = fopen(argv[3 + i], "wb");
        if (!f || fwrite(data[i].data(), 1, data[i].size(), f) != data[i].size()) return 2;
        fclose(f);
    }
    return 0;
}
"""


def cuda_emul(R, args, d):
    """--target cuda: the generated slice write, NVRTC-compiled by tgc,
    then cut out of the emitted module and run on the host (bufs: arena,
    x, pos, cache, y, the error cell)."""
    import re
    import shutil
    src = os.path.join(d, "kvc.tg")
    with open(src, "w") as f:
        f.write(KVC)
    emit = os.path.join(d, "kvc_emit")
    os.makedirs(emit, exist_ok=True)
    p = run([args.tgc, "build", src, "--target", "cuda", "--emit", "cuda", emit, "-o",
             os.path.join(d, "kvc_cu")])
    if p.returncode != 0 and ("built without" in p.stdout or "NVRTC" in p.stdout):
        print(f"state: --target cuda skipped: {p.stdout.strip()[:200]}")
        return
    if not R.check(p.returncode == 0, "tgc build --target cuda of a state update (NVRTC)",
                   p.stdout):
        return
    with open(os.path.join(emit, "kvc.cu")) as f:
        kernels = {m.group(1): m.group(0) for m in re.finditer(
            r'^extern "C" __global__ void __launch_bounds__\(256\) (k\d+_slice_scatter)'
            r'\(.*?^}\n', f.read(), re.M | re.S)}
    if not R.check(len(kernels) == 2, "the CUDA module has two slice_scatter kernels",
                   str(list(kernels))):
        return
    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        print("state: --target cuda emulation skipped: no C++ compiler")
        return
    exes = {}
    for name, text in kernels.items():
        which = "cache" if f"bufs[{SLOT_CACHE}]" in text else "z"
        host = os.path.join(d, f"slice_host_{which}.cpp")
        with open(host, "w") as f:
            f.write(HOST + text + HOST_MAIN.replace("KERNEL", name))
        exes[which] = os.path.join(d, f"slice_host_{which}")
        p = run([cxx, "-std=c++17", "-O1", "-w", host, "-o", exes[which]])
        if not R.check(p.returncode == 0, f"the CUDA slice write ({which}) compiles for the host",
                       p.stdout):
            return
    rng = np.random.default_rng(5)
    x = rng.standard_normal([2, 3, 2, 4]).astype(np.float32)
    a = rng.standard_normal([3, 7]).astype(np.float32)
    b = rng.standard_normal([3, 3]).astype(np.float32)
    cache0 = rng.standard_normal([2, 3, 6, 4]).astype(np.float32)  # an earlier run's rows
    files = [os.path.join(d, f"slot{i}.bin") for i in range(SLOT_ERR + 1)]

    def emulate(which, pos, out_slot):
        # z's buffer starts as the copy kernel leaves it: a
        blobs = [np.zeros(64, np.uint8), x, np.array(pos, np.int64), a, b, cache0,
                 np.zeros([2, 3, 4], np.float32), a.copy(), np.zeros(3, np.uint64)]
        for fn, blob in zip(files, blobs):
            blob.tofile(fn)
        p = run([exes[which], str(out_slot), str(SLOT_ERR)] + files)
        ok = R.check(p.returncode == 0, f"the emulated {which} kernel runs (start {pos})",
                     p.stdout)
        return ok, np.fromfile(files[SLOT_ERR], np.int64)

    for pos in (0, 2, 4, 5, -1):
        ok, cell = emulate("cache", pos, SLOT_CACHE)
        if not ok:
            continue
        got = np.fromfile(files[SLOT_CACHE], np.float32).reshape(cache0.shape)
        if 0 <= pos <= 4:
            want = cache0.copy()
            want[:, :, pos:pos + 2] = x
            R.check(np.array_equal(got, want) and not cell.any(),
                    f"the CUDA slice write at start {pos} writes the slice in place",
                    f"cell {cell.tolist()}")
        else:
            R.check(np.array_equal(got, cache0) and cell.tolist() == [1, pos, 0],
                    f"the CUDA slice write at start {pos} writes nothing and sets the error cell",
                    f"cell {cell.tolist()}")
    ok, cell = emulate("z", 0, SLOT_Z)
    if ok:
        got = np.fromfile(files[SLOT_Z], np.float32).reshape(a.shape)
        want = torch.ops.aten.slice_scatter(torch.from_numpy(a), torch.from_numpy(b), 1, 1,
                                            None, 2).numpy()
        R.check(np.array_equal(got, want), "the CUDA slice write of an int start, step 2")


TRAIN = """graph trst
input x : f32[1, 1, 8]
input pos : i64[]
state cache : f32[1, 4, 8]
param w : f32[8] = ones
c2 = slice_scatter(cache, x * w, dim=1, start=pos)
output loss = (c2 * c2).sum()
"""


def train_cases(R, args, d):
    """--train: a state gets no gradient (it is no trained param)."""
    src = os.path.join(d, "trst.tg")
    with open(src, "w") as f:
        f.write(TRAIN)
    x = np.random.default_rng(7).standard_normal([1, 1, 8]).astype(np.float32)
    np.save(os.path.join(d, "tr_x.npy"), x)
    np.save(os.path.join(d, "tr_pos.npy"), np.array(2, dtype=np.int64))
    out = os.path.join(d, "tr_out")
    p = run([args.tgc, "run", src, "--train", "loss", "--optimizer", "none", "--input",
             f"x={d}/tr_x.npy", "--input", f"pos={d}/tr_pos.npy", "--output-dir", out])
    if not R.check(p.returncode == 0, "tgc run --train of a graph with a state", p.stdout):
        return
    files = sorted(os.listdir(out))
    R.check(files == ["loss.npy", "w.grad.npy"], "a state gets no gradient", str(files))
    if "w.grad.npy" in files:
        got = np.load(os.path.join(out, "w.grad.npy"))
        R.check(np.allclose(got, 2 * x[0, 0] ** 2, rtol=1e-6), "w's gradient through the update")
    p = run([args.tgc, "check", src, "--train", "loss", "--freeze", "cache"])
    R.check(p.returncode == 1 and "matches none of its params" in p.stdout,
            "--freeze does not match a state", p.stdout)


MIXED = """graph mixst
input x : f32[1, 1, 8]
input pos : i64[]
state cache : f32[1, 4, 8]
k = softmax(x, dim=-1)
c2 = slice_scatter(cache, k, dim=1, start=pos)
output y = c2.sum(dim=1)
"""


def precision_cases(R, args, d):
    """Under every precision the update stays in place: src is cast to the
    state's storage dtype, never the state to src's (a copy would leave the
    state unwritten)."""
    import json
    src = os.path.join(d, "mixst.tg")
    with open(src, "w") as f:
        f.write(MIXED)
    for prec in ("mixed-bf16", "mixed-f16", "bf16", "f16"):
        p = run([args.tgc, "show", src, "--precision", prec, "--json"])
        if not R.check(p.returncode == 0, f"tgc show --precision {prec}", p.stdout):
            continue
        vals = {v.get("name"): v for v in json.loads(p.stdout)["values"]}
        c2 = vals.get("c2", {})
        R.check(c2.get("view") is True and c2.get("storage") == "cache",
                f"--precision {prec}: the update is a view of the state", json.dumps(c2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--rtlib", required=True)
    ap.add_argument("--rtinc", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--sanitize-flags", default="")
    args = ap.parse_args()
    R = Results()
    with tempfile.TemporaryDirectory() as d:
        diff_cases(R, args, d)
        state_cases(R, args, d)
        doc_example(R, args, d)
        cuda_emul(R, args, d)
        train_cases(R, args, d)
        precision_cases(R, args, d)
    print(f"state: {R.passed} passed, {R.failed} failed")
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
