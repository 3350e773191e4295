"""The examples/*.tg graphs as diff cases.

Each example runs three ways:
  - `example_NAME_file`: every param in the weights file (values drawn with
    each param's initialiser scale: randn(std) as std, ones as 1 +- 0.5,
    zeros as small noise), compared value by value with PyTorch;
  - `example_NAME_small`: the same at small symbolic dimensions (-D);
  - `example_NAME_precision_P`: the small variant under `--precision P`
    (f16, bf16), a closeness check (diff.PRECISION_TOLERANCE);
  - `example_NAME_init`: no weights file. randn/uniform initialisers are
    tgc's own (their values cannot be predicted here), so only the outputs'
    dtype, shape and finiteness are checked.
"""

import os
import re

# Small symbolic dimensions for the -D variant, and index ranges for integer inputs.
SMALL = {
    "embedding_classifier": {"batch": 3, "seq": 5, "vocab": 50},
    "gated_mlp": {"batch": 2, "seq": 3},
    "mlp": {"batch": 3},
    "rms_attention": {"batch": 1, "seq": 7},
    "transformer_block": {"batch": 2, "seq": 9},
}
INDEX_INPUTS = {"embedding_classifier": {"ids": "vocab"}}
# Whole models (def/repeat, full size by default): tests/models/run_models.py
# compares them with PyTorch modules at small sizes; the generating ones
# (a KV cache as state, a run-time position): tests/generate.
MODEL_EXAMPLES = ("gpt2", "llama", "resnet18", "resnet50", "mobilenet_v3", "kws_conv1d",
                  "gpt2_generate", "llama_generate")


def _spec(init):
    m = re.match(r"\s*randn\s*\((.*)\)", init or "")
    if m:
        s = re.search(r"std\s*=\s*([0-9.eE+-]+)", m.group(1))
        return "randn:%s" % (s.group(1) if s else "1.0")
    if init and init.strip().startswith("ones"):
        return "pm1"
    return "randn:0.1"


def _dims(src):
    m = re.search(r"^graph\s+\w+\s*\((.*)\)", src, re.M)
    out = {}
    if m:
        for part in m.group(1).split(","):
            k, v = part.split("=")
            out[k.strip()] = int(v)
    return out


def cases(Case, root):
    out = []
    d = os.path.join(root, "examples")
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".tg"):
            continue
        name = fn[:-3]
        if name in MODEL_EXAMPLES:
            continue
        with open(os.path.join(d, fn)) as f:
            src = f.read()
        specs = {}
        for m in re.finditer(r"^param\s+(\w+)\s*:[^=\n]*(?:=(.*))?$", src, re.M):
            specs[m.group(1)] = _spec(m.group(2))
        small = SMALL.get(name, {})
        for variant, defines in (("file", {}), ("small", small)):
            dims = dict(_dims(src), **defines)
            sp = dict(specs)
            for inp, dim in INDEX_INPUTS.get(name, {}).items():
                sp[inp] = "idx:%d" % dims[dim]
            out.append(Case("example_%s_%s" % (name, variant), src, inputs=sp, defines=defines,
                            tol="long", add_outputs=False, asan=(variant == "small"),
                            group="example"))
            if variant == "small":
                for p in ("f16", "bf16"):
                    out.append(Case("example_%s_precision_%s" % (name, p), src, inputs=sp,
                                    defines=defines, add_outputs=False, precision=p,
                                    group="example"))
        sp = {inp: "idx:%d" % _dims(src)[dim] for inp, dim in INDEX_INPUTS.get(name, {}).items()}
        out.append(Case("example_%s_init" % name, src, inputs=sp, weights="init", check="finite",
                        add_outputs=False, group="example"))
    return out
