// Reductions: validate the operand and the axes, then infer the reduced shape.
#include "pxl/ops/reduce.hpp"
#include "ir/op_builder.hpp"

#include <algorithm>

namespace pxl::ops {

namespace {

std::string axes_string(const std::vector<std::int64_t>& axes) {
  std::string s = "[";
  for (std::size_t i = 0; i < axes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

/// Normalised, sorted axes; every axis when `axes` is nullopt or empty (PopXL's default).
std::vector<std::int64_t> reduction_axes(std::string_view op, const Tensor& t,
                                         const std::optional<std::vector<std::int64_t>>& axes) {
  std::vector<std::int64_t> out;
  if (!axes || axes->empty()) {
    for (std::int64_t a = 0; a < t.rank(); ++a)
      out.push_back(a);
    return out;
  }
  for (auto a : *axes)
    out.push_back(normalize_axis(a, t.rank(), op));
  std::sort(out.begin(), out.end());
  // The shared helper's message does not name the rank; the user may have written -1 and 1.
  if (auto dup = std::adjacent_find(out.begin(), out.end()); dup != out.end())
    throw ValueError(std::string(op) + ": axis " + std::to_string(*dup) + " is repeated in axes " +
                     axes_string(*axes) + " of a tensor of rank " + std::to_string(t.rank()) +
                     "; list each axis once");
  return out;
}

Shape reduced_shape(const Shape& in, const std::vector<std::int64_t>& axes, bool keepdims) {
  Shape out;
  for (std::int64_t a = 0; a < static_cast<std::int64_t>(in.size()); ++a) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), a);
    if (!reduced)
      out.push_back(in[static_cast<std::size_t>(a)]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

void check_numeric(OpKind kind, const Tensor& t, bool allow_int) {
  if (is_floating_point(t.dtype()) || (allow_int && t.dtype() == int32))
    return;
  throw DTypeError(std::string(op_type_name(kind)) + ": expected a " +
                   (allow_int ? "float32, float16 or int32" : "float32 or float16") +
                   " tensor, got " + to_string(t));
}

Tensor reduce(OpKind kind, const Tensor& t, const std::optional<std::vector<std::int64_t>>& axes,
              bool keepdims, bool allow_int) {
  const auto op = op_type_name(kind);
  check_numeric(kind, t, allow_int);
  auto norm = reduction_axes(op, t, axes);
  Shape shape = reduced_shape(t.shape(), norm, keepdims);
  return detail::add_op1(kind, {t}, TensorSpec{std::move(shape), t.dtype()},
                         ReduceAttrs{std::move(norm), keepdims});
}

} // namespace

Tensor sum(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceSum, t, axes, keepdims, true);
}
Tensor mean(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceMean, t, axes, keepdims, false);
}
Tensor max(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceMax, t, axes, keepdims, true);
}
Tensor min(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceMin, t, axes, keepdims, true);
}
std::pair<Tensor, Tensor> topk(const Tensor& t, std::int64_t k, std::int64_t axis, bool largest,
                               bool /*sorted: the order is always best first*/) {
  check_numeric(OpKind::TopK, t, true);
  if (t.rank() == 0)
    throw ValueError("TopK: " + to_string(t) + " is a scalar; it needs an axis to select along");
  const std::int64_t a = normalize_axis(axis, t.rank(), "TopK");
  Shape shape = t.shape();
  const std::int64_t extent = shape[static_cast<std::size_t>(a)];
  if (k < 0 || k > extent)
    throw ValueError("TopK: k = " + std::to_string(k) + " must be in [0, " +
                     std::to_string(extent) + "], the extent of axis " + std::to_string(axis) +
                     " of " + to_string(t));
  shape[static_cast<std::size_t>(a)] = k;
  const Tensor inputs[] = {t};
  auto outs =
      detail::add_op(OpKind::TopK, inputs, {TensorSpec{shape, t.dtype()}, TensorSpec{shape, int32}},
                     TopKAttrs{k, a, largest});
  return {outs[0], outs[1]};
}
std::pair<Tensor, Tensor>
median_with_indices(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  check_numeric(OpKind::ReduceMedian, t, true);
  auto norm = reduction_axes("ReduceMedian", t, axes);
  std::int64_t n = 1;
  for (auto a : norm)
    n *= t.shape()[static_cast<std::size_t>(a)];
  if (n == 0)
    throw ValueError("ReduceMedian: the reduced axes " + axes_string(norm) + " of " + to_string(t) +
                     " hold no element, and nothing has no median");
  Shape shape = reduced_shape(t.shape(), norm, keepdims);
  const Tensor inputs[] = {t};
  auto outs = detail::add_op(OpKind::ReduceMedian, inputs,
                             {TensorSpec{shape, t.dtype()}, TensorSpec{shape, int32}},
                             ReduceAttrs{std::move(norm), keepdims});
  return {outs[0], outs[1]};
}
Tensor median(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return median_with_indices(t, std::move(axes), keepdims).first;
}
Tensor histogram(const Tensor& t, const std::vector<double>& levels, bool absolute_of_input) {
  check_numeric(OpKind::Histogram, t, false);
  if (levels.empty())
    throw ValueError("Histogram: needs at least one level (bin edge) to bin " + to_string(t));
  for (std::size_t i = 1; i < levels.size(); ++i)
    if (!(levels[i - 1] < levels[i]))
      throw ValueError("Histogram: the levels must increase strictly, but level " +
                       std::to_string(i) + " (" + std::to_string(levels[i]) +
                       ") does not exceed level " + std::to_string(i - 1) + " (" +
                       std::to_string(levels[i - 1]) + ")");
  return detail::add_op1(OpKind::Histogram, {t},
                         TensorSpec{Shape{static_cast<std::int64_t>(levels.size()) + 1}, uint32},
                         HistogramAttrs{levels, absolute_of_input});
}
Tensor lamb_square(const Tensor& t) {
  check_numeric(OpKind::LambSquare, t, false);
  return detail::add_op1(OpKind::LambSquare, {t}, TensorSpec{Shape{}, float32});
}
Tensor prod(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceProd, t, axes, keepdims, true);
}
Tensor l1(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceL1, t, axes, keepdims, false);
}
Tensor l2(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceL2, t, axes, keepdims, false);
}
Tensor sumsquare(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceSumSquare, t, axes, keepdims, false);
}
Tensor logsum(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceLogSum, t, axes, keepdims, false);
}
Tensor logsumexp(const Tensor& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims) {
  return reduce(OpKind::ReduceLogSumExp, t, axes, keepdims, false);
}

