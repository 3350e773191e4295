#!/usr/bin/python3
"""CUDA suite: what `tgc build --target cuda` produces, checked on a machine
without a GPU (CI's). Values computed on a GPU are tests/gpu's business.

First a probe: `tgc build` of a tiny graph with `--target cuda`. When tgc
says it was built without CUDA support ("built without" / "not built"), the
suite prints why and exits 77 (ctest's SKIP_RETURN_CODE: reported as
skipped, not passed).

Then, for EVERY case of the differential corpus (tests/diff: the cases,
their pruned graphs, inputs and weights come from diff.py's
select_cases() and materialize(), imported, so the two suites cannot drift
apart; `--subset asan` is the reduced set, which CMakeLists passes in a
TGC_SANITIZE build), in parallel (--jobs):
  - `tgc build --target cuda --gpu-arch sm_80,sm_90 --emit cuda DIR` (with
    the case's -D, --precision and embedded-weights flags) succeeds and
    writes exactly DIR/NAME.cu, DIR/NAME.sm_80.cubin, DIR/NAME.sm_90.cubin
    and DIR/NAME.ptx (NAME: the graph's name, as --emit llvm names its .ll),
    and where the graph has products the same four for NAME.tg_matmul (the
    generic product kernel, a program of its own: the module's PTX has no
    tg_matmul, tg_matmul's has nothing else);
    the cases outside the asan subset are built for the highest
    architecture only (sm_90: its CUBIN and the PTX), since the subset
    already compiles every operation for sm_80 too;
  - each CUBIN is a CUDA ELF for its architecture: `readelf -h` reads it,
    says Machine "NVIDIA CUDA architecture" (EM_CUDA, 190) and prints the
    e_flags that cudabin.sm_of() decodes to that SM (CUDA 13: bits 8-15,
    sm_80 0x..50.., sm_90 0x..5a..; see cudabin.py);
  - the PTX's `.target` is the highest architecture asked for, and its
    kernels assemble with `ptxas -arch=sm_90`: each distinct kernel once in
    the run (the PTX cut down to the kernels no earlier case had, or whole
    when its prelude is new: cuda_reuse.py; --all-ptxas: every case whole);
  - the executable embeds exactly one CUBIN per architecture and one PTX
    per program (found by cudabin.py: ELF images with e_machine 190,
    NUL-terminated PTX text), byte-identical to the emitted files;
  - a graph with convolutions builds like the rest (cuDNN steps, their
    epilogue kernels in the module) and its executable links neither
    oneDNN nor cuDNN (`ldd`: cuDNN is loaded with dlopen at run time);
  - run with the case's inputs and weights on a machine where libcuda.so.1
    cannot be loaded (checked with ctypes.CDLL), the executable exits 1 with
    one line naming libcuda.so.1 and suggesting --target cpu, and prints
    nothing on stdout. Where the driver loads, this check is skipped (and
    said so): tests/gpu runs the executables there.
With --nvrtc-cache DIR the corpus builds run with TGC_NVRTC_CACHE=DIR, and
ptxas's successes are kept there too (a full run prunes what it did not
use). Plus, once each:
  - the default architecture is sm_90 (one CUBIN, PTX .target sm_90);
    two graphs with products have tg_matmul's program, with the same
    source, and the probe (no product) has none;
    `--gpu-arch sm_80` alone gives a PTX for sm_80; `--emit ptx DIR` writes
    DIR/NAME.ptx and nothing else; `--cuda-graph` builds;
  - `tgc run --target cuda` without a driver: exit 1, the driver message;
  - TGC_NVRTC_CACHE: builds into and from a cache write the uncached files;
  - `tgc compile --target cuda` gives an object and a header; cuda_main.c
    (C11, -Wall -Wextra -Werror -Wpedantic) includes the header and links
    the object with libtgcrt (and OpenBLAS, cJSON, pthreads, libm, libdl);
  - `tgc report --target cuda` of a graph with convolutions (CONV_PLAN)
    gives the cuDNN workspace and folded weights derived here from the
    documented formula, and its arena is the compiled program's; one whose
    tensor exceeds cuDNN's 2^31 elements is exit 1 naming the op and line;
    without a driver NAME_create and NAME_create_from_memory return nonzero,
    set *out to a context whose NAME_error names the driver (libcuda.so.1),
    and NAME_destroy frees it (under ASan, with leak detection: no leak);
  - command-line errors: `--gpu-arch sm_50`, `--gpu-arch foo` and
    `--gpu-arch sm_80,foo` exit 1 naming the flag, the value and the
    accepted archs (sm_80, sm_90 and every other sm_NN that the sm_50
    message lists); `--emit cuda`, `--emit ptx` and `--cuda-graph` without
    `--target cuda` exit 1 naming the flag and --target cuda; none of them
    leaves a file at -o.

Usage: run_cuda.py --tgc build/tgc --rtlib build/runtime/libtgcrt.a
         --rtinc runtime [--cc CC] [--sanitize-flags "..."]
         [--subset full|asan] [-k SUBSTRING] [--jobs N] [--keep DIR]
         [--archs sm_80,sm_90] [--nvrtc-cache DIR] [--all-ptxas]
Last line: `cuda: N passed, M failed` (each corpus case and each check above
counts once); exit status 1 if M > 0, 77 when skipped.
"""

import argparse
import ctypes
import json
import multiprocessing
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))
sys.path.append(os.path.join(ROOT, "tests"))  # link_line.py

from link_line import link_libs  # noqa: E402
import cudabin  # noqa: E402
import cuda_attention_checks  # noqa: E402
import cuda_reuse  # noqa: E402
import diff  # noqa: E402  (imports torch and the oracle)
import oracle  # noqa: E402
import tensorio  # noqa: E402
import torch  # noqa: E402

