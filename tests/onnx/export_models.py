#!/usr/bin/python3
"""Exports the ONNX suite's models with torch.onnx.export (PyTorch 1.13,
torchvision 0.14): one model of each torchvision classification family, a
segmentation model, nn.TransformerEncoder / nn.TransformerDecoder, a
GPT-style language model, a stack of nn.LSTM, nn.GRU and nn.RNN, max
pools with indices, 3-d (transposed) convolutions, and F.grid_sample in each of its modes, each at opset 17 and at opset 13 (16 for
grid_sample, which has no earlier export).

Every model is built under torch.manual_seed(0) with its own initialisation,
then `randomize` perturbs what initialisation leaves trivial (see there), in
eval mode. For each model NAME this writes into OUT/NAME/:
  opset17.onnx, opset13.onnx   the exports (same weights, same input names)
  INPUT.npy ...                a random input per graph input (fixed seed)
  OUTPUT.npy ...               torch's outputs on those inputs
  b8/INPUT.npy, b8/OUTPUT.npy  where the batch axis is dynamic: batch 8
  opset17_ext.onnx + .data     (resnet18 only) the opset-17 export saved with
                               its initializers in an external data file
  meta.json                    written last: the cache key, the input and
                               output names, dims, the export time, and
                               f32_error: per output, max |torch f32 - torch
                               f64| / max |torch f64|, PyTorch's own rounding
                               error on this model and input (the same model
                               and input in float64), from which run_onnx.py
                               sets the tolerance
A directory whose meta.json carries the current key (this file's text, the
torch / torchvision / onnx versions, the model's name and the --full flag)
is reused as is; tests/onnx/run_onnx.py keeps them in the build directory.

Sizes (the default, what CI runs): image sides as small as the model allows
(64 for most CNNs, 96 for LR-ASPP; 224 for alexnet and vgg11, whose adaptive
pools to 6x6 and 7x7 export only when the feature map is a multiple of
that; 299 for inception_v3), num_classes 10 (4 for LR-ASPP). Where the torchvision architecture is
dominated by weights that do not change the graph, a smaller configuration
of the same torchvision class is used (same modules, same ONNX ops):
  vgg11, alexnet     classifier hidden width 4096 -> 256 (the 25088x4096
                     and 9216x4096 matrices are 400 and 150 MB)
  resnext, wide      torchvision's ResNet with Bottleneck, layers [1,1,1,1],
                     groups=32 x width 4 (resnext50_32x4d's) and width 128
                     (wide_resnet50_2's)
  vit                VisionTransformer 64x64, patch 16, 2 layers, d 64
  swin               SwinTransformer patch 4, window 4, depths [2,2,2],
                     embed 32, heads [2,4,8] (swin_t: 7, [2,2,6,2], 96)
  efficientnet_v2    efficientnet_v2_s as is at 64x64
--full exports the named torchvision constructors unchanged (num_classes
1000, 224x224, 299 for inception_v3): for local runs, not CI.

    /usr/bin/python3 tests/onnx/export_models.py --out DIR [--model NAME]... [--full] [--opsets 17,13]
                                                 [--force] [--threads N] [--list]
"""

import argparse
import copy
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

OPSETS = (17, 13)


def _tv():
    import torchvision  # noqa: F401  (imported lazily: the transformer models need none)
    return torchvision.models


# ---- models ------------------------------------------------------------------
# Each entry: name -> (builder(full) -> nn.Module, inputs(full) -> [(name, shape, kind)],
# output names, dynamic batch axis or None). kind: "image" (randn), "seq" (randn),
# "ids:V" (int64 token ids in [0, V)).


def shrink_classifier(model, hidden=256):
    """vgg/alexnet: the same classifier layers (Dropout, Linear, ReLU, Dropout,
    Linear, ReLU, Linear) with a hidden width of `hidden`."""
    old = [m for m in model.classifier if isinstance(m, nn.Linear)]
    cls = []
    for m in model.classifier:
        if isinstance(m, nn.Linear):
            i = old.index(m)
            cin = m.in_features if i == 0 else hidden
            cout = m.out_features if i == len(old) - 1 else hidden
            cls.append(nn.Linear(cin, cout))
        else:
            cls.append(m)
    model.classifier = nn.Sequential(*cls)
    return model


def alexnet(full):
    m = _tv().alexnet(num_classes=1000 if full else 10)
    return m if full else shrink_classifier(m)


def vgg11(full):
    m = _tv().vgg11(num_classes=1000 if full else 10)
    return m if full else shrink_classifier(m)


