#!/usr/bin/env python3
"""One threading runtime per process (docs/runtime.md "Threads").

A compiled conv net (convnet.tg: convolutions on oneDNN, elementwise
kernels on the pool, a product, an elementwise tail) is run with --bench
long enough to sample it, while /proc/PID/task/*/stat is read every
millisecond or so:

- with --threads 2 no sample has more than 2 of its threads runnable
  (state R), and the process has exactly 2 threads once it runs: the
  pool's loops, oneDNN's and the products share one OpenMP team, and
  OpenBLAS starts none of its own (before, three runtimes each kept
  threads, and idle ones spun beside the working ones);
- with --threads 1, exactly 1 thread;
- the outputs are the same bits with OMP_WAIT_POLICY unset, PASSIVE or
  ACTIVE, and with OPENBLAS_NUM_THREADS=4, which also changes no thread
  count. Correctness only: nothing here is timed against a limit (the
  machine may be loaded); the --bench length is only chosen from a first run
  so that there is something to sample.

Usage: run_threads.py --tgc TGC   (exit 0 pass, 1 fail)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAILS = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f"\n     {detail}"))
    if not ok:
        FAILS.append(what)
    return ok


def clean_env(**extra):
    """The environment without the variables this test sets itself."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS",
                        "OMP_NUM_THREADS")}
    env.update(extra)
    return env


def task_states(pid):
    """{tid: state letter} of pid's threads now; {} once it has exited."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue  # the thread ended between listdir and open
        # "tid (comm) S ...": comm may hold spaces and parentheses.
        out[tid] = s[s.rindex(")") + 2:].split()[0]
    return out


def sample(cmd, env, min_samples=200):
    """Runs cmd, sampling its threads until it exits: (returncode, stdout,
    the most runnable threads in one sample, the most threads in one
    sample, the number of samples)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    most_r = most_t = n = 0
    while p.poll() is None:
        st = task_states(p.pid)
        if st:
            n += 1
            most_t = max(most_t, len(st))
            most_r = max(most_r, sum(1 for v in st.values() if v == "R"))
        time.sleep(0.001)
    out = p.stdout.read().decode(errors="replace")
    return p.returncode, out, most_r, most_t, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tgc_threads_") as d:
        exe = os.path.join(d, "convnet")
        r = subprocess.run([a.tgc, "build", os.path.join(HERE, "convnet.tg"), "-o", exe],
                           capture_output=True, text=True)
        if not check(r.returncode == 0, "tgc build convnet.tg", r.stdout + r.stderr):
            return 1

        # A --bench count that runs about 1.5 s (at least 20 runs), from the
        # median of a first short run.
        r = subprocess.run([exe, "--random-inputs", "1", "--bench", "10", "--threads", "2"],
                           capture_output=True, text=True, env=clean_env(), timeout=60)
        med = [float(w.split("=")[1]) for w in r.stdout.split() if w.startswith("median_us=")]
        if not check(r.returncode == 0 and med, "a first --bench run", r.stdout + r.stderr):
            return 1
        runs = str(max(20, min(5000, int(1.5e6 / max(med[0], 1.0)))))

        for threads, want in (("2", 2), ("1", 1)):
            rc, out, most_r, most_t, n = sample(
                [exe, "--random-inputs", "1", "--bench", runs, "--threads", threads], clean_env())
            ok = rc == 0 and n >= 20
            check(ok, f"--threads {threads}: ran, {n} samples", out)
            if ok:
                check(most_r <= want,
                      f"--threads {threads}: at most {want} runnable threads (saw {most_r})",
                      f"{most_r} threads in state R at once: more than one threading runtime?")
                check(most_t == want,
                      f"--threads {threads}: the process has {want} threads (saw {most_t})",
                      "OpenBLAS's or a second runtime's threads beside OpenMP's team?")

        # The same output bits whatever the OpenMP / OpenBLAS variables say.
        outs = {}
        for name, env in (("unset", clean_env()),
                          ("OMP_WAIT_POLICY=PASSIVE", clean_env(OMP_WAIT_POLICY="PASSIVE")),
                          ("OMP_WAIT_POLICY=ACTIVE", clean_env(OMP_WAIT_POLICY="ACTIVE")),
                          ("OPENBLAS_NUM_THREADS=4", clean_env(OPENBLAS_NUM_THREADS="4"))):
            od = os.path.join(d, name.replace("=", "_"))
            rc, out, most_r, most_t, n = sample(
                [exe, "--random-inputs", "7", "--output-dir", od, "--bench", "20",
                 "--threads", "2"], env)
            path = os.path.join(od, "y.npy")
            if check(rc == 0 and os.path.exists(path), f"{name}: runs and writes y.npy", out):
                outs[name] = open(path, "rb").read()
                check(most_t <= 2, f"{name}: at most 2 threads (saw {most_t})")
        base = outs.get("unset")
        for name, data in outs.items():
            check(data == base, f"{name}: the same output bits as with nothing set")
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