SKIP = 77
TIMEOUT = 600
PTXAS = os.environ.get("PTXAS") or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
READELF = shutil.which("readelf") or "readelf"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-g", "-O1"]
# The libraries after libtgcrt.a of any --target cuda program: `tgc
# compile --target cuda --print-link-line`'s, set in main.
LIBS = []

TINY = """# the CUDA suite's probe
graph tiny(n = 1000)
input  x : f32[n]
param  w : f32[n]
output y = relu(x * w + 1.0).sum()
"""


def run(cmd, cwd=None, env=None, timeout=TIMEOUT):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def oneline(text, cap=400):
    t = " | ".join(l.strip() for l in text.strip().splitlines() if l.strip())
    return t if len(t) <= cap else t[:cap] + "..."


def rcs(rc):
    return "timed out" if rc is None else ("died of signal %d" % -rc if rc < 0 else "exited %d" % rc)


def driver_loadable():
    """(True, '') when libcuda.so.1 loads in this process, else (False, why)."""
    try:
        ctypes.CDLL("libcuda.so.1")
        return True, ""
    except OSError as e:
        return False, str(e)


def sm_num(arch):
    return int(re.match(r"sm_(\d+)", arch).group(1))


def graph_name(src):
    for _, st in oracle.statements(src):
        m = oracle.RE_GRAPH.match(st)
        if m:
            return m.group(1)
    raise ValueError("no graph line")


# --------------------------------------------------------------------------
# Checks of the files themselves
# --------------------------------------------------------------------------

def check_cubin(data, sm, what):
    """Messages (empty when fine) for a CUBIN that must be for sm_<sm>."""
    h = cudabin.elf_header(data)
    if h is None:
        return ["%s: not an ELF64 little-endian image" % what]
    msgs = []
    if h["machine"] != cudabin.EM_CUDA:
        msgs.append("%s: e_machine %d, expected %d (EM_CUDA)" % (what, h["machine"], cudabin.EM_CUDA))
    if cudabin.elf_extent(data, 0, h) != len(data):
        msgs.append("%s: its tables end at %s, the file has %d bytes" % (
            what, cudabin.elf_extent(data, 0, h), len(data)))
    if cudabin.sm_of(h) != sm:
        msgs.append("%s: e_flags %#x name sm_%d, expected sm_%d" % (what, h["flags"], cudabin.sm_of(h), sm))
    return msgs


def readelf_check(path, sm, h, what):
    """`readelf -h` must read the file as a CUDA ELF with the flags h has."""
    rc, out, err = run([READELF, "-h", path])
    if rc != 0 or "Error" in err:
        return ["%s: readelf -h %s: %s" % (what, rcs(rc), oneline(err))]
    mach = re.search(r"Machine:\s*(.*)", out)
    flags = re.search(r"Flags:\s*(0x[0-9a-fA-F]+)", out)
    msgs = []
    if not mach or "NVIDIA CUDA" not in mach.group(1):
        msgs.append("%s: readelf says Machine: %s" % (what, mach.group(1) if mach else "?"))
    if not flags or int(flags.group(1), 16) != h["flags"]:
        msgs.append("%s: readelf says Flags: %s, expected %#x" % (
            what, flags.group(1) if flags else "?", h["flags"]))
    rc, _, err = run([READELF, "-S", "-W", path])
    if rc != 0 or "Error" in err:
        msgs.append("%s: readelf -S %s: %s" % (what, rcs(rc), oneline(err)))
    return msgs


PTXAS_CACHE = [None]  # the --nvrtc-cache folder once the corpus starts


def ptxas_check(path, arch, what):
    """ptxas assembles the PTX at path, or did so for the same text before
    (a success is kept in the --nvrtc-cache folder: cuda_reuse.py)."""
    key = cuda_reuse.ptxas_key(PTXAS, arch, path) if PTXAS_CACHE[0] else None
    if key and cuda_reuse.ptxas_known(PTXAS_CACHE[0], key):
        return []
    out = path + ".ptxas.o"
    rc, _, err = run([PTXAS, "-arch=%s" % arch, path, "-o", out])
    if os.path.exists(out):
        os.remove(out)
    if rc != 0:
        return ["%s: ptxas -arch=%s %s: %s" % (what, arch, rcs(rc), oneline(err))]
    if key:
        cuda_reuse.ptxas_keep(PTXAS_CACHE[0], key)
    return []


def check_program(emit, stem, archs, ptxas, msgs, cubins, ptxs, kernels=True):
    """DIR/STEM.{cu,sm_XX.cubin,ptx} of one program: the CUBINs into
    cubins[sm] (a list), the PTX into ptxs. kernels: the .cu must have a
    __global__ function (a graph of products alone has none in its module:
    they are all tg_matmul's)."""
    cu = os.path.join(emit, stem + ".cu")
    if kernels and os.path.exists(cu):
        with open(cu, errors="replace") as f:
            text = f.read()
        if "__global__" not in text:
            msgs.append("%s.cu has no __global__ function" % stem)
    high = max(archs, key=sm_num)
    for a in archs:
        p = os.path.join(emit, "%s.%s.cubin" % (stem, a))
        if not os.path.exists(p):
            continue
        with open(p, "rb") as f:
            data = f.read()
        what = os.path.basename(p)
        m = check_cubin(data, sm_num(a), what)
        if not m:
            m = readelf_check(p, sm_num(a), cudabin.elf_header(data), what)
        msgs += m
        cubins.setdefault(sm_num(a), []).append(data)
    p = os.path.join(emit, stem + ".ptx")
    if not os.path.exists(p):
        return None
    with open(p, "rb") as f:
        ptx = f.read()
    ptxs.append(ptx)
    tgt = cudabin.ptx_target(ptx)
    if tgt != high:
        msgs.append("%s.ptx: .target %s, expected %s (the highest arch)" % (stem, tgt, high))
    if ptxas is True:
        msgs += ptxas_check(p, high, stem + ".ptx")
    elif ptxas:
        cut = os.path.join(os.path.dirname(emit), stem + ".new_kernels.ptx")
        text = cuda_reuse.without_entries(ptx.decode("utf-8", "replace"), ptxas)
        left = set(cuda_reuse.RE_ENTRY.findall(text))
        if left != ptxas:  # the cut must keep exactly the new kernels
            msgs.append("%s.ptx cut to %s has the kernels %s" % (stem, sorted(ptxas), sorted(left)))
        with open(cut, "w") as f:
            f.write(text)
        msgs += ptxas_check(cut, high, "%s.ptx's kernels %s" % (stem, ", ".join(sorted(ptxas))))
    return set(cuda_reuse.RE_ENTRY.findall(ptx.decode("utf-8", "replace")))


