#!/usr/bin/python3
"""Compiled programs on CPUs this machine is not (issue 33): Debian's
qemu-user emulates a Nehalem (SSE4.2, no AVX: x86-64-v2) and a Haswell
(AVX2/FMA/F16C, no AVX-512: x86-64-v3) CPU, and each executable also runs
natively.

A representative set: an MLP and a transformer block from examples/ (the
diff suite's small variants) and a convolution net (conv2d, batch_norm,
relu, a residual: oneDNN's own CPU dispatch), with inputs and weights from
the diff suite's harness (tests/diff/diff.py, imported) and PyTorch's
values as the reference. Checks, per graph:
  - built with `--cpu x86-64-v2,x86-64-v3,native`, the executable runs
    under each CPU and natively, its outputs equal PyTorch's within the
    diff suite's tolerance for the case (examples "long": f32 rtol 1e-3,
    atol 1e-4; the conv net "reduction": rtol 1e-4, atol 1e-5; the levels
    differ in FMA contraction and vector width, so in rounding), and
    --profile names the level that ran: x86-64-v2 on Nehalem, x86-64-v3 (or
    native, when this machine is a Haswell) on Haswell, native here; the
    MLP also with the levels in the other order (native first), which dies
    under Nehalem unless the chosen level's forward is the one that runs;
  - built for the host alone (the default), it runs where the CPU has the
    features, else exits 1 naming the missing features and the --cpu to
    rebuild with: never a signal (SIGILL was exit 132). On this AVX2
    machine that is the message under Nehalem;
  - tgc compile's API, built for the host: NAME_create returns 10 under
    Nehalem with that message in NAME_error (0 here);
  - a training executable (examples/linear_regression.tg --train): the
    host-only build exits 1 with the message under Nehalem, the multi-level
    one trains there at x86-64-v2.
In the qemu commands alone OPENBLAS_CORETYPE is unset, so that OpenBLAS
detects the emulated CPU (these machines set it to Haswell).

Skips (exit 77) with a message when qemu-x86_64 is absent (scripts/setup.sh
installs qemu-user), when this is not an x86-64 machine, and under the
sanitizers (--asan: ASan's shadow memory under qemu-user is slow and
fragile).

Usage: run_cpu.py --tgc build/tgc [--asan] [--keep DIR]
Last line: `cpu: N passed, M failed`.
"""
import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import diff  # noqa: E402
import diff_models  # noqa: E402

LEVELS = "x86-64-v2,x86-64-v3,native"
REVERSED = "native,x86-64-v3,x86-64-v2"
# (qemu -cpu model, the levels that may run there)
CPUS = [("Nehalem", ("x86-64-v2",)), ("Haswell", ("x86-64-v3", "native"))]
TIMEOUT = 300

CONVNET = """graph convnet
input x : f32[2, 3, 12, 11]
param w : f32[8, 3, 3, 3]
param b : f32[8]
param m : f32[8]
param v : f32[8]
param g : f32[8]
param be : f32[8]
param w2 : f32[8, 8, 3, 3]
param fc : f32[5, 8]
h = relu(batch_norm(conv2d(x, w, b, padding="same"), m, v, g, be))
z = relu(conv2d(h, w2, padding=1) + h)
output y = linear(z.mean(dim=[2, 3]), fc)
"""


def cases():
    ex = {c.name: c for c in diff_models.cases(diff.DiffCase, ROOT)}
    return [ex["example_mlp_small"], ex["example_transformer_block_small"],
            diff.DiffCase("convnet", CONVNET, inputs={"v": "pos"}, tol="reduction",
                      add_outputs=False, mode="build")]


CAPI = """graph capi
input x : f32[4, 64]
param w : f32[64, 64] = randn(std=0.1)
output y = relu(x @ w).sum(dim=-1)
"""
CAPI_MAIN = r"""#include <stdio.h>
#include "capi.h"
int main(void) {
    capi_ctx *c = NULL;
    int s = capi_create(&c, NULL, 1);
    printf("%d\n%s\n", s, capi_error(c));
    capi_destroy(c);
    return 0;
}
"""


