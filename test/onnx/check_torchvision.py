#!/usr/bin/python3
"""torchvision's classification models through pxl-run, against PyTorch's outputs.

    /usr/bin/python3 test/onnx/check_torchvision.py build/tools/pxl-run/pxl-run [MODEL ...]

Needs Debian's python3-torch and python3-torchvision (1.13 / 0.14), so it is not a CI test:
the weights are torchvision's random initialisation (nothing is downloaded), each model is
exported with its batch norms folded into the convolutions (as PyTorch's exporter does in eval
mode) at opsets 11, 13 and 17, and kept as BatchNormalization at opset 13; the script prints
max |Δ| / max |y| for each and fails above 1e-4."""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision

pxl_run = sys.argv[1]
names = sys.argv[2:] or ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1",
                         "efficientnet_b0"]
torch.manual_seed(0)
worst = 0.0
with tempfile.TemporaryDirectory() as tmp:
    for name in names:
        model = getattr(torchvision.models, name)(weights=None).eval()
        for m in model.modules():  # running statistics that are not the identity
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
        x = torch.randn(2, 3, 224, 224)
        with torch.no_grad():
            y = model(x).numpy()
        np.save(os.path.join(tmp, "x.npy"), x.numpy())
        for form, mode, opset in [("folded", torch.onnx.TrainingMode.EVAL, 11),
                                  ("folded", torch.onnx.TrainingMode.EVAL, 13),
                                  ("folded", torch.onnx.TrainingMode.EVAL, 17),
                                  ("batchnorm", torch.onnx.TrainingMode.PRESERVE, 13)]:
            path = os.path.join(tmp, f"{name}_{form}_{opset}.onnx")
            torch.onnx.export(model, (x,), path, opset_version=opset, training=mode,
                              input_names=["input"], output_names=["output"])
            start = time.time()
            run = subprocess.run([pxl_run, path, "--input", f"input={tmp}/x.npy",
                                  "--output", f"output={tmp}/y.npy"],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{name} ({form}, opset {opset}): pxl-run failed: {run.stderr.strip()}")
                worst = float("inf")
                continue
            got = np.load(os.path.join(tmp, "y.npy"))
            error = float(np.abs(got - y).max() / np.abs(y).max())
            worst = max(worst, error)
            print(f"{name} ({form}, opset {opset}): max |Δ| / max |y| = {error:.2e} "
                  f"({time.time() - start:.1f} s)")
print(f"worst: {worst:.2e}")
sys.exit(0 if worst < 1e-4 else 1)
