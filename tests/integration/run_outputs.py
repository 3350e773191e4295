#!/usr/bin/python3
"""Outputs suite: how tgc and compiled executables write files (issue 18,
items 1, 4, 5, 6, 9; cli.md "no command ever writes over one of its own
inputs"). Every case runs in its own directory under a private TMPDIR.

  - same file: every command that writes refuses, with exit 1 and a
    message naming both paths, an output that is the same file as an input
    or as another output, compared by device and inode: `build g.tg -o
    g.tg`, `report g.tg --html g.tg`, `compile g.tg -o c.o --header g.tg`,
    `build g.tg -o w.st --weights w.st --embed-weights`, `report --accuracy
    --weights w.st --html w.st`, `compile -o x.o --header x.o` (neither
    existing), a hard link and a symbolic link to the input, the input
    through a symbolic link, `--header` a hard link of `-o`. Afterwards the
    input is byte-for-byte unchanged and nothing else is in the directory;
  - non-regular outputs are written by opening them, never renamed over:
    `build -o /dev/null` and `report --html /dev/null` exit 0 and /dev/null
    is still a character device (as root too); a FIFO given to `build -o`,
    `compile --header`, `report --html` and as an executable's output
    `DIR/NAME.npy` (a reader `cat FIFO > FILE` started first) stays a FIFO
    and the reader receives the whole file (an ELF, the header, the page,
    an .npy equal to a regular run's);
  - a name longer than PATH_MAX (-o, --header, --html, --output-dir) is
    exit 1 with "File name too long", never "Success";
  - concurrent `report --html` to one file: 6 at once, 8 rounds; each exits
    0 and after each round the file equals a report written alone (one
    <!DOCTYPE, one </html>) and no temporary is left beside it;
  - killed builds (`build --static-runtime`, TMPDIR private): SIGKILL 0.2 s
    after the start, and SIGKILL, SIGTERM, SIGINT while the linker runs
    (once TMPDIR/tgc-*/glue.o exists). For SIGTERM and SIGINT, tgc dies of
    that signal and, at once, the output's directory and TMPDIR are empty.
    For SIGKILL, within 10 s (the guardian stops the compiler's process
    group and removes the temporaries) both are empty and no process whose
    command line names the case's directory is left; then a second build
    of the same output succeeds and leaves only the executable;
  - SIGKILL to tgc and its guardian together while the linker runs: once
    the orphaned compiler processes ended (waited for, up to 60 s), tgc's
    temporaries are there; the next build of the same output removes them
    and leaves only the executable, TMPDIR empty;
  - stale temporaries of processes that are gone (what a build killed
    together with its guardian leaves): `.out.tgc-DEADPID-XXXXXX` beside the
    output and `TMPDIR/tgc-DEADPID-XXXXXX/` are removed by the next build;
    those of a live process, and `TMPDIR/tgc-failed-*`, are kept;
  - a C compiler that rejects the generated glue (a CC wrapper that fails
    on glue.c): `build` and `compile` exit 3 with "internal error: the C
    compiler rejected the generated code", the compiler's message, and
    "the source is kept at PATH" where PATH exists and is the glue; no
    file at -o. A C compiler that cannot be run is exit 1;
  - ordinary writes still work: `build` gives an executable of mode
    0777 & ~umask, `compile` an object and a header of 0666 & ~umask, and
    nothing but them is left in the directory;
  - outputs_inputs.py's cases: --emit listings, tgc run's DIR/NAME.npy and
    every output against every input, an ONNX model's external data
    included; external data confined to the model's folder and bounded; a
    full TMPDIR.

Usage: run_outputs.py --tgc build/tgc [-k SUBSTRING]
Last line: `outputs: N passed, M failed`; exit status 1 if M > 0.
"""
import argparse
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types

import outputs_inputs  # issue 30's cases, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MLP = os.path.join(ROOT, "examples", "mlp.tg")
TIMEOUT = 300
PATH_MAX = 4096


class Fail(Exception):
    pass


def expect(ok, what):
    if not ok:
        raise Fail(what)


