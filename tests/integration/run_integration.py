#!/usr/bin/python3
"""Integration suite: tgc used from another build (docs/integration.md).

  - install: `cmake --install BUILD --prefix TMP/prefix` of the tree under
    test puts bin/tgc, lib/tgc/libtgcrt.a, include/tgc/tgcrt.h,
    lib/pkgconfig/tgcrt.pc and lib/cmake/tgc/{tgcConfig,tgcConfigVersion,
    TgcAddModel}.cmake there;
  - the consumer: examples/cmake-consumer (and examples/mlp.tg beside it,
    copied to TMP) configured with CMAKE_PREFIX_PATH=TMP/prefix and built
    with Ninja (same C compiler as the tree; under TGC_SANITIZE with
    -fsanitize=address,undefined too, as libtgcrt is instrumented); run with
    random weights (safetensors written here) and a random input (raw f32),
    its probabilities must match PyTorch 1.13 (|d| <= 1e-5 + 1e-4 |torch|)
    and the classes it prints must be the argmax;
  - a second `cmake --build` does nothing ("ninja: no work to do", no
    Generating/Building line); touching the graph regenerates the model and
    relinks; the program still matches;
  - the same consumer against the build tree (tgc_DIR=BUILD) builds and runs;
  - links: tests/integration/conv_consumer/convnet.tg, a convolution
    (oneDNN and its OpenMP) and a matrix product (OpenBLAS), compiled by the
    installed tgc; its header's line names oneDNN, OpenMP and OpenBLAS, and
    `tgc compile FILE --print-link-line` prints the same line with -L the
    installed lib/tgc; for examples/mlp.tg (no convolution) it names no
    oneDNN; without FILE it is pkg-config's line (every library), with
    --target cuda libdl and no oneDNN; with -o it is exit 2 and writes
    nothing, for a wrong graph exit 1 naming the place. Then
    conv_consumer/main.c, which creates a context and runs the model, is
    linked three ways: with the header's line, with `pkg-config --cflags
    --libs tgcrt`, and by find_package(tgc) + tgc_add_model (conv_consumer/
    CMakeLists.txt); each program's output must match PyTorch 1.13
    (|d| <= 1e-5 + 1e-4 |torch|);
  - reproducibility: two `tgc compile` runs of the same graph and options
    (-D batch=3, with and without --embed-weights) in two different
    temporary directories give byte-identical .o and .h;
  - atomic outputs: a failing `tgc compile` / `tgc build` (a graph with an
    error, weights of the wrong shape, a C compiler that fails) leaves no
    file at -o / --header, and a pre-existing older file there stays
    byte-for-byte and mtime untouched; no temporary file is left beside it;
    a successful run replaces it.
Prints a final "integration: N passed, M failed" line.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

passed = 0
failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}" + (f"\n     {detail}" if detail else ""))
    return ok


def run(cmd, cwd=None, env=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        b = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
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


def torch_mlp(x, w):
    import torch
    t = {k: torch.from_numpy(v) for k, v in w.items()}
    h = torch.relu(torch.from_numpy(x) @ t["w1"] + t["b1"])
    logits = torch.nn.functional.linear(h, t["w2"], t["b2"])
    return torch.softmax(logits, dim=-1).numpy()


def check_program(exe, d, weights, w, label, env):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 784)).astype(np.float32)
    xin = os.path.join(d, "x.f32")
    x.tofile(xin)
    probs_path = os.path.join(d, "probs.f32")
    if os.path.exists(probs_path):
        os.unlink(probs_path)
    rc, out = run([exe, weights, probs_path, xin], env=env)
    if not check(rc == 0, f"{label}: the consumer runs", out):
        return
    got = np.fromfile(probs_path, dtype=np.float32).reshape(8, 10)
    ref = torch_mlp(x, w)
    err = np.abs(got - ref) - (1e-5 + 1e-4 * np.abs(ref))
    check(err.max() <= 0, f"{label}: probabilities match PyTorch",
          f"max |d| = {np.abs(got - ref).max()}")
    lines = [l for l in out.splitlines() if l.startswith("row ")]
    classes = [int(l.split("class ")[1].split()[0]) for l in lines]
    check(classes == list(np.argmax(ref, axis=1)), f"{label}: printed classes are the argmax",
          out)


def install(a, tmp):
    prefix = os.path.join(tmp, "prefix")
    rc, out = run([a.cmake, "--install", a.build_dir, "--prefix", prefix])
    check(rc == 0, "cmake --install into a temporary prefix", out)
    return prefix


def consumer(a, tmp, prefix, env):
    for f in ["bin/tgc", "lib/tgc/libtgcrt.a", "include/tgc/tgcrt.h", "include/tgc/tgcrt_abi.h",
              "include/tgc/tgcrt_cuda.h",
              "lib/pkgconfig/tgcrt.pc", "lib/cmake/tgc/tgcConfig.cmake",
              "lib/cmake/tgc/tgcConfigVersion.cmake", "lib/cmake/tgc/TgcAddModel.cmake"]:
        check(os.path.isfile(os.path.join(prefix, f)), f"installed {f}")
    pc = os.path.join(prefix, "lib/pkgconfig/tgcrt.pc")
    if shutil.which("pkg-config") and os.path.isfile(pc):
        rc, out = run(["pkg-config", "--libs", "--cflags", pc])
        check(rc == 0 and "-ltgcrt" in out and "-lopenblas" in out and
              os.path.realpath(os.path.join(prefix, "include/tgc")) in
              os.path.realpath(out.split()[0][2:]) if out.startswith("-I") else False,
              "pkg-config tgcrt gives -I.../include/tgc and -ltgcrt -lopenblas", out)

    # The consumer and its graph, laid out as in the source tree.
    ex = os.path.join(tmp, "examples")
    shutil.copytree(os.path.join(a.source_dir, "examples", "cmake-consumer"),
                    os.path.join(ex, "cmake-consumer"))
    graph = os.path.join(ex, "mlp.tg")
    shutil.copy(os.path.join(a.source_dir, "examples", "mlp.tg"), graph)
    src = os.path.join(ex, "cmake-consumer")

    rng = np.random.default_rng(3)
    w = {"w1": (rng.standard_normal((784, 256)) * 0.05).astype(np.float32),
         "b1": (rng.standard_normal(256) * 0.1).astype(np.float32),
         "w2": (rng.standard_normal((10, 256)) * 0.06).astype(np.float32),
         "b2": (rng.standard_normal(10) * 0.1).astype(np.float32)}
    weights = os.path.join(tmp, "mlp.safetensors")
    write_safetensors(weights, list(w.items()))

    cflags = "-Wall -Wextra"
    if a.sanitize:
        cflags += " -fsanitize=address,undefined -fno-sanitize-recover=undefined"
    common = ["-G", "Ninja", f"-DCMAKE_C_COMPILER={a.cc}", f"-DCMAKE_C_FLAGS={cflags}",
              "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
    b = os.path.join(tmp, "build-consumer")
    rc, out = run([a.cmake, "-S", src, "-B", b, f"-DCMAKE_PREFIX_PATH={prefix}"] + common,
                  env=env)
    if not check(rc == 0, "consumer configures with find_package(tgc) from the prefix", out):
        return
    rc, out = run([a.cmake, "--build", b], env=env)
    if not check(rc == 0 and "Generating tgc model" in out, "consumer builds", out):
        return
    exe = os.path.join(b, "classify")
    if a.sanitize:
        rc, out = run(["nm", exe])
        check(rc == 0 and "__asan_init" in out,
              "consumer is built with AddressSanitizer, as the runtime is")
    check_program(exe, tmp, weights, w, "installed", env)

    rc, out = run([a.cmake, "--build", b], env=env)
    check(rc == 0 and "no work to do" in out and "Generating" not in out
          and "Building" not in out and "Linking" not in out,
          "a second build does nothing", out)
    rc, out = run(["ninja", "-C", b, "-n"], env=env)
    check(rc == 0 and "no work to do" in out, "ninja -n: no work", out)

    time.sleep(1.1)  # coarse file system clocks
    os.utime(graph)
    rc, out = run([a.cmake, "--build", b], env=env)
    check(rc == 0 and "Generating tgc model" in out and "Linking C executable" in out,
          "touching the graph regenerates the model and relinks", out)
    check_program(exe, tmp, weights, w, "after touching the graph", env)
    rc, out = run([a.cmake, "--build", b], env=env)
    check(rc == 0 and "no work to do" in out, "then nothing again", out)

    # The build tree as the package (tgc_DIR=BUILD).
    b2 = os.path.join(tmp, "build-consumer-tree")
    rc, out = run([a.cmake, "-S", src, "-B", b2, f"-Dtgc_DIR={a.build_dir}"] + common,
                  env=env)
    if check(rc == 0, "consumer configures with tgc_DIR = the build tree", out):
        rc, out = run([a.cmake, "--build", b2], env=env)
        if check(rc == 0, "consumer builds against the build tree", out):
            check_program(os.path.join(b2, "classify"), tmp, weights, w, "build tree", env)


def torch_convnet(x, w):
    import torch
    import torch.nn.functional as F
    t = {k: torch.from_numpy(v) for k, v in w.items()}
    h = F.max_pool2d(torch.relu(F.conv2d(torch.from_numpy(x), t["conv.weight"], t["conv.bias"],
                                         padding=1)), 2)
    return (h.flatten(1) @ t["fc.weight"] + t["fc.bias"]).numpy()


def check_convnet(exe, d, weights, x, ref, label, env):
    xin, yout = os.path.join(d, "x.f32"), os.path.join(d, f"y-{label.split()[0]}.f32")
    x.tofile(xin)
    rc, out = run([exe, weights, xin, yout], env=env)
    if not check(rc == 0, f"links ({label}): the program creates a context and runs", out):
        return
    got = np.fromfile(yout, dtype=np.float32).reshape(ref.shape)
    err = np.abs(got - ref) - (1e-5 + 1e-4 * np.abs(ref))
    check(err.max() <= 0, f"links ({label}): the output matches PyTorch",
          f"max |d| = {np.abs(got - ref).max()}")


def links(a, tmp, prefix, env):
    """A model with a convolution and a product, linked the three ways the
    project states (docs/integration.md), from the installed tgc."""
    src = os.path.join(a.source_dir, "tests", "integration", "conv_consumer")
    d = os.path.join(tmp, "links")
    os.makedirs(d)
    tgc = os.path.join(prefix, "bin", "tgc")
    libdir = os.path.realpath(os.path.join(prefix, "lib", "tgc"))
    pc = os.path.join(prefix, "lib", "pkgconfig", "tgcrt.pc")
    graph = os.path.join(src, "convnet.tg")
    obj, hdr = os.path.join(d, "convnet_model.o"), os.path.join(d, "convnet_model.h")
    rc, out = run([tgc, "compile", graph, "-o", obj, "--header", hdr], env=env)
    if not check(rc == 0, "links: the installed tgc compiles convnet.tg", out):
        return
    text = open(hdr).read().splitlines()
    at = [k for k, l in enumerate(text) if "what this graph needs" in l]
    hline = text[at[0] + 1].lstrip(" *").split() if at and at[0] + 1 < len(text) else []
    check(hline[:1] == ["-ltgcrt"] and all(f"-l{l}" in hline for l in ["dnnl", "gomp", "openblas"]),
          "links: the header's line names oneDNN, OpenMP and OpenBLAS", "\n".join(text[:6]))
    rc, out = run([tgc, "compile", graph, "--print-link-line"], env=env)
    check(rc == 0 and out.split() == [f"-L{libdir}"] + hline,
          "links: --print-link-line is the header's line with -L the installed lib/tgc",
          f"{out!r} vs {hline}")
    rc, out = run([tgc, "compile", os.path.join(a.source_dir, "examples", "mlp.tg"),
                   "--print-link-line"], env=env)
    check(rc == 0 and all(w in out.split() for w in ["-lopenblas", "-ldnnl", "-lgomp"]),
          "links: examples/mlp.tg (no convolution) needs OpenBLAS, and oneDNN for its "
          "f32 products, on OpenMP", out)
    rc, out = run([tgc, "compile", "--target", "cuda", "--print-link-line"], env=env)
    check(rc == 0 and "-ldl" in out.split() and "-ldnnl" not in out.split() and
          "-lgomp" in out.split(),
          "links: any --target cuda program: libdl, OpenMP (the pool), no oneDNN (cuDNN is "
          "loaded)", out)
    stray = os.path.join(d, "stray.o")
    rc, out = run([tgc, "compile", graph, "--print-link-line", "-o", stray], env=env)
    check(rc == 2 and "--print-link-line writes no file" in out and not os.path.exists(stray),
          "links: --print-link-line with -o: exit 2, no file", out)
    bad = os.path.join(d, "bad.tg")
    with open(bad, "w") as f:
        f.write("graph bad\ninput x : f32[4, 3]\noutput y = x @ x\n")
    rc, out = run([tgc, "compile", bad, "--print-link-line"], env=env)
    check(rc == 1 and "bad.tg:3:" in out, "links: --print-link-line of a wrong graph: exit 1 "
          "naming the place", out)
    rc, every = run([tgc, "compile", "--print-link-line"], env=env)
    if shutil.which("pkg-config"):
        rc2, out = run(["pkg-config", "--libs", pc])
        check(rc == 0 and rc2 == 0 and every.split()[1:] == out.split()[1:] and
              every.split()[0] == f"-L{libdir}",
              "links: --print-link-line without FILE is pkg-config's line", f"{every!r} vs {out!r}")

    rng = np.random.default_rng(11)
    w = {"conv.weight": (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32),
         "conv.bias": (rng.standard_normal(4) * 0.1).astype(np.float32),
         "fc.weight": (rng.standard_normal((64, 10)) * 0.1).astype(np.float32),
         "fc.bias": (rng.standard_normal(10) * 0.1).astype(np.float32)}
    weights = os.path.join(d, "convnet.safetensors")
    write_safetensors(weights, list(w.items()))
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    ref = torch_convnet(x, w)

    cflags = ["-O2", "-Wall", "-Wextra"]
    if a.sanitize:
        cflags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    main_c = os.path.join(src, "main.c")
    exe = os.path.join(d, "convnet-header")
    rc, out = run([a.cc] + cflags + ["-I", d, main_c, obj, "-o", exe, f"-L{libdir}"] + hline)
    if check(rc == 0, "links (header line): cc main.c convnet_model.o -L... LINE links", out):
        check_convnet(exe, d, weights, x, ref, "header line", env)
    if shutil.which("pkg-config"):
        rc, flags = run(["pkg-config", "--cflags", "--libs", pc])
        exe = os.path.join(d, "convnet-pkgconfig")
        rc2, out = run([a.cc] + cflags + ["-I", d, main_c, obj, "-o", exe] + flags.split())
        if check(rc == 0 and rc2 == 0,
                 "links (pkg-config): cc main.c convnet_model.o $(pkg-config --libs tgcrt) links",
                 flags + out):
            check_convnet(exe, d, weights, x, ref, "pkg-config", env)
    else:
        print("skip links (pkg-config): pkg-config is not installed")
    if not shutil.which("ninja"):
        print("skip links (CMake): ninja is not installed")
        return
    csrc = os.path.join(d, "conv_consumer")
    shutil.copytree(src, csrc)
    b = os.path.join(d, "build")
    rc, out = run([a.cmake, "-S", csrc, "-B", b, "-G", "Ninja", f"-DCMAKE_C_COMPILER={a.cc}",
                   f"-DCMAKE_C_FLAGS={' '.join(cflags)}", f"-DCMAKE_PREFIX_PATH={prefix}"],
                  env=env)
    if check(rc == 0, "links (CMake): find_package(tgc) configures", out):
        rc, out = run([a.cmake, "--build", b], env=env)
        if check(rc == 0, "links (CMake): tgc_add_model(convnet_model) and main.c link", out):
            check_convnet(os.path.join(b, "convnet"), d, weights, x, ref, "CMake", env)


def reproducible(a, tmp):
    g = os.path.join(a.source_dir, "examples", "mlp.tg")
    rng = np.random.default_rng(5)
    w = [("w1", rng.standard_normal((784, 256))), ("b1", rng.standard_normal(256)),
         ("w2", rng.standard_normal((10, 256))), ("b2", rng.standard_normal(10))]
    for opts_name, extra in [("plain", []), ("embedded weights", ["--embed-weights"])]:
        outs = []
        for i in range(2):
            d = tempfile.mkdtemp(prefix=f"repro{i}-", dir=tmp)
            shutil.copy(g, os.path.join(d, "mlp.tg"))
            wp = os.path.join(d, "w.safetensors")
            write_safetensors(wp, w)
            cmd = [a.tgc, "compile", os.path.join(d, "mlp.tg"), "-o", os.path.join(d, "m.o"),
                   "--header", os.path.join(d, "m.h"), "-D", "batch=3", "--weights", wp] + extra
            env = dict(os.environ, TMPDIR=d)  # different scratch directories too
            rc, out = run(cmd, cwd=d, env=env)
            if not check(rc == 0, f"reproducible ({opts_name}): tgc compile run {i + 1}", out):
                return
            outs.append((open(os.path.join(d, "m.o"), "rb").read(),
                         open(os.path.join(d, "m.h"), "rb").read()))
        check(outs[0][0] == outs[1][0], f"reproducible ({opts_name}): identical .o")
        check(outs[0][1] == outs[1][1], f"reproducible ({opts_name}): identical .h")


def atomic(a, tmp):
    d = tempfile.mkdtemp(prefix="atomic-", dir=tmp)
    good = os.path.join(a.source_dir, "examples", "mlp.tg")
    bad = os.path.join(d, "bad.tg")
    with open(bad, "w") as f:
        f.write("graph bad\ninput x : f32[4, 3]\noutput y = x @ x\n")
    badw = os.path.join(d, "badw.safetensors")
    write_safetensors(badw, [("w1", np.zeros((3, 3)))])
    failing = [("an invalid graph", [bad], None),
               ("weights of the wrong shape", [good, "--weights", badw], None),
               ("a failing C compiler", [good], "false")]
    for cmdname in ["compile", "build"]:
        for what, args, cc in failing:
            for pre in [False, True]:
                sub = tempfile.mkdtemp(prefix="out-", dir=d)
                out = os.path.join(sub, "m.o" if cmdname == "compile" else "m")
                hdr = os.path.join(sub, "m.h")
                if pre:
                    for p in [out, hdr]:
                        with open(p, "w") as f:
                            f.write("older\n")
                        os.utime(p, ns=(1_000_000_000, 1_000_000_000))
                cmd = [a.tgc, cmdname] + args + ["-o", out]
                if cmdname == "compile":
                    cmd += ["--header", hdr]
                # A C compiler failing on the generated glue is an internal
                # error whose source tgc keeps in TMPDIR/tgc-failed-*: here.
                env = dict(os.environ, TMPDIR=d)
                if cc:
                    env["CC"] = cc
                rc, msg = run(cmd, env=env)
                label = f"tgc {cmdname} with {what}" + (", older -o present" if pre else "")
                check(rc != 0, f"{label}: fails", msg)
                files = sorted(os.listdir(sub))
                if pre:
                    same = all(open(p).read() == "older\n" and
                               os.stat(p).st_mtime_ns == 1_000_000_000 for p in [out, hdr])
                    check(same and len(files) == 2, f"{label}: the older files are untouched",
                          str(files))
                else:
                    check(files == [], f"{label}: leaves no file", str(files))
        sub = tempfile.mkdtemp(prefix="ok-", dir=d)
        out = os.path.join(sub, "m.o" if cmdname == "compile" else "m")
        hdr = os.path.join(sub, "m.h")
        for p in [out, hdr]:
            with open(p, "w") as f:
                f.write("older\n")
        cmd = [a.tgc, cmdname, good, "-o", out, "-D", "batch=2"]
        if cmdname == "compile":
            cmd += ["--header", hdr]
        rc, msg = run(cmd)
        ok = rc == 0 and open(out, "rb").read() != b"older\n"
        if cmdname == "compile":
            ok = ok and open(hdr).read().startswith("/* Generated by tgc")
        else:
            ok = ok and os.access(out, os.X_OK)
        check(ok and sorted(os.listdir(sub)) == sorted({os.path.basename(out), "m.h"}),
              f"tgc {cmdname} succeeding replaces the older file, no temporary left", msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--cmake", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--sanitize", default="0")
    a = ap.parse_args()
    a.sanitize = a.sanitize not in ("0", "", "OFF", "FALSE")
    env = dict(os.environ)
    # The consumer's build runs the installed tgc: never the caller's CC.
    env.pop("CC", None)
    with tempfile.TemporaryDirectory(prefix="tgc-integration-") as tmp:
        prefix = install(a, tmp)
        if shutil.which("ninja"):
            consumer(a, tmp, prefix, env)
        else:
            print("skip the consumer: ninja is not installed")
        links(a, tmp, prefix, env)
        reproducible(a, tmp)
        atomic(a, tmp)
    print(f"integration: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
