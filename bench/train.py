#!/usr/bin/python3
"""Training steps: `tgc build --train` executables against PyTorch eager.

    bench/train.py [--threads T] [--no-single-thread] [--batches B,...]
                   [--only mlp,transformer_block] [--budget S] [--rounds R]
                   [--tgc PATH] [--no-check] [--no-breakdown] [--json FILE]
                   [--keep] [--torch-omp-active]

Models (issue 15), each one whole training step (forward, loss, backward,
optimizer update) per batch:

- mlp: 784-512-512-10 with ReLU, batch 64, cross-entropy, SGD (lr 0.01,
  momentum 0.9). The tgc graph writes the loss as
  `-mean(sum(log_softmax(logits, dim=1) * onehot, dim=1))` with a one-hot
  input, or as `cross_entropy(logits, labels)` when `tgc check` accepts that
  operation; PyTorch uses F.cross_entropy(logits, labels) (the same value).
- transformer_block: examples/transformer_block.tg (d_model 256, 4 heads,
  causal, GELU MLP 4x) at batch 8, seq 128, with `y` turned into an
  intermediate, an input `target` like x, and
  `output loss = mean((y - target) ** 2)`; AdamW (lr 1e-3, betas 0.9,0.999,
  eps 1e-8, weight decay 0.01, PyTorch's defaults).

--batches B,... times every model at each of those batch sizes instead of
its own (64 and 8).

The PyTorch modules are written by hand beside the graphs (nn.Linear for the
MLP; F.layer_norm, F.linear, softmax with the causal mask as a buffer, F.gelu
for the block); their seed-0 initial weights are written as safetensors and
given to the executables (--weights), so both sides start from the same
params. The inputs are data sets of k batches (k = 8 for the MLP, 4 for the
block), cycled one batch per step on both sides.

For each thread count (T, default every core, then 1 unless
--no-single-thread; tgc --threads, torch.set_num_threads and OpenBLAS's count
in the PyTorch process, as bench/conv.py sets them):

1. tgc: the executable's wall time for `--steps N` minus its wall time for
   `--steps 0` (the median of 5; start-up, loading the weights and the data,
   writing --save-weights), divided by N (the executable has no per-step
   timer). The same run logs the loss every N/10 steps (`--log-every`); the
   median time between consecutive log lines, per step, is printed as well
   ("steady": no first-step costs, less disturbed by a load spike), and so
   is the CPU time per step (the child's rusage, N steps minus 0).
2. PyTorch eager: `opt.zero_grad(); loss = ...; loss.backward(); opt.step()`,
   warmed up on a copy of the model and optimizer, then N steps of a fresh
   model and optimizer from the same initial weights, time.perf_counter
   around all N (the table) and around each tenth (the steady median);
   time.process_time around all N for the CPU time.
   N is the same on both sides, chosen so that the slower side takes about
   --budget / R seconds (--budget: default 4 here). 1 and 2 alternate in R
   rounds (--rounds, default 3); each side's time is the median of its
   rounds.
3. unless --no-check: the params tgc saved (--save-weights) against the
   PyTorch module's after the same N steps, max over params of
   max |tgc - torch| / max |torch| (the table's check column, "ok" up to
   1e-4), and the same after 10 steps: a sanity check of the set-up,
   printed, not asserted. The trajectories part by rounding, and not
   smoothly: on one thread, at the MLP's step 168 one ReLU unit's
   pre-activation is -1.2e-7 in tgc and +3.0e-8 in PyTorch (-1.4e-7 in
   f64), so one side passes its gradient and the other does not, and the
   difference jumps from 2e-7 to 2e-5, then grows to ~2e-4. The block's key
   bias b_qkv[256:512] has an exact gradient of 0 (softmax ignores a shift
   of a row's scores) and AdamW normalises the rounding noise there into
   steps of ~lr: it is left out of the check and printed apart.
4. unless --no-breakdown: the same graph built without --train (the loss
   only) timed with `--bench`, and the PyTorch loss under inference_mode;
   and the share of eager's step spent in its matrix products (the self
   time of aten::mm, addmm and bmm under torch.profiler, which are OpenBLAS
   calls, as tgc's are): 1 / that share is the eager / tgc that tgc would
   reach if its step were those same products and nothing else.

Prints the machine and the load average, with a NOTE that the machine was
loaded when the 1-minute load average was above half the cores at the start
or above the cores (plus 0.5) at any point (the runs' own threads count),
and a table per thread count:
milliseconds per step of each side and eager / tgc (above 1: tgc is faster;
the script column of bench/conv.py's table stays empty: no TorchScript here),
then the issue's targets (>= 2x on the MLP, >= 1.3x on the block). PyTorch
runs with OMP_WAIT_POLICY=PASSIVE unless --torch-omp-active (bench/run.py).
Exit status 1 when a graph fails to build or run. No timing is asserted.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import run as B  # noqa: E402  (sets OMP_WAIT_POLICY before torch is imported)
import conv as C  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = B.ROOT
log, sh = B.log, B.sh
MODELS = ["mlp", "transformer_block"]
TARGETS = {"mlp": 2.0, "transformer_block": 1.3}
CHUNKS = 10  # log lines (tgc) and perf_counter chunks (PyTorch) per timed run
CHECK_STEPS = 10  # the second, early check


# ---------------------------------------------------------------------------
# the models: a .tg graph, its training flags, and the PyTorch module


MLP_TG = """\
graph mlp_train(batch = 64)
input  x      : f32[batch, 784]
{label_input}
param  w1 : f32[512, 784] = randn(std = 0.05, seed = 1)
param  b1 : f32[512] = zeros
param  w2 : f32[512, 512] = randn(std = 0.05, seed = 2)
param  b2 : f32[512] = zeros
param  w3 : f32[10, 512] = randn(std = 0.05, seed = 3)
param  b3 : f32[10] = zeros
h1 = relu(linear(x, w1, b1))
h2 = relu(linear(h1, w2, b2))
logits = linear(h2, w3, b3)
output loss = {loss}
"""
MLP_ONEHOT = dict(label_input="input  onehot : f32[batch, 10]",
                  loss="-mean(sum(log_softmax(logits, dim=1) * onehot, dim=1))")
MLP_CE = dict(label_input="input  labels : i64[batch]", loss="cross_entropy(logits, labels)")


class Mlp(torch.nn.Module):
    TG_NAMES = {"w1": "l1.weight", "b1": "l1.bias", "w2": "l2.weight", "b2": "l2.bias",
                "w3": "l3.weight", "b3": "l3.bias"}

    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(784, 512)
        self.l2 = torch.nn.Linear(512, 512)
        self.l3 = torch.nn.Linear(512, 10)

    def loss(self, x, labels, onehot):
        h = torch.relu(self.l2(torch.relu(self.l1(x))))
        return F.cross_entropy(self.l3(h), labels)


class Block(torch.nn.Module):
    """examples/transformer_block.tg, op for op (the bench/run.py reference
    with a batch dim and params), and the MSE loss."""
    D, H, HD = 256, 4, 64
    SHAPES = {"ln1_w": [256], "ln1_b": [256], "w_qkv": [768, 256], "b_qkv": [768],
              "w_o": [256, 256], "b_o": [256], "ln2_w": [256], "ln2_b": [256],
              "w_fc": [1024, 256], "b_fc": [1024], "w_proj": [256, 1024], "b_proj": [256]}
    TG_NAMES = {k: k for k in SHAPES}

    def __init__(self, seq):
        super().__init__()
        for name, shape in self.SHAPES.items():
            if name.startswith("ln") and name.endswith("_w"):
                t = 1 + 0.1 * torch.randn(shape)
            elif name.startswith("ln") or name.startswith("b_"):
                t = 0.02 * torch.randn(shape)
            else:  # N(0, 1/in), as nn.Linear's scale
                t = torch.randn(shape) / shape[1] ** 0.5
            setattr(self, name, torch.nn.Parameter(t))
        self.register_buffer("not_causal", ~torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def loss(self, x, target):
        b, s, d, h, hd = x.shape[0], x.shape[1], self.D, self.H, self.HD
        a = F.layer_norm(x, [d], self.ln1_w, self.ln1_b, eps=1e-5)
        q, k, v = F.linear(a, self.w_qkv, self.b_qkv).split(d, dim=-1)
        qh = q.view(b, s, h, hd).transpose(1, 2)
        kh = k.view(b, s, h, hd).transpose(1, 2)
        vh = v.view(b, s, h, hd).transpose(1, 2)
        scores = (qh @ kh.transpose(-2, -1)) * 0.125
        attn = torch.softmax(scores.masked_fill(self.not_causal, float("-inf")), dim=-1)
        merged = (attn @ vh).transpose(1, 2).reshape(b, s, d)
        x1 = x + F.linear(merged, self.w_o, self.b_o)
        a2 = F.layer_norm(x1, [d], self.ln2_w, self.ln2_b)
        y = x1 + F.linear(F.gelu(F.linear(a2, self.w_fc, self.b_fc)), self.w_proj, self.b_proj)
        return torch.mean((y - target) ** 2)


def has_cross_entropy(tgc, work):
    """True when `tgc check` accepts the cross_entropy variant of the MLP."""
    g = os.path.join(work, "probe_ce.tg")
    with open(g, "w") as f:
        f.write(MLP_TG.format(**MLP_CE))
    return subprocess.run([tgc, "check", g], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def mlp_model(tgc, work, batch):
    ce = has_cross_entropy(tgc, work)
    k = 8
    g = torch.Generator().manual_seed(1)
    x = torch.randn(k * batch, 784, generator=g)
    labels = torch.randint(0, 10, (k * batch,), generator=g)
    onehot = F.one_hot(labels, 10).float()
    inputs = {"x": x, "labels": labels} if ce else {"x": x, "onehot": onehot}
    fwd = 2 * batch * (784 * 512 + 512 * 512 + 512 * 10)
    return dict(
        name="mlp", label="mlp sgd", batch=batch, k=k, make=Mlp,
        graph=MLP_TG.format(**(MLP_CE if ce else MLP_ONEHOT)),
        loss_form="cross_entropy(logits, labels)" if ce else "log_softmax * onehot",
        defines={"batch": batch},
        flags=["--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"],
        optim=lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
        inputs=inputs, torch_args=(x, labels, onehot),
        # forward; backward: every weight's gradient, and the input gradient
        # of layers 2 and 3
        fwd_flops=fwd, step_flops=2 * fwd + 2 * batch * (512 * 512 + 512 * 10))


def block_model(tgc, work, batch, seq=128):
    with open(os.path.join(ROOT, "examples", "transformer_block.tg")) as f:
        src = f.read()
    decl = "input x : f32[batch, seq, 256]\n"
    if decl not in src or "\noutput y = " not in src:
        raise RuntimeError("examples/transformer_block.tg changed: no '%s' or 'output y ='"
                           % decl.strip())
    src = src.replace(decl, decl + "input target : f32[batch, seq, 256]\n")
    src = src.replace("\noutput y = ", "\ny = ") + "output loss = mean((y - target) ** 2)\n"
    k = 4
    g = torch.Generator().manual_seed(1)
    x = torch.randn(k * batch, seq, 256, generator=g)
    target = torch.randn(k * batch, seq, 256, generator=g)
    tokens = batch * seq
    fwd = 2 * tokens * 256 * (768 + 256 + 2 * 1024) + 2 * 2 * batch * 4 * seq * seq * 64
    return dict(
        name="transformer_block", label="block adamw", batch=batch, k=k,
        make=lambda: Block(seq), graph=src, loss_form="mean((y - target) ** 2)",
        defines={"batch": batch, "seq": seq},
        flags=["--optimizer", "adamw", "--lr", "0.001", "--betas", "0.9,0.999", "--eps", "1e-8",
               "--weight-decay", "0.01"],
        optim=lambda ps: torch.optim.AdamW(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                           weight_decay=0.01),
        inputs={"x": x, "target": target}, torch_args=(x, target),
        # The key bias adds q . b_k to every score of a query's row, which
        # softmax ignores: its exact gradient is 0, and AdamW's
        # m / (sqrt(v) + eps) turns each side's rounding noise (~1e-9) there
        # into steps of up to lr. The check leaves it out (printed apart).
        zero_grad={"b_qkv": slice(256, 512)},
        fwd_flops=fwd, step_flops=3 * fwd)


# ---------------------------------------------------------------------------
# set-up: graphs, executables, weights, data


def read_safetensors(path):
    """{name: np.ndarray} of an F32 safetensors file (what --save-weights writes)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    out = {}
    for name, e in json.loads(data[8:8 + n]).items():
        if name == "__metadata__":
            continue
        if e["dtype"] != "F32":
            raise RuntimeError("%s: %s is %s, not F32" % (path, name, e["dtype"]))
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + end], np.float32).reshape(e["shape"])
    return out