class Env:
    def __init__(self, tgc, root):
        self.tgc, self.root, self.n = tgc, root, 0

    def case_dir(self, name):
        """A fresh directory for one case, and a private TMPDIR."""
        self.n += 1
        d = os.path.join(self.root, "%02d_%s" % (self.n, name))
        os.makedirs(os.path.join(d, "work"))
        os.makedirs(os.path.join(d, "tmp"))
        return os.path.join(d, "work"), os.path.join(d, "tmp")


def run(cmd, cwd=None, tmpdir=None, env_extra=None, timeout=TIMEOUT):
    env = dict(os.environ)
    if tmpdir:
        env["TMPDIR"] = tmpdir
    env.update(env_extra or {})
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, text=True)
    except subprocess.TimeoutExpired:
        raise Fail("timeout after %d s: %s" % (timeout, " ".join(cmd)))
    return p.returncode, p.stdout, p.stderr


def write_weights(path):
    rng = __import__("numpy").random.default_rng(1)
    tensors = [("w1", (784, 256)), ("b1", (256,)), ("w2", (10, 256)), ("b2", (10,))]
    header, blobs, off = {}, [], 0
    for name, shape in tensors:
        b = rng.standard_normal(shape).astype("float32").tobytes()
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def listing(d):
    return sorted(os.listdir(d))


def umask():
    m = os.umask(0)
    os.umask(m)
    return m


# ---- same file ----

def same_file_cases(env):
    def setup(work):
        g = os.path.join(work, "g.tg")
        shutil.copy(MLP, g)
        write_weights(os.path.join(work, "w.st"))
        return g

    # (name, argv after tgc, extra setup, the two names the message must hold)
    cases = [
        ("build -o input", ["build", "g.tg", "-o", "g.tg"], None, ["'g.tg'", "input graph"]),
        ("report --html input", ["report", "g.tg", "--html", "g.tg"], None,
         ["'g.tg'", "input graph"]),
        ("compile --header input", ["compile", "g.tg", "-o", "c.o", "--header", "g.tg"], None,
         ["'g.tg'", "input graph"]),
        ("build -o weights", ["build", "g.tg", "-o", "w.st", "--weights", "w.st",
                              "--embed-weights"], None, ["'w.st'", "weights"]),
        ("report --html weights", ["report", "g.tg", "--accuracy", "1", "--weights", "w.st",
                                   "--html", "w.st"], None, ["'w.st'", "weights"]),
        ("compile -o = --header (new)", ["compile", "g.tg", "-o", "x.o", "--header", "./x.o"],
         None, ["'./x.o'", "'x.o'"]),
        ("build -o hard link", ["build", "g.tg", "-o", "hard.tg"],
         lambda w: os.link(os.path.join(w, "g.tg"), os.path.join(w, "hard.tg")),
         ["'hard.tg'", "'g.tg'"]),
        ("build -o symlink", ["build", "g.tg", "-o", "sym.tg"],
         lambda w: os.symlink("g.tg", os.path.join(w, "sym.tg")), ["'sym.tg'", "'g.tg'"]),
        ("build from symlink", ["build", "sym.tg", "-o", "./g.tg"],
         lambda w: os.symlink("g.tg", os.path.join(w, "sym.tg")), ["'./g.tg'", "'sym.tg'"]),
        ("compile --header hard link of -o", ["compile", "g.tg", "-o", "y.o", "--header", "y.h"],
         lambda w: (open(os.path.join(w, "y.o"), "w").write("older\n"),
                    os.link(os.path.join(w, "y.o"), os.path.join(w, "y.h"))),
         ["'y.h'", "'y.o'"]),
    ]
    for name, argv, extra, names in cases:
        work, tmp = env.case_dir("same_" + name.split()[0])
        setup(work)
        if extra:
            extra(work)
        before = {f: open(os.path.join(work, f), "rb").read() for f in listing(work)
                  if not os.path.islink(os.path.join(work, f))}
        rc, out, err = run([env.tgc] + argv, cwd=work, tmpdir=tmp)
        expect(rc == 1, "%s: exit %s, expected 1: %s" % (name, rc, err.strip()))
        expect("same file" in err and all(n in err for n in names),
               "%s: the message names both files (%s): %r" % (name, names, err.strip()))
        after = {f: open(os.path.join(work, f), "rb").read() for f in listing(work)
                 if not os.path.islink(os.path.join(work, f))}
        expect(after == before, "%s: the files changed: %s -> %s" % (name, sorted(before),
                                                                     sorted(after)))
        expect(listing(tmp) == [], "%s: TMPDIR not empty: %s" % (name, listing(tmp)))