def check_emit_dir(emit, name, archs, ptxas=True):
    """Checks DIR/NAME.{cu,sm_XX.cubin,ptx}, and DIR/NAME.tg_matmul.* when
    the graph has products (the generic product kernel is a program of its
    own, whole or absent: its PTX has the kernel tg_matmul and the module's
    has not); ptxas assembles the module's PTX when ptxas is True, only its
    kernels named in ptxas when it is a set, and tg_matmul's whole (once in
    the run: the same text every time, PTXAS_CACHE).
    Returns (messages, {sm: [CUBIN bytes]}, [PTX bytes])."""
    msgs, cubins, ptxs = [], {}, []
    mm = name + ".tg_matmul"
    have = set(os.listdir(emit)) if os.path.isdir(emit) else set()
    stems = [name] + ([mm] if any(h.startswith(mm + ".") for h in have) else [])
    want = set()
    for stem in stems:
        want |= {"%s.cu" % stem, "%s.ptx" % stem} | {"%s.%s.cubin" % (stem, a) for a in archs}
    if have != want:
        missing, extra = sorted(want - have), sorted(have - want)
        msgs.append("--emit cuda wrote %s%s" % (
            ("no " + ", ".join(missing)) if missing else "",
            ("; unexpected " + ", ".join(extra)) if extra else ""))
    entries = check_program(emit, name, archs, ptxas, msgs, cubins, ptxs, len(stems) == 1)
    if entries and "tg_matmul" in entries:
        msgs.append("%s.ptx has tg_matmul (its own program, %s.ptx)" % (name, mm))
    if len(stems) == 2:
        entries = check_program(emit, mm, archs, True, msgs, cubins, ptxs)
        if entries is not None and entries != {"tg_matmul"}:
            msgs.append("%s.ptx has the kernels %s, expected tg_matmul alone" % (mm, sorted(entries)))
    return msgs, cubins, ptxs


def check_embedded(exe, archs, cubins, ptxs, scratch):
    """The executable must embed, per program emitted (the module, and
    tg_matmul's where there are products), one CUBIN per arch equal to the
    emitted one and one PTX equal to the emitted PTX (else valid on its
    own)."""
    with open(exe, "rb") as f:
        data = f.read()
    msgs = []
    nprog = max(1, len(ptxs))
    found = cudabin.find_cubins(data)
    sms = sorted(cudabin.sm_of(h) for _, _, h in found)
    if sms != sorted(sm_num(a) for a in archs for _ in range(nprog)):
        msgs.append("executable embeds CUBINs for %s, expected %s, %d of each" % (
            ["sm_%d" % s for s in sms], list(archs), nprog))
    for off, img, h in found:
        sm = cudabin.sm_of(h)
        what = "embedded CUBIN at %#x (sm_%d)" % (off, sm)
        if img in cubins.get(sm, []):
            continue
        m = check_cubin(img, sm, what)
        if not m:
            p = os.path.join(scratch, "embedded_%x.cubin" % off)
            with open(p, "wb") as f:
                f.write(img)
            m = readelf_check(p, sm, h, what)
        if not m and sm in cubins:
            m = ["%s: a valid CUBIN, but not one --emit cuda wrote (%d bytes)" % (what, len(img))]
        msgs += m
    found_ptx = cudabin.find_ptx(data)
    high = max(archs, key=sm_num)
    if len(found_ptx) != nprog:
        msgs.append("executable embeds %d PTX texts, expected %d" % (len(found_ptx), nprog))
    emitted = [p.rstrip(b"\0") for p in ptxs]
    for off, text in found_ptx:
        if text.rstrip(b"\0") in emitted:
            continue
        what = "embedded PTX at %#x" % off
        m = []
        if cudabin.ptx_target(text) != high:
            m.append("%s: .target %s, expected %s" % (what, cudabin.ptx_target(text), high))
        p = os.path.join(scratch, "embedded_%x.ptx" % off)
        with open(p, "wb") as f:
            f.write(text)
        m += ptxas_check(p, high, what)
        if not m and ptxs:
            m = ["%s: valid, but not a PTX --emit cuda wrote" % what]
        msgs += m
    return msgs


def driver_message(err):
    """None when stderr is the expected no-driver error, else what is off."""
    if "libcuda.so.1" not in err:
        return "the message does not name libcuda.so.1"
    if "--target cpu" not in err:
        return "the message does not suggest --target cpu"
    return None


