#!/usr/bin/python3
"""Data order and freezing of training executables (issue 28, item 6).

- `EXE --shuffle SEED` reads the k batches of its data sets in a new
  random order each epoch. The order is docs/training.md's "Shuffling"
  (a Fisher-Yates shuffle driven by splitmix64), reimplemented here in
  Python; PyTorch's torch.optim.AdamW trained on the batches in that order
  must end at the executable's weights. A run without --shuffle reads
  step s's batch s mod k (the old order), and must end elsewhere: the test
  fails if --shuffle were ignored.
- `tgc build --freeze` takes shell patterns (fnmatch: `*` crosses dots):
  the params they match are saved unchanged and PyTorch, with the same
  params frozen, agrees on the others; a pattern that matches no param is
  exit 1 naming it.
- Bad --shuffle values and data sets of different batch counts are
  refused, naming the flag or the inputs.

A few seconds: one small graph, two builds.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "diff"))
import tensorio  # noqa: E402

from run_train import FAILS, check, run  # noqa: E402  (the training suite's helpers)

M64 = (1 << 64) - 1


# --- docs/training.md "Shuffling", in Python --------------------------------

def splitmix64(state):
    """One step: (new state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def epoch_order(seed, epoch, k):
    state = seed ^ (((epoch + 1) * 0xD1342543DE82EF95) & M64)
    perm = list(range(k))
    for i in range(k - 1, 0, -1):
        state, r = splitmix64(state)
        j = r % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def batch_at(step, k, seed):
    """The batch step `step` (from 0) reads; seed None: no --shuffle."""
    if seed is None:
        return step % k
    return epoch_order(seed, step // k, k)[step % k]


# --- the model: a norm-like layer with a running mean, and an encoder -------

NET = """
graph shuf(batch = 4)
input  x : f32[batch, 6]
input  t : f32[batch, 3]
param  norm.running_mean : f32[6]
param  norm.weight : f32[6]
param  enc.layers.l0.weight : f32[8, 6]
param  enc.layers.l0.bias : f32[8]
param  head.weight : f32[3, 8]
h = relu(linear((x - norm.running_mean) * norm.weight, enc.layers.l0.weight, enc.layers.l0.bias))
output loss = mean((linear(h, head.weight) - t) ** 2)
"""


def params(seed):
    g = torch.Generator().manual_seed(seed)
    return {"norm.running_mean": torch.randn(6, generator=g) * 0.1,
            "norm.weight": 1 + torch.randn(6, generator=g) * 0.1,
            "enc.layers.l0.weight": torch.randn(8, 6, generator=g) * 0.3,
            "enc.layers.l0.bias": torch.randn(8, generator=g) * 0.1,
            "head.weight": torch.randn(3, 8, generator=g) * 0.3}


def torch_train(p0, x, t, steps, k, seed, frozen):
    p = {n: v.clone().requires_grad_(n not in frozen) for n, v in p0.items()}
    opt = torch.optim.AdamW([v for n, v in p.items() if n not in frozen], lr=0.01)
    for s in range(steps):
        b = batch_at(s, k, seed)
        xb, tb = x[4 * b:4 * b + 4], t[4 * b:4 * b + 4]
        opt.zero_grad()
        a = (xb - p["norm.running_mean"]) * p["norm.weight"]
        h = torch.relu(torch.nn.functional.linear(a, p["enc.layers.l0.weight"],
                                                  p["enc.layers.l0.bias"]))
        loss = ((torch.nn.functional.linear(h, p["head.weight"]) - tb) ** 2).mean()
        loss.backward()
        opt.step()
    return p


def max_err(got, want):
    return max(float(np.abs(got[n].numpy().astype(np.float64) - want[n].detach().double().numpy()).max())
               for n in want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    args = ap.parse_args()
    tgc = os.path.abspath(args.tgc)
    torch.set_num_threads(1)

    # The generator itself: a permutation every epoch, and not the same one.
    orders = [epoch_order(7, e, 5) for e in range(4)]
    check(all(sorted(o) == list(range(5)) for o in orders) and len(set(map(tuple, orders))) > 1,
          f"the Python generator: epochs 0-3 of seed 7 over 5 batches: {orders}")

    with tempfile.TemporaryDirectory(prefix="tgc-data-") as tmp:
        src = os.path.join(tmp, "shuf.tg")
        with open(src, "w") as f:
            f.write(NET)
        exe = os.path.join(tmp, "shuf")
        frozen = {"norm.running_mean", "enc.layers.l0.bias"}
        # Two patterns: one by suffix, one by prefix (`*` crosses the dots).
        p = run([tgc, "build", src, "-o", exe, "--train", "loss", "--optimizer", "adamw",
                 "--lr", "0.01", "--freeze", "*.running_mean", "--freeze", "enc.*.bias"])
        check(p.returncode == 0, "tgc build --freeze '*.running_mean' --freeze 'enc.*.bias'")
        if p.returncode:
            return 1
        k, steps, seed = 5, 17, 7  # 3 epochs and a part, so orders change between epochs
        g = torch.Generator().manual_seed(3)
        x = torch.randn(4 * k, 6, generator=g)
        t = torch.randn(4 * k, 3, generator=g)
        p0 = params(4)
        w = os.path.join(tmp, "init.safetensors")
        tensorio.write_safetensors(w, [(n, v.contiguous()) for n, v in p0.items()])
        xs, ts = os.path.join(tmp, "x.npy"), os.path.join(tmp, "t.npy")
        np.save(xs, x.numpy())
        np.save(ts, t.numpy())
        base = [exe, "--weights", w, "--input", "x=" + xs, "--input", "t=" + ts,
                "--steps", str(steps)]
        got = {}
        for name, extra in [("shuffled", ["--shuffle", str(seed)]), ("in order", [])]:
            out = os.path.join(tmp, name.replace(" ", "_") + ".safetensors")
            p = run(base + extra + ["--save-weights", out])
            check(p.returncode == 0, f"{name}: {steps} steps over {k} batches")
            if p.returncode:
                return 1
            got[name] = tensorio.read_safetensors(out)
        want = torch_train(p0, x, t, steps, k, seed, frozen)
        # 17 f32 AdamW steps on a tiny net; measured ~1e-7; allowed 2e-5.
        err = max_err(got["shuffled"], want)
        check(err <= 2e-5, f"--shuffle {seed}: PyTorch on the documented order agrees "
              f"(max |tgc - torch| = {err:.3g}, allowed 2e-5)")
        err_plain = max_err(got["in order"], want)
        check(err_plain > 1e-3, f"without --shuffle the run ends elsewhere "
              f"(max difference {err_plain:.3g} > 1e-3)")
        err_order = max_err(got["in order"], torch_train(p0, x, t, steps, k, None, frozen))
        check(err_order <= 2e-5, f"without --shuffle step s reads batch s mod k ({err_order:.3g})")
        for n in frozen:
            check(np.array_equal(got["shuffled"][n].numpy(), p0[n].numpy()),
                  f"--freeze patterns: {n} is saved unchanged")
        for n in set(p0) - frozen:
            check(not np.array_equal(got["shuffled"][n].numpy(), p0[n].numpy()),
                  f"--freeze patterns: {n} is trained")
        # Bad input.
        p = run([tgc, "build", src, "-o", exe + "2", "--train", "loss", "--freeze",
                 "*.running_mean,dec.*"], expect=1)
        check(p.returncode == 1 and "'dec.*'" in p.stderr and "matches none of its params" in p.stderr,
              f"a pattern matching no param: exit 1 naming it ({p.stderr.strip()[:100]})")
        p = run(base + ["--shuffle", "-1"], expect=2)
        check(p.returncode == 2 and "--shuffle -1" in p.stderr,
              f"--shuffle -1: exit 2 ({p.stderr.strip()[:80]})")
        p = run(base + ["--shuffle", "1", "--shuffle", "2"], expect=2)
        check(p.returncode == 2 and "twice" in p.stderr, "--shuffle given twice: exit 2")
        t3 = os.path.join(tmp, "t3.npy")
        np.save(t3, t.numpy()[:12])
        p = run([exe, "--weights", w, "--input", "x=" + xs, "--input", "t=" + t3, "--steps", "1",
                 "--shuffle", "1"], expect=1)
        check(p.returncode == 1 and "'x'" in p.stderr and "'t'" in p.stderr,
              f"--shuffle over data sets of 5 and 3 batches: exit 1 naming both "
              f"({p.stderr.strip()[:120]})")
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
