#!/usr/bin/env python3
"""A generating executable's command line (rt_gen_main).

rt_fake_gen is the hand-written decoder of gen_prog.h (batch 3, chunk 4,
max_seq 10, vocabulary 11; next(t) = sum over i <= t of (token_i + 1)(i + 1)
mod 11) with main = rt_gen_main. Checked here:

- greedy tokens.npy (i64[b, P + N]) against that rule computed here, for
  b < batch, P across chunks, N = 0 and P + N = max_seq; the two speed
  lines; --output-dir created; sampling reproducible for a seed;
- --help; every bad command line is exit 2 with the usage line; every bad
  prompt file (dtype, rank, rows, length, ids) and a prompt that does not
  fit (P + N > max_seq) is exit 1 naming it; tokens.npy that would be the
  prompt is refused before anything runs.

    run_gen.py --exe build/tests/runtime/rt_fake_gen
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

V, MAX_SEQ, BATCH = 11, 10, 3


class Suite:
    def __init__(self, exe, tmp):
        self.exe, self.tmp = exe, tmp
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        return ok

    def run(self, *args):
        p = subprocess.run([self.exe, *map(str, args)], capture_output=True, text=True,
                           errors="replace", timeout=60, cwd=self.tmp)
        return p.returncode, p.stdout, p.stderr

    def path(self, name):
        return os.path.join(self.tmp, name)


def expect(prompt, n):
    out = []
    for row in prompt.tolist():
        seq = list(row)
        for t in range(len(row) - 1, len(row) + n - 1):
            seq.append(sum((seq[i] + 1) * (i + 1) for i in range(t + 1)) % V)
        out.append(seq)
    return np.array(out, dtype=np.int64).reshape(len(prompt), -1)


LINE = r"%s: %d tokens in \d+\.\d\d ms \(\d+\.\d tokens/s\)"


def test_greedy(s):
    rng = np.random.default_rng(3)
    for b, p, n in [(1, 1, 9), (2, 4, 6), (3, 5, 5), (2, 9, 1), (1, 10, 0), (3, 3, 0)]:
        prompt = rng.integers(0, V, size=(b, p), dtype=np.int64)
        np.save(s.path("p.npy"), prompt)
        code, o, e = s.run("--prompt", "p.npy", "--max-new-tokens", n, "--output-dir", "out")
        name = f"greedy b={b} P={p} N={n}"
        if not s.check(name, code == 0, f"exit {code}: {e.strip()[:300]}"):
            continue
        got = np.load(s.path("out/tokens.npy"))
        s.check(name + ": tokens", got.dtype == np.int64 and np.array_equal(got, expect(prompt, n)),
                f"{got} vs {expect(prompt, n)}")
        lines = o.splitlines()
        s.check(name + ": speed lines", len(lines) == 2 and re.fullmatch(LINE % ("prefill", p), lines[0])
                and re.fullmatch(LINE % ("decode", max(n - 1, 0)), lines[1]) is not None, repr(o))


def test_sampling(s):
    np.save(s.path("p.npy"), np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64))
    base = ["--prompt", "p.npy", "--max-new-tokens", "7", "--temperature", "0.8", "--top-k", "5",
            "--top-p", "0.95"]
    outs = []
    for i, seed in enumerate([7, 7, 8]):
        code, o, e = s.run(*base, "--seed", seed, "--output-dir", f"s{i}")
        s.check(f"sampling seed {seed}", code == 0, e)
        outs.append(np.load(s.path(f"s{i}/tokens.npy")) if code == 0 else None)
    if all(x is not None for x in outs):
        s.check("the same seed, the same tokens", np.array_equal(outs[0], outs[1]))
        s.check("the prompt is kept", np.array_equal(outs[0][:, :3], [[1, 2, 3], [4, 5, 6]]))
        s.check("tokens in the vocabulary", ((outs[0] >= 0) & (outs[0] < V)).all())
        # The model's logits are one-hot (1 against 0): at temperature 0.8
        # the top token has probability e^1.25 / (e^1.25 + 10) = 0.26, so
        # two seeds giving the same 14 tokens would be a broken generator.
        s.check("another seed, other tokens", not np.array_equal(outs[0], outs[2]))
    # With one-hot logits at temperature 1 the top token has probability
    # e / (e + 10) = 0.21: top-p 0.2 or top-k 1 keeps it alone (greedy).
    want = expect(np.array([[1, 2, 3], [4, 5, 6]]), 7)
    for name, flags in [("top-p 0.2", ["--top-p", "0.2"]), ("top-k 1", ["--top-k", "1"])]:
        code, o, e = s.run(*base[:4], "--temperature", "1", *flags, "--output-dir", "g")
        s.check(f"sampling with {name} is greedy", code == 0 and
                np.array_equal(np.load(s.path("g/tokens.npy")), want), e)


def test_help(s):
    code, o, e = s.run("--help")
    s.check("--help", code == 0 and o.startswith("usage: rt_fake_gen --prompt IDS.npy")
            and "--profile" in o
            and "1 <= b <= 3" in o and "P + N <= 10" in o and "tokens/s" not in e
            and "one sequence" in o, f"{code} {o[:200]!r} {e!r}")


def test_errors(s):
    np.save(s.path("ok.npy"), np.zeros((2, 3), np.int64))
    np.save(s.path("f32.npy"), np.zeros((2, 3), np.float32))
    np.save(s.path("rank1.npy"), np.zeros((3,), np.int64))
    np.save(s.path("rows4.npy"), np.zeros((4, 3), np.int64))
    np.save(s.path("empty.npy"), np.zeros((1, 0), np.int64))
    np.save(s.path("badid.npy"), np.array([[1, 11]], np.int64))
    np.save(s.path("neg.npy"), np.array([[1, -1]], np.int64))
    with open(s.path("junk.npy"), "wb") as f:
        f.write(b"not an npy file")
    ok = ["--prompt", "ok.npy"]
    bad_input = [
        ("f32 prompt", ["--prompt", "f32.npy", "--max-new-tokens", "1"],
         ["--prompt f32.npy: expected token ids i64[b, P]", "found f32[2, 3]"]),
        ("rank-1 prompt", ["--prompt", "rank1.npy", "--max-new-tokens", "1"], ["found i64[3]"]),
        ("too many rows", ["--prompt", "rows4.npy", "--max-new-tokens", "1"],
         ["1 <= b <= 3", "found i64[4, 3]"]),
        ("empty prompt", ["--prompt", "empty.npy", "--max-new-tokens", "1"], ["found i64[1, 0]"]),
        ("P + N > max_seq", ok + ["--max-new-tokens", "8"],
         ["--prompt ok.npy has 3 tokens and --max-new-tokens is 8", "3 + 8 is more than the 10"]),
        ("id outside the vocabulary", ["--prompt", "badid.npy", "--max-new-tokens", "1"],
         ["prompt token 11 at [0, 1] is outside the vocabulary [0, 11)"]),
        ("negative id", ["--prompt", "neg.npy", "--max-new-tokens", "1"], ["prompt token -1"]),
        ("missing prompt file", ["--prompt", "nope.npy", "--max-new-tokens", "1"], ["nope.npy"]),
        ("malformed prompt file", ["--prompt", "junk.npy", "--max-new-tokens", "1"], ["junk.npy"]),
        ("no --prompt", ["--max-new-tokens", "1"], ["missing --prompt"]),
        ("no --max-new-tokens", ok, ["missing --max-new-tokens"]),
        ("missing weights", ok + ["--max-new-tokens", "1", "--weights", "nope.safetensors"],
         ["nope.safetensors"]),
        ("tokens.npy is the prompt", ["--prompt", "tokens.npy", "--max-new-tokens", "1"],
         ["the tokens would be written to './tokens.npy', which is the --prompt file"]),
        ("output dir is a file", ok + ["--max-new-tokens", "1", "--output-dir", "ok.npy"],
         ["'ok.npy' is not a directory"]),
    ]
    np.save(s.path("tokens.npy"), np.zeros((1, 2), np.int64))
    before = open(s.path("tokens.npy"), "rb").read()
    for name, args, needles in bad_input:
        code, o, e = s.run(*args)
        s.check(f"bad input: {name}", code == 1 and all(n in e for n in needles) and o == "",
                f"exit {code}, stderr {e.strip()[:400]!r}")
    s.check("the prompt is left as it was", open(s.path("tokens.npy"), "rb").read() == before)

    usage = [
        ("unknown flag", ["--frobnicate"], "unknown option '--frobnicate'"),
        ("positional", ["x.npy"], "unexpected argument 'x.npy'"),
        ("missing argument", ok + ["--max-new-tokens"], "--max-new-tokens needs an argument"),
        ("negative N", ok + ["--max-new-tokens", "-1"], "--max-new-tokens -1: expected"),
        ("fractional N", ok + ["--max-new-tokens", "1.5"], "--max-new-tokens 1.5"),
        ("N twice", ok + ["--max-new-tokens", "1", "--max-new-tokens", "2"],
         "--max-new-tokens is given twice"),
        ("negative temperature", ok + ["--max-new-tokens", "1", "--temperature", "-0.1"],
         "--temperature -0.1: expected a number >= 0"),
        ("nan temperature", ok + ["--max-new-tokens", "1", "--temperature", "nan"], "--temperature nan"),
        ("inf temperature", ok + ["--max-new-tokens", "1", "--temperature", "inf"], "--temperature inf"),
        ("temperature with junk", ok + ["--max-new-tokens", "1", "--temperature", "0.5x"],
         "--temperature 0.5x"),
        ("empty temperature", ok + ["--max-new-tokens", "1", "--temperature", ""], "--temperature "),
        ("negative top-k", ok + ["--max-new-tokens", "1", "--top-k", "-3"], "--top-k -3"),
        ("top-p 0", ok + ["--max-new-tokens", "1", "--top-p", "0"], "--top-p 0: expected a probability in (0, 1]"),
        ("top-p above 1", ok + ["--max-new-tokens", "1", "--top-p", "1.01"], "--top-p 1.01"),
        ("seed past 2^64", ok + ["--max-new-tokens", "1", "--seed", "18446744073709551616"], "--seed"),
        ("negative seed", ok + ["--max-new-tokens", "1", "--seed", "-1"], "--seed -1"),
        ("too many threads", ok + ["--max-new-tokens", "1", "--threads", "99999"], "--threads 99999"),
        ("prompt twice", ok + ok + ["--max-new-tokens", "1"], "--prompt is given twice"),
        ("empty output dir", ok + ["--max-new-tokens", "1", "--output-dir", ""], "--output-dir needs a path"),
        ("profile twice", ok + ["--max-new-tokens", "1", "--profile", "--profile"],
         "--profile is given twice"),
    ]
    for name, args, needle in usage:
        code, o, e = s.run(*args)
        s.check(f"bad command line: {name}", code == 2 and needle in e and "\nusage: rt_fake_gen " in e,
                f"exit {code}, stderr {e.strip()[:400]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        s = Suite(os.path.abspath(args.exe), tmp)
        test_greedy(s)
        test_sampling(s)
        test_help(s)
        test_errors(s)
    print(f"runtime: {s.passed} passed, {s.failed} failed")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
