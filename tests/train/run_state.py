#!/usr/bin/python3
"""The training state's contract (issue 30, breaks 8, 9 and 11).

- A state file (--load-state, or states found in --weights) whose values no
  step could continue from -- `__loss_scale` NaN, 0, inf or subnormal,
  `__step` NaN, negative or fractional, `exp_avg_sq` negative, `exp_avg`
  NaN -- is refused before any step: exit 1 naming the file and the
  tensor, nothing written. A state tgc saved itself loads and resumes.
- `tgc compile --train`'s API (train_contract.c): NAME_create(NULL, ...) is
  7, not a crash; get_param/set_param with a bad index are 7 with a message
  naming the index and the valid range; set_param of a NaN state is 9.
- --save-weights and --save-state share a pair mark (a hash of the params
  and states when saved): a weights file and a state of different moments
  -- what a kill between the save's two renames leaves -- are refused
  together (exit 1 naming both), any two of the same moment load.

Prints "ok"/"FAIL" per check and "N failure(s)"; exits 1 on any failure.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, ".."))  # link_line.py
from link_line import link_libs  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "diff"))
import tensorio  # noqa: E402

FAILS = []

GRAPH = """
graph state_mlp(batch = 8)
input  x      : f32[batch, 6]
input  onehot : f32[batch, 3]
param  w1 : f32[5, 6] = randn(std = 0.5, seed = 1)
param  b1 : f32[5] = zeros
param  w2 : f32[3, 5] = randn(std = 0.5, seed = 2)
param  b2 : f32[3] = zeros
h      = relu(linear(x, w1, b1))
logits = linear(h, w2, b2)
output loss = -mean(sum(log_softmax(logits, dim=1) * onehot, dim=1))
"""


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def tensorio_meta(path):
    """The __metadata__ of a safetensors file ({} when none)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__", {})


def with_value(state, name, value, index=0):
    """A copy of state (a dict of tensors) with element `index` of `name` set."""
    out = {k: v.clone() for k, v in state.items()}
    t = out[name].reshape(-1)
    t[index] = value
    return out


def write(path, tensors):
    tensorio.write_safetensors(path, sorted(tensors.items()))