# The workspace plan of convolutions (runtime/cuda_conv_plan.c), derived
# here independently: each conv may use max(8 MiB, min(256 MiB, src + dst
# bytes)) rounded to 256, plus a staging tensor when cuDNN cannot write dst
# itself (padding="same" with an even kernel: total 3 = (1, 2)); a batch
# norm of params folds into the weights, kept on the GPU with a shift per
# channel, each rounded up to 256 bytes.
CONV_PLAN = """# the CUDA suite's convolution plan check
graph convplan(batch = 2)
input  x  : f32[batch, 3, 16, 16]
param  w1 : f32[8, 3, 3, 3] = randn(std = 0.2, seed = 1)
param  m  : f32[8] = zeros
param  v  : f32[8] = ones
param  g  : f32[8] = ones
param  b  : f32[8] = zeros
param  w2 : f32[8, 8, 4, 4] = randn(std = 0.1, seed = 2)
param  w3 : f32[8, 4, 3, 3] = randn(std = 0.1, seed = 3)
h = relu(batch_norm(conv2d(x, w1, padding = 1), m, v, g, b))
output same = conv2d(h, w2, padding = "same")
output up = conv_transpose2d(h, w3, stride = 2, padding = 1, output_padding = 1)
"""
MIB = 1 << 20


def up256(n):
    return (n + 255) // 256 * 256


def conv_plan_expected():
    """(conv scratch, conv weights) bytes the CONV_PLAN graph must report."""
    def cap(src, dst):
        return up256(max(8 * MIB, min(256 * MIB, 4 * (src + dst))))
    c1 = cap(2 * 3 * 16 * 16, 2 * 8 * 16 * 16)
    # "same", kernel 4: cuDNN pads 2 on both sides, raw 17 x 17, shifted by 1
    c2 = up256(2 * 8 * 17 * 17 * 4) + cap(2 * 8 * 16 * 16, 2 * 8 * 16 * 16)
    c3 = cap(2 * 8 * 16 * 16, 2 * 4 * 32 * 32)
    return max(c1, c2, c3), up256(8 * 3 * 9 * 4) + up256(8 * 4)


def conv_plan_check(R, args, tgc, d, no_driver):
    """`tgc report --target cuda` of a graph with convolutions states the
    workspace and folded weights the runtime allocates, and the arena the
    compiled program asks for (cuda_main's QUERY arena_bytes) is the
    report's; the program's conv steps pass the runtime's checks (without a
    driver, creating a context then fails on libcuda.so.1, not on them)."""
    tg = os.path.join(d, "convplan.tg")
    with open(tg, "w") as f:
        f.write(CONV_PLAN)
    msgs = []
    reps = {}
    for target in ("cuda", "cpu"):
        rc, out, err = run([tgc, "report", tg, "--target", target, "--json"])
        if rc != 0:
            R.fail("tgc report --target %s of a conv graph" % target, "%s: %s" % (rcs(rc), oneline(err)))
            return
        reps[target] = json.loads(out)
    cu, cpu = reps["cuda"], reps["cpu"]
    scratch, prepared = conv_plan_expected()
    got = cu["activations"]["conv_scratch_bytes"]
    if got != scratch:
        msgs.append("conv scratch %d, expected %d (8 MiB workspace + 18688 staging)" % (got, scratch))
    if cu["conv_prepared_bytes"] != prepared:
        msgs.append("conv weights %d, expected %d" % (cu["conv_prepared_bytes"], prepared))
    acts = cpu["activations"]["arena_bytes"] - cpu["activations"]["conv_scratch_bytes"]
    if cu["activations"]["arena_bytes"] != up256(acts) + scratch:
        msgs.append("arena %d, expected the activations' %d (256-aligned) + %d" % (
            cu["activations"]["arena_bytes"], acts, scratch))
    rc, out, err = run([tgc, "report", tg, "--target", "cuda"])
    if "cuDNN's workspace" not in out:
        msgs.append("the text report does not name cuDNN's workspace: %s" % oneline(out, 300))
    obj, hdr = os.path.join(d, "convplan.o"), os.path.join(d, "convplan.h")
    rc, _, err = run([tgc, "compile", tg, "-o", obj, "--header", hdr, "--target", "cuda",
                      "--gpu-arch", "sm_90"])
    prog = os.path.join(d, "convplan_main")
    if rc == 0:
        san = shlex.split(args.sanitize_flags or "")
        rc, o2, err = run([args.cc] + CFLAGS + san + ['-DTGC_HEADER="convplan.h"',
                          "-DTGC_GRAPH=convplan", "-I", d, "-I", args.rtinc,
                          os.path.join(HERE, "cuda_main.c"), obj, args.rtlib] + LIBS + ["-o", prog])
        err = o2 + err
    if rc != 0:
        msgs.append("tgc compile / cuda_main: %s: %s" % (rcs(rc), oneline(err)))
    else:
        w = os.path.join(d, "convplan.safetensors")
        tensorio.write_safetensors(w, [])
        rc, out, err = run([prog, w])
        q = re.search(r"^QUERY arena_bytes (\d+)$", out, re.M)
        if not q or int(q.group(1)) != cu["activations"]["arena_bytes"]:
            msgs.append("the program's arena is %s, the report's %d" % (
                q.group(1) if q else "?", cu["activations"]["arena_bytes"]))
        if no_driver:
            for how, code, ctx, msg in re.findall(r"^CREATE (\w+) (-?\d+) (\w+) (.*)$", out, re.M):
                if "libcuda.so.1" not in msg:
                    msgs.append("create from %s: expected the driver error, got %r" % (how, msg))
    R.check("tgc report --target cuda of convolutions: cuDNN workspace %d, folded weights %d, "
            "arena = the program's" % (scratch, prepared), msgs)

    # A convolution cuDNN's descriptors cannot hold (2.5e9 elements): exit
    # 1 naming the op and its line, nothing at -o.
    big = os.path.join(d, "bigconv.tg")
    with open(big, "w") as f:
        f.write("graph bigconv\ninput x : f32[1, 1, 50000, 50000]\nparam w : f32[1, 1, 3, 3]\n"
                "output y = conv2d(x, w)\n")
    exe = os.path.join(d, "bigconv.exe")
    rc, out, err = run([tgc, "build", big, "-o", exe, "--target", "cuda"])
    msgs = []
    if rc != 1:
        msgs.append("%s (expected 1): %s" % (rcs(rc), oneline(err)))
    for w in ("conv2d at line 4", "cuDNN", "2^31", "--target cpu"):
        if w not in err:
            msgs.append("the message lacks %r: %s" % (w, oneline(err)))
    if os.path.exists(exe):
        msgs.append("a file was left at -o")
    R.check("error: a convolution cuDNN cannot take (over 2^31 elements)", msgs)


