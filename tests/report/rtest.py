"""Helpers shared by the `tgc report` test scripts: running tgc, counting
checks, and a random .tg graph generator for the planner's invariants."""

import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
# Whole models (def/repeat, dotted params, full size by default): tests/models
# runs them at small sizes against PyTorch (tests/generate the *_generate
# ones, which report_generate.py checks with --generate); the example loops
# here skip them.
MODEL_EXAMPLES = ("gpt2.tg", "llama.tg", "resnet18.tg", "resnet50.tg", "mobilenet_v3.tg", "kws_conv1d.tg",
                  "gpt2_generate.tg", "llama_generate.tg")


class Checks:
    """Counts checks; prints each failure with what was expected and found."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s%s" % (what, (": " + detail) if detail else ""))
        return ok

    def eq(self, expected, found, what):
        return self.check(expected == found, what, "expected %r, found %r" % (expected, found))

    def finish(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        return 1 if self.failed else 0


class Tgc:
    def __init__(self, exe):
        self.exe = exe

    def run(self, *args, timeout=120):
        try:
            p = subprocess.run([self.exe] + [str(a) for a in args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, "", "timeout after %d s" % timeout
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def report(self, path, *args, timeout=120):
        """`tgc report PATH --json ARGS`: (json or None, rc, stderr)."""
        rc, out, err = self.run("report", path, "--json", *args, timeout=timeout)
        if rc != 0:
            return None, rc, err
        try:
            return json.loads(out), rc, err
        except ValueError as e:
            return None, rc, "bad JSON (%s): %s" % (e, out[:400])


def write_tmp(text, suffix=".tg", tmpdir=None):
    fd, path = tempfile.mkstemp(suffix=suffix, dir=tmpdir)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def random_graph(seed, nodes, size):
    """A random graph over [size, size] f32 tensors, f16 copies and [size]
    vectors: elementwise ops (in-place candidates), matmuls, transposed reads
    (never in place), casts, reductions, cat + chunk views that keep their
    storage alive, dead named values, and outputs that are views."""
    rng = random.Random(seed)
    lines = ["graph r%d" % seed, "input x : f32[%d, %d]" % (size, size), "input u : f32[%d]" % size,
             "param w : f32[%d, %d]" % (size, size), "t0 = x * 1.0", "t1 = u + 0.0"]
    kind = ["s", "v"]

    def pick(k):
        for _ in range(24):
            back = rng.randrange(6) if rng.random() < 0.75 else rng.randrange(len(kind) + 1)
            i = len(kind) - 1 - back
            if 0 <= i < len(kind) and kind[i] == k:
                return i
        for i in range(len(kind) - 1, -1, -1):
            if kind[i] == k:
                return i
        return None

    def add(k, expr):
        lines.append("t%d = %s" % (len(kind), expr))
        kind.append(k)

    while len(kind) < nodes:
        a, b, h, v = pick("s"), pick("s"), pick("h"), pick("v")
        r = rng.randrange(13)
        if r == 0: add("s", "relu(t%d)" % a)
        elif r == 1: add("s", "t%d + t%d" % (a, b))
        elif r == 2: add("s", "t%d * t%d.T" % (a, b))
        elif r == 3: add("s", "t%d @ w" % a)
        elif r == 4: add("s", "exp(t%d) + t%d" % (a, v))
        elif r == 5: add("v", "t%d.sum(dim = 0)" % a)
        elif r == 6: add("h", "t%d.to(f16)" % a)
        elif r == 7: add("s", "t%d.to(f32) - t%d" % (h, a) if h is not None else "sigmoid(t%d)" % a)
        elif r == 8:
            n = len(kind)
            lines.append("c%d, d%d = cat([t%d, t%d]).chunk(2)" % (n, n, a, b))
            add("s", "c%d * d%d" % (n, n))
        elif r == 9: add("s", "t%d.T.contiguous()" % a)
        elif r == 10: add("v", "t%d * t%d" % (v, v))
        elif r == 11: add("s", "-t%d" % a)
        else: add("s", "t%d @ t%d" % (a, b))
    outs = ["output t%d" % (len(kind) - 1)]
    for k in range(rng.randrange(3)):
        i = rng.randrange(len(kind) - 1)
        if kind[i] == "s" and rng.random() < 0.5:
            outs.append("output o%d_%d = t%d.T" % (k, i, i))
        else:
            outs.append("output o%d_%d = t%d" % (k, i, i))
    return "\n".join(lines + outs) + "\n"


def check_plan(c, rep, what):
    """The planner's invariants, from the JSON's buffers: every buffer
    inside the arena and 64-byte aligned; two buffers live at one step never
    overlap, except an in-place hand-over (same slot, one shared step);
    arena >= lower bound; the lower bound and live_bytes recomputed."""
    act = rep["activations"]
    arena, lb = act["arena_bytes"], act["lower_bound_bytes"]
    bufs = rep["buffers"]
    ok = c.check(arena >= lb, what + ": arena >= lower bound", "%d < %d" % (arena, lb))
    for b in bufs:
        ok &= c.check(b["offset"] % 64 == 0 and b["offset"] >= 0 and b["offset"] + b["bytes"] <= arena,
                      what + ": %s inside the arena" % b["name"], str(b))
    by_name = {b["name"]: b for b in bufs}
    nsteps = len(rep["steps"])
    live = [0] * nsteps
    for b in bufs:
        for t in range(b["first_step"], b["last_step"] + 1):
            if not (t == b["first_step"] and b["inplace_of"] is not None):
                live[t] += b["size"]
    bad = []
    order = sorted(bufs, key=lambda b: b["offset"])
    for i, x in enumerate(order):
        for y in order[i + 1:]:
            if y["offset"] >= x["offset"] + x["size"]:
                break
            if not x["size"] or not y["size"]:
                continue
            if x["last_step"] < y["first_step"] or y["last_step"] < x["first_step"]:
                continue
            hand = ((y["inplace_of"] == x["name"] and x["last_step"] == y["first_step"]) or
                    (x["inplace_of"] == y["name"] and y["last_step"] == x["first_step"]))
            if not hand:
                bad.append((x["name"], y["name"]))
    ok &= c.check(not bad, what + ": no two live buffers overlap", str(bad[:5]))
    for b in bufs:
        if b["inplace_of"] is not None:
            src = by_name.get(b["inplace_of"])
            ok &= c.check(src is not None and src["offset"] == b["offset"] and src["bytes"] == b["bytes"],
                          what + ": %s in place of %s shares its slot" % (b["name"], b["inplace_of"]))
    ok &= c.eq(max(live) if live else 0, lb, what + ": lower bound recomputed")
    ok &= c.eq(live, [s["live_bytes"] for s in rep["steps"]], what + ": live bytes per step")
    ok &= c.eq(sum(b["size"] for b in bufs), act["unplanned_bytes"], what + ": unplanned sum")
    return ok


def main_guard(fn):
    try:
        sys.exit(fn())
    except KeyboardInterrupt:
        sys.exit(130)
