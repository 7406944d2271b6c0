#!/usr/bin/python3
"""Writes the ONNX models of test/onnx/models and, beside each, its input and PyTorch's output
as .npy: `/usr/bin/python3 test/onnx/make_models.py` with Debian's python3-torch 1.13 and
python3-onnx. The tests read only the files; run this again when a model changes."""
import os

import numpy as np
import torch
from torch import nn

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
torch.manual_seed(0)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(20, 16), nn.Linear(16, 5)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


class Cnn(nn.Module):
    """A small CNN with inference batch norms, strided, padded and depthwise convolutions."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4, bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        self.conv3 = nn.Conv2d(4, 8, 1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        y = nn.functional.relu6(self.bn2(self.conv2(x)))
        y = self.conv3(y) + nn.functional.avg_pool2d(torch.cat([x, x], 1), 3, 2, 1)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


class Encoder(nn.Module):
    """A two-layer TransformerEncoder language model: embedding, positions, causal mask."""

    def __init__(self, vocab=11, d=8, seq=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(seq, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, 2, 16, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos
        return self.head(self.encoder(h, mask=self.mask))


class FashionCnn(nn.Module):
    """A Fashion-MNIST classifier to fine-tune: two convolutions, two dense layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(16 * 7 * 7, 32), nn.Linear(32, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


def export(name, model, x, opset, dynamic_batch=False):
    for m in model.modules():  # running statistics that are not the identity
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    model.eval()
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, (x,), os.path.join(here, name + ".onnx"), opset_version=opset,
                      input_names=["input"], output_names=["output"],
                      training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False,
                      dynamic_axes={"input": {0: "N"}, "output": {0: "N"}} if dynamic_batch else None)
    # pxl takes int64 inputs as int32 (PopXL's downcast)
    x_np = x.numpy().astype(np.int32) if x.dtype == torch.int64 else x.numpy()
    np.save(os.path.join(here, name + ".input.npy"), x_np)
    np.save(os.path.join(here, name + ".output.npy"), y.numpy())


os.makedirs(here, exist_ok=True)
export("mlp", Mlp(), torch.randn(3, 20), 13)
export("cnn", Cnn(), torch.randn(2, 1, 12, 12), 13)
export("cnn_opset11", Cnn(), torch.randn(2, 1, 12, 12), 11)
export("encoder", Encoder(), torch.randint(0, 11, (2, 6)), 17)
export("fashion_cnn", FashionCnn(), torch.randn(2, 1, 28, 28), 13, dynamic_batch=True)
