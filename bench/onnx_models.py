"""bench/onnx.py's models: construction, ONNX export and FLOP count.

Seven models (issue 25): torchvision's resnet50, mobilenet_v3_large,
efficientnet_b0, convnext_tiny, regnet_y_800mf and vit_b_16 on 224x224
images, and `bert4`, a 4-layer BERT-base encoder on sequences of 128 tokens.

Weights are random (seed 0), eval mode, with two changes from the modules'
own initialisation so that the outputs are O(1) and depend on every layer
(with the default batch-norm statistics the logits vanish; ViT's head starts
at zero): every Linear layer is drawn N(0, 1/in) with a N(0, 0.01) bias, and
every BatchNorm2d gets random statistics and affine parameters.

bert4 is written with torch.nn modules as BERT-base's encoder layer
(Devlin et al.; Hugging Face's BertLayer): hidden 768, 12 heads of 64,
feed-forward 3072 with the exact (erf) GELU, post-LN (LayerNorm(x +
sublayer(x)), eps 1e-12), dropout omitted (eval). It starts from hidden
states, i.e. after the embeddings (word + position + token type, then
LayerNorm), because the embeddings are a table lookup whose cost does not
depend on the compiler; the input is therefore f32 [batch, 128, 768] drawn
N(0, 1), as a LayerNorm output is. No attention mask (every token attends
to every token: the mask of a batch without padding) and no pooler or
classifier head; the output is the last layer's hidden states.
"""

import importlib
import io
import math
import os
import sys

import numpy as np
import torch

SIZE = 224  # image side
SEQ, HIDDEN, HEADS, FFN, BERT_LAYERS = 128, 768, 12, 3072, 4
MODELS = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "convnext_tiny",
          "regnet_y_800mf", "vit_b_16", "bert4"]


class BertLayer(torch.nn.Module):
    """One BERT-base encoder layer, post-LN."""

    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(HIDDEN, HIDDEN)
        self.k = torch.nn.Linear(HIDDEN, HIDDEN)
        self.v = torch.nn.Linear(HIDDEN, HIDDEN)
        self.attn_out = torch.nn.Linear(HIDDEN, HIDDEN)
        self.attn_norm = torch.nn.LayerNorm(HIDDEN, eps=1e-12)
        self.up = torch.nn.Linear(HIDDEN, FFN)
        self.act = torch.nn.GELU()
        self.down = torch.nn.Linear(FFN, HIDDEN)
        self.out_norm = torch.nn.LayerNorm(HIDDEN, eps=1e-12)

    def heads(self, t):
        # [B, S, H] -> [B, heads, S, 64]; the batch stays -1 so that the
        # export's Reshape has a constant shape under a dynamic batch axis.
        return t.reshape(-1, SEQ, HEADS, HIDDEN // HEADS).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        ctx = ctx.transpose(1, 2).reshape(-1, SEQ, HIDDEN)
        x = self.attn_norm(x + self.attn_out(ctx))
        return self.out_norm(x + self.down(self.act(self.up(x))))


class Bert4(torch.nn.Module):
    """A 4-layer BERT-base encoder from hidden states [B, 128, 768]."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(BertLayer() for _ in range(BERT_LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def make_model(name):
    torch.manual_seed(0)
    if name == "bert4":
        m = Bert4()
    else:
        import torchvision
        m = getattr(torchvision.models, name)()
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, torch.nn.Linear):  # ViT's head starts at zero
            mod.weight.data.copy_(torch.randn(mod.weight.shape, generator=g)
                                  / mod.in_features ** 0.5)
            if mod.bias is not None:
                mod.bias.data.copy_(torch.randn(mod.out_features, generator=g) * 0.1)
        if isinstance(mod, torch.nn.BatchNorm2d):
            c = mod.num_features
            mod.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            mod.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            mod.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            mod.bias.data.copy_(torch.randn(c, generator=g) * 0.1)
    return m.eval()


def output_name(name):
    return "hidden" if name == "bert4" else "logits"


def make_input(name, batch, seed):
    g = torch.Generator().manual_seed(seed)
    if name == "bert4":
        return torch.randn(batch, SEQ, HIDDEN, generator=g)
    return torch.randn(batch, 3, SIZE, SIZE, generator=g)


def export(name, model, path, batch=None):
    """opset 17, input "x", output logits (hidden for bert4); a dynamic batch
    axis unless batch is given (then that batch, static). path may be a
    file object."""
    # With gradients on: under no_grad, 1.13's nn.MultiheadAttention takes
    # its fused fast path (aten::_native_multi_head_attention), which has
    # no ONNX export.
    out = output_name(name)
    dyn = None if batch else {"x": {0: "batch"}, out: {0: "batch"}}
    torch.onnx.export(model, make_input(name, batch or 1, 0), path, opset_version=17,
                      input_names=["x"], output_names=[out], dynamic_axes=dyn)


def _onnx_package():
    """The onnx package. bench/onnx.py, run as a script, puts bench/ first
    on sys.path, where `import onnx` would find bench/onnx.py itself; so
    the package is imported with bench/ left out of the path."""
    here = os.path.dirname(os.path.abspath(__file__))
    mod = sys.modules.get("onnx")
    if mod is not None and os.path.dirname(os.path.abspath(getattr(mod, "__file__", "") or "")) != here:
        return mod
    sys.modules.pop("onnx", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        return importlib.import_module("onnx")
    finally:
        sys.path[:] = saved


def _dims(vi):
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    d = [x.dim_value if x.HasField("dim_value") else None for x in t.shape.dim]
    return None if None in d else d


def count_flops(name, model, batch):
    """FLOPs of one run at this batch: 2 per multiply-add of every Conv,
    MatMul and Gemm in the ONNX graph of a static-batch export, from ONNX shape inference. Elementwise ops,
    normalisation, softmax and pooling are not counted (they are a few % of
    these models' work and not GEMM-shaped). Raises when a counted node's
    shape stays unknown, rather than undercount."""
    onnx = _onnx_package()
    numpy_helper = importlib.import_module("onnx.numpy_helper")
    shape_inference = importlib.import_module("onnx.shape_inference")
    buf = io.BytesIO()
    export(name, model, buf, batch=batch)
    g = shape_inference.infer_shapes(onnx.load_from_string(buf.getvalue())).graph
    shapes = {}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        shapes[vi.name] = _dims(vi)
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    consts = {}
    for n in g.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
            shapes[n.output[0]] = list(consts[n.output[0]].shape)

    def shape(t, node):
        s = shapes.get(t)
        if s is None:
            raise RuntimeError("%s: no static shape for %s's %s (%s)"
                               % (name, node.op_type, t, node.name))
        return s

    total = 0
    for n in g.node:
        if n.op_type == "Conv":
            w, y = shape(n.input[1], n), shape(n.output[0], n)
            # y: [N, Cout, *spatial]; w: [Cout, Cin/group, *kernel]
            total += 2 * int(np.prod(y)) * int(np.prod(w[1:]))
        elif n.op_type == "MatMul":
            a, y = shape(n.input[0], n), shape(n.output[0], n)
            total += 2 * int(np.prod(y)) * a[-1]
        elif n.op_type == "Gemm":
            a, y = shape(n.input[0], n), shape(n.output[0], n)
            trans_a = any(at.name == "transA" and at.i for at in n.attribute)
            k = a[0] if trans_a else a[1]
            total += 2 * int(np.prod(y)) * k
    return total