def prepare(tgc, m, work, forward):
    """Builds the training (and forward-only) executables; writes the
    initial weights and the data sets. Adds the paths to m."""
    d = os.path.join(work, "%s_b%d" % (m["name"], m["batch"]))
    os.makedirs(d, exist_ok=True)
    tg = os.path.join(d, m["name"] + ".tg")
    with open(tg, "w") as f:
        f.write(m["graph"])
    dflags = []
    for k, v in m["defines"].items():
        dflags += ["-D", "%s=%d" % (k, v)]
    m["exe"] = os.path.join(d, "train")
    m["build_cmd"] = [tgc, "build", tg, "-o", m["exe"]] + dflags + ["--train", "loss"] + m["flags"]
    t0 = time.monotonic()
    sh(m["build_cmd"])
    m["build_s"] = time.monotonic() - t0
    if forward:
        m["fwd_exe"] = os.path.join(d, "forward")
        sh([tgc, "build", tg, "-o", m["fwd_exe"]] + dflags)

    torch.manual_seed(0)
    model = m["make"]()
    m["init"] = {tg_name: model.get_parameter(pt).detach().clone()
                 for tg_name, pt in model.TG_NAMES.items()}
    m["weights"] = os.path.join(d, "init.safetensors")
    B.write_safetensors(m["weights"], {k: v.numpy() for k, v in m["init"].items()})
    m["in_args"], m["fwd_args"] = [], []
    for name, t in m["inputs"].items():
        f, f1 = os.path.join(d, name + ".npy"), os.path.join(d, name + "_0.npy")
        np.save(f, t.numpy())
        np.save(f1, t[:m["batch"]].numpy())  # one batch, for the forward-only build
        m["in_args"] += ["--input", "%s=%s" % (name, f)]
        m["fwd_args"] += ["--input", "%s=%s" % (name, f1)]
    m["saved"] = os.path.join(d, "trained.safetensors")


