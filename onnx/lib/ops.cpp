// The supported ONNX operators: one row each, built from pxl's public op builders, or folded
// on the host when every input is known at import (shape arithmetic).
#include "node_context.hpp"

#include "pxl/ir/graph.hpp"
#include "pxl/ops/conv.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/matmul.hpp"
#include "pxl/ops/nn.hpp"
#include "pxl/ops/norm.hpp"
#include "pxl/ops/pool.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pxl::onnx::detail {
namespace {

using ::onnx::TensorProto;
using Values = std::vector<Value>;

bool is_integer_type(std::int32_t t) {
  return t != TensorProto::FLOAT && t != TensorProto::FLOAT16 && t != TensorProto::DOUBLE &&
         t != TensorProto::BFLOAT16;
}

// An axis in [-rank, rank) as an index; ImportError otherwise.
std::int64_t axis_of(const NodeContext& c, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

// NumPy broadcasting of folded shapes.
Shape broadcast_shapes(const NodeContext& c, const std::vector<Shape>& shapes) {
  std::size_t rank = 0;
  for (const auto& s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes)
    for (std::size_t i = 0; i < s.size(); ++i) {
      auto& o = out[rank - s.size() + i];
      if (s[i] != 1 && o != 1 && s[i] != o)
        c.fail("shapes do not broadcast");
      if (s[i] != 1)
        o = s[i];
    }
  return out;
}

// Element `flat` of the broadcast output read from `f`.
double broadcast_at(const Folded& f, const Shape& out, std::int64_t flat) {
  if (f.data.size() == 1)
    return f.data[0];
  const auto st_out = strides_of(out);
  const auto st_in = strides_of(f.shape);
  std::int64_t index = 0;
  const std::size_t offset = out.size() - f.shape.size();
  for (std::size_t a = 0; a < out.size(); ++a) {
    const std::int64_t i = (flat / st_out[a]) % out[a];
    if (a >= offset && f.shape[a - offset] != 1)
      index += i * st_in[a - offset];
  }
  return f.data[static_cast<std::size_t>(index)];
}

// The shape of a value folded at import: its sizes not negative and its elements at most 2^24
// (folding is for shapes, axes and small constants; a larger result would only be a model
// that asks the host for gigabytes before anything runs).
void check_folded_shape(const NodeContext& c, const Shape& shape) {
  std::int64_t n = 1;
  for (const auto d : shape) {
    if (d < 0)
      c.fail("a size of " + std::to_string(d) + " is negative");
    n = d == 0 || n <= (std::int64_t{1} << 24) / d ? n * d : (std::int64_t{1} << 24) + 1;
  }
  if (n > (std::int64_t{1} << 24))
    c.fail("the value known at import would hold more than 2^24 elements; pxl folds only "
           "shapes and small constants");
}

// Folds an element-wise op of the node's inputs on the host.
template <typename F>
Folded fold_elementwise(const NodeContext& c, std::int32_t elem_type, F f) {
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < c.inputs(); ++i)
    shapes.push_back(c.folded(i, "operand").shape);
  Folded out{.shape = broadcast_shapes(c, shapes), .elem_type = elem_type};
  check_folded_shape(c, out.shape);
  const std::int64_t n = nelms(out.shape);
  out.data.resize(static_cast<std::size_t>(n));
  std::vector<double> args(c.inputs());
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::size_t i = 0; i < c.inputs(); ++i)
      args[i] = broadcast_at(c.folded(i, "operand"), out.shape, k);
    out.data[static_cast<std::size_t>(k)] = f(args);
  }
  return out;
}

// A binary operator: folded when both inputs are known, built with `op` otherwise.
using DeviceBinary = Tensor (*)(const Tensor&, const Tensor&);
OpRow binary(const char* op_type, DeviceBinary op, double (*fold)(double, double, bool),
             bool to_bool = false, const char* restriction = "") {
  return {op_type, 11, 17,
          [op, fold, to_bool](const NodeContext& c) -> Values {
            if (c.all_folded()) {
              const bool integer = is_integer_type(c.elem_type(0));
              return {fold_elementwise(
                  c, to_bool ? TensorProto::BOOL : c.elem_type(0),
                  [&](const std::vector<double>& a) { return fold(a[0], a[1], integer); })};
            }
            return {op(c.tensor(0), c.tensor(1))};
          },
          restriction};
}