namespace {
Tensor arg_extremum(OpKind kind, const Tensor& t, std::int64_t axis, bool keepdims) {
  const auto op = op_type_name(kind);
  check_numeric(kind, t, true);
  const auto a = normalize_axis(axis, t.rank(), op);
  if (t.shape()[static_cast<std::size_t>(a)] == 0)
    throw ValueError(std::string(op) + ": axis " + std::to_string(a) + " of " + to_string(t) +
                     " is empty, and an empty sequence has no " +
                     (kind == OpKind::ArgMax ? "argmax" : "argmin") + " (as in NumPy)");
  Shape shape = reduced_shape(t.shape(), {a}, keepdims);
  return detail::add_op1(kind, {t}, TensorSpec{std::move(shape), int32}, AxisAttrs{a, keepdims});
}
} // namespace

Tensor argmax(const Tensor& t, std::int64_t axis, bool keepdims) {
  return arg_extremum(OpKind::ArgMax, t, axis, keepdims);
}
Tensor argmin(const Tensor& t, std::int64_t axis, bool keepdims) {
  return arg_extremum(OpKind::ArgMin, t, axis, keepdims);
}

Tensor cumsum(const Tensor& t, std::int64_t axis) {
  check_numeric(OpKind::CumSum, t, true);
  const auto a = normalize_axis(axis, t.rank(), "CumSum");
  return detail::add_op1(OpKind::CumSum, {t}, t.spec(), AxisAttrs{a, false});
}

} // namespace pxl::ops