# --------------------------------------------------------------------------
# One corpus case
# --------------------------------------------------------------------------

RE_CONV = re.compile(r"\bconv(?:_transpose)?[12]d\s*\(")


def check_case(case, tgc, workdir, archs, no_driver, shapes_dir):
    m = diff.materialize(case, workdir)
    if not m.outs:
        return "skip", ["PyTorch rejects every statement"], "none"
    name = graph_name(m.src)
    emit = os.path.join(m.dir, "emit")
    exe = os.path.join(m.dir, "graph.exe")
    cmd = [tgc, "build", m.tg, "-o", exe, "--target", "cuda", "--gpu-arch", ",".join(archs),
           "--emit", "cuda", emit] + m.dflags + m.build_weights
    rc, out, err = run(cmd)
    if rc != 0:
        return "fail", ["tgc build --target cuda %s: %s" % (rcs(rc), oneline(err))], "none"
    ptxas = cuda_reuse.new_entries(emit, name, shapes_dir)
    msgs, cubins, ptxs = check_emit_dir(emit, name, archs, ptxas)
    if not os.path.exists(exe):
        return "fail", msgs + ["tgc build exited 0 but wrote no executable"], "none"
    msgs += check_embedded(exe, archs, cubins, ptxs, m.dir)
    conv = bool(RE_CONV.search(m.src))
    if conv:
        msgs += check_conv_exe(exe)
    if no_driver:
        od = os.path.join(m.dir, "out")
        os.makedirs(od, exist_ok=True)
        rc, out, err = run([exe] + m.in_args + m.run_weights + ["--output-dir", od])
        if rc != 1:
            msgs.append("executable without a driver %s (expected 1): %s" % (rcs(rc), oneline(err)))
        else:
            why = driver_message(err)
            if why:
                msgs.append("executable without a driver: %s: %s" % (why, oneline(err)))
        if out.strip():
            msgs.append("executable without a driver printed on stdout: %s" % oneline(out, 200))
    return ("fail" if msgs else ("pass_conv" if conv else "pass")), msgs, \
        "whole" if ptxas is True else ("cut" if ptxas else "none")


def check_conv_exe(exe):
    """A CUDA executable with convolutions computes them with cuDNN, loaded
    at run time: it must not link oneDNN (libdnnl) nor cuDNN itself."""
    rc, out, err = run(["ldd", exe])
    if rc != 0:
        return ["ldd %s: %s" % (rcs(rc), oneline(err))]
    linked = [l.split()[0] for l in out.splitlines() if re.search(r"lib(dnnl|cudnn)", l)]
    if linked:
        return ["a --target cuda executable links %s (convolutions must go through "
                "cuDNN, loaded with dlopen)" % ", ".join(linked)]
    return []


def _work(job):
    case, tgc, workdir, archs, no_driver, shapes_dir = job
    t0 = time.time()
    ptxas = "none"
    try:
        status, msgs, ptxas = check_case(case, tgc, workdir, archs, no_driver, shapes_dir)
    except Exception:
        status, msgs = "fail", ["harness error: " + traceback.format_exc().strip().splitlines()[-1],
                                traceback.format_exc()]
    return case.name, status, msgs, time.time() - t0, ptxas


# --------------------------------------------------------------------------
# The checks run once
# --------------------------------------------------------------------------

class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def ok(self, what):
        self.passed += 1
        print("ok   %s" % what)

    def fail(self, what, why):
        self.failed += 1
        print("FAIL %s: %s" % (what, why))

    def skip(self, what, why):
        self.skipped += 1
        print("skip %s: %s" % (what, why))

    def check(self, what, msgs):
        if msgs:
            self.fail(what, "; ".join(msgs))
        else:
            self.ok(what)
        sys.stdout.flush()


def write_tiny(d):
    tg = os.path.join(d, "tiny.tg")
    with open(tg, "w") as f:
        f.write(TINY)
    w = os.path.join(d, "tiny.safetensors")
    tensorio.write_safetensors(w, [("w", torch.linspace(-1, 1, 1000))])
    x = os.path.join(d, "x.npy")
    tensorio.write_npy(x, torch.linspace(-2, 2, 1000))
    return tg, w, x


