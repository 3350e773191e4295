"""What run_attention_emul.py and run_qmatmul_emul.py share: a generated
kernel cut out of an emitted module, compiled for the host after
attn_host.h and run on files of its buffers, and the scripts' command line
and case loop."""

import argparse
import os
import re
import shutil
import subprocess
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def raw(x):
    """A tensor's bytes as a kernel stores them (bool as bytes, f16/bf16 as 16-bit words)."""
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    elif x.dtype in (torch.float16, torch.bfloat16):
        x = x.view(torch.int16)
    return x.contiguous().numpy().tobytes()


def kernel_source(cu_text, kind):
    """(name, text) of the module's k<N>_<kind> kernel, or (None, None)."""
    m = re.search(r'^extern "C" __global__ void __launch_bounds__\(256\) (k\d+_%s)\(.*?^}\n' % kind,
                  cu_text, re.M | re.S)
    return (m.group(1), m.group(0)) if m else (None, None)


def compile_kernel(args, d, kname, ksrc):
    """(executable, None), or (None, the compiler's message)."""
    src = os.path.join(d, "k.cpp")
    with open(src, "w") as f:
        f.write('#include "attn_host.h"\n%s\nTG_HOST_MAIN(%s)\n' % (ksrc, kname))
    exe = os.path.join(d, "k")
    p = subprocess.run([args.cxx, "-std=c++20", "-O2", "-pthread", "-w", "-I", HERE, src, "-o",
                        exe], capture_output=True, text=True)
    return (exe, None) if p.returncode == 0 else (None, "%s: %s" % (args.cxx,
                                                                    p.stderr.strip()[:2000]))


def run_kernel(exe, grid, out_slot, files):
    """Runs the emulated kernel over `grid` blocks; files: {slot: path} (the
    others get no buffer); the file of out_slot receives that buffer after
    the run. Returns None, or the failure's message."""
    argv = [exe, str(grid), str(out_slot)] + [files.get(i, "-") for i in range(max(files) + 1)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return "the emulated kernel exited %d: %s" % (p.returncode, p.stderr.strip())
    return None


def main(label, doc, cases, run_case, tmp_prefix):
    """The scripts' command line (--tgc, --cxx, -k, --keep) and loop over
    cases: run_case(name, case, args, work) returns the failures'
    messages. Prints `LABEL: N passed, M failed`; 1 if M > 0, 77 (skipped)
    without a C++20 compiler or when tgc has no CUDA support."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--cxx", default=os.environ.get("CXX") or shutil.which("g++") or "g++")
    ap.add_argument("-k", dest="pattern")
    ap.add_argument("--keep")
    args = ap.parse_args()
    probe = subprocess.run([args.cxx, "-std=c++20", "-x", "c++", "-fsyntax-only", "-"],
                           input="#include <barrier>\n_Float16 h;\n", capture_output=True,
                           text=True) if shutil.which(args.cxx) else None
    if probe is None or probe.returncode != 0:
        print("%s: skipped: no C++20 compiler with <barrier> and _Float16 (%s)"
              % (label, args.cxx))
        return SKIP
    work = args.keep or tempfile.mkdtemp(prefix=tmp_prefix)
    passed = failed = 0
    try:
        for name, case in cases.items():
            if args.pattern and args.pattern not in name:
                continue
            msgs = run_case(name, case, args, work)
            if msgs and "built without" in msgs[0]:
                print("%s: skipped: %s" % (label, msgs[0]))
                return SKIP
            print("%s %s%s" % ("ok  " if not msgs else "FAIL", name,
                               "".join("\n     " + m for m in msgs)))
            passed, failed = passed + (not msgs), failed + bool(msgs)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("%s: %d passed, %d failed" % (label, passed, failed))
    return 1 if failed else 0
