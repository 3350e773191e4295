#!/usr/bin/python3
"""Builds the differential corpus for a GPU machine (see README.md here).

For every case of tests/diff (select_cases() and materialize() from
diff.py, imported: the same cases, pruned graphs, inputs and weights as the
CPU differential suite), in parallel:
  - writes graph.tg, in_NAME.npy and weights.safetensors (diff.py's files).
    Random numbers do not compress, so a case whose data exceed
    --ship-max-kib (the examples' weights: tens of MiB in all) ships instead
    the CRC-32 of each tensor: the GPU side draws them again with diff.py's
    gen_tensor (same seed, same specs) and requires the same CRCs
    (--ship-data ships everything);
  - builds graph.exe with `tgc build --target cuda --gpu-arch ARCHS` (the
    case's -D, --precision and embedded-weights flags too); cases in the
    --cuda-graph-subset (default: diff.py's `asan` subset, which covers
    every operation) also get graph_cg.exe, built with --cuda-graph;
  - writes meta.json: what the GPU side needs to compute the reference and
    compare (declarations in order and where each one's tensor comes from,
    outputs, tolerance category, check, precision, the executables and
    their arguments).
Then copies into the bundle the shared libraries the executables need
that a GPU machine may lack (ldd, less the C library's own: libopenblas,
libcjson, libgfortran, libquadmath...), the Python files the reference
needs (tests/diff/*.py, tests/oracle/*.py) and this folder's gpu_diff.py,
and packs it all as one solid xz tarball, DATA_DIR/gpu-cases.tar.xz (the
only file it writes there, so that DATA_DIR can travel to the GPU machine,
with the repository, under the 64 MiB limit; bench/gpu puts its
gpu-bench.tar.xz beside it).

`--target cpu` builds the same bundle with CPU executables: run_on_gpu.sh
--device cpu then runs the whole GPU harness here, as a check of the
harness itself.

Usage: prepare.py --tgc BUILD/tgc --out DATA_DIR [--archs sm_80,sm_90]
         [--target cuda|cpu] [--subset full|asan] [-k SUBSTRING]
         [--cuda-graph-subset asan|full|none] [--jobs N] [--keep-stage DIR]
         [--ship-max-kib N | --ship-data]
"""

import argparse
import glob
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zlib

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))

import diff  # noqa: E402
import oracle  # noqa: E402

TIMEOUT = 600
BUNDLE = "gpu-cases"
# Libraries every Linux with a C runtime has (never copied).
SYSTEM_LIBS = re.compile(r"^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|"
                         r"librt\.so|libgcc_s\.so|libstdc\+\+\.so|libresolv\.so|libutil\.so)")