def cli_errors(R, tgc, d, tg):
    """Bad flags: exit 1, the right words, no file at -o. An unknown
    architecture and a malformed list must both name the flag, the value and
    the accepted architectures (every sm_NN the sm_50 message lists)."""
    exe = os.path.join(d, "bad.exe")
    cases = [
        ("--gpu-arch sm_50", ["--target", "cuda", "--gpu-arch", "sm_50"],
         ["--gpu-arch", "sm_50", "sm_80", "sm_90"]),
        ("--gpu-arch foo", ["--target", "cuda", "--gpu-arch", "foo"],
         ["--gpu-arch", "foo", "sm_80", "sm_90"]),
        ("--gpu-arch sm_80,foo", ["--target", "cuda", "--gpu-arch", "sm_80,foo"],
         ["--gpu-arch", "foo", "sm_90"]),
        ("--emit cuda without --target cuda", ["--emit", "cuda", os.path.join(d, "e1")],
         ["--emit cuda", "--target cuda"]),
        ("--emit ptx with --target cpu", ["--target", "cpu", "--emit", "ptx", os.path.join(d, "e2")],
         ["--emit", "ptx", "--target cuda"]),
        ("--cuda-graph without --target cuda", ["--cuda-graph"], ["--cuda-graph", "--target cuda"]),
        ("--cuda-graph with --target cpu", ["--target", "cpu", "--cuda-graph"],
         ["--cuda-graph", "--target cuda"]),
    ]
    accepted = None
    for label, flags, words in cases:
        if os.path.exists(exe):
            os.remove(exe)
        rc, out, err = run([tgc, "build", tg, "-o", exe] + flags)
        msgs = []
        if rc != 1:
            msgs.append("%s (expected 1): %s" % (rcs(rc), oneline(err)))
        else:
            missing = [w for w in words if w not in err]
            archs = set(re.findall(r"\bsm_\d+\b", err))
            if label == "--gpu-arch sm_50":
                accepted = archs - {"sm_50"}
            elif label.startswith("--gpu-arch") and accepted:
                missing += sorted(accepted - archs)
            if missing:
                msgs.append("the message lacks %s: %s" % (", ".join(repr(w) for w in missing),
                                                           oneline(err)))
        if os.path.exists(exe):
            msgs.append("a file was left at -o")
        R.check("error: tgc build %s" % label, msgs)


def once_checks(R, tgc, d, no_driver, why_driver):
    tg, w, x = write_tiny(d)
    cli_errors(R, tgc, d, tg)

    # Default architecture: sm_90 only.
    e = os.path.join(d, "default")
    exe = os.path.join(d, "tiny_default")
    rc, _, err = run([tgc, "build", tg, "-o", exe, "--target", "cuda", "--emit", "cuda", e])
    if rc != 0:
        R.fail("default --gpu-arch is sm_90", "tgc build %s: %s" % (rcs(rc), oneline(err)))
    else:
        msgs, cubins, ptxs = check_emit_dir(e, "tiny", ["sm_90"])
        msgs += check_embedded(exe, ["sm_90"], cubins, ptxs, d)
        R.check("default --gpu-arch is sm_90 (one CUBIN, PTX .target sm_90)", msgs)

    # The generic product kernel is a program of its own, there only
    # where the graph has a product (tiny has none), the same text in
    # every graph (what lets TGC_NVRTC_CACHE compile it once).
    msgs = []
    if os.path.isdir(e) and any("tg_matmul" in f for f in os.listdir(e)):
        msgs.append("tiny (no product) has tg_matmul files: %s" % sorted(os.listdir(e)))
    mm_text = []
    for g, body in (("mm_a", "output y = relu(x @ w)"), ("mm_b", "output y = (x @ w).sum()")):
        src = os.path.join(d, g + ".tg")
        with open(src, "w") as f:
            f.write("graph %s\ninput x : f32[4, 8]\nparam w : f32[8, 3]\n%s\n" % (g, body))
        ge = os.path.join(d, g + "_emit")
        rc, _, err = run([tgc, "build", src, "-o", os.path.join(d, g), "--target", "cuda",
                          "--emit", "cuda", ge])
        if rc != 0:
            msgs.append("tgc build %s.tg %s: %s" % (g, rcs(rc), oneline(err)))
            continue
        m, cubins, ptxs = check_emit_dir(ge, g, ["sm_90"])
        msgs += m + check_embedded(os.path.join(d, g), ["sm_90"], cubins, ptxs, d)
        p = os.path.join(ge, g + ".tg_matmul.cu")
        if not os.path.exists(p):
            msgs.append("%s (a product) has no %s.tg_matmul.cu" % (g, g))
            continue
        with open(p) as f:
            mm_text.append(f.read())
    if len(mm_text) == 2 and mm_text[0] != mm_text[1]:
        msgs.append("tg_matmul's source differs between two graphs")
    R.check("products: tg_matmul a program of its own, the same in every graph", msgs)

    # One older architecture alone: the PTX is for it.
    e = os.path.join(d, "sm80")
    exe = os.path.join(d, "tiny_sm80")
    rc, _, err = run([tgc, "build", tg, "-o", exe, "--target", "cuda", "--gpu-arch", "sm_80",
                      "--emit", "cuda", e])
    if rc != 0:
        R.fail("--gpu-arch sm_80", "tgc build %s: %s" % (rcs(rc), oneline(err)))
    else:
        msgs, cubins, ptxs = check_emit_dir(e, "tiny", ["sm_80"])
        msgs += check_embedded(exe, ["sm_80"], cubins, ptxs, d)
        R.check("--gpu-arch sm_80 (CUBIN sm_80, PTX .target sm_80)", msgs)

    # --emit ptx: NAME.ptx alone.
    e = os.path.join(d, "ptxonly")
    rc, _, err = run([tgc, "build", tg, "-o", os.path.join(d, "tiny_ptx"), "--target", "cuda",
                      "--gpu-arch", "sm_80,sm_90", "--emit", "ptx", e])
    msgs = []
    if rc != 0:
        msgs.append("tgc build %s: %s" % (rcs(rc), oneline(err)))
    else:
        have = sorted(os.listdir(e)) if os.path.isdir(e) else []
        if have != ["tiny.ptx"]:
            msgs.append("wrote %s, expected ['tiny.ptx']" % have)
        else:
            p = os.path.join(e, "tiny.ptx")
            with open(p, "rb") as f:
                t = cudabin.ptx_target(f.read())
            if t != "sm_90":
                msgs.append(".target %s, expected sm_90" % t)
            msgs += ptxas_check(p, "sm_90", "tiny.ptx")
    R.check("--emit ptx DIR writes DIR/NAME.ptx (assembles for sm_90)", msgs)

    # --cuda-graph builds (what it changes is checked on a GPU: tests/gpu).
    exe = os.path.join(d, "tiny_graph")
    rc, _, err = run([tgc, "build", tg, "-o", exe, "--target", "cuda", "--cuda-graph"])
    msgs = [] if rc == 0 else ["tgc build %s: %s" % (rcs(rc), oneline(err))]
    if rc == 0 and no_driver:
        rc, out, err = run([exe, "--input", "x=" + x, "--weights", w, "--output-dir", d])
        if rc != 1 or driver_message(err):
            msgs.append("run without a driver %s: %s" % (rcs(rc), oneline(err)))
    R.check("--target cuda --cuda-graph builds", msgs)

    # tgc run --target cuda.
    if no_driver:
        rc, out, err = run([tgc, "run", tg, "--target", "cuda", "--input", "x=" + x,
                            "--weights", w, "--output-dir", d])
        msgs = []
        if rc != 1:
            msgs.append("%s (expected 1): %s" % (rcs(rc), oneline(err)))
        elif driver_message(err):
            msgs.append("%s: %s" % (driver_message(err), oneline(err)))
        R.check("tgc run --target cuda without a driver: exit 1, names libcuda.so.1", msgs)
    else:
        R.skip("tgc run --target cuda without a driver", why_driver)


