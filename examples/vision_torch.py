#!/usr/bin/python3
"""Conv nets in PyTorch, the references for examples/resnet18.tg,
examples/resnet50.tg, examples/mobilenet_v3.tg and examples/kws_conv1d.tg.

ResNet-18, ResNet-50 and MobileNetV3-Small are written out here as
torchvision 0.14 defines them (same module tree, same initialisation, same
forward), so the state_dict() keys and layouts are torchvision's
(conv1.weight, layer2.0.downsample.1.running_var, features.4.block.2.fc1.bias,
classifier.3.weight, ...) and a torchvision checkpoint saved as safetensors
loads into the compiled graph unchanged. Keeping the modules here lets the
tests run where torchvision is not installed; where it is, `torchvision_twin`
gives the torchvision model, and `--check-torchvision` (and
tests/models/run_models.py) loads the same state dict into it with
strict=True and checks both compute the same logits. KWSConv1d, a small 1-D
keyword-spotting net, has no torchvision counterpart.

Weights: each model's own initialisation (torchvision's: kaiming-normal
convs, ones/zeros batch norm, ...) under torch.manual_seed(seed), then
every batch norm gets random running statistics and affine parameters
(`randomize_bn`), so that no batch norm is the identity.

    python3 examples/vision_torch.py --out DIR [--model resnet18|resnet50|mobilenet_v3|kws_conv1d|all]
        [--batch 1] [--size 224] [--seed 0] [--tgc build/tgc] [--check-torchvision]

writes DIR/MODEL/model.safetensors (the state dict, num_batches_tracked
included: tgc ignores tensors it has no param for), DIR/MODEL/x.npy (a
random input) and DIR/MODEL/logits.npy (PyTorch's output in eval mode),
prints the `tgc build` and run commands, and with --tgc runs them and
prints the largest difference from PyTorch's logits. --size is the image
side (the graphs' `size`; kws_conv1d ignores it).
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from gpt2_torch import compare, save_safetensors  # noqa: E402  (build/run/compare, writer)


# ---- ResNet (torchvision.models.resnet) --------------------------------------

def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


def conv1x1(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * 4)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18():
    return ResNet(BasicBlock, [2, 2, 2, 2])


def resnet50():
    return ResNet(Bottleneck, [3, 4, 6, 3])


# ---- MobileNetV3-Small (torchvision.models.mobilenetv3) ----------------------

def make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvBNAct(nn.Sequential):
    """torchvision.ops.Conv2dNormActivation: keys .0 (conv), .1 (norm)."""

    def __init__(self, cin, cout, k=3, stride=1, groups=1, act=nn.ReLU):
        layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout, eps=0.001, momentum=0.01)]
        if act is not None:
            layers.append(act(inplace=True))
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, c, squeeze):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.activation = nn.ReLU()
        self.scale_activation = nn.Hardsigmoid()

    def forward(self, x):
        s = self.fc2(self.activation(self.fc1(self.avgpool(x))))
        return self.scale_activation(s) * x


class InvertedResidual(nn.Module):
    def __init__(self, cin, k, exp, cout, use_se, act, stride):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        layers = []
        if exp != cin:
            layers.append(ConvBNAct(cin, exp, 1, act=act))
        layers.append(ConvBNAct(exp, exp, k, stride, groups=exp, act=act))
        if use_se:
            layers.append(SqueezeExcitation(exp, make_divisible(exp // 4, 8)))
        layers.append(ConvBNAct(exp, cout, 1, act=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        r = self.block(x)
        return r + x if self.use_res_connect else r


# (in, kernel, expanded, out, SE, activation, stride): torchvision's "small" table.
MOBILENET_V3_SMALL = [
    (16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2),
    (24, 3, 88, 24, False, "RE", 1), (24, 5, 96, 40, True, "HS", 2),
    (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
    (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1),
    (48, 5, 288, 96, True, "HS", 2), (96, 5, 576, 96, True, "HS", 1),
    (96, 5, 576, 96, True, "HS", 1),
]


class MobileNetV3Small(nn.Module):
    def __init__(self, num_classes=1000, last_channel=1024, dropout=0.2):
        super().__init__()
        layers = [ConvBNAct(3, 16, 3, 2, act=nn.Hardswish)]
        for cin, k, exp, cout, se, act, stride in MOBILENET_V3_SMALL:
            layers.append(InvertedResidual(cin, k, exp, cout, se,
                                           nn.Hardswish if act == "HS" else nn.ReLU, stride))
        layers.append(ConvBNAct(96, 576, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(576, last_channel), nn.Hardswish(inplace=True),
                                        nn.Dropout(p=dropout, inplace=True),
                                        nn.Linear(last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.classifier(x)


# ---- KWSConv1d (examples/kws_conv1d.tg) -----------------------------------

class ConvBlock1d(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, k, padding="same", bias=False)
        self.bn = nn.BatchNorm1d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class SeparableBlock1d(nn.Module):
    def __init__(self, c, k, dilation):
        super().__init__()
        self.dw = nn.Conv1d(c, c, k, padding="same", dilation=dilation, groups=c, bias=False)
        self.pw = nn.Conv1d(c, c, 1)
        self.bn = nn.BatchNorm1d(c)

    def forward(self, x):
        return F.relu(self.bn(self.pw(self.dw(x)))) + x


class KWSConv1d(nn.Module):
    """[N, 40, 101] MFCC-like features -> 12 keyword logits."""

    def __init__(self, features=40, classes=12):
        super().__init__()
        self.blocks = nn.ModuleList([ConvBlock1d(features, 64, 5), ConvBlock1d(64, 64, 3),
                                     ConvBlock1d(64, 128, 3), SeparableBlock1d(128, 3, 2),
                                     SeparableBlock1d(128, 3, 4)])
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        b = self.blocks
        x = b[0](x)
        x = F.max_pool1d(b[1](x), 2)
        x = F.max_pool1d(b[2](x), 2)
        x = b[4](b[3](x))
        return self.fc(F.adaptive_avg_pool1d(x, 1).flatten(1))


# ---- the table ---------------------------------------------------------------

# name -> (graph file, module constructor, input shape for (batch, size), -D dims for (batch, size))
MODELS = {
    "resnet18": ("resnet18.tg", resnet18, lambda b, s: (b, 3, s, s), lambda b, s: dict(batch=b, size=s)),
    "resnet50": ("resnet50.tg", resnet50, lambda b, s: (b, 3, s, s), lambda b, s: dict(batch=b, size=s)),
    "mobilenet_v3": ("mobilenet_v3.tg", MobileNetV3Small, lambda b, s: (b, 3, s, s),
                     lambda b, s: dict(batch=b, size=s)),
    "kws_conv1d": ("kws_conv1d.tg", KWSConv1d, lambda b, s: (b, 40, 101), lambda b, s: dict(batch=b)),
}


def graph_path(name):
    return os.path.join(HERE, MODELS[name][0])


def input_shape(name, batch=1, size=224):
    return MODELS[name][2](batch, size)


def dims(name, batch=1, size=224):
    """The graph's -D values for this batch and image size."""
    return MODELS[name][3](batch, size)