def run(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def oneline(text, cap=500):
    t = " | ".join(l.strip() for l in text.strip().splitlines() if l.strip())
    return t if len(t) <= cap else t[:cap] + "..."


def graph_name(src):
    for _, st in oracle.statements(src):
        m = oracle.RE_GRAPH.match(st)
        if m:
            return m.group(1)
    return None


def shapes(src, defines):
    """{declared name: shape} (symbolic dims resolved)."""
    dims = diff._dims(src, defines)
    out = {}
    for kind, name, dt, dimtxt, init, iargs in diff.declarations(src):
        shape = []
        if dimtxt.strip():
            env = {k: oracle.Dim(v) for k, v in dims.items()}
            env["__builtins__"] = {}
            shape = [int(d) for d in eval("[" + dimtxt + "]", env)]
        out[name] = shape
    return out


def prepare_case(job):
    case, tgc, stage, target, archs, cuda_graph, ship_max = job
    t0 = time.time()
    try:
        m = diff.materialize(case, os.path.join(stage, "cases"))
        if not m.outs:
            return case.name, "skip", "PyTorch rejects every statement", time.time() - t0
        rel = os.path.relpath(m.dir, stage)
        target_flags = ["--target", target]
        if target == "cuda":
            target_flags += ["--gpu-arch", archs]
        exes = []
        variants = [("exe", "graph.exe", [], [])]
        if cuda_graph and target == "cuda":
            # Built with --cuda-graph and run with --bench 2: the captured
            # graph is replayed three times before the outputs are written.
            variants.append(("exe --cuda-graph", "graph_cg.exe", ["--cuda-graph"], ["--bench", "2"]))
        for label, fn, bflags, rflags in variants:
            exe = os.path.join(m.dir, fn)
            rc, _, err = run([tgc, "build", m.tg, "-o", exe] + target_flags + bflags + m.dflags
                             + m.build_weights)
            if rc != 0:
                return case.name, "fail", "tgc build %s: rc %s: %s" % (
                    " ".join(target_flags + bflags), rc, oneline(err)), time.time() - t0
            exes.append({"label": label, "file": fn, "args": rflags})
        feed_src = {}
        for kind, name, t in m.files:
            if t is None:
                feed_src[name] = "init"
            elif kind == "input":
                feed_src[name] = "input"
            else:
                feed_src[name] = "weights"
        shp = shapes(m.src, case.defines)
        decls = []
        for kind, name, dt, dimtxt, init, iargs in diff.declarations(m.src):
            decls.append({"kind": kind, "name": name, "dtype": dt, "shape": shp[name],
                          "source": feed_src[name], "init": init, "init_args": iargs,
                          "spec": case.inputs.get(name, diff.default_spec(dt))})
        # Large inputs and weights are random numbers that xz cannot shrink:
        # past ship_max bytes a case's are drawn again on the GPU machine
        # (diff.gen_tensor with the same seed and specs) and checked there
        # against these CRCs, so they are bit-identical or the case fails.
        data = list(m.inputs.values()) + ([m.wpath] if m.wpath else [])
        regen = None
        if ship_max is not None and sum(os.path.getsize(p) for p in data) > ship_max:
            regen = {n: zlib.crc32(diff.tensorio.tensor_bytes(t)) & 0xFFFFFFFF
                     for _, n, t in m.files if t is not None}
            for p in data:
                os.remove(p)
        # The executables' arguments, relative to the case's folder.
        in_args = []
        for n, p in m.inputs.items():
            in_args += ["--input", "%s=%s" % (n, os.path.basename(p))]
        meta = {
            "name": case.name, "graph": graph_name(m.src), "group": case.group, "tol": case.tol,
            "check": case.check, "precision": case.precision, "mode": case.mode,
            "asan": case.asan, "defines": case.defines, "decls": decls,
            "weights": os.path.basename(m.wpath) if m.wpath else None,
            "inputs": {n: os.path.basename(p) for n, p in m.inputs.items()},
            "run_args": in_args + (["--weights", os.path.basename(m.wpath)] if m.run_weights else []),
            "outputs": list(m.outs.keys()),
            "ref_dtypes": {n: oracle.TG_NAME[t.dtype] for n, t in m.outs.items()},
            "exes": exes, "target": target, "archs": archs if target == "cuda" else None,
            "dropped": len(m.dropped), "regen_crc32": regen,
        }
        with open(os.path.join(m.dir, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        return case.name, "ok", rel, time.time() - t0
    except Exception:
        return case.name, "fail", "harness error: " + traceback.format_exc(), time.time() - t0


def copy_libs(exes, libdir):
    """Copies the non-system shared libraries the executables load."""
    os.makedirs(libdir, exist_ok=True)
    copied = {}
    for exe in exes:
        rc, out, err = run(["ldd", exe])
        if rc != 0:
            raise SystemExit("ldd %s failed: %s" % (exe, err))
        for line in out.splitlines():
            m = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
            if not m:
                if "not found" in line:
                    raise SystemExit("ldd %s: %s" % (exe, line.strip()))
                continue
            soname, path = m.groups()
            if path == "not" or "not found" in line:
                raise SystemExit("ldd %s: %s not found" % (exe, soname))
            if SYSTEM_LIBS.match(soname) or soname in copied:
                continue
            shutil.copy2(os.path.realpath(path), os.path.join(libdir, soname))
            copied[soname] = os.path.realpath(path)
    return copied


def copy_harness(dest):
    files = glob.glob(os.path.join(ROOT, "tests", "diff", "*.py")) + \
        glob.glob(os.path.join(ROOT, "tests", "oracle", "*.py")) + \
        [os.path.join(HERE, "gpu_diff.py")]
    for f in files:
        rel = os.path.relpath(f, ROOT)
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(f, os.path.join(dest, rel))
    return len(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--out", required=True, help="DATA_DIR: gets gpu-cases.tar.xz")
    ap.add_argument("--archs", default="sm_80,sm_90")
    ap.add_argument("--target", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--subset", choices=["full", "asan"], default="full")
    ap.add_argument("-k", dest="pattern")
    ap.add_argument("--cuda-graph-subset", choices=["asan", "full", "none"], default="asan")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep-stage", help="build the bundle in this folder and keep it")
    ap.add_argument("--ship-max-kib", type=int, default=256,
                    help="a case whose inputs and weights exceed this many KiB has them drawn "
                         "again on the GPU machine (CRC-checked) instead of shipped")
    ap.add_argument("--ship-data", action="store_true",
                    help="ship every case's inputs and weights (a bigger bundle)")
    ap.add_argument("--strip", action="store_true", default=True,
                    help="strip the executables' symbols (default; the GPU code is untouched)")
    ap.add_argument("--no-strip", dest="strip", action="store_false")
    args = ap.parse_args()
    t0 = time.time()
    tgc = os.path.abspath(args.tgc)
    rc, out, err = run([tgc, "--version"])
    version = (out or err).strip()
    cases = diff.select_cases(args.subset, args.pattern)
    cg = set()
    if args.cuda_graph_subset != "none":
        cg = {c.name for c in diff.select_cases(args.cuda_graph_subset, args.pattern)}
    print("prepare: %d cases, tgc %s, --target %s%s, %d with --cuda-graph too" % (
        len(cases), version, args.target,
        " --gpu-arch " + args.archs if args.target == "cuda" else "", len(cg & {c.name for c in cases})
        if args.target == "cuda" else 0))
    sys.stdout.flush()
    top = args.keep_stage or tempfile.mkdtemp(prefix="tgc-gpu-stage-")
    stage = os.path.join(top, BUNDLE)
    if os.path.exists(stage):
        shutil.rmtree(stage)
    os.makedirs(stage)
    ok, failed, skipped = [], [], []
    try:
        ship_max = None if args.ship_data else args.ship_max_kib * 1024
        jobs = [(c, tgc, stage, args.target, args.archs, c.name in cg, ship_max) for c in cases]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(max(1, args.jobs), initializer=diff._worker_init) as pool:
            for name, status, info, secs in pool.imap_unordered(prepare_case, jobs):
                if status == "ok":
                    ok.append((name, info))
                elif status == "skip":
                    skipped.append(name)
                else:
                    failed.append(name)
                    print("FAIL %s: %s" % (name, info.strip().splitlines()[-1] if "harness" in info
                                            else info))
                    if "harness error" in info:
                        print(info)
                    sys.stdout.flush()
        ok.sort()
        exes = sorted(glob.glob(os.path.join(stage, "cases", "*", "*.exe")))
        if not exes:
            raise SystemExit("prepare: no executable was built")
        libs = copy_libs(exes[:1] + [e for e in exes if e.endswith("_cg.exe")][:1],
                         os.path.join(stage, "lib"))
        if args.strip:
            for e in exes:
                run(["strip", "--strip-unneeded", e])
        nh = copy_harness(os.path.join(stage, "harness"))
        manifest = {"tgc": version, "target": args.target,
                    "archs": args.archs if args.target == "cuda" else None,
                    "cases": [rel for _, rel in ok], "failed_to_build": sorted(failed),
                    "skipped": sorted(skipped), "libs": libs,
                    "created": time.strftime("%Y-%m-%d %H:%M:%S")}
        with open(os.path.join(stage, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        raw = int(run(["du", "-sb", stage])[1].split()[0])
        os.makedirs(args.out, exist_ok=True)
        tarball = os.path.join(args.out, BUNDLE + ".tar.xz")
        if os.path.exists(tarball):
            os.remove(tarball)
        env = dict(os.environ, XZ_OPT="-9e -T1")
        p = subprocess.run(["tar", "--sort=name", "--owner=0", "--group=0", "-cJf", tarball, "-C", top,
                            BUNDLE], env=env)
        if p.returncode != 0:
            raise SystemExit("prepare: tar failed")
        size = os.path.getsize(tarball)
        print("libraries copied: %s" % ", ".join(sorted(libs)) if libs else "libraries copied: none")
        print("harness files: %d; bundle: %.1f MiB unpacked, %s: %.1f MiB" % (
            nh, raw / 2 ** 20, tarball, size / 2 ** 20))
        if size > 60 * 2 ** 20:
            print("WARNING: the bundle is over 60 MiB: with the repository it may not fit the "
                  "64 MiB a run can carry (use --subset asan or -k to build fewer cases)")
    finally:
        if not args.keep_stage:
            shutil.rmtree(top, ignore_errors=True)
    print("time: %.1f s" % (time.time() - t0))
    print("prepare: %d built, %d failed, %d skipped" % (len(ok), len(failed), len(skipped)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
