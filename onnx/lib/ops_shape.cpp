// The ONNX operators of shapes and indexing, folded on the host when every input is known at
// import (shape arithmetic): Reshape, Shape, Gather, Slice, Concat, Expand, Range, Pad, ...
#include "folding.hpp"

#include "pxl/ir/graph.hpp"
#include "pxl/ops/shape.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pxl::onnx::detail {
namespace {

using ::onnx::TensorProto;

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

} // namespace

std::vector<OpRow> shape_rows() {
  return {
      {"Concat", 11, 17, concat},
      {"Constant", 11, 17, constant_node, "value, value_float, value_int or value_ints"},
      {"ConstantOfShape", 11, 17, constant_of_shape, "shape known at import"},
      {"Expand", 11, 17, expand, "shape known at import"},
      {"Flatten", 11, 17, flatten},
      {"Gather", 11, 17, gather, "indices computed by the graph must be in range and not negative"},
      {"Identity", 11, 17, identity},
      {"Pad", 11, 17, pad, "constant mode, pads known at import and not negative"},
      {"Range", 11, 17, range, "start, limit and delta known at import"},
      {"Reshape", 11, 17, reshape, "shape known at import; allowzero = 0"},
      {"Shape", 11, 17, shape_of},
      {"Slice", 11, 17, slice, "starts, ends, axes and steps known at import; steps positive"},
      {"Squeeze", 11, 17, squeeze, "axes known at import"},
      {"Transpose", 11, 17, transpose},
      {"Unsqueeze", 11, 17, unsqueeze, "axes known at import"},
  };
}

} // namespace pxl::onnx::detail