def randomize_bn(model, seed):
    """Random running statistics and affine parameters in every batch norm
    (mean N(0, 0.1^2), var U(0.5, 2), weight 1 + N(0, 0.2^2), bias N(0, 0.1^2)),
    so that none is the identity and eps matters little."""
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) * 1.5 + 0.5)
                m.weight.copy_(1 + torch.randn(c, generator=g) * 0.2)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)


def build(name, seed=0):
    """The model in eval mode with its initialisation under manual_seed(seed)
    and randomised batch norms."""
    torch.manual_seed(seed)
    model = MODELS[name][1]()
    randomize_bn(model, seed)
    return model.eval()


def make_input(name, batch=1, size=224, seed=0):
    g = torch.Generator().manual_seed(seed + 2)
    return torch.randn(input_shape(name, batch, size), generator=g)


def param_count(model):
    """(parameters, buffers): numel summed over the state dict, buffers
    without num_batches_tracked (a training counter the graphs do not
    declare): the batch norms' running_mean and running_var."""
    n_param = sum(p.numel() for p in model.parameters())
    n_buf = sum(b.numel() for k, b in model.state_dict().items()
                if not k.endswith("num_batches_tracked")) - n_param
    return n_param, n_buf


def torchvision_twin(name):
    """The torchvision model of the same architecture (weights=None), or None
    when torchvision is missing or has no such model (kws_conv1d)."""
    try:
        import torchvision
    except ImportError:
        return None
    ctor = {"resnet18": "resnet18", "resnet50": "resnet50",
            "mobilenet_v3": "mobilenet_v3_small"}.get(name)
    return getattr(torchvision.models, ctor)(weights=None).eval() if ctor else None


def check_torchvision(name, model, x):
    """None when torchvision is missing, else (same_keys_and_shapes, max |diff|)
    of the torchvision twin loaded with model's state dict (strict=True)."""
    tv = torchvision_twin(name)
    if tv is None:
        return None
    sd = model.state_dict()
    tsd = tv.state_dict()
    same = list(sd) == list(tsd) and all(sd[k].shape == tsd[k].shape for k in sd)
    if not same:
        return False, float("inf")
    tv.load_state_dict(sd, strict=True)
    with torch.no_grad():
        d = (tv(x) - model(x)).abs().max().item()
    return True, d


def write_case(model, x, out):
    """DIR/model.safetensors, DIR/x.npy, DIR/logits.npy; returns the logits."""
    os.makedirs(out, exist_ok=True)
    save_safetensors(os.path.join(out, "model.safetensors"), model.state_dict())
    np.save(os.path.join(out, "x.npy"), x.numpy())
    with torch.no_grad():
        logits = model(x)
    np.save(os.path.join(out, "logits.npy"), logits.numpy())
    return logits.numpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="all", choices=sorted(MODELS) + ["all"])
    for k, v in (("batch", 1), ("size", 224), ("seed", 0)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--tgc", help="tgc binary: build, run and compare")
    ap.add_argument("--check-torchvision", action="store_true",
                    help="load each state dict into torchvision's model and compare")
    a = ap.parse_args()
    rc = 0
    for name in sorted(MODELS) if a.model == "all" else [a.model]:
        model = build(name, a.seed)
        x = make_input(name, a.batch, a.size, a.seed)
        out = os.path.join(a.out, name)
        want = write_case(model, x, out).astype(np.float64)
        n_param, n_buf = param_count(model)
        print("%s: %d parameters + %d running statistics = %d" % (name, n_param, n_buf, n_param + n_buf))
        if a.check_torchvision:
            r = check_torchvision(name, model, x)
            print("  torchvision: %s" % ("not installed or no such model" if r is None else
                                         "same keys and shapes, max |diff| %.3g" % r[1] if r[0] else
                                         "DIFFERENT state_dict keys or shapes"))
            rc |= 1 if (r is not None and not r[0]) else 0
        rc |= compare(a.tgc, graph_path(name), dims(name, a.batch, a.size), out, want,
                      input_name="x", label=name)
    return rc


if __name__ == "__main__":
    sys.exit(main())
