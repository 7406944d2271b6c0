#!/usr/bin/python3
"""Writes the ONNX models of test/onnx/models and, beside each, its input and PyTorch's output
as .npy: `/usr/bin/python3 test/onnx/make_models.py` with Debian's python3-torch 1.13 and
python3-onnx. The tests read only the files; run this again when a model changes.

keras_cnn is not PyTorch's: it is the node sequence tf2onnx writes for a Keras Sequential of
Conv2D, BatchNormalization, ReLU, MaxPooling2D, Flatten and Dense(softmax) on NHWC images
(Transposes around the NCHW convolution, a constant Reshape, MatMul and Add), built with
onnx.helper since Debian ships neither TensorFlow nor tf2onnx; its output is computed here
with NumPy."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
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


class EncoderComputed(Encoder):
    """As Encoder, with positions and the causal mask computed in forward from the tokens'
    shape (Shape, Range, Expand, Greater, Where) and, below opset 17, layer norms decomposed
    (ReduceMean, Sub, Pow, Sqrt, Div)."""

    def __init__(self):
        super().__init__()
        self.pos_embed = nn.Embedding(6, 8)

    def forward(self, tokens):
        n = tokens.shape[1]
        i = torch.arange(n)
        positions = i.unsqueeze(0).expand(tokens.shape[0], n)
        mask = torch.where(i.unsqueeze(0) > i.unsqueeze(1), float("-inf"), 0.0)
        return self.head(self.encoder(self.embed(tokens) + self.pos_embed(positions), mask=mask))


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
    # pxl's tensors are int32 where the model's are int64 (PopXL's downcast); pxl-run also
    # takes the int64 ids and downcasts them
    if x.dtype == torch.int64:
        np.save(os.path.join(here, name + ".input_int64.npy"), x.numpy())
        np.save(os.path.join(here, name + ".input.npy"), x.numpy().astype(np.int32))
    else:
        np.save(os.path.join(here, name + ".input.npy"), x.numpy())
    np.save(os.path.join(here, name + ".output.npy"), y.numpy())


os.makedirs(here, exist_ok=True)
export("mlp", Mlp(), torch.randn(3, 20), 13)
export("cnn", Cnn(), torch.randn(2, 1, 12, 12), 13)
export("cnn_opset11", Cnn(), torch.randn(2, 1, 12, 12), 11)
export("encoder", Encoder(), torch.randint(0, 11, (2, 6)), 17)
export("fashion_cnn", FashionCnn(), torch.randn(2, 1, 28, 28), 13, dynamic_batch=True)
export("encoder_opset14", EncoderComputed(), torch.randint(0, 11, (2, 6)), 14)


def keras_cnn():
    rng = np.random.default_rng(0)
    n, c = 2, 8
    w = (rng.standard_normal((c, 1, 3, 3)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(c) * 0.1).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, c).astype(np.float32)
    beta = (rng.standard_normal(c) * 0.1).astype(np.float32)
    mean = (rng.standard_normal(c) * 0.1).astype(np.float32)
    var = rng.uniform(0.5, 1.5, c).astype(np.float32)
    dense = (rng.standard_normal((14 * 14 * c, 10)) * 0.05).astype(np.float32)
    bias = (rng.standard_normal(10) * 0.1).astype(np.float32)
    x = rng.standard_normal((n, 28, 28, 1)).astype(np.float32)

    inits = [numpy_helper.from_array(a, name) for a, name in [
        (w, "conv2d/kernel"), (b, "conv2d/bias"), (gamma, "bn/gamma"), (beta, "bn/beta"),
        (mean, "bn/moving_mean"), (var, "bn/moving_variance"), (dense, "dense/kernel"),
        (bias, "dense/bias"), (np.array([-1, 14 * 14 * c], np.int64), "flatten/shape")]]
    nodes = [
        helper.make_node("Transpose", ["input"], ["nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw", "conv2d/kernel", "conv2d/bias"], ["conv"],
                         kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[1, 1]),
        helper.make_node("BatchNormalization", ["conv", "bn/gamma", "bn/beta", "bn/moving_mean",
                                                "bn/moving_variance"], ["bn"], epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["relu"]),
        helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Transpose", ["pool"], ["nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["nhwc", "flatten/shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "dense/kernel"], ["logits0"]),
        helper.make_node("Add", ["logits0", "dense/bias"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["output"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "keras_cnn", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                           ["N", 28, 28, 1])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="tf2onnx-style")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(here, "keras_cnn.onnx"))

    # NumPy's answer, in float64.
    xp = np.pad(x.transpose(0, 3, 1, 2).astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((n, c, 28, 28))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nhw,c->nchw", xp[:, 0, i:i + 28, j:j + 28], w[:, 0, i, j])
    conv += b[None, :, None, None]
    bn = (conv - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-3)
    bn = bn * gamma[None, :, None, None] + beta[None, :, None, None]
    relu = np.maximum(bn, 0)
    pool = relu.reshape(n, c, 14, 2, 14, 2).max(axis=(3, 5))
    logits = pool.transpose(0, 2, 3, 1).reshape(n, -1) @ dense + bias
    y = np.exp(logits - logits.max(-1, keepdims=True))
    y /= y.sum(-1, keepdims=True)
    np.save(os.path.join(here, "keras_cnn.input.npy"), x)
    np.save(os.path.join(here, "keras_cnn.output.npy"), y.astype(np.float32))


keras_cnn()


def op_models():
    """One small model per operator the models above do not reach, its output computed with
    NumPy: models/ops/<name>.onnx, .input.npy, .output.npy."""
    from math import erf
    ops_dir = os.path.join(here, "ops")
    os.makedirs(ops_dir, exist_ok=True)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 1)).astype(np.float32)
    pos = np.abs(x) + 0.5

    def save(name, nodes, inits, y, x_in=x, opset=13):
        graph = helper.make_graph(
            nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                        list(x_in.shape))],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, list(y.shape))],
            [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(ops_dir, name + ".onnx"))
        np.save(os.path.join(ops_dir, name + ".input.npy"), x_in)
        np.save(os.path.join(ops_dir, name + ".output.npy"), np.asarray(y, np.float32))

    def node(op, inputs, outputs=("output",), **attrs):
        return helper.make_node(op, list(inputs), list(outputs), **attrs)

    unary = {"Abs": np.abs, "Ceil": np.ceil, "Floor": np.floor, "Exp": np.exp, "Neg": np.negative,
             "Tanh": np.tanh, "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
             "Erf": np.vectorize(erf), "Relu": lambda v: np.maximum(v, 0)}
    for op, f in unary.items():
        save(op, [node(op, ["input"])], {}, f(x.astype(np.float64)))
    for op, f in {"Log": np.log, "Sqrt": np.sqrt, "Reciprocal": lambda v: 1 / v}.items():
        save(op, [node(op, ["input"])], {}, f(pos.astype(np.float64)), x_in=pos)
    binary = {"Sub": np.subtract, "Div": np.divide, "Mul": np.multiply,
              "Pow": lambda a, c: np.power(np.abs(a) + 0.5, c)}
    for op, f in binary.items():
        inputs = ["input", "b"]
        nodes = [node(op, inputs)]
        if op == "Pow":
            nodes = [node("Abs", ["input"], ["a"]), node("Add", ["a", "half"], ["p"]),
                     node("Pow", ["p", "b"])]
        save(op, nodes, {"b": b, "half": np.float32(0.5)} if op == "Pow" else {"b": b},
             f(x.astype(np.float64), b))
    # Comparisons and Where: y = Where(x > b, x, Less(x, -b) cast to float).
    save("Where", [node("Greater", ["input", "b"], ["gt"]), node("Neg", ["b"], ["nb"]),
                   node("Less", ["input", "nb"], ["lt"]),
                   node("Cast", ["lt"], ["ltf"], to=TensorProto.FLOAT),
                   node("Where", ["gt", "input", "ltf"])], {"b": b},
         np.where(x > b, x, (x < -b).astype(np.float32)))
    save("Equal", [node("Floor", ["input"], ["f"]), node("Equal", ["f", "zero"], ["e"]),
                   node("Cast", ["e"], ["output"], to=TensorProto.FLOAT)],
         {"zero": np.float32(0)}, (np.floor(x) == 0).astype(np.float32))
    # Reductions and softmaxes.
    save("ReduceMean", [node("ReduceMean", ["input"], axes=[1], keepdims=1)], {},
         x.astype(np.float64).mean(axis=1, keepdims=True))
    save("ReduceSum", [node("ReduceSum", ["input", "axes"], keepdims=0)],
         {"axes": np.array([0, 2], np.int64)}, x.astype(np.float64).sum(axis=(0, 2)))
    xd = x.astype(np.float64)
    sm = np.exp(xd - xd.max(-1, keepdims=True))
    save("LogSoftmax", [node("LogSoftmax", ["input"], axis=-1)], {},
         np.log(sm / sm.sum(-1, keepdims=True)))
    sm1 = np.exp(xd - xd.max(1, keepdims=True))
    save("Softmax_axis1", [node("Softmax", ["input"], axis=1)], {},
         sm1 / sm1.sum(1, keepdims=True))
    # Shapes: Squeeze/Unsqueeze, Slice with a step, Gather with a negative index, Expand,
    # Flatten at axis 2, Reshape with 0 and -1, ConstantOfShape and Range folded at import.
    save("Unsqueeze_Squeeze", [node("Unsqueeze", ["input", "ax"], ["u"]),
                               node("Squeeze", ["u", "ax"])],
         {"ax": np.array([1, 3], np.int64)}, x)
    save("Slice_step2", [node("Slice", ["input", "st", "en", "ax", "sp"])],
         {"st": np.array([1], np.int64), "en": np.array([100], np.int64),
          "ax": np.array([-1], np.int64), "sp": np.array([2], np.int64)}, x[:, :, 1::2])
    save("Gather_negative", [node("Gather", ["input", "idx"], axis=1)],
         {"idx": np.array([[-1, 0], [1, -3]], np.int64)}, x[:, [[2, 0], [1, 0]], :])
    save("Expand", [node("Expand", ["b", "shape"], ["e"]), node("Add", ["input", "e"])],
         {"b": b, "shape": np.array([2, 3, 4], np.int64)}, x + b)
    save("Flatten_axis2", [node("Flatten", ["input"], axis=2)], {}, x.reshape(6, 4))
    save("Reshape_0_minus1", [node("Reshape", ["input", "shape"])],
         {"shape": np.array([0, -1], np.int64)}, x.reshape(2, 12))
    save("ConstantOfShape_Range",
         [node("Shape", ["input"], ["s"]), node("ConstantOfShape", ["s"], ["ones"],
                                               value=numpy_helper.from_array(
                                                   np.array([1.5], np.float32))),
          node("Range", ["r0", "r1", "r2"], ["r"]), node("Cast", ["r"], ["rf"], to=1),
          node("Add", ["ones", "rf"], ["t"]), node("Mul", ["t", "input"])],
         {"r0": np.int64(0), "r1": np.int64(4), "r2": np.int64(1)},
         (1.5 + np.arange(4)) * x)
    # Others: Clip with a min only, Pad with a value, Dropout as the identity, GlobalMaxPool,
    # Gemm with transA, alpha and beta, MatMul broadcasting a batch.
    save("Clip_min", [node("Clip", ["input", "lo"])], {"lo": np.float32(-0.25)},
         np.maximum(x, -0.25))
    save("Pad_value", [node("Pad", ["input", "pads", "v"])],
         {"pads": np.array([0, 1, 0, 0, 0, 2], np.int64), "v": np.float32(7)},
         np.pad(x, ((0, 0), (1, 0), (0, 2)), constant_values=7))
    save("Dropout", [node("Dropout", ["input", "ratio"])], {"ratio": np.float32(0.5)}, x)
    save("GlobalMaxPool", [node("GlobalMaxPool", ["input"])], {},
         x.max(axis=2, keepdims=True))
    a2 = x.reshape(6, 4)
    w = rng.standard_normal((6, 5)).astype(np.float32)
    c = rng.standard_normal(5).astype(np.float32)
    save("Gemm_transA", [node("Gemm", ["input", "w", "c"], transA=1, alpha=0.5, beta=2.0)],
         {"w": w, "c": c}, 0.5 * a2.T.astype(np.float64) @ w + 2 * c, x_in=a2)
    m = rng.standard_normal((4, 2)).astype(np.float32)
    save("MatMul_batch", [node("MatMul", ["input", "m"])], {"m": m},
         x.astype(np.float64) @ m)
    save("Softmax_opset11_last", [node("Softmax", ["input"], axis=2)], {},
         sm / sm.sum(-1, keepdims=True), opset=11)


op_models()