def compile_check(R, args, tgc, d, no_driver, why_driver):
    tg, w, _ = write_tiny(d)
    obj, hdr = os.path.join(d, "tiny.o"), os.path.join(d, "tiny.h")
    rc, _, err = run([tgc, "compile", tg, "-o", obj, "--header", hdr, "--target", "cuda",
                      "--gpu-arch", "sm_80,sm_90"])
    if rc != 0:
        R.fail("tgc compile --target cuda", "%s: %s" % (rcs(rc), oneline(err)))
        return
    msgs = []
    with open(obj, "rb") as f:
        data = f.read()
    sms = sorted(cudabin.sm_of(h) for _, _, h in cudabin.find_cubins(data))
    if sms != [80, 90]:
        msgs.append("the object embeds CUBINs for %s, expected sm_80 and sm_90" % sms)
    if len(cudabin.find_ptx(data)) != 1:
        msgs.append("the object embeds %d PTX texts, expected 1" % len(cudabin.find_ptx(data)))
    R.check("tgc compile --target cuda: object embeds a CUBIN per arch and the PTX", msgs)

    prog = os.path.join(d, "cuda_main")
    san = shlex.split(args.sanitize_flags or "")
    cmd = [args.cc] + CFLAGS + san + ['-DTGC_HEADER="tiny.h"', "-DTGC_GRAPH=tiny", "-I", d,
                                      "-I", args.rtinc, os.path.join(HERE, "cuda_main.c"), obj,
                                      args.rtlib] + LIBS + ["-o", prog]
    rc, out, err = run(cmd)
    if rc != 0:
        R.fail("cuda_main.c links the object with libtgcrt",
               "%s: %s | %s" % (rcs(rc), " ".join(cmd), oneline(out + err, 1500)))
        return
    R.ok("cuda_main.c compiles (-Werror -Wpedantic) and links the object with libtgcrt")
    env = dict(os.environ)
    if san:
        env["ASAN_OPTIONS"] = "detect_leaks=1"
    rc, out, err = run([prog, w], env=env)
    msgs = []
    if rc != 0:
        msgs.append("cuda_main %s: %s" % (rcs(rc), oneline(out + err, 1500)))
    creates = re.findall(r"^CREATE (\w+) (-?\d+) (\w+) (.*)$", out, re.M)
    if len(creates) != 2:
        msgs.append("cuda_main printed %d CREATE lines, expected 2: %s" % (len(creates), oneline(out)))
    if no_driver:
        for how, code, ctx, msg in creates:
            if int(code) == 0:
                msgs.append("create from %s succeeded without a driver" % how)
            if ctx != "ctx":
                msgs.append("create from %s left *out NULL (the header promises a context)" % how)
            elif "libcuda.so.1" not in msg:
                msgs.append("create from %s: %s_error does not name libcuda.so.1: %r" % (how, "tiny", msg))
        R.check("tiny_create without a driver: nonzero, tiny_error names libcuda.so.1, destroy frees "
                "(path and memory)", msgs)
    else:
        for how, code, ctx, msg in creates:
            if int(code) != 0:
                msgs.append("create from %s returned %s with a driver: %s" % (how, code, msg))
        runs = re.findall(r"^RUN (-?\d+) (.*)$", out, re.M)
        if any(int(r[0]) != 0 for r in runs):
            msgs.append("run on zero inputs failed: %s" % runs)
        R.check("tiny_create and run with a driver (%s)" % why_driver, msgs)


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--rtlib", required=True)
    ap.add_argument("--rtinc", required=True)
    ap.add_argument("--cc", default=os.environ.get("CC") or "cc")
    ap.add_argument("--sanitize-flags", default="")
    ap.add_argument("--subset", choices=["full", "asan"],
                    default=os.environ.get("TGC_DIFF_SUBSET", "full"))
    ap.add_argument("-k", dest="pattern")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep")
    ap.add_argument("--archs", default="sm_80,sm_90")
    ap.add_argument("--nvrtc-cache", help="TGC_NVRTC_CACHE for the corpus builds")
    ap.add_argument("--all-ptxas", action="store_true",
                    help="ptxas every case's whole PTX, not each distinct kernel once")
    args = ap.parse_args()
    t0 = time.time()
    tgc = os.path.abspath(args.tgc)
    args.rtlib, args.rtinc = os.path.abspath(args.rtlib), os.path.abspath(args.rtinc)
    LIBS[:] = link_libs([tgc, "compile", "--target", "cuda"])
    archs = args.archs.split(",")
    workdir = args.keep or tempfile.mkdtemp(prefix="tgc-cuda-")
    os.makedirs(workdir, exist_ok=True)
    R = Results()
    try:
        probe = os.path.join(workdir, "probe")
        os.makedirs(probe, exist_ok=True)
        tg, _, _ = write_tiny(probe)
        rc, out, err = run([tgc, "build", tg, "-o", os.path.join(probe, "tiny"), "--target", "cuda"])
        if rc != 0 and ("built without" in err or "not built" in err):
            print("SKIP the CUDA suite: this tgc has no CUDA backend: %s" % oneline(err))
            print("cuda: 0 passed, 0 failed, 1 skipped")
            return SKIP
        if rc != 0:
            R.fail("probe: tgc build --target cuda of a tiny graph", "%s: %s" % (rcs(rc), oneline(err)))
        else:
            R.ok("probe: tgc build --target cuda of a tiny graph")
        loadable, why = driver_loadable()
        no_driver = not loadable
        why_driver = ""
        if loadable:
            why_driver = "libcuda.so.1 loads on this machine, so the no-driver error paths " \
                         "cannot be seen here; tests/gpu runs the executables on a GPU"
            print("note: %s" % why_driver)
        else:
            print("note: libcuda.so.1 cannot be loaded here (%s): the executables must fail "
                  "with the driver message" % why)
        print("ptxas: %s; readelf: %s" % (PTXAS, READELF))
        if not os.path.exists(PTXAS) and not shutil.which(PTXAS):
            R.fail("ptxas", "not found (set PTXAS=...)")
        sys.stdout.flush()

        once = os.path.join(workdir, "once")
        os.makedirs(once, exist_ok=True)
        once_checks(R, tgc, once, no_driver, why_driver)
        comp = os.path.join(workdir, "compile")
        os.makedirs(comp, exist_ok=True)
        compile_check(R, args, tgc, comp, no_driver, why_driver)
        conv_plan_check(R, args, tgc, comp, no_driver)
        cuda_attention_checks.attention_checks(R, args, tgc, comp, run, rcs, oneline, HERE, CFLAGS,
                                               LIBS)

        cuda_reuse.cache_check(R, tgc, once, run, rcs, oneline, write_tiny)

        # The corpus: NVRTC's images from the cache folder where it has them.
        if args.nvrtc_cache:
            os.makedirs(args.nvrtc_cache, exist_ok=True)
            os.environ["TGC_NVRTC_CACHE"] = os.path.abspath(args.nvrtc_cache)
            PTXAS_CACHE[0] = os.path.abspath(args.nvrtc_cache)
        cases = diff.select_cases(args.subset, args.pattern)
        print("corpus: %d cases%s, --gpu-arch %s, %d jobs" % (
            len(cases), " [asan subset]" if args.subset == "asan" else "", ",".join(archs), args.jobs))
        sys.stdout.flush()
        shapes_dir = None if args.all_ptxas else os.path.join(workdir, "shapes")
        if shapes_dir:
            shutil.rmtree(shapes_dir, ignore_errors=True)  # a --keep folder's last run
        # Every architecture's CUBIN for the cases of the asan subset (every
        # operation at least once), the highest one's (CUBIN + PTX) for the
        # rest: a second NVRTC compile of the same kernels for sm_80 adds no
        # kernel shape the subset has not compiled, and halves the suite.
        high = [max(archs, key=sm_num)]
        jobs = [(c, tgc, os.path.join(workdir, "cases"), archs if c.asan else high, no_driver,
                 shapes_dir) for c in cases]
        print("corpus: %d cases built for %s, the other %d for %s only" % (
            sum(1 for c in cases if c.asan), ",".join(archs),
            sum(1 for c in cases if not c.asan), high[0]))
        times = []
        npass = nfail = nskip = nconv = 0
        nptxas = {"whole": 0, "cut": 0, "none": 0}
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(max(1, args.jobs), initializer=diff._worker_init) as pool:
            for name, status, msgs, secs, ptxas in pool.imap_unordered(_work, jobs):
                times.append((secs, name))
                nptxas[ptxas] += 1
                if status in ("pass", "pass_conv"):
                    npass += 1
                    nconv += status == "pass_conv"
                elif status == "skip":
                    nskip += 1
                else:
                    nfail += 1
                    more = " (and %d more)" % (len(msgs) - 1) if len(msgs) > 1 else ""
                    print("FAIL %s: %s%s" % (name, msgs[0].splitlines()[0], more))
                    for extra in msgs[1:3]:
                        print("     %s" % extra.splitlines()[0])
                    sys.stdout.flush()
        print("corpus: %d passed (%d with convolutions: cuDNN steps), %d failed, %d skipped "
              "(PyTorch rejects every statement)" % (npass, nconv, nfail, nskip))
        print("ptxas: %(whole)d cases' PTX assembled whole, %(cut)d cut to their new kernels, "
              "%(none)d with no new kernel (NVRTC assembled them for the sm_90 CUBINs)" % nptxas)
        for secs, name in sorted(times, reverse=True)[:3]:
            print("  slowest: %6.2f s %s" % (secs, name))
        if args.nvrtc_cache and args.subset == "full" and not args.pattern:
            n = cuda_reuse.prune(args.nvrtc_cache, t0)
            print("nvrtc cache %s: %d entries no build of this run used, removed" % (
                args.nvrtc_cache, n))
        R.passed += npass
        R.failed += nfail
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print("time: %.1f s" % (time.time() - t0))
    print("cuda: %d passed, %d failed" % (R.passed, R.failed))
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