# ---- non-regular outputs ----

def _fifo_reader(fifo, sink):
    """Starts `cat FIFO > SINK` (so that opening the FIFO for writing does
    not block) and returns it."""
    return subprocess.Popen("exec cat %s > %s" % (fifo, sink), shell=True)


def _is_null(path):
    st = os.stat(path)
    return stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3


def dev_null_outputs(env):
    """A private null device node first (as root, where mknod is allowed):
    a tgc that renames over its output then damages only that node; the
    real /dev/null only after it passed, and restored if it is damaged
    anyway (the machine needs it)."""
    work, tmp = env.case_dir("dev_null")
    nodes = []
    if os.geteuid() == 0:
        private = os.path.join(os.path.dirname(work), "null")
        try:
            os.mknod(private, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            nodes.append(private)
        except OSError:
            pass
    nodes.append("/dev/null")
    for node in nodes:
        for argv in (["build", MLP, "-o", node], ["report", MLP, "--html", node],
                     ["compile", MLP, "-o", node, "--header", node]):
            rc, out, err = run([env.tgc] + argv, cwd=work, tmpdir=tmp)
            intact = _is_null(node)
            if not intact and node == "/dev/null" and os.geteuid() == 0:
                os.unlink(node)
                os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            expect(intact, "%s %s: %s is no longer the null device" % (argv[0], argv[2:], node))
            expect(rc == 0, "%s %s: exit %s: %s" % (argv[0], argv[2:], rc, err.strip()))
            expect(listing(work) == [] and listing(tmp) == [],
                   "files left: %s %s" % (listing(work), listing(tmp)))


def fifo_outputs(env):
    work, tmp = env.case_dir("fifo")
    fifo = os.path.join(work, "ff")
    os.mkfifo(fifo)
    cases = [("build -o", ["build", MLP, "-o", fifo], lambda b: b[:4] == b"\x7fELF"),
             ("compile --header", ["compile", MLP, "-o", os.path.join(work, "m.o"),
                                   "--header", fifo], lambda b: b.startswith(b"/* Generated")),
             ("report --html", ["report", MLP, "--html", fifo],
              lambda b: b.count(b"</html>") == 1 and b.endswith(b"</html>\n"))]
    for name, argv, good in cases:
        sink = os.path.join(tmp, "sink")
        reader = _fifo_reader(fifo, sink)
        try:
            rc, out, err = run([env.tgc] + argv, cwd=work, tmpdir=tmp, timeout=120)
        finally:
            try:
                reader.wait(timeout=10)
            except subprocess.TimeoutExpired:
                reader.kill()
                reader.wait()
        expect(rc == 0, "%s FIFO: exit %s: %s" % (name, rc, err.strip()))
        expect(stat.S_ISFIFO(os.lstat(fifo).st_mode), "%s: the FIFO was replaced" % name)
        data = open(sink, "rb").read()
        expect(good(data), "%s: the reader got %d unexpected bytes" % (name, len(data)))
        os.unlink(sink)
    left = [f for f in listing(work) if f not in ("ff", "m.o")]
    expect(left == [] and listing(tmp) == [], "files left: %s %s" % (left, listing(tmp)))

    # An executable's output (rt_npy_write) to a FIFO, against a regular run.
    exe = os.path.join(work, "m")
    rc, _, err = run([env.tgc, "build", MLP, "-o", exe, "-D", "batch=2"], tmpdir=tmp)
    expect(rc == 0, "build: %s" % err.strip())
    ref_dir, fifo_dir = os.path.join(work, "ref"), os.path.join(work, "fd")
    os.makedirs(ref_dir)
    os.makedirs(fifo_dir)
    rc, _, err = run([exe, "--random-inputs", "3", "--output-dir", ref_dir])
    expect(rc == 0, "the executable: %s" % err.strip())
    npy = os.path.join(fifo_dir, "probs.npy")
    os.mkfifo(npy)
    sink = os.path.join(tmp, "sink.npy")
    reader = _fifo_reader(npy, sink)
    try:
        rc, _, err = run([exe, "--random-inputs", "3", "--output-dir", fifo_dir], timeout=60)
    finally:
        reader.wait(timeout=10)
    expect(rc == 0, "the executable writing a FIFO: exit %s: %s" % (rc, err.strip()))
    expect(stat.S_ISFIFO(os.lstat(npy).st_mode), "the executable replaced the FIFO")
    expect(open(sink, "rb").read() == open(os.path.join(ref_dir, "probs.npy"), "rb").read(),
           "the FIFO's reader got another .npy than a regular run wrote")
    expect(listing(fifo_dir) == ["probs.npy"], "left beside it: %s" % listing(fifo_dir))

    # --emit listings go through the atomic writer too: a FIFO in the emit
    # directory is written in place, and a regular listing is replaced whole
    # with nothing left beside it.
    emit_dir = os.path.join(work, "emit")
    os.makedirs(emit_dir)
    ll = os.path.join(emit_dir, "mlp.ll")
    os.mkfifo(ll)
    with open(os.path.join(emit_dir, "mlp.s"), "w") as f:
        f.write("stale listing\n")
    sink = os.path.join(tmp, "sink.ll")
    reader = _fifo_reader(ll, sink)
    try:
        rc, _, err = run([env.tgc, "build", MLP, "-o", os.path.join(work, "e1"), "--emit", "llvm",
                          emit_dir], tmpdir=tmp, timeout=120)
    finally:
        reader.wait(timeout=10)
    expect(rc == 0, "--emit llvm into a FIFO: exit %s: %s" % (rc, err.strip()))
    expect(stat.S_ISFIFO(os.lstat(ll).st_mode), "--emit replaced the FIFO")
    expect(b"define" in open(sink, "rb").read(), "the FIFO's reader got no LLVM IR")
    rc, _, err = run([env.tgc, "build", MLP, "-o", os.path.join(work, "e2"), "--emit", "asm",
                      emit_dir], tmpdir=tmp, timeout=120)
    expect(rc == 0, "--emit asm: exit %s: %s" % (rc, err.strip()))
    expect("stale" not in open(os.path.join(emit_dir, "mlp.s")).read(), "mlp.s not replaced")
    expect(listing(emit_dir) == ["mlp.ll", "mlp.s"] and
           [f for f in listing(tmp) if not f.startswith("sink")] == [],
           "left in the emit directory: %s, in TMPDIR: %s" % (listing(emit_dir), listing(tmp)))


def name_too_long(env):
    work, tmp = env.case_dir("too_long")
    long = os.path.join(work, "d" * 200, *(["e" * 200] * 21), "out")
    expect(len(long) > PATH_MAX, "the test's path is not long enough")
    for argv in (["build", MLP, "-o", long],
                 ["compile", MLP, "-o", os.path.join(work, "m.o"), "--header", long],
                 ["report", MLP, "--html", long]):
        rc, out, err = run([env.tgc] + argv, cwd=work, tmpdir=tmp)
        expect(rc == 1 and "File name too long" in err and "Success" not in err,
               "%s with a %d-byte path: exit %s: %s" % (argv[0], len(long), rc, err[-200:]))
    exe = os.path.join(work, "m")
    rc, _, err = run([env.tgc, "build", MLP, "-o", exe, "-D", "batch=1"], tmpdir=tmp)
    expect(rc == 0, "build: %s" % err.strip())
    rc, _, err = run([exe, "--random-inputs", "1", "--output-dir", os.path.dirname(long)])
    expect(rc == 1 and "File name too long" in err and "Success" not in err,
           "the executable's --output-dir of %d bytes: exit %s: %s" % (len(long), rc, err[-200:]))
    expect(listing(work) == ["m"], "files left: %s" % listing(work))


# ---- report --html, concurrently ----

def concurrent_html(env):
    work, tmp = env.case_dir("html_concurrent")
    ref = os.path.join(work, "ref.html")
    rc, _, err = run([env.tgc, "report", MLP, "--html", ref], tmpdir=tmp)
    expect(rc == 0, "a single report: %s" % err.strip())
    want = open(ref, "rb").read()
    expect(want.count(b"<!DOCTYPE") == 1 and want.count(b"</html>") == 1,
           "the single report is not one page")
    os.unlink(ref)
    target = os.path.join(work, "r.html")
    for rnd in range(8):
        procs = [subprocess.Popen([env.tgc, "report", MLP, "--html", target],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  env=dict(os.environ, TMPDIR=tmp)) for _ in range(6)]
        errs = [(p.wait(timeout=TIMEOUT), p.stderr.read().decode()) for p in procs]
        for p in procs:
            p.stderr.close()
        bad = [e for rc, e in errs if rc != 0]
        expect(not bad, "round %d: %d of 6 reports failed: %s" % (rnd, len(bad), bad[:1]))
        got = open(target, "rb").read()
        expect(got == want, "round %d: the page is not one whole report (%d bytes, %d </html>)"
               % (rnd, len(got), got.count(b"</html>")))
        expect(listing(work) == ["r.html"], "round %d: left beside it: %s" % (rnd, listing(work)))
    expect(listing(tmp) == [], "TMPDIR: %s" % listing(tmp))


# ---- killed builds ----

def _strays(case_dir):
    """Processes whose command line names case_dir (compilers, linkers,
    tgc's guardian), zombies excluded."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/stat" % pid) as f:
                st = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if st != "Z" and case_dir.encode() in cmd:
            found.append("%s %s" % (pid, cmd.replace(b"\0", b" ")[:120].decode(errors="replace")))
    return found


def _start_build(env, work, tmp):
    return subprocess.Popen([env.tgc, "build", MLP, "-o", os.path.join(work, "out.exe"),
                             "--static-runtime"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=dict(os.environ, TMPDIR=tmp))


def _wait_linking(p, tmp, limit=120):
    """Waits until the glue is compiled (the link runs next); False when
    the build ended first."""
    t0 = time.time()
    while time.time() - t0 < limit:
        if p.poll() is not None:
            return False
        for d in os.listdir(tmp):
            if d.startswith("tgc-") and os.path.exists(os.path.join(tmp, d, "glue.o")):
                time.sleep(0.05)  # into the linker
                return True
        time.sleep(0.005)
    return False


def _kill_case(env, label, sig, when):
    work, tmp = env.case_dir("kill_" + label)
    case = os.path.dirname(work)
    p = _start_build(env, work, tmp)
    if when == "linking":
        if not _wait_linking(p, tmp):
            p.wait()
            raise Fail("%s: the build ended (exit %s) before the link could be interrupted: %s"
                       % (label, p.returncode, p.stderr.read().decode()[-300:]))
    else:
        time.sleep(when)
    p.send_signal(sig)
    rc = p.wait(timeout=60)
    p.stderr.close()
    if sig == signal.SIGKILL:
        expect(rc == -signal.SIGKILL, "%s: exit %s" % (label, rc))
        deadline = time.time() + 10
        while time.time() < deadline and (listing(work) or listing(tmp) or _strays(case)):
            time.sleep(0.05)
    elif rc == 0:
        raise Fail("%s: the build finished before the signal" % label)
    else:
        expect(rc == -sig, "%s: tgc ended with %s, not by the signal" % (label, rc))
        time.sleep(0.05)
    expect(listing(work) == [], "%s: left beside the output: %s" % (label, listing(work)))
    expect(listing(tmp) == [], "%s: left in TMPDIR: %s" % (label, listing(tmp)))
    expect(not _strays(case), "%s: processes left: %s" % (label, _strays(case)))
    if sig == signal.SIGKILL:
        rc, _, err = run([env.tgc, "build", MLP, "-o", os.path.join(work, "out.exe")],
                         tmpdir=tmp)
        expect(rc == 0 and listing(work) == ["out.exe"] and listing(tmp) == [],
               "%s: the next build: exit %s, left %s %s: %s" % (label, rc, listing(work),
                                                                listing(tmp), err.strip()))


def kill_at_0_2s(env):
    _kill_case(env, "sigkill_0.2s", signal.SIGKILL, 0.2)


def kill_while_linking(env):
    _kill_case(env, "sigkill_link", signal.SIGKILL, "linking")


def term_while_linking(env):
    _kill_case(env, "sigterm_link", signal.SIGTERM, "linking")


def int_while_linking(env):
    _kill_case(env, "sigint_link", signal.SIGINT, "linking")


def _guardian_of(pid):
    """tgc's guardian: its child that leads a session of its own."""
    for q in os.listdir("/proc"):
        if not q.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % q) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and int(fields[3]) == int(q):
            return int(q)
    return None