using DeviceUnary = Tensor (*)(const Tensor&);
OpRow unary(const char* op_type, DeviceUnary op, std::int64_t min_opset = 11) {
  return {op_type, min_opset, 17,
          [op](const NodeContext& c) -> Values { return {op(c.tensor(0))}; }};
}

Values identity(const NodeContext& c) {
  if (c.is_folded(0))
    return {c.folded(0, "input")};
  return {c.tensor(0)};
}

// Reshape with ONNX's 0 (copy the input's size; allowzero = 0) and -1 (inferred).
Shape reshape_target(const NodeContext& c, const Shape& in, std::vector<std::int64_t> target) {
  if (c.attr_int("allowzero", 0) != 0)
    c.fail("attribute allowzero = 1 is not supported");
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0) {
      if (i >= in.size())
        c.fail("shape entry " + std::to_string(i) + " is 0 but the input has rank " +
               std::to_string(in.size()));
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (infer >= 0)
        c.fail("shape has more than one -1");
      infer = static_cast<std::int64_t>(i);
    } else if (target[i] < 0) {
      c.fail("shape entry " + std::to_string(target[i]) + " is negative");
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      c.fail("the shape's sizes overflow 64 bits");
    }
  }
  if (infer >= 0) {
    if (known == 0 || nelms(in) % known != 0)
      c.fail("cannot infer the -1 of the shape");
    target[static_cast<std::size_t>(infer)] = nelms(in) / known;
  }
  if (nelms(target) != nelms(in))
    c.fail("cannot reshape " + std::to_string(nelms(in)) + " elements to " +
           std::to_string(nelms(target)));
  return target;
}

// Input 0 as `shape` (of as many elements): folded when it is known, else pxl's reshape.
Value reshaped(const NodeContext& c, const Shape& shape) {
  if (c.is_folded(0)) {
    Folded f = c.folded(0, "input");
    f.shape = shape;
    f.initializer.clear();
    return f;
  }
  return ops::reshape(c.tensor(0), shape);
}

Values reshape(const NodeContext& c) {
  const Shape target = reshape_target(c, c.shape(0), c.ints(1, "shape"));
  return {reshaped(c, target)};
}

Values flatten(const NodeContext& c) {
  const Shape in = c.shape(0);
  const std::int64_t axis = c.attr_int("axis", 1);
  const std::int64_t a =
      axis == static_cast<std::int64_t>(in.size()) ? axis : axis_of(c, axis, in.size());
  std::int64_t outer = 1;
  for (std::int64_t i = 0; i < a; ++i)
    outer *= in[static_cast<std::size_t>(i)];
  return {reshaped(c, {outer, nelms(in) / std::max<std::int64_t>(outer, 1)})};
}

Values shape_of(const NodeContext& c) {
  const Shape in = c.shape(0);
  const auto r = static_cast<std::int64_t>(in.size());
  std::int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  start = std::clamp(start < 0 ? start + r : start, std::int64_t{0}, r);
  end = std::clamp(end < 0 ? end + r : end, std::int64_t{0}, r);
  Folded f{.shape = {std::max<std::int64_t>(end - start, 0)}, .elem_type = TensorProto::INT64};
  for (std::int64_t i = start; i < end; ++i)
    f.data.push_back(static_cast<double>(in[static_cast<std::size_t>(i)]));
  return {f};
}

Values constant_node(const NodeContext& c) {
  if (const auto* t = c.attr_tensor("value"))
    return {folded_from_proto(*t, c.where())};
  if (c.has_attr("value_float"))
    return {Folded{
        .shape = {}, .elem_type = TensorProto::FLOAT, .data = {c.attr_float("value_float", 0)}}};
  if (c.has_attr("value_int"))
    return {Folded{.shape = {},
                   .elem_type = TensorProto::INT64,
                   .data = {static_cast<double>(c.attr_int("value_int", 0))}}};
  if (c.has_attr("value_ints")) {
    const auto v = c.attr_ints("value_ints");
    return {Folded{.shape = {static_cast<std::int64_t>(v.size())},
                   .elem_type = TensorProto::INT64,
                   .data = std::vector<double>(v.begin(), v.end())}};
  }
  c.fail("only the value, value_float, value_int and value_ints attributes are supported");
}

Values constant_of_shape(const NodeContext& c) {
  const auto shape = c.ints(0, "shape");
  Folded f{.shape = Shape(shape.begin(), shape.end()), .elem_type = TensorProto::FLOAT};
  check_folded_shape(c, f.shape);
  double v = 0;
  if (const auto* t = c.attr_tensor("value")) {
    const Folded value = folded_from_proto(*t, c.where());
    if (value.data.size() != 1)
      c.fail("attribute value must hold one element");
    f.elem_type = value.elem_type;
    v = value.data[0];
  }
  f.data.assign(static_cast<std::size_t>(nelms(f.shape)), v);
  return {f};
}

