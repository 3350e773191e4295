#!/usr/bin/python3
"""torchvision models imported from ONNX: tgc against PyTorch eager and TorchScript.

    bench/onnx.py [--threads T] [--batches 1,16] [--only resnet50,...] [--budget S]
                  [--tgc PATH] [--no-check] [--json FILE] [--keep] [--torch-omp-active]

Models (issue 14): torchvision's resnet50, mobilenet_v3_large,
efficientnet_b0 and vit_b_16 at 224x224, random weights (seed 0; batch-norm
statistics and affine params, and every Linear layer, N(0, 1/in), drawn
at random too, so that the logits are O(1) rather than vanishing, as they
do with the default statistics, or zero, as ViT's zero-initialised head
gives), eval mode. For each model:

1. `torch.onnx.export` at opset 17 with a dynamic batch axis, then
   `tgc import MODEL.onnx -o MODEL.tg` (the weights go to MODEL.safetensors);
   the wall time of the import and of `tgc build MODEL.tg -D batch=1` is
   printed for each model (target: ResNet-50 under 10 s together);
2. per batch size B: `tgc build MODEL.tg -D batch=B`, and unless --no-check,
   the executable's logits on a random input against the torch module's:
   max |diff| <= 1e-4 * max |logits| (f32);
3. times, with the same thread count T everywhere: the executable's median
   (`--bench N --threads T`), PyTorch eager (torch.inference_mode()) and
   torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(m)))
   (traced instead when scripting fails), as bench/conv.py does.

PyTorch and the executables run with OMP_WAIT_POLICY=PASSIVE unless
--torch-omp-active (see bench/run.py). Exit status 1 when a step fails or
the logits differ. No timing is asserted.
"""

import argparse
import json
import os
import shutil
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

log, sh = B.log, B.sh
MODELS = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16"]
CHECK_TOL = 1e-4
SIZE = 224


def make_model(name):
    import torchvision
    torch.manual_seed(0)
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


def export(model, path):
    # With gradients on: under no_grad, 1.13's nn.MultiheadAttention takes
    # its fused fast path (aten::_native_multi_head_attention), which has
    # no ONNX export.
    x = torch.randn(1, 3, SIZE, SIZE)
    torch.onnx.export(model, x, path, opset_version=17, input_names=["x"],
                      output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})


def timed(cmd):
    t0 = time.monotonic()
    sh(cmd)
    return time.monotonic() - t0


def scripted(model):
    try:
        return C.scripted(model)
    except Exception:  # noqa: BLE001 (some torchvision models do not script in 1.13)
        x = torch.randn(1, 3, SIZE, SIZE)
        with torch.no_grad():
            return torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, x)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    C.add_common_args(ap, MODELS)
    a = ap.parse_args()
    T = a.threads
    models, batches = C.apply_common_args(ap, a, MODELS)
    tgc = B.build_tgc(a)
    work = tempfile.mkdtemp(prefix="tgc-bench-onnx-")
    rows, imports, failed = [], [], False
    try:
        for name in models:
            d = os.path.join(work, name)
            os.makedirs(d)
            model = make_model(name)
            onnx_path, tg = os.path.join(d, "model.onnx"), os.path.join(d, "model.tg")
            weights = os.path.join(d, "model.safetensors")
            log("%s: exporting ..." % name)
            export(model, onnx_path)
            imp = dict(model=name)
            imports.append(imp)
            try:
                imp["import_s"] = timed([tgc, "import", onnx_path, "-o", tg])
            except RuntimeError as e:
                log("  import failed: %s" % e)
                imp["error"], failed = "import failed", True
                continue
            script = None
            for batch in batches:
                r = dict(model=name, batch=batch)
                rows.append(r)
                exe = os.path.join(d, "b%d" % batch)
                log("%s batch %d: building ..." % (name, batch))
                try:
                    r["build_s"] = timed([tgc, "build", tg, "-D", "batch=%d" % batch, "-o", exe])
                except RuntimeError as e:
                    log("  build failed: %s" % e)
                    r["error"], failed = "build failed", True
                    continue
                if batch == batches[0]:
                    imp["build_s"] = r["build_s"]
                torch.manual_seed(batch)
                x = torch.randn(batch, 3, SIZE, SIZE)
                case = dict(exe=exe, weights=weights, dir=os.path.join(d, "b%d_run" % batch))
                if not a.no_check:
                    os.makedirs(case["dir"])
                    np.save(os.path.join(case["dir"], "x.npy"), x.numpy())
                    try:
                        sh([exe, "--weights", weights, "--input",
                            "x=" + os.path.join(case["dir"], "x.npy"), "--output-dir", case["dir"]])
                    except RuntimeError as e:
                        r["error"], failed = "run failed", True
                        log("  run failed: %s" % e)
                        continue
                    got = np.load(os.path.join(case["dir"], "logits.npy")).astype(np.float64)
                    with torch.inference_mode():
                        want = model(x).double().numpy()
                    err, scale = float(np.abs(got - want).max()), float(np.abs(want).max())
                    ok = err <= CHECK_TOL * scale
                    r.update(max_abs_diff=err, max_abs_logit=scale, match=ok)
                    log("  logits: max |tgc - torch| = %.2e (max |torch| %.3g)%s"
                        % (err, scale, "" if ok else "  MISMATCH"))
                    failed |= not ok
                log("  timing tgc ...")
                r["tgc_us"] = C.tgc_time(case, T, a.budget)["median_us"]
                log("  timing PyTorch eager ...")
                r["eager_us"] = C.torch_time(model, x, a.budget)["median_us"]
                log("  timing TorchScript ...")
                try:
                    if script is None:
                        script = scripted(model)
                    r["script_us"] = C.torch_time(script, x, a.budget)["median_us"]
                except Exception as e:  # noqa: BLE001 (report, keep the other columns)
                    log("  TorchScript failed: %s" % str(e).splitlines()[0])
                    r["script_us"] = None
    finally:
        if a.keep:
            log("work files kept in " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)

    print("torchvision via ONNX, %s; threads=%d; image %dx%d; PyTorch %s, OMP_WAIT_POLICY=%s; "
          "load %s" % (time.strftime("%Y-%m-%d %H:%M"), T, SIZE, SIZE, torch.__version__,
                       os.environ.get("OMP_WAIT_POLICY", "(unset)"), B.loadavg()))
    print("%-19s %9s %9s %9s" % ("model", "import s", "build s", "total s"))
    for i in imports:
        tot = i.get("import_s", 0) + i.get("build_s", 0)
        print("%-19s %9s %9s %9s%s" % (i["model"], "%.2f" % i["import_s"] if "import_s" in i else "-",
                                       "%.2f" % i["build_s"] if "build_s" in i else "-",
                                       "%.2f" % tot, "  " + i["error"] if "error" in i else ""))
    C.print_timings(rows, 19)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(threads=T, imports=imports, rows=rows), f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
