#!/usr/bin/python3
"""`tgc report --train` (issue 28, items 5 and 7): sharding as DeepSpeed
counts it, and a training report that says what the step holds.

- The model states of `--shard N --zero 2|3` against DeepSpeed's
  estimators, reimplemented below from its source
  (microsoft/DeepSpeed, deepspeed/runtime/zero/stage_1_and_2.py
  `estimate_zero2_model_states_mem_needs` and deepspeed/runtime/zero/
  stage3.py `estimate_zero3_model_states_mem_needs`, with
  cpu_offload=False; total_params and largest_layer_params as their
  `model_to_params` counts them, over the nn.Module the graph spells), for
  three model sizes and several device counts, under mixed-bf16 AdamW
  (DeepSpeed's 2 + 2 + 12 bytes per param): equal to the byte.
- The stages order as they must (1 >= 2 >= 3 in model states), the
  buckets are DeepSpeed's defaults, and the per-device peak adds up.
- The verdict, `budget.fits` and `--fit` hold the per-device peak to the
  budget: a budget between the per-device and the one-device peak FITS
  with --shard and does not without it.
- The report names the precision as given (a plain AdamW run is f32, not
  "mixed"), lists only the storage rows `--train` accepts (f32,
  mixed-bf16, mixed-f16), and counts gradients where they live: never
  more in the arena at its peak than the arena holds.

Plans only (nothing is compiled to machine code): a few seconds.
Last line: `report_shard: N failure(s)`; exit status 1 on any."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


# --- DeepSpeed's estimators (cpu_offload=False branches), from its source ---

def estimate_zero2_model_states_mem_needs(total_params, num_gpus_per_node=1, num_nodes=1,
                                          cpu_offload=True, additional_buffer_factor=1.5):
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu_mem = 2 * total_params
        cpu_mem = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        gpu_mem = 4 * total_params + int(16 * total_params / total_gpus)
        cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem)


def estimate_zero3_model_states_mem_needs(total_params, largest_layer_params, num_gpus_per_node=1,
                                          num_nodes=1, cpu_offload=True, cpu_offload_params=True,
                                          zero_init=True, additional_buffer_factor=1.5):
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    largest_layer_memory = 4 * largest_layer_params
    if cpu_offload:
        if cpu_offload_params:
            gpu_mem = largest_layer_memory
            cpu_mem = total_params * 18 * gpus_factor * additional_buffer_factor
        else:
            gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)
            cpu_mem = total_params * 16 * gpus_factor * additional_buffer_factor
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        cpu_mem = largest_layer_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


def model_to_params(model):
    """DeepSpeed's (stage3.py): shared params once; a layer is a module's own params."""
    total_params = sum(dict((p.data_ptr(), p.numel()) for p in model.parameters()).values())
    largest_layer_params = 0
    for m in model.modules():
        layer_params = sum(p.numel() for p in m.parameters(recurse=False))
        largest_layer_params = max(largest_layer_params, layer_params)
    return total_params, largest_layer_params


# --- the models: an MLP of three sizes, as a .tg graph and an nn.Module ----

def mlp(dims):
    lines = ["graph mlp(batch = 4)", f"input  x : f32[batch, {dims[0]}]",
             f"input  t : f32[batch, {dims[-1]}]"]
    h = "x"
    for i in range(len(dims) - 1):
        lines.append(f"param  fc{i}.weight : f32[{dims[i + 1]}, {dims[i]}]")
        lines.append(f"param  fc{i}.bias : f32[{dims[i + 1]}]")
    for i in range(len(dims) - 1):
        y = f"linear({h}, fc{i}.weight, fc{i}.bias)"
        if i < len(dims) - 2:
            lines.append(f"h{i} = relu({y})")
            h = f"h{i}"
        else:
            lines.append(f"output loss = mean(({y} - t) ** 2)")
    layers = []
    for i in range(len(dims) - 1):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers.append(torch.nn.ReLU())
    return "\n".join(lines) + "\n", torch.nn.Sequential(*layers)


def report(tgc, src, *flags):
    p = subprocess.run([tgc, "report", src, "--train", "loss", "--optimizer", "adamw", "--json"]
                       + list(flags), capture_output=True, text=True)
    if p.returncode:
        print(p.stderr[-2000:])
        return None
    return json.loads(p.stdout)


def text(tgc, src, *flags):
    p = subprocess.run([tgc, "report", src, "--train", "loss", "--optimizer", "adamw"]
                       + list(flags), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


SIZES = {"small": [64, 256, 16], "medium": [512, 2048, 2048, 512], "large": [1024, 8192, 4096, 1000]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    args = ap.parse_args()
    tgc = os.path.abspath(args.tgc)
    with tempfile.TemporaryDirectory(prefix="tgc-shard-") as tmp:
        for name, dims in SIZES.items():
            g, module = mlp(dims)
            src = os.path.join(tmp, name + ".tg")
            with open(src, "w") as f:
                f.write(g)
            P, L = model_to_params(module)
            del module
            for n in (2, 8, 7):
                r2 = report(tgc, src, "--precision", "mixed-bf16", "--shard", str(n), "--zero", "2")
                r3 = report(tgc, src, "--precision", "mixed-bf16", "--shard", str(n), "--zero", "3")
                r1 = report(tgc, src, "--precision", "mixed-bf16", "--shard", str(n), "--zero", "1")
                rd = report(tgc, src, "--precision", "mixed-bf16", "--shard", str(n))
                if not (r1 and r2 and r3 and rd):
                    check(False, f"{name}: report --shard {n}")
                    continue
                s1, s2, s3 = (r["training"]["shard"] for r in (r1, r2, r3))
                want2 = estimate_zero2_model_states_mem_needs(P, n, cpu_offload=False)[1]
                want3 = estimate_zero3_model_states_mem_needs(P, L, n, cpu_offload=False)[1]
                check(s2["total_params"] == P and s3["largest_layer_params"] == L,
                      f"{name}: P {s2['total_params']} == {P}, L {s3['largest_layer_params']} == {L}")
                check(s2["model_states_bytes"] == want2,
                      f"{name}, {n} devices, ZeRO-2: model states {s2['model_states_bytes']} == "
                      f"DeepSpeed's {want2}")
                check(s3["model_states_bytes"] == want3,
                      f"{name}, {n} devices, ZeRO-3: model states {s3['model_states_bytes']} == "
                      f"DeepSpeed's {want3}")
                check(rd["training"]["shard"]["zero"] == 3 and
                      rd["training"]["shard"]["model_states_bytes"] == want3,
                      f"{name}, {n} devices: --zero defaults to 3")
                check(s1["model_states_bytes"] >= s2["model_states_bytes"] >
                      s3["model_states_bytes"] or L * 4 > 2 * P,
                      f"{name}, {n} devices: model states fall with the stage "
                      f"({s1['model_states_bytes']}, {s2['model_states_bytes']}, "
                      f"{s3['model_states_bytes']})")
                # The arena's gradients and bf16 weight copies at its peak are
                # model states (counted once, there), not activations.
                t2 = r2["training"]
                check(s2["activations_bytes"] ==
                      r2["activations"]["arena_bytes"] - t2["grads_at_peak_bytes"]
                      - t2["weight_copies_at_peak_bytes"],
                      f"{name}, {n} devices: activations {s2['activations_bytes']} = the arena "
                      f"less {t2['grads_at_peak_bytes']} B of gradients and "
                      f"{t2['weight_copies_at_peak_bytes']} B of bf16 weight copies")
                for z, s in ((1, s1), (2, s2), (3, s3)):
                    gather = min(5 * 10**7 if z == 3 else 5 * 10**8, P) * 2
                    check(s["reduce_bucket_bytes"] == min(5 * 10**8, P) * 2 and
                          s["prefetch_bucket_bytes" if z == 3 else "allgather_bucket_bytes"] == gather,
                          f"{name}, ZeRO-{z}: buckets of DeepSpeed's default sizes, bf16")
                    parts = ("model_states_bytes", "replicated_state_bytes", "reduce_bucket_bytes",
                             "prefetch_bucket_bytes" if z == 3 else "allgather_bucket_bytes",
                             "update_bytes", "activations_bytes", "other_bytes")
                    check(sum(s[k] for k in parts) == s["per_device_peak_bytes"],
                          f"{name}, ZeRO-{z}: the per-device peak is the sum of its terms")
            # The verdict holds the per-device peak to the budget. Not for the
            # large model: its gathered largest layer (73% of the params) and
            # DeepSpeed's buckets outweigh what 8 devices save, and the report
            # says so (the per-device peak is above the one-device one).
            if name == "large":
                continue
            r = report(tgc, src, "--shard", "8")
            peak, dev = r["peak_bytes"], r["training"]["shard"]["per_device_peak_bytes"]
            if dev < peak:
                budget = str((dev + peak) // 2)
                rs = report(tgc, src, "--shard", "8", "--budget", budget)
                r1 = report(tgc, src, "--budget", budget)
                check(rs["budget"]["fits"] and not r1["budget"]["fits"],
                      f"{name}: a budget of {budget} B fits {dev} B per device, not {peak} B whole")
                row = [x for x in rs["by_dtype"] if x["dtype"] == "f32"]
                check(row and row[0]["peak_bytes"] == dev and row[0]["fits"],
                      f"{name}: the f32 storage row's peak is per device too ({row})")
                rc, out, _ = text(tgc, src, "--shard", "8", "--budget", budget)
                check(rc == 0 and "FITS (per device, sharded over 8, ZeRO-3)" in out.splitlines()[0],
                      f"{name}: the text verdict says FITS per device ({out.splitlines()[0]})")
            else:
                check(False, f"{name}: sharding over 8 lowers the peak ({dev} vs {peak})")
        # --fit holds the per-device peak: with a batch dimension, sharding
        # fits a larger batch in the same budget.
        src = os.path.join(tmp, "medium.tg")
        fit0 = report(tgc, src, "--budget", "300MiB", "--fit", "batch")
        fit8 = report(tgc, src, "--budget", "300MiB", "--fit", "batch", "--shard", "8")
        check(fit0 and fit8 and fit8["max_fit"]["value"] > fit0["max_fit"]["value"],
              f"--fit batch with --shard 8 fits more per device "
              f"({fit8 and fit8['max_fit']['value']} > {fit0 and fit0['max_fit']['value']})")

        # On CUDA the bf16 copies of the weights live in the arena (the CPU's
        # kernels cast as they read): the model states count them, so the
        # activations do not.
        deep = os.path.join(tmp, "deep.tg")
        with open(deep, "w") as f:
            f.write("graph deep(batch = 512)\ninput x : f32[batch, 256]\n" +
                    "".join(f"param w{i} : f32[256, 256]\n" for i in range(16)) +
                    "".join(f"h{i} = tanh(linear({'x' if i == 0 else f'h{i - 1}'}, w{i}))\n"
                            for i in range(16)) + "output loss = mean(h15 * h15)\n")
        r = report(tgc, deep, "--precision", "mixed-bf16", "--target", "cuda", "--shard", "8")
        t, s = r["training"], r["training"]["shard"]
        check(t["weight_copies_at_peak_bytes"] > 0 and s["activations_bytes"] ==
              r["activations"]["arena_bytes"] - t["grads_at_peak_bytes"]
              - t["weight_copies_at_peak_bytes"],
              f"cuda: activations {s['activations_bytes']} = the arena less "
              f"{t['grads_at_peak_bytes']} B of gradients and "
              f"{t['weight_copies_at_peak_bytes']} B of bf16 weight copies")

        # --checkpoint auto under --shard fits the per-device peak: this
        # step fits 28 MiB whole, not per device over 2 at ZeRO-1 (the
        # buckets), and recomputing brings the per-device peak under it.
        r = report(tgc, deep, "--shard", "2", "--zero", "1", "--budget", "28MiB", "--checkpoint",
                   "auto")
        ck = r["training"].get("checkpoint", {})
        check(ck.get("fits") and ck.get("recomputed", 0) > 0 and
              ck.get("peak_bytes_without", 0) > 28 * 2**20 >=
              r["training"]["shard"]["per_device_peak_bytes"] == ck.get("peak_bytes") and
              r["budget"]["fits"],
              f"--checkpoint auto --shard 2: per device {ck.get('peak_bytes_without')} -> "
              f"{ck.get('peak_bytes')} B <= 28 MiB ({ck.get('recomputed')} recomputed)")
        check(r.get("cpu", {}).get("levels"),
              "--checkpoint auto: the report rebuilt for the recomputed step keeps its cpu levels")

        # A truthful report.
        r = report(tgc, src)
        check(r["precision"] == "f32", f"a plain AdamW run's precision is f32 ({r['precision']})")
        # cli.md keeps a row per storage choice in by_dtype; those --train
        # refuses carry no figures (-1, ranked last) and say so.
        rows = sorted(x["dtype"] for x in r["by_dtype"] if x["peak_bytes"] >= 0)
        refused = sorted(x["dtype"] for x in r["by_dtype"] if x.get("refused_by_train"))
        check(rows == ["f32", "mixed-bf16", "mixed-f16"] and
              refused == ["bf16", "f16", "int4", "int8"] and
              all(x["peak_bytes"] == -1 and x["params_bytes"] == -1 for x in r["by_dtype"]
                  if x["dtype"] in refused) and
              [x["dtype"] for x in r["by_dtype"][-4:]] == [x["dtype"] for x in r["by_dtype"]
                                                          if x["dtype"] in refused],
              f"storage figures only for what --train accepts ({rows}; refused {refused})")
        t = r["training"]
        check(t["grads_at_peak_bytes"] <= r["activations"]["arena_bytes"] and
              t["grads_at_peak_bytes"] <= t["grads_stored_bytes"] <= t["grads_bytes"],
              f"gradients counted where they live: {t['grads_at_peak_bytes']} at the arena's peak "
              f"<= {t['grads_stored_bytes']} stored <= {t['grads_bytes']} for every param")
        check(t["grads_stored_bytes"] > 0 or t["grads_fused"] > 0,
              f"every gradient is found: {t['grads_stored_bytes']} B stored, "
              f"{t['grads_fused']} fused into their updates")
        rc, out, _ = text(tgc, src)
        check("made in the arena" not in out and "mixed" not in out.split("storage choices")[0] and
              "int8" not in out and " bf16 " not in out,
              "the text report: no bf16/int8 rows, precision f32, gradients where they live")
        rm = report(tgc, src, "--precision", "mixed-bf16")
        check(rm and rm["precision"] == "mixed-bf16", "--precision mixed-bf16 is named as given")

        # Bad flags: exit 1 naming the flag.
        for flags, what in ((["--zero", "2"], "--zero 2: needs --shard"),
                            (["--shard", "8", "--zero", "4"], "--zero 4"),
                            (["--shard", "0"], "--shard 0")):
            rc, _, err = text(tgc, src, *flags)
            check(rc == 1 and what in err, f"{' '.join(flags)}: exit 1 ({err.strip()[:90]})")
    print(f"report_shard: {len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
