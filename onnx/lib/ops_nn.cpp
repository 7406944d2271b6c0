// The ONNX operators of layers: Gemm and MatMul, convolution and pooling, normalisation,
// softmax, reductions and Dropout.
#include "folding.hpp"

#include "pxl/ir/graph.hpp"
#include "pxl/ops/conv.hpp"
#include "pxl/ops/matmul.hpp"
#include "pxl/ops/nn.hpp"
#include "pxl/ops/norm.hpp"
#include "pxl/ops/pool.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"

namespace pxl::onnx::detail {
namespace {

using ::onnx::TensorProto;

Values gemm(const NodeContext& c) {
  Tensor a = c.tensor(0), b = c.tensor(1);
  if (c.attr_int("transA", 0) != 0)
    a = ops::transpose(a, {1, 0});
  if (c.attr_int("transB", 0) != 0)
    b = ops::transpose(b, {1, 0});
  Tensor y = ops::matmul(a, b);
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  if (alpha != 1.0)
    y = y * alpha;
  if (c.has(2) && beta != 0.0) {
    Tensor bias = c.tensor(2);
    y = y + (beta == 1.0 ? bias : bias * beta);
  }
  return {y};
}

// Conv's and the pools' geometry: ONNX's auto_pad, and pads as (begins..., ends...), which
// pxl takes as ONNX does.
ops::PadType pad_type(const NodeContext& c) {
  const std::string p = c.attr_string("auto_pad", "NOTSET");
  if (p == "NOTSET")
    return ops::PadType::not_set;
  if (p == "SAME_UPPER")
    return ops::PadType::same_upper;
  if (p == "SAME_LOWER")
    return ops::PadType::same_lower;
  if (p == "VALID")
    return ops::PadType::valid;
  c.fail("auto_pad '" + p + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

Values conv(const NodeContext& c) {
  const Shape w = c.shape(1);
  const auto kernel = c.attr_ints("kernel_shape");
  if (!kernel.empty() && !std::equal(kernel.begin(), kernel.end(), w.begin() + 2, w.end()))
    c.fail("kernel_shape does not match the weight's spatial shape");
  Tensor y = ops::conv(c.tensor(0), c.tensor(1),
                       {.stride = c.attr_ints("strides"),
                        .padding = c.attr_ints("pads"),
                        .dilation = c.attr_ints("dilations"),
                        .groups = c.attr_int("group", 1),
                        .pad_type = pad_type(c)});
  if (c.has(2)) { // the bias, (C_out), over the channel axis
    Shape bias_shape(y.rank(), 1);
    bias_shape[1] = w[0];
    y = y + ops::reshape(c.tensor(2), bias_shape);
  }
  return {y};
}

ops::PoolOptions pool_options(const NodeContext& c) {
  return {.stride = c.attr_ints("strides"),
          .padding = c.attr_ints("pads"),
          .dilation = c.attr_ints("dilations"),
          .pad_type = pad_type(c),
          .ceil_mode = c.attr_int("ceil_mode", 0) != 0,
          .count_include_pad = c.attr_int("count_include_pad", 0) != 0};
}

Values max_pool(const NodeContext& c) {
  c.require_attr("storage_order", 0, "pxl's tensors are row-major");
  if (c.node().output_size() > 1 && !c.node().output(1).empty())
    c.fail("the Indices output is not supported");
  return {ops::max_pool(c.tensor(0), c.attr_ints("kernel_shape"), pool_options(c))};
}

Values average_pool(const NodeContext& c) {
  return {ops::average_pool(c.tensor(0), c.attr_ints("kernel_shape"), pool_options(c))};
}

Values batch_norm(const NodeContext& c) {
  if (c.attr_int("training_mode", 0) != 0 || c.node().output_size() > 1)
    c.fail("training mode (the running statistics as outputs) is not supported: export the "
           "model in eval mode");
  return {ops::batch_norm_inference(c.tensor(0), c.tensor(1), c.tensor(2), c.tensor(3), c.tensor(4),
                                    c.attr_float("epsilon", 1e-5))};
}

Values layer_norm(const NodeContext& c) {
  const Shape in = c.shape(0);
  if (axis_of(c, c.attr_int("axis", -1), in.size()) != static_cast<std::int64_t>(in.size()) - 1)
    c.fail("only axis = -1 (the last axis) is supported");
  if (c.attr_int("stash_type", 1) != 1)
    c.fail("only stash_type = 1 (float32 statistics) is supported");
  if (c.node().output_size() > 1)
    c.fail("the Mean and InvStdDev outputs are not supported");
  if (!c.has(2))
    c.fail("a LayerNormalization without B is not supported");
  return {ops::layer_norm(c.tensor(0), c.tensor(1), c.tensor(2), c.attr_float("epsilon", 1e-5))};
}

// Softmax and LogSoftmax: from opset 13 over one axis; before it over the flattened axes
// from `axis` on, the same when axis is the last one.
template <Tensor (*Op)(const Tensor&, std::int64_t)>
Values softmax_like(const NodeContext& c) {
  const Shape in = c.shape(0);
  const std::int64_t axis = axis_of(c, c.attr_int("axis", c.opset() < 13 ? 1 : -1), in.size());
  if (c.opset() < 13 && axis != static_cast<std::int64_t>(in.size()) - 1)
    c.fail("before opset 13, only an axis that is the last one is supported (the earlier "
           "opsets flatten the axes from it on)");
  return {Op(c.tensor(0), axis)};
}

// ReduceMean/ReduceSum: axes an attribute (ReduceSum: an input from opset 13).
template <Tensor (*Op)(const Tensor&, std::optional<std::vector<std::int64_t>>, bool)>
OpRow reduce(const char* op_type, bool axes_input_from_13) {
  return {op_type, 11, 17, [axes_input_from_13](const NodeContext& c) -> Values {
            std::vector<std::int64_t> axes = axes_input_from_13 && c.opset() >= 13 && c.has(1)
                                                 ? c.ints(1, "axes")
                                                 : c.attr_ints("axes");
            const bool keep = c.attr_int("keepdims", 1) != 0;
            if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0)
              return {c.tensor(0)};
            return {Op(c.tensor(0),
                       axes.empty() ? std::nullopt : std::optional<std::vector<std::int64_t>>(axes),
                       keep)};
          }};
}

Values dropout(const NodeContext& c) {
  if (c.node().output_size() > 1 && !c.node().output(1).empty())
    c.fail("the mask output is not supported");
  if (c.has(2) && c.is_folded(2) && c.folded(2, "training_mode").data.at(0) != 0)
    c.fail("training_mode = true is not supported: export the model in eval mode");
  return identity(c); // inference: the identity, as ONNX defines it
}

} // namespace

std::vector<OpRow> nn_rows() {
  return {
      {"AveragePool", 11, 17, average_pool},
      {"BatchNormalization", 11, 17, batch_norm,
       "inference form only (training_mode = 0, one output)"},
      {"Conv", 11, 17, conv, "1 to 3 spatial axes"},
      {"Dropout", 11, 17, dropout, "inference: the identity, without the mask output"},
      {"Gemm", 11, 17, gemm},
      {"GlobalAveragePool", 11, 17,
       [](const NodeContext& c) -> Values { return {ops::global_average_pool(c.tensor(0))}; }},
      {"GlobalMaxPool", 11, 17,
       [](const NodeContext& c) -> Values { return {ops::global_max_pool(c.tensor(0))}; }},
      {"LayerNormalization", 17, 17, layer_norm, "axis = -1, stash_type = 1, with B, one output"},
      {"LogSoftmax", 11, 17, softmax_like<ops::log_softmax>,
       "before opset 13, only over the last axis"},
      {"MatMul", 11, 17,
       [](const NodeContext& c) -> Values { return {ops::matmul(c.tensor(0), c.tensor(1))}; }},
      {"MaxPool", 11, 17, max_pool, "storage_order = 0, without the Indices output"},
      reduce<ops::mean>("ReduceMean", false),
      reduce<ops::sum>("ReduceSum", true),
      {"Softmax", 11, 17, softmax_like<ops::softmax>, "before opset 13, only over the last axis"},
  };
}

} // namespace pxl::onnx::detail