def compile_api(tgc, qemu, work, check):
    """tgc compile's API, built for the host: capi_create returns 0 here,
    and under Nehalem 10 (TGCRT_ERR_DEVICE) with the message, never runs
    the kernels."""
    d = os.path.join(work, "capi")
    os.makedirs(d, exist_ok=True)
    tg, obj, hdr, main_c, exe = (os.path.join(d, n) for n in
                                 ("capi.tg", "capi.o", "capi.h", "main.c", "capi_main"))
    with open(tg, "w") as f:
        f.write(CAPI)
    with open(main_c, "w") as f:
        f.write(CAPI_MAIN)
    rc, _, err = run([tgc, "compile", tg, "-o", obj, "--header", hdr])
    if not check("capi: tgc compile", rc == 0, err):
        return
    rc, link, err = run([tgc, "compile", tg, "--print-link-line"])
    cc = os.environ.get("CC") or "cc"
    rc2, _, err2 = run([cc, "-std=c11", "-I", d, main_c, obj, "-o", exe] + link.split())
    if not check("capi: link the C program", rc == 0 and rc2 == 0, err + err2):
        return
    rc, out, err = run([exe])
    check("capi: capi_create returns 0 here", rc == 0 and out.startswith("0\n"), out + err)
    rc, out, err = run([qemu, "-cpu", "Nehalem", exe], env=qemu_env())
    check("capi: capi_create returns 10 under Nehalem, naming the features",
          rc == 0 and out.startswith("10\n") and "which this CPU lacks" in out
          and "--cpu x86-64-v2" in out, "exit %s: %s" % (rc, out + err))


def training(tgc, qemu, work, check):
    """A training executable (tgc build --train) under Nehalem: the
    host-only build exits 1 with the message, the multi-level one trains
    at x86-64-v2."""
    ex = os.path.join(ROOT, "examples")
    data = ["--input", "x=%s" % os.path.join(ex, "data", "linreg_x.npy"),
            "--input", "y=%s" % os.path.join(ex, "data", "linreg_y.npy"), "--steps", "5"]
    d = os.path.join(work, "train")
    os.makedirs(d, exist_ok=True)
    for kind, flags in (("host", []), ("multi", ["--cpu", LEVELS])):
        exe = os.path.join(d, kind)
        rc, _, err = run([tgc, "build", os.path.join(ex, "linear_regression.tg"), "--train",
                          "loss", "--optimizer", "sgd", "--lr", "0.001", "-o", exe] + flags)
        if not check("train: tgc build --train %s" % " ".join(flags), rc == 0, err):
            continue
        rc, out, err = run([qemu, "-cpu", "Nehalem", exe] + data
                           + ["--profile", "--output-dir", d], env=qemu_env())
        if kind == "host":
            check("train: host-only build under Nehalem exits 1 with the message",
                  rc == 1 and "which this CPU lacks" in err and "--cpu x86-64-v2" in err,
                  "exit %s: %s" % (rc, err))
        else:
            check("train: multi-level build trains under Nehalem at x86-64-v2",
                  rc == 0 and "cpu level: x86-64-v2" in out, "exit %s: %s" % (rc, err))


