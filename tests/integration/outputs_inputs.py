"""Cases of the outputs suite (run_outputs.py) for issue 30: no output ever
overwrites an input, whatever names it, and an ONNX model's external data
is read only from inside its folder.

  - --emit DIR over inputs and outputs: `build d/small.ll -o d/x --emit llvm
    d` (the graph is d/small.ll, graph `small`), the same with the weights
    at d/small.ll, with asm and d/small.s, and `-o f/small.ll --emit llvm f`
    (the listing and -o are one file): exit 1 naming both, every file as it
    was and nothing written;
  - tgc run's outputs: `run g/y.npy --output-dir g` and `run y.npy` in the
    graph's directory (output y goes to DIR/y.npy, the graph), `run
    profile.json --profile` (the trace goes to ./profile.json): exit 1, the
    graph intact;
  - an ONNX model's external data is an input: with the data in
    m.safetensors, `import m.onnx -o m.tg` (whose default --weights-out is
    m.safetensors), and with data.bin, `build -o data.bin`, `compile
    --header data.bin`, `report --html data.bin`, `import --weights-out
    data.bin`: exit 1 naming the data file, which is unchanged (`check
    m.onnx` still passes);
  - external data never read through a link or from outside the model's
    folder: `weights.bin` a symbolic link to a file outside, `sub/w.bin`
    through a linked folder `sub`: exit 1 naming the initializer and the
    file, nothing written; a real subfolder still imports;
  - a 64 GiB initializer (f32[2^34] in a sparse file): exit 1 naming it and
    both sizes, never "out of memory" (exit 3);
  - a full TMPDIR (a 16 KiB tmpfs, as root; else RLIMIT_FSIZE with SIGXFSZ
    ignored; else skipped): `build` is exit 1 "cannot write ... No space
    left on device" (or "File too large"), never LLVM's abort (exit 134),
    and -o is not created.
"""
import json
import os
import resource
import signal
import struct
import subprocess

SMALL = "graph small\ninput x : f32[4]\noutput y = relu(x)\n"
SMALL_W = "graph small\ninput x : f32[4]\nparam w : f32[4]\noutput y = x + w\n"
GRAPH_Y = "graph gy\ninput x : f32[4]\noutput y = relu(x)\n"