def fresh(m):
    """The PyTorch module with the initial weights, and its optimizer."""
    torch.manual_seed(0)
    model = m["make"]()
    with torch.no_grad():
        for tg_name, pt in model.TG_NAMES.items():
            model.get_parameter(pt).copy_(m["init"][tg_name])
    return model, m["optim"](model.parameters())


def batches(m):
    """The k batches of the data set, as PyTorch tensors (views)."""
    b = m["batch"]
    return [tuple(t[i * b:(i + 1) * b] for t in m["torch_args"]) for i in range(m["k"])]


# ---------------------------------------------------------------------------
# timing


def run_exe(cmd):
    """Runs cmd; returns (wall seconds, CPU seconds of all its threads,
    [(perf_counter at the line, step, loss)] for its "step S loss L" lines,
    read as they come)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)
        lines = []
        for line in p.stdout:
            t = time.perf_counter()
            w = line.split()
            if len(w) == 4 and w[0] == "step":
                lines.append((t, int(w[1]), float(w[3])))
        _, status, ru = os.wait4(p.pid, 0)  # Popen.wait has no rusage
        wall = time.perf_counter() - t0
        p.returncode = rc = os.waitstatus_to_exitcode(status)
        p.stdout.close()
        if rc:
            err.seek(0)
            raise RuntimeError("exit %d: %s\n%s" % (rc, " ".join(cmd), err.read()[-2000:]))
    return wall, ru.ru_utime + ru.ru_stime, lines


def tgc_cmd(m, threads, steps, extra=()):
    return ([m["exe"], "--weights", m["weights"]] + m["in_args"]
            + ["--steps", str(steps), "--threads", str(threads), "--save-weights", m["saved"]]
            + list(extra))


def tgc_start(m, threads):
    """The median wall and CPU times of `--steps 0`: everything but the steps."""
    runs = [run_exe(tgc_cmd(m, threads, 0)) for _ in range(5)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def tgc_time(m, threads, n, start):
    k = max(1, n // CHUNKS)
    wall, cpu, lines = run_exe(tgc_cmd(m, threads, n, ["--log-every", str(k)]))
    gaps = [(t1 - t0) / (s1 - s0) for (t0, s0, _), (t1, s1, _) in zip(lines, lines[1:])]
    return dict(us=(wall - start[0]) / n * 1e6, cpu_us=(cpu - start[1]) / n * 1e6,
                start_s=start[0], steady_us=statistics.median(gaps) * 1e6 if gaps else None,
                final_loss=lines[-1][2] if lines else None)


def torch_steps(model, opt, data, n, chunk=None):
    """n training steps; returns (seconds in all, [seconds per chunk of
    `chunk` steps], the last loss, CPU seconds of all the process's threads)."""
    ts, loss = [], None
    c0 = time.process_time()
    t0 = tc = time.perf_counter()
    for s in range(n):
        opt.zero_grad()
        loss = model.loss(*data[s % len(data)])
        loss.backward()
        opt.step()
        if chunk and (s + 1) % chunk == 0:
            t = time.perf_counter()
            ts.append(t - tc)
            tc = t
    return time.perf_counter() - t0, ts, float(loss), time.process_time() - c0


def torch_estimate(m):
    """Warms up (on a copy) and returns the time of one step in us."""
    model, opt = fresh(m)
    data = batches(m)
    torch_steps(model, opt, data, 3)
    return torch_steps(model, opt, data, 3)[0] / 3 * 1e6


def torch_time(m, n):
    data = batches(m)
    model, opt = fresh(m)  # a warm-up of its own: allocations, thread pools
    torch_steps(model, opt, data, max(3, min(20, n // 10)))
    del model, opt
    model, opt = fresh(m)
    k = max(1, n // CHUNKS)
    total, chunks, loss, cpu = torch_steps(model, opt, data, n, k)
    return model, dict(us=total / n * 1e6, steady_us=statistics.median(chunks) / k * 1e6,
                       cpu_us=cpu / n * 1e6, final_loss=loss)


def check(m, model):
    """max over params of max |tgc - torch| / max |torch| after the same
    steps: (that max, its param) without m's zero-gradient elements, and
    (the max over those alone, their name) when m has any."""
    got = read_safetensors(m["saved"])
    assert set(got) == set(model.TG_NAMES), (sorted(got), sorted(model.TG_NAMES))
    worst, name, zero = 0.0, None, (0.0, None)
    for tg_name, pt in model.TG_NAMES.items():
        want = model.get_parameter(pt).detach().double().numpy()
        err = np.abs(got[tg_name].astype(np.float64) - want)
        scale = float(np.abs(want).max()) or 1.0
        if tg_name in m.get("zero_grad", {}):
            sl = m["zero_grad"][tg_name]
            zero = (float(err[sl].max()) / scale, "%s[%d:%d]" % (tg_name, sl.start, sl.stop))
            err[sl] = 0
        rel = float(err.max()) / scale
        if rel >= worst:
            worst, name = rel, tg_name
    return (worst, name), zero


def early_check(m, threads):
    """check() after CHECK_STEPS steps: before a ReLU unit of the MLP lands
    on its kink (see the docstring)."""
    n = CHECK_STEPS
    run_exe(tgc_cmd(m, threads, n))
    model, opt = fresh(m)
    torch_steps(model, opt, batches(m), n)
    return check(m, model)[0][0]


def eager_gemm_time(m, n):
    """PyTorch's matrix products in a step: the self time of aten::mm,
    addmm and bmm (OpenBLAS calls, as tgc's are) over n profiled steps."""
    from torch.profiler import ProfilerActivity, profile
    model, opt = fresh(m)
    data = batches(m)
    torch_steps(model, opt, data, 3)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        total = torch_steps(model, opt, data, n)[0]
    gemm = sum(e.self_cpu_time_total for e in prof.key_averages()
               if e.key in ("aten::mm", "aten::addmm", "aten::bmm"))
    return gemm / n, total / n * 1e6


def forward_time(m, threads, budget):
    """The loss alone: the non-training build's --bench median, and the
    PyTorch module under inference_mode (bench/run.py's helpers)."""
    base = [m["fwd_exe"], "--weights", m["weights"]] + m["fwd_args"] + ["--threads", str(threads)]
    est = B.parse_bench(sh(base + ["--bench", "3"]))["median_us"]
    tg = B.parse_bench(sh(base + ["--bench", str(B.runs_for(est, budget))]))["median_us"]
    model, _ = fresh(m)
    args = batches(m)[0]
    est = B.torch_warmup(model.loss, args, budget)
    return tg, B.torch_runs(model.loss, args, B.runs_for(est, budget))["median_us"]


def measure(m, threads, a):
    """One model at one thread count: the row for print_timings and details."""
    r = dict(model=m["label"], batch=m["batch"], threads=threads)
    start = tgc_start(m, threads)
    est_tgc = max(0.0, run_exe(tgc_cmd(m, threads, 5))[0] - start[0]) / 5 * 1e6
    est_torch = torch_estimate(m)
    n = B.runs_for(max(est_tgc, est_torch), a.budget / a.rounds)
    n -= n % CHUNKS if n >= 2 * CHUNKS else 0
    r["steps"] = n
    log("  %d threads: %d rounds of %d steps (estimates: tgc %.2f ms, eager %.2f ms per step)"
        % (threads, a.rounds, n, est_tgc / 1e3, est_torch / 1e3))
    # Rounds of tgc then PyTorch, so that a change in the machine's load
    # hits both sides alike; each side's time is the median of its rounds.
    tgs, tts = [], []
    for _ in range(a.rounds):
        tgs.append(tgc_time(m, threads, n, tgc_start(m, threads) if tgs else start))
        model, tt = torch_time(m, n)
        tts.append(tt)
        log("    tgc %.2f ms/step (steady %.2f, CPU %.2f), eager %.2f ms/step (steady %.2f, "
            "CPU %.2f)" % (tgs[-1]["us"] / 1e3, (tgs[-1]["steady_us"] or 0) / 1e3,
                          tgs[-1]["cpu_us"] / 1e3, tt["us"] / 1e3, tt["steady_us"] / 1e3,
                          tt["cpu_us"] / 1e3))

    def med(rounds, key):
        v = [x[key] for x in rounds if x[key] is not None]
        return statistics.median(v) if v else None

    r.update(tgc_us=med(tgs, "us"), eager_us=med(tts, "us"), script_us=None,
             tgc_steady_us=med(tgs, "steady_us"), eager_steady_us=med(tts, "steady_us"),
             tgc_cpu_us=med(tgs, "cpu_us"), eager_cpu_us=med(tts, "cpu_us"),
             tgc_rounds_us=[x["us"] for x in tgs], eager_rounds_us=[x["us"] for x in tts],
             tgc_start_s=[x["start_s"] for x in tgs], tgc_final_loss=tgs[-1]["final_loss"],
             eager_final_loss=tts[-1]["final_loss"])
    log("    final loss tgc %.6g, eager %.6g" % (r["tgc_final_loss"], r["eager_final_loss"]))
    if not a.no_check:
        (r["max_rel_diff"], r["worst_param"]), zero = check(m, model)
        r["match"] = r["max_rel_diff"] <= 1e-4
        log("    params after %d steps: max |tgc - torch| / max |torch| = %.2e (%s)"
            % (n, r["max_rel_diff"], r["worst_param"]))
        if zero[1]:
            r["zero_grad_rel_diff"], r["zero_grad_param"] = zero
            log("    %s, whose exact gradient is 0: %.2e" % (zero[1], zero[0]))
        r["early_rel_diff"] = early_check(m, threads)
        log("    params after %d steps: %.2e" % (CHECK_STEPS, r["early_rel_diff"]))
    if not a.no_breakdown:
        r["fwd_tgc_us"], r["fwd_eager_us"] = forward_time(m, threads, a.budget / 2)
        log("    forward only (the loss): tgc %.2f ms, eager %.2f ms"
            % (r["fwd_tgc_us"] / 1e3, r["fwd_eager_us"] / 1e3))
        r["eager_gemm_us"], r["eager_profiled_us"] = eager_gemm_time(m, max(3, n // 10))
        log("    eager's matrix products: %.2f ms of a %.2f ms profiled step"
            % (r["eager_gemm_us"] / 1e3, r["eager_profiled_us"] / 1e3))
    return r


# ---------------------------------------------------------------------------
# the report


def machine():
    name = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores (%d usable), %s %s" % (name, os.cpu_count() or 0,
                                              len(os.sched_getaffinity(0)), platform.system(),
                                              platform.release())


def report(rows, threads_list, models, loads, a):
    print("training steps, %s; PyTorch %s eager, OMP_WAIT_POLICY=%s; load %s"
          % (time.strftime("%Y-%m-%d %H:%M"), torch.__version__,
             os.environ.get("OMP_WAIT_POLICY", "(unset)"), B.loadavg()))
    print("machine: " + machine())
    print("load average (1 min) at the start and after each thread count: "
          + ", ".join("%.2f" % x for x in loads))
    ncpu = len(os.sched_getaffinity(0))
    # Our own runs add up to T to the load: a load above the cores at any
    # point, or above half of them before we started, is someone else's.
    if loads[0] > ncpu / 2 or max(loads) > ncpu + 0.5:
        print("NOTE: the machine was LOADED (load average up to %.2f on %d cores): the "
              "%d-thread times are disturbed; the 1-thread rows and the steady medians less so"
              % (max(loads), ncpu, threads_list[0]))
    for m in models:
        print("%s: batch %d, %s; tgc loss %s; %s"
              % (m["label"], m["batch"], " ".join("-D %s=%d" % kv for kv in m["defines"].items()),
                 m["loss_form"], " ".join(m["flags"])))
    for T in threads_list:
        sel = [r for r in rows if r["threads"] == T]
        print()
        print("threads=%d (tgc --threads, torch.set_num_threads, openblas_set_num_threads); "
              "ms per training step; check: max |tgc - torch| / max |torch| over the params "
              "after the timed steps" % T)
        C.print_timings([dict(r, max_abs_diff=r["max_rel_diff"]) if "max_rel_diff" in r else r
                         for r in sel], 14)
        for r in sel:
            name = next(m["name"] for m in models if m["label"] == r["model"])
            target = TARGETS.get(name)
            ratio = r["eager_us"] / r["tgc_us"]
            print("  %s: %d rounds of N=%d steps, ms/step tgc %s, eager %s; steady (median "
                  "over tenths) tgc %.2f ms, eager %.2f ms, eager/tgc %.2f; tgc --steps 0 %s s; "
                  "GFLOP/s tgc %.1f, eager %.1f%s"
                  % (r["model"], len(r["tgc_rounds_us"]), r["steps"],
                     " ".join("%.2f" % (x / 1e3) for x in r["tgc_rounds_us"]),
                     " ".join("%.2f" % (x / 1e3) for x in r["eager_rounds_us"]),
                     (r["tgc_steady_us"] or 0) / 1e3, r["eager_steady_us"] / 1e3,
                     r["eager_steady_us"] / r["tgc_steady_us"] if r["tgc_steady_us"] else 0,
                     " ".join("%.3f" % x for x in r["tgc_start_s"]),
                     r["gflop"] / r["tgc_us"] * 1e6, r["gflop"] / r["eager_us"] * 1e6,
                     "; target >= %.1fx: %s" % (target, "met" if ratio >= target else "NOT MET")
                     if target else ""))
            print("    CPU time per step (all the process's threads, spinning included): "
                  "tgc %.2f ms, eager %.2f ms, eager/tgc %.2f"
                  % (r["tgc_cpu_us"] / 1e3, r["eager_cpu_us"] / 1e3,
                     r["eager_cpu_us"] / r["tgc_cpu_us"]))
            if "zero_grad_param" in r:
                print("    check without %s, whose exact gradient is 0 (softmax is shift-"
                      "invariant; AdamW normalises the rounding noise there into steps of "
                      "~lr): with it %.1e" % (r["zero_grad_param"], max(r["zero_grad_rel_diff"],
                                                                      r["max_rel_diff"])))
            if "early_rel_diff" in r:
                print("    check after %d steps: %.1e" % (CHECK_STEPS, r["early_rel_diff"]))
            if "fwd_tgc_us" in r:
                print("    forward only (the loss, no gradients): tgc %.2f ms, eager %.2f ms, "
                      "eager/tgc %.2f; step/forward tgc %.2f, eager %.2f"
                      % (r["fwd_tgc_us"] / 1e3, r["fwd_eager_us"] / 1e3,
                         r["fwd_eager_us"] / r["fwd_tgc_us"], r["tgc_us"] / r["fwd_tgc_us"],
                         r["eager_us"] / r["fwd_eager_us"]))
                share = r["eager_gemm_us"] / r["eager_profiled_us"]
                print("    eager's matrix products (torch.profiler, aten::mm/addmm/bmm self time): "
                      "%.0f%% of its profiled step; at that share of the timed step, %.2f ms: "
                      "eager/tgc would be %.2f if tgc's steps were its products alone"
                      % (100 * share, share * r["eager_us"] / 1e3, 1 / share))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    C.add_common_args(ap, MODELS)
    # --batches 0: each model's own batch; --budget: seconds per side, all
    # rounds together (4: about 10 steps of the block per round)
    ap.set_defaults(batches="0", budget=4.0)
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds of tgc and PyTorch (default 3); the budget is "
                         "split between them")
    ap.add_argument("--no-single-thread", action="store_true",
                    help="time at --threads only (default: also at 1 thread)")
    ap.add_argument("--no-breakdown", action="store_true",
                    help="skip the forward-only builds and the profile of eager's matrix products")
    a = ap.parse_args()
    if a.threads < 1 or a.rounds < 1 or a.budget <= 0:
        ap.error("--threads and --rounds must be at least 1, --budget positive")
    names, bs = C.apply_common_args(ap, a, MODELS)  # --batches 0: each model's own
    threads_list = [a.threads] + ([1] if a.threads != 1 and not a.no_single_thread else [])
    tgc = B.build_tgc(a)
    work = tempfile.mkdtemp(prefix="tgc-bench-train-")
    loads = [os.getloadavg()[0]]
    models, rows, failed = [], [], False
    try:
        for name in names:
            for b in bs:
                make = mlp_model if name == "mlp" else block_model
                m = make(tgc, work, b or (64 if name == "mlp" else 8))
                log("%s batch %d: building ..." % (name, m["batch"]))
                try:
                    prepare(tgc, m, work, not a.no_breakdown)
                except RuntimeError as e:
                    log("  build failed: %s" % e)
                    failed = True
                    continue
                log("  " + " ".join(m["build_cmd"][1:]) + "  (%.2f s)" % m["build_s"])
                models.append(m)
        for T in threads_list:
            # apply_common_args sets torch's and OpenBLAS's threads from a.threads
            C.apply_common_args(ap, argparse.Namespace(**dict(vars(a), threads=T)), MODELS)
            for m in models:
                log("%s batch %d, %d threads:" % (m["name"], m["batch"], T))
                try:
                    r = measure(m, T, a)
                except RuntimeError as e:
                    log("  failed: %s" % e)
                    failed = True
                    continue
                r["gflop"] = m["step_flops"] / 1e9
                rows.append(r)
            loads.append(os.getloadavg()[0])
    finally:
        if a.keep:
            log("work files kept in " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if rows:
        report(rows, threads_list, models, loads, a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(threads=threads_list, loads=loads, machine=machine(),
                           commands=[" ".join(m["build_cmd"][1:]) for m in models], rows=rows),
                      f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