def kill_with_guardian(env):
    """SIGKILL to tgc and its guardian at once (a whole process tree killed,
    as a CI job's cancellation does): the linker's orphans run to their end
    (waited for), leaving tgc's temporaries; the next build of the same
    output removes them (their process is gone) and leaves only its
    executable."""
    work, tmp = env.case_dir("kill_guardian")
    case = os.path.dirname(work)
    p = _start_build(env, work, tmp)
    if not _wait_linking(p, tmp):
        p.wait()
        raise Fail("the build ended (exit %s) before the link" % p.returncode)
    g = _guardian_of(p.pid)
    expect(g is not None, "no guardian process found for tgc %d" % p.pid)
    os.kill(g, signal.SIGKILL)
    p.kill()
    p.wait()
    p.stderr.close()
    deadline = time.time() + 60
    while time.time() < deadline and _strays(case):
        time.sleep(0.1)
    expect(not _strays(case), "processes left after 60 s: %s" % _strays(case))
    left = listing(work) + listing(tmp)
    expect(any(".tgc-%d-" % p.pid in f for f in left) or
           any(f.startswith("tgc-%d-" % p.pid) for f in left),
           "the killed build left no temporary to clean (the test is void): %s" % left)
    rc, _, err = run([env.tgc, "build", MLP, "-o", os.path.join(work, "out.exe")], tmpdir=tmp)
    expect(rc == 0 and listing(work) == ["out.exe"] and listing(tmp) == [],
           "the next build: exit %s, left %s %s: %s" % (rc, listing(work), listing(tmp),
                                                        err.strip()))