def _snapshot(d):
    """Every file under d (links as their targets' names), for 'nothing
    changed'."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, d)
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                out[rel] = open(p, "rb").read()
            else:
                out[rel] = "dir"
    return out


def _st(path, tensors):
    """A safetensors file of f32 tensors {name: list}."""
    header, blob = {}, b""
    for name, vals in tensors.items():
        b = struct.pack("<%df" % len(vals), *vals)
        header[name] = {"dtype": "F32", "shape": [len(vals)],
                        "data_offsets": [len(blob), len(blob) + len(b)]}
        blob += b
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + blob)


def _refused(h, name, argv, cwd, tmp, names, before_dir):
    """Runs tgc argv: exit 1, "same file" with each of names in the message,
    and before_dir exactly as it was."""
    before = _snapshot(before_dir)
    rc, _, err = h.run([h.env.tgc] + argv, cwd=cwd, tmpdir=tmp)
    h.expect(rc == 1, "%s: exit %s, expected 1: %s" % (name, rc, err.strip()[-400:]))
    h.expect("same file" in err and all(n in err for n in names),
             "%s: the message names %s: %r" % (name, names, err.strip()[-400:]))
    after = _snapshot(before_dir)
    h.expect(after == before, "%s: files changed: %s -> %s"
             % (name, sorted(before), sorted(after)))


def emit_over_files(h):
    work, tmp = h.env.case_dir("emit_over")
    d = os.path.join(work, "d")
    os.makedirs(d)
    with open(os.path.join(d, "small.ll"), "w") as f:
        f.write(SMALL)
    _refused(h, "--emit llvm over the graph",
             ["build", "d/small.ll", "-o", "d/x", "--emit", "llvm", "d"], work, tmp,
             ["'d/small.ll'", "--emit llvm", "input graph"], work)
    os.unlink(os.path.join(d, "small.ll"))
    with open(os.path.join(d, "small.s"), "w") as f:
        f.write(SMALL)
    _refused(h, "--emit asm over the graph",
             ["build", "d/small.s", "-o", "d/x", "--emit", "asm", "d"], work, tmp,
             ["'d/small.s'", "--emit asm"], work)
    os.unlink(os.path.join(d, "small.s"))
    with open(os.path.join(work, "g.tg"), "w") as f:
        f.write(SMALL_W)
    _st(os.path.join(d, "small.ll"), {"w": [1, 2, 3, 4]})
    _refused(h, "--emit llvm over the weights",
             ["build", "g.tg", "--weights", "d/small.ll", "-o", "d/x", "--emit", "llvm", "d"],
             work, tmp, ["'d/small.ll'", "the weights"], work)
    f_dir = os.path.join(work, "f")
    os.makedirs(f_dir)
    _refused(h, "--emit llvm and -o one file",
             ["build", "g.tg", "-o", "f/small.ll", "--emit", "llvm", "f"], work, tmp,
             ["'f/small.ll'", "-o", "--emit llvm"], work)
    h.expect(h.listing(f_dir) == [] and h.listing(tmp) == [],
             "left: %s %s" % (h.listing(f_dir), h.listing(tmp)))
    # The listing elsewhere is still written.
    rc, _, err = h.run([h.env.tgc, "build", "g.tg", "-o", "f/x", "--emit", "llvm", "e"], cwd=work,
                       tmpdir=tmp)
    h.expect(rc == 0 and h.listing(os.path.join(work, "e")) == ["small.ll"],
             "--emit llvm e: exit %s: %s" % (rc, err.strip()))


def run_output_over_graph(h):
    work, tmp = h.env.case_dir("run_over")
    g = os.path.join(work, "g")
    os.makedirs(g)
    with open(os.path.join(g, "y.npy"), "w") as f:
        f.write(GRAPH_Y)
    _refused(h, "run g/y.npy --output-dir g",
             ["run", "g/y.npy", "--output-dir", "g", "--random-inputs", "1"], work, tmp,
             ["y.npy", "input graph"], work)
    _refused(h, "run y.npy (output dir .)", ["run", "y.npy", "--random-inputs", "1"], g, tmp,
             ["y.npy", "input graph"], work)
    os.makedirs(os.path.join(work, "p"))
    with open(os.path.join(work, "p", "profile.json"), "w") as f:
        f.write(GRAPH_Y)
    _refused(h, "run profile.json --profile (the trace over the graph)",
             ["run", "profile.json", "--profile", "--random-inputs", "1"],
             os.path.join(work, "p"), tmp, ["profile.json", "--profile-json"], work)
    # An --input file is the program's to check; a run elsewhere works.
    rc, _, err = h.run([h.env.tgc, "run", "g/y.npy", "--output-dir", "out", "--random-inputs",
                        "1"], cwd=work, tmpdir=tmp)
    h.expect(rc == 0 and h.listing(os.path.join(work, "out")) == ["y.npy"],
             "run --output-dir out: exit %s: %s" % (rc, err.strip()))


def _onnx_model(d, name, location, elem_count=4, dims=None, data=None, offset=None):
    """d/name: y = x + w, w: f32[elem_count] stored externally at location
    (written with data unless None). None when the onnx package is absent."""
    try:
        from onnx import TensorProto, helper
    except ImportError:
        return None
    shape = dims or [elem_count]
    w = TensorProto(name="w_ext", data_type=TensorProto.FLOAT, dims=shape)
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset)):
        if v is not None:
            e = w.external_data.add()
            e.key, e.value = k, str(v)
    node = helper.make_node("Add", ["x", "w_ext"], ["y"], name="add_w")
    gr = helper.make_graph([node], "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         shape)],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                           initializer=[w])
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    if data is not None:
        with open(os.path.join(d, location), "wb") as f:
            f.write(data)
    return path


def onnx_external_data_outputs(h):
    work, tmp = h.env.case_dir("onnx_data_out")
    data = struct.pack("<4f", 1, 2, 3, 4)
    if not _onnx_model(work, "m.onnx", "m.safetensors", data=data):
        print("     (skipped: no onnx package)")
        return
    _refused(h, "import -o m.tg (weights m.safetensors)", ["import", "m.onnx", "-o", "m.tg"],
             work, tmp, ["m.safetensors", "external data"], work)
    _onnx_model(work, "n.onnx", "data.bin", data=data)
    for name, argv in (
            ("build -o data.bin", ["build", "n.onnx", "-o", "data.bin"]),
            ("compile --header data.bin", ["compile", "n.onnx", "-o", "c.o", "--header",
                                            "data.bin"]),
            ("report --html data.bin", ["report", "n.onnx", "--html", "data.bin"]),
            ("import --weights-out data.bin", ["import", "n.onnx", "-o", "n.tg",
                                               "--weights-out", "./data.bin"])):
        _refused(h, name, argv, work, tmp, ["data.bin", "external data"], work)
    for m in ("m.onnx", "n.onnx"):
        rc, _, err = h.run([h.env.tgc, "check", m], cwd=work, tmpdir=tmp)
        h.expect(rc == 0, "check %s afterwards: exit %s: %s" % (m, rc, err.strip()))
    h.expect(h.listing(tmp) == [], "TMPDIR: %s" % h.listing(tmp))


def onnx_external_links(h):
    work, tmp = h.env.case_dir("onnx_links")
    model = os.path.join(work, "model")
    outside = os.path.join(work, "outside")
    os.makedirs(model)
    os.makedirs(outside)
    secret = struct.pack("<4f", 7, 7, 7, 7)
    with open(os.path.join(outside, "secret.bin"), "wb") as f:
        f.write(secret)
    if not _onnx_model(model, "a.onnx", "weights.bin"):
        print("     (skipped: no onnx package)")
        return
    os.symlink(os.path.join(outside, "secret.bin"), os.path.join(model, "weights.bin"))
    _onnx_model(model, "b.onnx", "sub/secret.bin")
    os.symlink(outside, os.path.join(model, "sub"))
    for m, names in (("a.onnx", ["w_ext", "weights.bin"]), ("b.onnx", ["w_ext", "sub"])):
        for argv in (["import", "model/" + m, "-o", "out.tg"],
                     ["build", "model/" + m, "-o", "out"]):
            rc, _, err = h.run([h.env.tgc] + argv, cwd=work, tmpdir=tmp)
            h.expect(rc == 1 and all(n in err for n in names) and "link" in err,
                     "%s through a link: exit %s: %s" % (" ".join(argv), rc, err.strip()[-300:]))
            h.expect(sorted(h.listing(work)) == ["model", "outside"],
                     "%s: written: %s" % (" ".join(argv), h.listing(work)))
    # A real subfolder of the model's folder is inside it.
    os.makedirs(os.path.join(model, "real"))
    _onnx_model(model, "c.onnx", "real/w.bin", data=secret)
    rc, _, err = h.run([h.env.tgc, "import", "model/c.onnx", "-o", "c.tg"], cwd=work, tmpdir=tmp)
    h.expect(rc == 0, "a subfolder's external data: exit %s: %s" % (rc, err.strip()))
    # A link whose target lies inside the model's folder is allowed (cli.md
    # refuses only links that lead outside), to a file and to a folder.
    os.symlink("real/w.bin", os.path.join(model, "alias.bin"))
    os.symlink("real", os.path.join(model, "alias_dir"))
    for m, loc in (("d.onnx", "alias.bin"), ("e.onnx", "alias_dir/w.bin")):
        _onnx_model(model, m, loc, data=secret)
        rc, _, err = h.run([h.env.tgc, "import", "model/" + m, "-o", m + ".tg"], cwd=work,
                           tmpdir=tmp)
        h.expect(rc == 0, "a link inside the folder (%s): exit %s: %s" % (loc, rc, err.strip()))


def onnx_external_huge(h):
    work, tmp = h.env.case_dir("onnx_huge")
    n = 1 << 34
    if not _onnx_model(work, "h.onnx", "huge.bin", dims=[n]):
        print("     (skipped: no onnx package)")
        return
    try:
        with open(os.path.join(work, "huge.bin"), "wb") as f:
            f.truncate(4 * n)
    except OSError as e:
        print("     (skipped: no sparse 64 GiB file here: %s)" % e)
        return
    rc, _, err = h.run([h.env.tgc, "import", "h.onnx", "-o", "h.tg"], cwd=work, tmpdir=tmp)
    h.expect(rc == 1 and "w_ext" in err and str(4 * n) in err and "out of memory" not in err,
             "a 64 GiB initializer: exit %s: %s" % (rc, err.strip()[-300:]))
    h.expect(sorted(h.listing(work)) == ["h.onnx", "huge.bin"], "written: %s" % h.listing(work))


def _mount_tmpfs(d, size):
    if os.geteuid() != 0:
        return False
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", d],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p.returncode == 0


def _fsize_limit():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))


def full_tmpdir(h):
    """tmpfs of several sizes, so that each write in turn finds the disk
    full (LLVM's object, the glue's compile...): each build is exit 1 or,
    where everything fits, 0; never 3 or an abort. The smallest fails."""
    work, tmp = h.env.case_dir("full_tmpdir")
    small = os.path.join(os.path.dirname(tmp), "small_tmp")
    os.makedirs(small)
    for size in ("4k", "16k", "64k", "256k"):
        mounted = _mount_tmpfs(small, size)
        out = os.path.join(work, "m" + size)
        argv = [h.env.tgc, "build", h.MLP, "-o", out]
        try:
            if mounted:
                rc, _, err = h.run(argv, tmpdir=small)
            else:
                env = dict(os.environ, TMPDIR=tmp)
                try:
                    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, timeout=300,
                                       preexec_fn=_fsize_limit)
                except OSError as e:
                    print("     (skipped: neither a tmpfs nor RLIMIT_FSIZE: %s)" % e)
                    return
                rc, err = p.returncode, p.stderr
            how = "tmpfs of %s" % size if mounted else "RLIMIT_FSIZE"
            h.expect(rc == 0 or (rc == 1 and "cannot write" in err and
                                 ("No space left" in err or "File too large" in err)),
                     "a full TMPDIR (%s): exit %s: %s" % (how, rc, err.strip()[-300:]))
            h.expect(rc == 1 or size != "4k", "%s: exit %s: the build fitted" % (how, rc))
            h.expect(rc == 0 or not os.path.exists(out), "%s: left at -o" % how)
            # tgc's own temporaries (a C compiler that crashed on the full
            # disk may leave its stack dump's, such as clang's symbolizer-*).
            left = [f for f in h.listing(small if mounted else tmp) if f.startswith("tgc")]
            h.expect(left == [], "%s: left in TMPDIR: %s" % (how, left))
        finally:
            if mounted:
                subprocess.run(["umount", small])
        if not mounted:
            return


TESTS = [emit_over_files, run_output_over_graph, onnx_external_data_outputs, onnx_external_links,
         onnx_external_huge, full_tmpdir]