// Unsqueeze's and Squeeze's axes: an attribute before opset 13, an input from it.
std::vector<std::int64_t> axes_input(const NodeContext& c, bool required) {
  if (c.opset() < 13)
    return c.attr_ints("axes");
  if (!c.has(1)) {
    if (required)
      c.fail("input 1 (axes) is required");
    return {};
  }
  return c.ints(1, "axes");
}

Values unsqueeze(const NodeContext& c) {
  const Shape in = c.shape(0);
  auto axes = axes_input(c, true);
  const std::size_t rank = in.size() + axes.size();
  for (auto& a : axes)
    a = axis_of(c, a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    c.fail("axes repeat an axis");
  Shape out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < rank; ++i)
    out.push_back(std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(i))
                      ? 1
                      : in[next++]);
  return {reshaped(c, out)};
}

Values squeeze(const NodeContext& c) {
  const Shape in = c.shape(0);
  auto axes = axes_input(c, false);
  for (auto& a : axes) {
    a = axis_of(c, a, in.size());
    if (in[static_cast<std::size_t>(a)] != 1)
      c.fail("axis " + std::to_string(a) + " has size " +
             std::to_string(in[static_cast<std::size_t>(a)]) + ", not 1");
  }
  Shape out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const bool listed =
        std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) != axes.end();
    if (!(axes.empty() ? in[i] == 1 : listed))
      out.push_back(in[i]);
  }
  return {reshaped(c, out)};
}

Values concat(const NodeContext& c) {
  const Shape first = c.shape(0);
  const std::int64_t axis = axis_of(c, c.attr_int("axis", 0), first.size());
  if (c.all_folded()) {
    Folded out{.shape = first, .elem_type = c.folded(0, "input").elem_type};
    out.shape[static_cast<std::size_t>(axis)] = 0;
    for (std::size_t i = 0; i < c.inputs(); ++i)
      out.shape[static_cast<std::size_t>(axis)] +=
          c.folded(i, "input").shape[static_cast<std::size_t>(axis)];
    std::int64_t outer = 1;
    for (std::int64_t a = 0; a < axis; ++a)
      outer *= first[static_cast<std::size_t>(a)];
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::size_t i = 0; i < c.inputs(); ++i) {
        const Folded& f = c.folded(i, "input");
        const std::int64_t block = outer == 0 ? 0 : nelms(f.shape) / outer;
        out.data.insert(out.data.end(), f.data.begin() + o * block,
                        f.data.begin() + (o + 1) * block);
      }
    return {out};
  }
  std::vector<Tensor> ts;
  for (std::size_t i = 0; i < c.inputs(); ++i)
    ts.push_back(c.tensor(i));
  return {ops::concat(ts, axis)};
}

Values gather(const NodeContext& c) {
  const Shape data = c.shape(0);
  const std::int64_t axis = axis_of(c, c.attr_int("axis", 0), data.size());
  const std::int64_t n = data[static_cast<std::size_t>(axis)];
  if (c.is_folded(1)) {
    // Known indices: ONNX's negative ones counted from the end, range-checked here.
    const Folded& idx = c.folded(1, "indices");
    Folded fixed{.shape = idx.shape, .elem_type = TensorProto::INT32};
    for (double v : idx.data) {
      if (v < -n || v >= n)
        c.fail("index " + std::to_string(static_cast<std::int64_t>(v)) +
               " is out of range for an axis of " + std::to_string(n));
      fixed.data.push_back(v < 0 ? v + n : v);
    }
    if (c.is_folded(0)) {
      const Folded& f = c.folded(0, "data");
      Folded out{.elem_type = f.elem_type};
      out.shape.assign(data.begin(), data.begin() + axis);
      out.shape.insert(out.shape.end(), idx.shape.begin(), idx.shape.end());
      out.shape.insert(out.shape.end(), data.begin() + axis + 1, data.end());
      std::int64_t outer = 1, inner = 1;
      for (std::int64_t a = 0; a < axis; ++a)
        outer *= data[static_cast<std::size_t>(a)];
      for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < data.size(); ++a)
        inner *= data[a];
      for (std::int64_t o = 0; o < outer; ++o)
        for (double i : fixed.data)
          for (std::int64_t k = 0; k < inner; ++k)
            out.data.push_back(f.data[static_cast<std::size_t>(
                (o * n + static_cast<std::int64_t>(i)) * inner + k)]);
      return {out};
    }
    HostTensor ht = HostTensor::full(fixed.shape, int32, 0);
    auto d = ht.data<std::int32_t>();
    for (std::size_t i = 0; i < fixed.data.size(); ++i)
      d[i] = static_cast<std::int32_t>(fixed.data[i]);
    return {ops::gather(c.tensor(0), constant(ht), axis)};
  }
  // Indices computed by the graph (token ids): pxl's gather, whose out-of-range indices give
  // zeros; ONNX leaves them undefined. Negative ones are not counted from the end.
  return {ops::gather(c.tensor(0), c.tensor(1), axis)};
}

