"""Whole-graph gradient cases: the shipped examples at small sizes, each
with a scalar loss appended to a copy of the file (the example itself is
read, never copied here), and the conv net of tests/grad/convnet.tg. Every
float param is trained except batch norms' running statistics, which are
frozen (torch.autograd has no derivative for them: F.batch_norm's running
stats are buffers).

The models run at f32 only (the conv net at f32 and f64), with the
suite's tolerances unscaled: their gradients stay within a few percent of
them (run_grad.py -v prints each case's worst error / allowed).
"""

import os
import re

# example: (defines, loss lines appended, input specs, float dtype runs)
EXAMPLES = {
    "mlp": (dict(batch=4), """
input target : f32[batch, 10]
output loss = -(log(probs) * target).sum() / batch
""", {"x": "randn", "w1": "randn:0.05", "w2": "randn:0.06", "b1": "randn:0.1", "b2": "randn:0.1",
      "target": "pos"}),
    "transformer_block": (dict(batch=2, seq=6), """
input gy : f32[batch, seq, 256]
output loss = (y * gy).sum() + (y * y).mean()
""", {"w_qkv": "randn:0.1", "w_o": "randn:0.05", "w_fc": "randn:0.05", "w_proj": "randn:0.03",
      "ln1_w": "pm1", "ln2_w": "pm1", "b_qkv": "randn:0.1", "b_o": "randn:0.1",
      "b_fc": "randn:0.1", "b_proj": "randn:0.1", "ln1_b": "randn:0.1", "ln2_b": "randn:0.1"}),
    "rms_attention": (dict(batch=2, seq=5), """
output loss = (y * y).mean()
""", {"norm_w": "pm1", "wq": "randn:0.1", "wk": "randn:0.1", "wv": "randn:0.1",
      "wo": "randn:0.1"}),
    "gated_mlp": (dict(batch=1, seq=3), """
input gy : f32[batch, seq, 512]
output loss = (y * gy).sum()
""", {"w_gate_up": "randn:0.05", "w_down": "randn:0.03"}),
    "embedding_classifier": (dict(batch=4, seq=6, vocab=20), """
input target : f32[batch, classes]
output loss = -(logp * target).sum()
""", {"ids": "idx:20", "table": "randn", "ln_w": "pm1", "ln_b": "randn:0.1", "w": "randn:0.3",
      "b": "randn:0.1", "target": "pos"}),
    "kws_conv1d": (dict(batch=2, frames=16), """
input target : f32[batch, classes]
output loss = -(log_softmax(logits, dim=1) * target).sum()
""", {"re:weight$": "randn:0.1", "re:running_var$": "pos", "re:bn.weight$": "pm1",
      "target": "pos"}),
    "linear_regression": (dict(n=7), "", {}),
    "mlp_classifier": (dict(batch=6), "", {"onehot": "pos", "w1": "randn:0.5", "w2": "randn:0.2"}),
}
RUNNING_STATS = "re:running_(mean|var)$"


def _graph_line_dims(src):
    m = re.search(r"^graph\s+\w+\s*\((.*)\)\s*$", src, re.M)
    return {k.strip(): v.strip() for k, v in (p.split("=") for p in m.group(1).split(","))}


def cases(GradCase, root):
    out = []
    for name, (defines, loss, specs) in EXAMPLES.items():
        path = os.path.join(root, "examples", name + ".tg")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            src = f.read()
        src = src.rstrip("\n") + "\n" + loss.strip("\n") + "\n"
        # the defines replace the graph line's defaults, so that the oracle
        # (which evaluates the graph line) and tgc see the same sizes
        dims = _graph_line_dims(src)
        dims.update({k: str(v) for k, v in defines.items()})
        line = "(" + ", ".join("%s = %s" % kv for kv in dims.items()) + ")"
        src = re.sub(r"^(graph\s+\w+\s*)\(.*\)\s*$", lambda m: m.group(1) + line, src,
                     count=1, flags=re.M)
        out.append(GradCase("example_%s" % name, src, "f32", ys=None, inputs=specs,
                            freeze=RUNNING_STATS, asan=name in ("mlp", "linear_regression"),
                            group="graph"))
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "convnet.tg")) as f:
        conv = f.read()
    specs = {"re:weight$": "randn:0.3", "re:running_var$": "pos", "bn.weight": "pm1",
             "onehot": "pos"}
    for dt in ("f32", "f64"):
        out.append(GradCase("convnet_%s" % dt, conv.replace("f32[", dt + "["), dt, ys=None,
                            inputs=specs, freeze=RUNNING_STATS, asan=dt == "f32", group="graph"))
    return out