def stale_temporaries(env):
    work, tmp = env.case_dir("stale")
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = os.getpid()
    stale = [os.path.join(work, ".out.exe.tgc-%d-AbCdEf" % dead.pid),
             os.path.join(tmp, "tgc-%d-AbCdEf" % dead.pid)]
    kept = [os.path.join(work, ".out.exe.tgc-%d-AbCdEf" % live),
            os.path.join(tmp, "tgc-%d-AbCdEf" % live), os.path.join(tmp, "tgc-failed-AbCdEf")]
    open(stale[0], "w").write("partial")
    open(kept[0], "w").write("partial")
    for d in stale[1:] + kept[1:]:
        os.makedirs(os.path.join(d, "sub"))
        open(os.path.join(d, "glue.c"), "w").write("int x;\n")
        open(os.path.join(d, "sub", "f"), "w").write("x")
    rc, _, err = run([env.tgc, "build", MLP, "-o", os.path.join(work, "out.exe")], tmpdir=tmp)
    expect(rc == 0, "build: %s" % err.strip())
    expect(not any(os.path.lexists(s) for s in stale),
           "stale temporaries of a dead process are left: %s"
           % [s for s in stale if os.path.lexists(s)])
    expect(all(os.path.lexists(k) for k in kept), "a live process's temporaries were removed")
    expect(sorted(listing(work)) == sorted(["out.exe", os.path.basename(kept[0])]),
           "beside the output: %s" % listing(work))