Values slice(const NodeContext& c) {
  const Shape in = c.shape(0);
  std::vector<std::int64_t> starts, ends, axes, steps;
  starts = c.ints(1, "starts");
  ends = c.ints(2, "ends");
  if (c.has(3))
    axes = c.ints(3, "axes");
  if (c.has(4))
    steps = c.ints(4, "steps");
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps must be of one length");
  std::vector<std::int64_t> begin(in.size(), 0), stop(in.begin(), in.end()), step(in.size(), 1);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const auto a = static_cast<std::size_t>(axis_of(c, axes[k], in.size()));
    const std::int64_t n = in[a];
    if (steps[k] <= 0)
      c.fail("steps must be positive (a negative step is not supported), found " +
             std::to_string(steps[k]));
    auto clampi = [n](std::int64_t v) { return std::clamp(v < 0 ? v + n : v, std::int64_t{0}, n); };
    begin[a] = clampi(starts[k]);
    stop[a] = std::max(clampi(ends[k]), begin[a]);
    step[a] = steps[k];
  }
  if (c.is_folded(0)) {
    const Folded& f = c.folded(0, "input");
    Folded out{.elem_type = f.elem_type};
    for (std::size_t a = 0; a < in.size(); ++a)
      out.shape.push_back((stop[a] - begin[a] + step[a] - 1) / step[a]);
    const auto st = strides_of(in);
    const auto ost = strides_of(out.shape);
    for (std::int64_t k = 0; k < nelms(out.shape); ++k) {
      std::int64_t src = 0;
      for (std::size_t a = 0; a < in.size(); ++a)
        src += (begin[a] + ((k / ost[a]) % out.shape[a]) * step[a]) * st[a];
      out.data.push_back(f.data[static_cast<std::size_t>(src)]);
    }
    return {out};
  }
  Tensor t = ops::slice(c.tensor(0), begin, stop);
  if (std::any_of(step.begin(), step.end(), [](std::int64_t s) { return s != 1; }))
    t = ops::subsample(t, step);
  return {t};
}

Values transpose(const NodeContext& c) {
  const Shape in = c.shape(0);
  std::vector<std::int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (std::size_t i = in.size(); i-- > 0;)
      perm.push_back(static_cast<std::int64_t>(i));
  return {ops::transpose(c.tensor(0), perm)};
}

Values cast(const NodeContext& c) {
  const auto to = static_cast<std::int32_t>(c.attr_int("to", TensorProto::FLOAT));
  if (c.is_folded(0)) {
    Folded f = c.folded(0, "input");
    const bool integer = is_integer_type(to) && to != TensorProto::BOOL;
    for (auto& v : f.data)
      v = to == TensorProto::BOOL ? (v != 0) : integer ? std::trunc(v) : v;
    if (to == TensorProto::FLOAT16)
      for (auto& v : f.data)
        v = static_cast<double>(static_cast<float>(half(static_cast<float>(v))));
    else if (to == TensorProto::FLOAT)
      for (auto& v : f.data)
        v = static_cast<double>(static_cast<float>(v));
    f.elem_type = to;
    f.initializer.clear();
    return {f};
  }
  return {ops::cast(c.tensor(0), device_dtype(to, c.where(), c.float_dtype()))};
}

// A scalar known at import, as a double (Clip's min and max).
double scalar(const NodeContext& c, std::size_t i, const char* what) {
  const Folded& f = c.folded(i, what);
  if (f.data.size() != 1)
    c.fail(std::string("the ") + what + " must be a scalar");
  return f.data[0];
}