def small_resnet(groups, width):
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [1, 1, 1, 1], groups=groups, width_per_group=width, num_classes=10)


def resnext(full):
    return _tv().resnext50_32x4d() if full else small_resnet(32, 4)


def wide_resnet(full):
    return _tv().wide_resnet50_2() if full else small_resnet(1, 128)


def vit(full):
    if full:
        return _tv().vit_b_16()
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4,
                             hidden_dim=64, mlp_dim=128, num_classes=10)


def swin(full):
    if full:
        return _tv().swin_t()
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2], num_heads=[2, 4, 8],
                           window_size=[4, 4], num_classes=10)


def tv(name, **kw):
    def build(full):
        return getattr(_tv(), name)(**({} if full else dict(num_classes=10, **kw)))
    return build


class SegOut(nn.Module):
    """torchvision's segmentation models return {"out": ...}: the tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def lraspp(full):
    from torchvision.models.segmentation import lraspp_mobilenet_v3_large
    return SegOut(lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                            num_classes=21 if full else 4))


def causal_mask(n):
    """-inf above the diagonal (a constant: aten::triu has no opset-13 export)."""
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


class Encoder(nn.Module):
    """nn.TransformerEncoder (2 post-norm layers, d 64, 4 heads, ReLU FFN 128)
    with a final LayerNorm and a causal mask; batch_first=False, as most
    users write it (batch_first=True in eval mode takes the fused fast path,
    which torch.onnx cannot export)."""

    def __init__(self, d=64, heads=4, ff=128, layers=2):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d))
        self.register_buffer("mask", causal_mask(32), persistent=False)

    def forward(self, x):  # x: [batch, seq, d]
        t = x.shape[1]
        return self.enc(x.transpose(0, 1), mask=self.mask[:t, :t]).transpose(0, 1)


class Decoder(nn.Module):
    """nn.TransformerDecoder (2 pre-norm layers, GELU FFN, batch_first) over a
    memory input, with a causal target mask."""

    def __init__(self, d=64, heads=4, ff=128, layers=2):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d, heads, ff, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.dec = nn.TransformerDecoder(layer, layers)
        self.register_buffer("mask", causal_mask(32), persistent=False)

    def forward(self, tgt, memory):
        t = tgt.shape[1]
        return self.dec(tgt, memory, tgt_mask=self.mask[:t, :t])


def gpt(full):
    """examples/gpt2_torch.py's GPT-2 (tanh GELU, causal mask, tied LM head),
    2 layers, d 64, 4 heads, vocabulary 101, context 32."""
    import gpt2_torch
    torch.manual_seed(0)
    m = gpt2_torch.GPT2(n_layer=2, d=64, n_head=4, vocab=101, n_ctx=32)
    gpt2_torch.randomize(m, 64, 0)
    return m


class Recurrent(nn.Module):
    """nn.LSTM (2 layers, bidirectional, batch_first) -> nn.GRU (torch's
    linear_before_reset form) from a given initial state -> nn.RNN (ReLU):
    ONNX's LSTM, GRU and RNN nodes with every output used."""

    def __init__(self, d=16, h=12):
        super().__init__()
        self.lstm = nn.LSTM(d, h, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(2 * h, h, batch_first=True)
        self.rnn = nn.RNN(h, h, nonlinearity="relu", batch_first=True)
        self.h0 = nn.Parameter(torch.randn(1, 1, h) * 0.5)

    def forward(self, x):
        y, (hn, cn) = self.lstm(x)
        y, hg = self.gru(y, self.h0.expand(1, x.shape[0], -1).contiguous())
        y, hr = self.rnn(y)
        return y, torch.cat([hn, cn, hg, hr], 0).transpose(0, 1)


class GridSample(nn.Module):
    """F.grid_sample in every mode (bilinear, nearest, bicubic), padding mode
    (zeros, border, reflection) and align_corners, stacked: ONNX's GridSample
    (opset 16), with a grid reaching past [-1, 1] so that every padding
    mode matters."""

    def forward(self, x, grid):
        g = grid * 0.9
        return torch.stack([nn.functional.grid_sample(x, g, mode=m, padding_mode=p, align_corners=a)
                            for m in ("bilinear", "nearest", "bicubic")
                            for p in ("zeros", "border", "reflection") for a in (False, True)], 1)


class PoolIndices(nn.Module):
    """MaxPool2d with return_indices, plain (SegNet's encoder) and with
    padding, dilation and ceil_mode: ONNX's MaxPool Indices output, which
    torch's export offsets back to per-plane indices (torch 1.13 does not
    export max_unpool2d; the backend suite has MaxUnpool)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.pool2 = nn.MaxPool2d(3, stride=2, padding=1, dilation=2, ceil_mode=True,
                                  return_indices=True)

    def forward(self, x):
        y, i = self.pool(self.conv(x))
        v, j = self.pool2(x)
        return y, i, v, j


class Volumetric(nn.Module):
    """A 3-d U-Net's step: nn.Conv3d, then nn.ConvTranspose3d with strides,
    depth pads, output_padding and a height dilation, and a grouped one:
    ONNX's 3-d Conv and ConvTranspose."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 4, 3, padding=1)
        self.up = nn.ConvTranspose3d(4, 4, (3, 3, 2), stride=(2, 1, 2), padding=(1, 1, 0),
                                     output_padding=(1, 0, 1), dilation=(1, 2, 1))
        self.up2 = nn.ConvTranspose3d(4, 2, 2, stride=2, groups=2)

    def forward(self, x):
        return self.up2(torch.relu(self.up(torch.relu(self.conv(x)))))


def img(size, batch=1):
    return [("x", (batch, 3, size, size), "image")]


# name: (builder, small inputs, full inputs, outputs, dynamic axes {input: {axis: name}})
MODELS = {
    "alexnet": (alexnet, img(224), img(224), ["logits"], None),
    "vgg11": (vgg11, img(224), img(224), ["logits"], None),
    "resnet18": (tv("resnet18"), img(64, 2), img(224, 2), ["logits"], "batch"),
    "resnext": (resnext, img(64), img(224), ["logits"], None),
    "wide_resnet": (wide_resnet, img(64), img(224), ["logits"], None),
    "densenet121": (tv("densenet121"), img(64), img(224), ["logits"], None),
    "squeezenet1_0": (tv("squeezenet1_0"), img(64), img(224), ["logits"], None),
    "googlenet": (tv("googlenet", aux_logits=False, init_weights=True), img(64), img(224),
                  ["logits"], None),
    "inception_v3": (tv("inception_v3", aux_logits=False, init_weights=True), img(299), img(299),
                     ["logits"], None),
    "mobilenet_v2": (tv("mobilenet_v2"), img(64), img(224), ["logits"], None),
    "mobilenet_v3_small": (tv("mobilenet_v3_small"), img(64), img(224), ["logits"], None),
    "mnasnet0_5": (tv("mnasnet0_5"), img(64), img(224), ["logits"], None),
    "shufflenet_v2_x0_5": (tv("shufflenet_v2_x0_5"), img(64), img(224), ["logits"], None),
    "efficientnet_b0": (tv("efficientnet_b0"), img(64), img(224), ["logits"], None),
    "efficientnet_v2_s": (tv("efficientnet_v2_s"), img(64), img(224), ["logits"], None),
    "regnet_y_400mf": (tv("regnet_y_400mf"), img(64), img(224), ["logits"], None),
    "convnext_tiny": (tv("convnext_tiny"), img(64), img(224), ["logits"], None),
    "vit": (vit, img(64), img(224), ["logits"], None),
    "swin": (swin, img(64), img(224), ["logits"], None),
    "lraspp": (lraspp, img(96), img(224), ["out"], None),
    "transformer_encoder": (lambda full: Encoder(), [("x", (2, 12, 64), "seq")],
                            [("x", (2, 12, 64), "seq")], ["y"], "batch"),
    "transformer_decoder": (lambda full: Decoder(),
                            [("tgt", (1, 10, 64), "seq"), ("memory", (1, 7, 64), "seq")],
                            [("tgt", (1, 10, 64), "seq"), ("memory", (1, 7, 64), "seq")], ["y"], None),
    "gpt": (gpt, [("ids", (2, 16), "ids:101")], [("ids", (2, 16), "ids:101")], ["logits"], None),
    "recurrent": (lambda full: Recurrent(), [("x", (2, 9, 16), "seq")], [("x", (2, 9, 16), "seq")],
                  ["y", "h"], "batch"),
    "pool_indices": (lambda full: PoolIndices(), [("x", (2, 3, 13, 12), "seq")],
                     [("x", (2, 3, 13, 12), "seq")], ["y", "i", "v", "j"], "batch"),
    "volumetric": (lambda full: Volumetric(), [("x", (2, 2, 5, 6, 4), "seq")],
                   [("x", (2, 2, 5, 6, 4), "seq")], ["y"], "batch"),
    "grid_sample": (lambda full: GridSample(), [("x", (2, 3, 5, 7), "seq"), ("grid", (2, 4, 6, 2), "seq")],
                    [("x", (2, 3, 5, 7), "seq"), ("grid", (2, 4, 6, 2), "seq")], ["y"], "batch"),
}
NEEDS_TORCHVISION = [n for n in MODELS
                     if n not in ("transformer_encoder", "transformer_decoder", "gpt", "recurrent",
                                  "grid_sample", "pool_indices", "volumetric")]
EXTERNAL_DATA = "resnet18"   # also saved with its initializers in an external data file
DYNAMIC_BATCH = 8            # where the batch axis is dynamic: also run at this batch
MIN_OPSET = {"grid_sample": 16}  # torch exports it from opset 16 on: lower opsets are skipped


def model_opsets(name, opsets):
    """The opsets of `opsets` that NAME exports at."""
    return [o for o in opsets if o >= MIN_OPSET.get(name, 0)]


def randomize(model, spec, seed=0):
    """What initialisation leaves trivial, made random (fixed seed) so that
    every weight matters to the output:
      - batch norms: weight 1 + N(0, 0.2^2), bias N(0, 0.1^2), and running
        statistics calibrated on random inputs (a forward pass with only the
        batch norms in training mode, momentum None: the statistics of that
        batch, of batch 4 and another seed): they are neither 0 and 1 nor
        wrong by a random factor, which along 100 layers in series
        (inception_v3 initialises its convolutions with std 0.1) makes
        logits of 1e11;
      - every other parameter of at most one dimension (biases, layer norm
        weights, ConvNeXt's layer scale of 1e-6, ViT's zero class token) and
        every parameter initialised to all zeros (ViT's head) gets
        N(0, 0.1^2) added (zero-initialised matrices: N(0, 1/fan_in))."""
    g = torch.Generator().manual_seed(seed + 1)
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        bn = set()
        for m in bns:
            if m.affine:
                c = m.num_features
                m.weight.copy_(1 + torch.randn(c, generator=g) * 0.2)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
                bn.update((id(m.weight), id(m.bias)))
        for name, p in model.named_parameters():
            if id(p) in bn:
                continue
            r = torch.randn(p.shape, generator=g)
            if p.dim() >= 2 and not bool(p.any()):
                p.copy_(r * p[0].numel() ** -0.5)
            elif p.dim() <= 1 or not bool(p.any()) or "layer_scale" in name or "token" in name:
                p.add_(r * 0.1)
        if bns:
            for m in bns:
                m.reset_running_stats()
                m.momentum = None
                m.train()
            model(*(t for _, t in make_inputs(spec, seed=seed + 2, batch=4)))
            model.eval()


def make_inputs(spec, seed=0, batch=None):
    g = torch.Generator().manual_seed(seed)
    out = []
    for name, shape, kind in spec:
        if batch is not None:
            shape = (batch,) + tuple(shape[1:])
        if kind.startswith("ids:"):
            out.append((name, torch.randint(0, int(kind[4:]), shape, generator=g)))
        else:
            out.append((name, torch.randn(shape, generator=g)))
    return out


def cache_key(name, full):
    import onnx
    try:
        import torchvision
        tvv = torchvision.__version__
    except ImportError:
        tvv = "none"
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    if name == "gpt":
        with open(os.path.join(ROOT, "examples", "gpt2_torch.py"), "rb") as f:
            h.update(f.read())
    h.update(("%s %s %s %s %s" % (torch.__version__, tvv, onnx.__version__, name, full)).encode())
    return h.hexdigest()[:16]


def cached(out, name, full=False, opsets=OPSETS):
    """meta.json of OUT/NAME if it is current and holds every opset asked for, else None."""
    try:
        with open(os.path.join(out, name, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    if (meta.get("key") != cache_key(name, full)
            or not set(model_opsets(name, opsets)) <= set(meta.get("opsets", ()))):
        return None
    return meta


def as_tuple(outs):
    return (outs,) if isinstance(outs, torch.Tensor) else tuple(outs)


def save_outputs(d, names, outs):
    for n, t in zip(names, as_tuple(outs)):
        np.save(os.path.join(d, n + ".npy"), t.detach().numpy(), allow_pickle=False)


def export(out, name, full=False, opsets=OPSETS):
    """Exports NAME into OUT/NAME (see the header); returns its meta."""
    import onnx
    opsets = model_opsets(name, opsets)
    build, small, big, outputs, dyn = MODELS[name]
    spec = big if full else small
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    meta_path = os.path.join(d, "meta.json")
    if os.path.exists(meta_path):
        os.unlink(meta_path)
    t0 = time.monotonic()
    torch.manual_seed(0)
    model = build(full).eval()
    randomize(model, spec)
    inputs = make_inputs(spec)
    args = tuple(t for _, t in inputs)
    for n, t in inputs:
        np.save(os.path.join(d, n + ".npy"), t.numpy(), allow_pickle=False)
    with torch.no_grad():
        y32 = as_tuple(model(*args))
        save_outputs(d, outputs, y32)
        y64 = as_tuple(copy.deepcopy(model).double()(*(t.double() if t.is_floating_point() else t
                                                        for t in args)))
    f32_error = {n: float((a.double() - b).abs().max() / b.abs().max()) for n, a, b in zip(outputs, y32, y64)}
    dynamic_axes = None
    if dyn:
        dynamic_axes = {n: {0: dyn} for n in [i[0] for i in spec] + outputs}
        d8 = os.path.join(d, "b8")
        os.makedirs(d8, exist_ok=True)
        inputs8 = make_inputs(spec, seed=1, batch=DYNAMIC_BATCH)
        for n, t in inputs8:
            np.save(os.path.join(d8, n + ".npy"), t.numpy(), allow_pickle=False)
        with torch.no_grad():
            save_outputs(d8, outputs, model(*(t for _, t in inputs8)))
    files = {}
    for opset in opsets:
        path = os.path.join(d, "opset%d.onnx" % opset)
        torch.onnx.export(model, args, path + ".tmp", opset_version=opset,
                          input_names=[i[0] for i in spec], output_names=outputs,
                          dynamic_axes=dynamic_axes, do_constant_folding=True)
        os.replace(path + ".tmp", path)
        files[opset] = os.path.basename(path)
    if name == EXTERNAL_DATA and 17 in opsets:
        m = onnx.load(os.path.join(d, "opset17.onnx"))
        ext = os.path.join(d, "opset17_ext.onnx")
        if os.path.exists(os.path.join(d, "opset17_ext.data")):
            os.unlink(os.path.join(d, "opset17_ext.data"))
        onnx.save_model(m, ext, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="opset17_ext.data", size_threshold=1024)
    ops = {}
    for opset in opsets:
        m = onnx.load(os.path.join(d, files[opset]), load_external_data=False)
        ops[opset] = sorted({n.op_type for n in m.graph.node})
    n_param = sum(p.numel() for p in model.parameters())
    meta = dict(key=cache_key(name, full), name=name, full=full,
                inputs=[[n, list(s), k] for n, s, k in spec], outputs=outputs,
                dynamic=dyn, dynamic_batch=DYNAMIC_BATCH if dyn else None,
                export_batch=spec[0][1][0], external=name == EXTERNAL_DATA and 17 in opsets,
                opsets=list(opsets),
                params=n_param, ops={str(k): v for k, v in ops.items()}, f32_error=f32_error,
                export_s=round(time.monotonic() - t0, 2))
    with open(meta_path + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(meta_path + ".tmp", meta_path)
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="cache directory")
    ap.add_argument("--model", action="append", help="one model (repeatable); default all")
    ap.add_argument("--full", action="store_true", help="the named torchvision models unchanged")
    ap.add_argument("--force", action="store_true", help="export even where the cache is current")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--list", action="store_true", help="print the model names")
    ap.add_argument("--opsets", default=",".join(map(str, OPSETS)), help="default 17,13")
    a = ap.parse_args()
    opsets = tuple(int(o) for o in a.opsets.split(","))
    if a.list:
        print("\n".join(MODELS))
        return 0
    if not a.out:
        ap.error("--out is required")
    if a.threads:
        torch.set_num_threads(a.threads)
    import warnings
    warnings.filterwarnings("ignore")
    failed = 0
    for name in a.model or list(MODELS):
        if name not in MODELS:
            print("unknown model %r (known: %s)" % (name, ", ".join(MODELS)), file=sys.stderr)
            return 2
        meta = None if a.force else cached(a.out, name, a.full, opsets)
        state = "cached"
        if meta is None:
            try:
                meta = export(a.out, name, a.full, opsets)
            except Exception:  # one model's failure must not stop the others
                import traceback
                print("%s: export failed:\n%s" % (name, traceback.format_exc()), file=sys.stderr, flush=True)
                failed += 1
                continue
            state = "exported in %.1f s" % meta["export_s"]
        print("%-22s %s, %d params, ops(%d): %s" % (name, state, meta["params"], opsets[0],
                                                    " ".join(meta["ops"][str(opsets[0])])), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