# ---- the C compiler rejecting generated code ----

def glue_rejected(env):
    work, tmp = env.case_dir("glue_rejected")
    cc = os.path.join(os.path.dirname(work), "cc.sh")
    with open(cc, "w") as f:
        f.write('#!/bin/sh\nfor a in "$@"; do case "$a" in *glue.c)\n'
                '  echo "glue.c:7:1: error: made-up rejection" >&2; exit 1;; esac; done\n'
                'exec cc "$@"\n')
    os.chmod(cc, 0o755)
    for argv in (["build", MLP, "-o", os.path.join(work, "m")],
                 ["compile", MLP, "-o", os.path.join(work, "m.o"),
                  "--header", os.path.join(work, "m.h")]):
        rc, out, err = run([env.tgc] + argv, tmpdir=tmp, env_extra={"CC": cc})
        expect(rc == 3, "%s: exit %s, expected 3: %s" % (argv[0], rc, err.strip()))
        expect("internal error: the C compiler rejected the generated code" in err and
               "made-up rejection" in err and "please report it" in err,
               "%s: message: %r" % (argv[0], err))
        kept = err.split("the source is kept at ", 1)[-1].split(" (please")[0]
        expect(os.path.isfile(kept) and "tgc" in open(kept).read()[:200] and
               os.path.realpath(kept).startswith(os.path.realpath(tmp)),
               "%s: the kept source %r" % (argv[0], kept))
        expect(listing(work) == [], "%s: left at -o: %s" % (argv[0], listing(work)))
        expect([d for d in listing(tmp) if not d.startswith("tgc-failed-")] == [],
               "%s: TMPDIR: %s" % (argv[0], listing(tmp)))
    rc, _, err = run([env.tgc, "build", MLP, "-o", os.path.join(work, "m")], tmpdir=tmp,
                     env_extra={"CC": os.path.join(work, "no-such-cc")})
    expect(rc == 1 and "cannot run the C compiler" in err, "a missing CC: exit %s: %s"
           % (rc, err.strip()))