Values clip(const NodeContext& c) {
  double lo = -INFINITY, hi = INFINITY;
  if (c.has(1))
    lo = scalar(c, 1, "min");
  if (c.has(2))
    hi = scalar(c, 2, "max");
  if (lo > hi) // ONNX: every element becomes max
    lo = hi;
  return {ops::clip(c.tensor(0), lo, hi)};
}

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

Values where(const NodeContext& c) {
  if (c.all_folded())
    return {fold_elementwise(c, c.elem_type(1),
                             [](const std::vector<double>& a) { return a[0] != 0 ? a[1] : a[2]; })};
  return {ops::where(c.tensor(0), c.tensor(1), c.tensor(2))};
}

Values expand(const NodeContext& c) {
  const auto target = c.ints(1, "shape");
  const Shape in = c.shape(0);
  const Shape out = broadcast_shapes(c, {in, Shape(target.begin(), target.end())});
  if (c.is_folded(0)) {
    Folded f{.shape = out, .elem_type = c.elem_type(0)};
    check_folded_shape(c, out);
    for (std::int64_t k = 0; k < nelms(out); ++k)
      f.data.push_back(broadcast_at(c.folded(0, "input"), out, k));
    return {f};
  }
  // A broadcast is a tile of the input brought to the output's rank: exact for every dtype.
  Shape ranked(out.size() - in.size(), 1);
  ranked.insert(ranked.end(), in.begin(), in.end());
  std::vector<std::int64_t> repeats;
  for (std::size_t a = 0; a < out.size(); ++a)
    repeats.push_back(ranked[a] == out[a] ? 1 : out[a]);
  Tensor t = ops::reshape(c.tensor(0), ranked);
  if (std::any_of(repeats.begin(), repeats.end(), [](std::int64_t r) { return r != 1; }))
    t = ops::tile(t, repeats);
  return {t};
}

Values range(const NodeContext& c) {
  const double start = scalar(c, 0, "start"), limit = scalar(c, 1, "limit"),
               delta = scalar(c, 2, "delta");
  if (delta == 0)
    c.fail("delta must not be 0");
  const double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (!(count <= double(std::int64_t{1} << 24)))
    check_folded_shape(c, {(std::int64_t{1} << 24) + 1}); // fails: too many, or NaN
  const auto n = static_cast<std::int64_t>(count);
  Folded f{.shape = {n}, .elem_type = c.elem_type(0)};
  for (std::int64_t i = 0; i < n; ++i)
    f.data.push_back(start + static_cast<double>(i) * delta);
  return {f};
}

Values pad(const NodeContext& c) {
  const std::string mode = c.attr_string("mode", "constant");
  if (mode != "constant")
    c.fail("mode '" + mode + "' is not supported (only constant)");
  const Shape in = c.shape(0);
  const auto pads = c.ints(1, "pads");
  if (pads.size() != 2 * in.size())
    c.fail("pads must hold 2 × rank = " + std::to_string(2 * in.size()) + " values");
  double value = 0;
  if (c.has(2))
    value = scalar(c, 2, "constant_value");
  if (c.has(3))
    c.fail("the axes input is not supported");
  std::vector<std::pair<std::int64_t, std::int64_t>> widths;
  for (std::size_t a = 0; a < in.size(); ++a) {
    if (pads[a] < 0 || pads[a + in.size()] < 0)
      c.fail("negative pads (cropping) are not supported");
    widths.emplace_back(pads[a], pads[a + in.size()]);
  }
  return {ops::pad(c.tensor(0), widths, value)};
}

Values dropout(const NodeContext& c) {
  if (c.node().output_size() > 1 && !c.node().output(1).empty())
    c.fail("the mask output is not supported");
  if (c.has(2) && c.is_folded(2) && c.folded(2, "training_mode").data.at(0) != 0)
    c.fail("training_mode = true is not supported: export the model in eval mode");
  return identity(c); // inference: the identity, as ONNX defines it
}

double fold_add(double a, double b, bool) { return a + b; }
double fold_sub(double a, double b, bool) { return a - b; }
double fold_mul(double a, double b, bool) { return a * b; }
double fold_div(double a, double b, bool integer) { return integer ? std::trunc(a / b) : a / b; }
double fold_pow(double a, double b, bool) { return std::pow(a, b); }
double fold_equal(double a, double b, bool) { return a == b; }
double fold_less(double a, double b, bool) { return a < b; }
double fold_greater(double a, double b, bool) { return a > b; }

Tensor pow_tensors(const Tensor& a, const Tensor& b) { return ops::pow(a, b); }

} // namespace