def case_state_files(tgc, tmp):
    src = os.path.join(tmp, "state_mlp.tg")
    with open(src, "w") as f:
        f.write(GRAPH)
    exe = os.path.join(tmp, "state_mlp")
    p = run([tgc, "build", src, "-o", exe, "--train", "loss", "--optimizer", "adamw",
             "--precision", "mixed-f16"])
    check(p.returncode == 0, "tgc build --train --optimizer adamw --precision mixed-f16")
    if p.returncode:
        print(p.stderr)
        return
    rng = np.random.default_rng(0)
    x = os.path.join(tmp, "x.npy")
    o = os.path.join(tmp, "o.npy")
    np.save(x, rng.standard_normal((8, 6)).astype(np.float32))
    np.save(o, np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)])
    ins = ["--input", "x=" + x, "--input", "onehot=" + o]
    w0, s0 = os.path.join(tmp, "w0.safetensors"), os.path.join(tmp, "s0.safetensors")
    p = run([exe] + ins + ["--steps", "3", "--save-weights", w0, "--save-state", s0])
    check(p.returncode == 0, f"3 steps saving weights and state ({p.stderr.strip()[:200]})")
    if p.returncode:
        return
    state = tensorio.read_safetensors(s0)
    weights = tensorio.read_safetensors(w0)
    check({"__step", "__loss_scale", "__growth_tracker", "w1.exp_avg", "w1.exp_avg_sq"} <=
          set(state), f"the state holds the names the runtime checks ({sorted(state)})")

    # what tgc saved resumes
    w1 = os.path.join(tmp, "w1.safetensors")
    p = run([exe, "--weights", w0, "--load-state", s0] + ins + ["--steps", "1",
                                                                 "--save-weights", w1])
    check(p.returncode == 0, f"the saved state resumes ({p.stderr.strip()[:200]})")

    bad = [("__loss_scale", float("nan"), 0), ("__loss_scale", 0.0, 0),
           ("__loss_scale", float("inf"), 0), ("__loss_scale", 1e-45, 0),
           ("__loss_scale", -65536.0, 0), ("__step", float("nan"), 0), ("__step", -1.0, 0),
           ("__step", 2.5, 0), ("__growth_tracker", -3.0, 0), ("w1.exp_avg_sq", -1e-3, 7),
           ("w2.exp_avg_sq", float("inf"), 2), ("b1.exp_avg", float("nan"), 1)]
    for name, value, index in bad:
        path = os.path.join(tmp, "bad_state.safetensors")
        write(path, with_value(state, name, value, index))
        out = os.path.join(tmp, "never.safetensors")
        if os.path.exists(out):
            os.unlink(out)
        p = run([exe, "--weights", w0, "--load-state", path] + ins + ["--steps", "2",
                                                                      "--save-weights", out])
        msg = p.stderr.strip()
        check(p.returncode == 1 and "bad_state.safetensors" in msg and f"'{name}'" in msg and
              "step 1" not in msg and not os.path.exists(out),
              f"--load-state with {name}[{index}] = {value}: exit 1 naming the file and the "
              f"tensor, nothing written (rc {p.returncode}: {msg[:200]})")

    # --save-weights and --save-state carry one pair mark: a weights file of
    # one moment beside a state of another (what a kill between the save's
    # two renames leaves) is refused when loaded together
    w2, s2 = os.path.join(tmp, "w2.safetensors"), os.path.join(tmp, "s2.safetensors")
    p = run([exe, "--weights", w0, "--load-state", s0] + ins + ["--steps", "2", "--save-weights",
                                                                 w2, "--save-state", s2])
    check(p.returncode == 0, f"2 more steps saving both ({p.stderr.strip()[:200]})")
    meta = [tensorio_meta(f).get("tgc.pair") for f in (w0, s0, w2, s2)]
    check(meta[0] and meta[0] == meta[1] and meta[2] == meta[3] and meta[0] != meta[2],
          f"each save's two files share a pair mark, another save's differs ({meta})")
    for wf, sf in [(w2, s0), (w0, s2)]:
        p = run([exe, "--weights", wf, "--load-state", sf] + ins + ["--steps", "1"])
        check(p.returncode == 1 and os.path.basename(wf) in p.stderr and
              os.path.basename(sf) in p.stderr and "not saved together" in p.stderr,
              f"--weights {os.path.basename(wf)} --load-state {os.path.basename(sf)}: exit 1 "
              f"naming both ({p.stderr.strip()[:300]})")
    # the mark is the params' content: weights saved apart from the state
    # at the same moment (here: after no step) still pair with it
    wc = os.path.join(tmp, "wc.safetensors")
    p = run([exe, "--weights", w2, "--load-state", s2] + ins + ["--steps", "0",
                                                                 "--save-weights", wc])
    check(p.returncode == 0 and tensorio_meta(wc).get("tgc.pair") == meta[3],
          f"weights saved alone pair with the state of the same moment ({p.stderr.strip()[:200]})")
    p = run([exe, "--weights", wc, "--load-state", s2] + ins + ["--steps", "1"])
    check(p.returncode == 0, f"... and load with it ({p.stderr.strip()[:200]})")

    # a state in the weights file is checked as it is loaded too
    path = os.path.join(tmp, "bad_weights.safetensors")
    write(path, dict(weights, **with_value(state, "__loss_scale", float("nan"))))
    p = run([exe, "--weights", path] + ins + ["--steps", "1"])
    check(p.returncode == 1 and "bad_weights.safetensors" in p.stderr and
          "'__loss_scale'" in p.stderr,
          f"--weights holding a NaN __loss_scale: exit 1 naming it ({p.stderr.strip()[:200]})")


def case_api(tgc, tmp, args):
    if not args.rtlib:
        print("skip api: no --rtlib given")
        return
    src = os.path.join(tmp, "state_api.tg")
    with open(src, "w") as f:
        f.write(GRAPH.replace("graph state_mlp", "graph state_api"))
    obj, hdr = os.path.join(tmp, "state_api.o"), os.path.join(tmp, "state_api.h")
    p = run([tgc, "compile", src, "-o", obj, "--header", hdr, "--train", "loss", "--optimizer",
             "adamw"])
    check(p.returncode == 0, f"tgc compile --train ({p.stderr.strip()[:200]})")
    if p.returncode:
        return
    exe = os.path.join(tmp, "train_contract")
    p = run([args.cc, "-std=c11", "-I", tmp, "-I", args.rtinc,
             os.path.join(HERE, "train_contract.c"), obj, args.rtlib]
            + link_libs([tgc, "compile", src, "--train", "loss"]) + ["-o", exe]
            + args.cflags.split())
    check(p.returncode == 0, f"train_contract.c links ({p.stderr.strip()[:300]})")
    if p.returncode:
        return
    p = run([exe])
    print(p.stdout, end="")
    check(p.returncode == 0, f"train_contract: every check ({p.stderr.strip()[:300]})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("-k", default="")
    ap.add_argument("--rtlib", help="libtgcrt.a, for the tgc compile --train case")
    ap.add_argument("--rtinc", help="the runtime's headers (tgcrt.h)")
    ap.add_argument("--cc", default=os.environ.get("CC") or "cc")
    ap.add_argument("--cflags", default="", help="extra flags (sanitizers) for the C program")
    args = ap.parse_args()
    tgc = os.path.abspath(args.tgc)
    with tempfile.TemporaryDirectory(prefix="tgc-train-state-") as tmp:
        for name, fn in [("state_files", case_state_files),
                         ("api", lambda t, d: case_api(t, d, args))]:
            if args.k in name:
                fn(tgc, tmp)
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