def ordinary_writes(env):
    work, tmp = env.case_dir("ordinary")
    mask = umask()
    exe, obj, hdr = (os.path.join(work, n) for n in ("m", "m.o", "m.h"))
    for p in (exe, obj, hdr):
        open(p, "w").write("older\n")
    rc, _, err = run([env.tgc, "build", MLP, "-o", exe, "-D", "batch=2"], tmpdir=tmp)
    expect(rc == 0, "build: %s" % err.strip())
    rc, _, err = run([env.tgc, "compile", MLP, "-o", obj, "--header", hdr], tmpdir=tmp)
    expect(rc == 0, "compile: %s" % err.strip())
    expect(stat.S_IMODE(os.stat(exe).st_mode) == 0o777 & ~mask, "the executable's mode %o"
           % stat.S_IMODE(os.stat(exe).st_mode))
    for p in (obj, hdr):
        expect(stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~mask, "%s's mode %o"
               % (p, stat.S_IMODE(os.stat(p).st_mode)))
    expect(open(hdr).read().startswith("/* Generated by tgc"), "the header")
    expect(listing(work) == ["m", "m.h", "m.o"] and listing(tmp) == [],
           "files left: %s %s" % (listing(work), listing(tmp)))


def _io_case(case):
    """A case of outputs_inputs.py, given this file's helpers."""
    def t(env):
        case(types.SimpleNamespace(env=env, run=run, expect=expect, listing=listing, MLP=MLP))
    t.__name__ = case.__name__
    return t


TESTS = [same_file_cases, dev_null_outputs, fifo_outputs, name_too_long, concurrent_html,
         kill_at_0_2s, kill_while_linking, term_while_linking, int_while_linking,
         kill_with_guardian, stale_temporaries, glue_rejected, ordinary_writes]
TESTS += [_io_case(c) for c in outputs_inputs.TESTS]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-k", dest="pattern")
    ap.add_argument("--keep", help="keep the cases' directories here")
    args = ap.parse_args()
    t0 = time.time()
    root = args.keep or tempfile.mkdtemp(prefix="tgc-outputs-")
    os.makedirs(root, exist_ok=True)
    env = Env(os.path.abspath(args.tgc), root)
    tests = [t for t in TESTS if not args.pattern or args.pattern in t.__name__]
    passed = failed = 0
    try:
        for t in tests:
            try:
                t(env)
                passed += 1
                print("ok   %s" % t.__name__)
            except Fail as e:
                failed += 1
                print("FAIL %s: %s" % (t.__name__, e))
            except Exception:
                failed += 1
                print("FAIL %s: harness error: %s" % (t.__name__, traceback.format_exc()))
            sys.stdout.flush()
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("time: %.1f s" % (time.time() - t0))
    print("outputs: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