const std::vector<OpRow>& op_table() {
  static const std::vector<OpRow> rows = {
      binary("Add", ops::add, fold_add),
      unary("Abs", ops::abs),
      {"AveragePool", 11, 17, average_pool},
      {"BatchNormalization", 11, 17, batch_norm,
       "inference form only (training_mode = 0, one output)"},
      {"Cast", 11, 17, cast, "to a type with a pxl dtype (64-bit types downcast)"},
      unary("Ceil", ops::ceil),
      {"Clip", 11, 17, clip, "min and max known at import"},
      {"Concat", 11, 17, concat},
      {"Constant", 11, 17, constant_node, "value, value_float, value_int or value_ints"},
      {"ConstantOfShape", 11, 17, constant_of_shape, "shape known at import"},
      {"Conv", 11, 17, conv, "1 to 3 spatial axes"},
      binary("Div", ops::div, fold_div),
      {"Dropout", 11, 17, dropout, "inference: the identity, without the mask output"},
      binary("Equal", ops::equal, fold_equal, true),
      unary("Erf", ops::erf),
      unary("Exp", ops::exp),
      {"Expand", 11, 17, expand, "shape known at import"},
      {"Flatten", 11, 17, flatten},
      unary("Floor", ops::floor),
      {"Gather", 11, 17, gather, "indices computed by the graph must be in range and not negative"},
      {"Gemm", 11, 17, gemm},
      {"GlobalAveragePool", 11, 17,
       [](const NodeContext& c) -> Values { return {ops::global_average_pool(c.tensor(0))}; }},
      {"GlobalMaxPool", 11, 17,
       [](const NodeContext& c) -> Values { return {ops::global_max_pool(c.tensor(0))}; }},
      binary("Greater", ops::greater, fold_greater, true),
      {"Identity", 11, 17, identity},
      {"LayerNormalization", 17, 17, layer_norm, "axis = -1, stash_type = 1, with B, one output"},
      binary("Less", ops::less, fold_less, true),
      unary("Log", ops::log),
      {"LogSoftmax", 11, 17, softmax_like<ops::log_softmax>,
       "before opset 13, only over the last axis"},
      {"MatMul", 11, 17,
       [](const NodeContext& c) -> Values { return {ops::matmul(c.tensor(0), c.tensor(1))}; }},
      {"MaxPool", 11, 17, max_pool, "storage_order = 0, without the Indices output"},
      binary("Mul", ops::mul, fold_mul),
      unary("Neg", ops::negate),
      {"Pad", 11, 17, pad, "constant mode, pads known at import and not negative"},
      binary("Pow", pow_tensors, fold_pow),
      {"Range", 11, 17, range, "start, limit and delta known at import"},
      unary("Reciprocal", [](const Tensor& t) { return ops::div(constant(1.0, t.dtype()), t); }),
      reduce<ops::mean>("ReduceMean", false),
      reduce<ops::sum>("ReduceSum", true),
      unary("Relu", ops::relu),
      {"Reshape", 11, 17, reshape, "shape known at import; allowzero = 0"},
      {"Shape", 11, 17, shape_of},
      unary("Sigmoid", ops::sigmoid),
      {"Slice", 11, 17, slice, "starts, ends, axes and steps known at import; steps positive"},
      {"Softmax", 11, 17, softmax_like<ops::softmax>, "before opset 13, only over the last axis"},
      unary("Sqrt", ops::sqrt),
      {"Squeeze", 11, 17, squeeze, "axes known at import"},
      binary("Sub", ops::sub, fold_sub),
      unary("Tanh", ops::tanh),
      {"Transpose", 11, 17, transpose},
      {"Unsqueeze", 11, 17, unsqueeze, "axes known at import"},
      {"Where", 11, 17, where},
  };
  return rows;
}

const OpRow* find_op(const std::string& op_type) {
  const auto& rows = op_table();
  const auto it =
      std::find_if(rows.begin(), rows.end(), [&](const OpRow& r) { return op_type == r.op_type; });
  return it == rows.end() ? nullptr : &*it;
}

} // namespace pxl::onnx::detail

namespace pxl::onnx {

std::vector<SupportedOperator> supported_operators() {
  std::vector<SupportedOperator> out;
  for (const auto& row : detail::op_table())
    out.push_back({row.op_type, row.min_opset, row.max_opset, row.restriction});
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.op_type < b.op_type; });
  return out;
}

} // namespace pxl::onnx