def run(cmd, env=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT


def qemu_env(cpu="Nehalem"):
    """OPENBLAS_CORETYPE unset, so that OpenBLAS detects the emulated CPU.
    GOMP_SPINCOUNT and OPENBLAS_NUM_THREADS set as the executable would set
    them: without them it re-executes itself at start (/proc/self/exe,
    runtime/exe_omp.c), and qemu-user hands that exec to the kernel, which
    runs the program natively, outside the emulated CPU."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env["QEMU_CPU"] = cpu
    env["GOMP_SPINCOUNT"] = "0"
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--asan", action="store_true")
    ap.add_argument("--keep")
    args = ap.parse_args()
    if platform.machine() != "x86_64":
        print("cpu: skipped: not an x86-64 machine")
        return 77
    if args.asan:
        print("cpu: skipped under the sanitizers (qemu-user and ASan's shadow memory)")
        return 77
    qemu = shutil.which("qemu-x86_64")
    if not qemu:
        print("cpu: skipped: qemu-x86_64 not found (scripts/setup.sh installs qemu-user)")
        return 77
    rc, _, err = run([qemu, "-cpu", "Nehalem", "/bin/true"], env=qemu_env())
    if rc != 0:
        print("cpu: FAIL qemu-x86_64 does not run /bin/true: %s" % err.strip()[-300:])
        return 1
    tgc = os.path.abspath(args.tgc)
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL %s: %s" % (name, str(detail)[-800:]))
        return ok

    work = args.keep or tempfile.mkdtemp(prefix="tgc-cpu-")
    os.makedirs(work, exist_ok=True)
    try:
        if "avx" in open("/proc/cpuinfo").read().split():
            compile_api(tgc, qemu, work, check)
            training(tgc, qemu, work, check)
        all_cases = cases()
        first = all_cases[0]
        for case in all_cases:
            m = diff.materialize(case, work)
            exes = {}
            for kind, flags in (("multi", ["--cpu", LEVELS]), ("host", [])):
                exe = os.path.join(m.dir, "%s.exe" % kind)
                rc, _, err = run([tgc, "build", m.tg, "-o", exe] + m.dflags + m.build_weights
                                 + flags)
                if check("%s: tgc build %s" % (case.name, " ".join(flags) or "(host)"), rc == 0,
                         err):
                    exes[kind] = exe
            if "multi" not in exes:
                continue

            def execute(exe, label, cpu, extra=()):
                od = os.path.join(m.dir, "out_" + label.replace(" ", "_"))
                os.makedirs(od, exist_ok=True)
                cmd = [exe] + m.in_args + m.run_weights + ["--output-dir", od] + list(extra)
                if cpu:
                    return run([qemu, "-cpu", cpu] + cmd, env=qemu_env(cpu)) + (od,)
                return run(cmd) + (od,)

            def matches(label, od):
                msgs = []
                for n, ref in m.outs.items():
                    p = os.path.join(od, n + ".npy")
                    if not os.path.exists(p):
                        msgs.append("output %s.npy was not written" % n)
                        continue
                    msg = diff.compare(n, ref, np.load(p), case.tol, case.check, case.precision)
                    if msg:
                        msgs.append(msg)
                return check("%s: %s equals PyTorch" % (case.name, label), not msgs, msgs)

            for cpu, may_run in CPUS + [(None, ("native",))]:
                where = cpu or "this CPU"
                label = "multi-level on %s" % where
                rc, out, err, od = execute(exes["multi"], label, cpu, ["--profile"])
                if not check("%s: %s exits 0" % (case.name, label), rc == 0,
                             "exit %s: %s" % (rc, err)):
                    continue
                matches(label, od)
                ran = [l.split(":", 1)[1].strip() for l in out.splitlines()
                       if l.startswith("cpu level:")]
                check("%s: %s runs %s" % (case.name, label, " or ".join(may_run)),
                      len(ran) == 1 and ran[0] in may_run, ran or out[-300:])
                if "host" not in exes:
                    continue
                label = "host-only on %s" % where
                rc, out, err, od = execute(exes["host"], label, cpu)
                if rc == 0:
                    matches(label, od)
                else:
                    check("%s: %s exits 0, or 1 with the message (exit %s)" % (
                        case.name, label, rc),
                        rc == 1 and "which this CPU lacks" in err and "--cpu x86-64-v" in err,
                        err)
            if case is first:
                # Each level's code is its own: the x86-64-v2 build has no
                # AVX register, the list's x86-64-v3 and native code has.
                for flags, want in (([LEVELS], True), (["x86-64-v2"], False)):
                    ed = os.path.join(m.dir, "asm_%d" % want)
                    os.makedirs(ed, exist_ok=True)
                    rc, _, err = run([tgc, "build", m.tg, "-o", os.path.join(ed, "exe"), "--cpu"]
                                     + flags + m.dflags + m.build_weights + ["--emit", "asm", ed])
                    text = ""
                    for fn in (os.listdir(ed) if os.path.isdir(ed) else []):
                        if fn.endswith(".s"):
                            text += open(os.path.join(ed, fn)).read()
                    check("%s: --cpu %s code uses AVX registers: %s" % (case.name, flags[0], want),
                          rc == 0 and ("%ymm" in text) == want, err or "ymm: %s" % ("%ymm" in text))
                # The levels in the other order: the first level's forward
                # is native's, so a program that ran it regardless of the
                # choice would die under Nehalem.
                exe = os.path.join(m.dir, "reversed.exe")
                rc, _, err = run([tgc, "build", m.tg, "-o", exe, "--cpu", REVERSED] + m.dflags
                                 + m.build_weights)
                if check("%s: tgc build --cpu %s" % (case.name, REVERSED), rc == 0, err):
                    for cpu, may_run in CPUS:
                        label = "reversed levels on %s" % cpu
                        rc, out, err, od = execute(exe, label, cpu, ["--profile"])
                        if check("%s: %s exits 0" % (case.name, label), rc == 0,
                                 "exit %s: %s" % (rc, err)):
                            matches(label, od)
                            check("%s: %s runs %s" % (case.name, label, " or ".join(may_run)),
                                  "cpu level: %s" % may_run[0] in out
                                  or "cpu level: %s" % may_run[-1] in out, out[-300:])
            if "host" in exes:
                # This machine has AVX2 (the host-only build's code needs at
                # least AVX): under Nehalem it must refuse, not crash.
                has_avx = "avx" in open("/proc/cpuinfo").read().split()
                if has_avx:
                    rc, _, err, _ = execute(exes["host"], "host-only refusal", "Nehalem")
                    check("%s: host-only build under Nehalem exits 1 naming avx and "
                          "--cpu x86-64-v2" % case.name,
                          rc == 1 and "avx" in err and "--cpu x86-64-v2" in err,
                          "exit %s: %s" % (rc, err))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("cpu: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
