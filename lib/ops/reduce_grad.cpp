// Gradient rules of the reductions: the output gradient is spread back over the reduced axes.
#include "ops/grad_rule.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"

#include <algorithm>

namespace pxl::detail {

namespace {
/// The output gradient reshaped with the reduced axes kept as size 1.
Tensor keep_reduced_axes(GradContext& c, const Tensor& g) {
  const auto& attrs = c.op().attrs_as<ReduceAttrs>();
  Shape keep = c.op().input(0).shape();
  for (auto a : attrs.axes)
    keep[static_cast<std::size_t>(a)] = 1;
  return ops::reshape(g, keep);
}

std::vector<Tensor> extremum_grad(GradContext& c) {
  // The gradient goes to every element equal to the extremum.
  const Tensor x = c.fwd_input(0);
  const Tensor y = keep_reduced_axes(c, c.fwd_output(0));
  const Tensor g = keep_reduced_axes(c, c.grad_output(0));
  return {ops::where(ops::equal(x, y), expand(g, x.shape()), constant(0.0, x.dtype()))};
}
} // namespace

std::vector<Tensor> grad_ReduceSum(GradContext& c) {
  return {expand(keep_reduced_axes(c, c.grad_output(0)), c.op().input(0).shape())};
}
std::vector<Tensor> grad_ReduceMean(GradContext& c) {
  const double count =
      static_cast<double>(c.op().input(0).nelms()) / static_cast<double>(c.op().output(0).nelms());
  return {expand(keep_reduced_axes(c, c.grad_output(0)) * (1.0 / count), c.op().input(0).shape())};
}
// y_i = Σ_{k<=i} x_k, so dx_k = Σ_{i>=k} g_i: the total minus the running sum before k.
std::vector<Tensor> grad_CumSum(GradContext& c) {
  const auto axis = c.op().attrs<OpKind::CumSum>().axis;
  const Tensor g = c.grad_output(0);
  return {ops::sum(g, std::vector<std::int64_t>{axis}, true) - ops::cumsum(g, axis) + g};
}
std::vector<Tensor> grad_ReduceMax(GradContext& c) { return extremum_grad(c); }
// The values' gradient goes back to where they were taken from; the indices have none.
std::vector<Tensor> grad_TopK(GradContext& c) {
  const Tensor x = c.fwd_input(0);
  const auto axis = c.op().attrs<OpKind::TopK>().axis;
  return {ops::scatter_add(expand(constant(0.0, x.dtype()), x.shape()), c.fwd_output(1),
                           c.grad_output(0), axis)};
}
// The gradient goes to the element each median was taken from: the reduced axes moved last and
// flattened, the gradient scattered there at the forward indices, and the axes put back.
std::vector<Tensor> grad_ReduceMedian(GradContext& c) {
  const Tensor x = c.fwd_input(0);
  const auto& axes = c.op().attrs<OpKind::ReduceMedian>().axes;
  std::vector<std::int64_t> perm;
  Shape kept, moved;
  std::int64_t n = 1;
  for (std::int64_t a = 0; a < x.rank(); ++a)
    if (!std::binary_search(axes.begin(), axes.end(), a)) {
      perm.push_back(a);
      kept.push_back(x.shape()[static_cast<std::size_t>(a)]);
    }
  for (auto a : axes) {
    perm.push_back(a);
    n *= x.shape()[static_cast<std::size_t>(a)];
  }
  for (auto a : perm)
    moved.push_back(x.shape()[static_cast<std::size_t>(a)]);
  Shape flat = kept, one = kept;
  flat.push_back(n);
  one.push_back(1);
  const Tensor spread =
      ops::scatter_add(expand(constant(0.0, x.dtype()), flat), ops::reshape(c.fwd_output(1), one),
                       ops::reshape(c.grad_output(0), one), -1);
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  const Tensor back = ops::reshape(spread, moved);
  return {std::is_sorted(perm.begin(), perm.end()) ? back : ops::transpose(back, inverse)};
}
// ∂y/∂x_i is the product of the other elements: y / x_i where x_i != 0; where x_i == 0, the
// product of the nonzero elements if x_i is the group's only zero, else 0.
std::vector<Tensor> grad_ReduceProd(GradContext& c) {
  const Tensor x = c.fwd_input(0);
  const auto& axes = c.op().attrs_as<ReduceAttrs>().axes;
  const Tensor zero = constant(0.0, x.dtype()), one = constant(1.0, x.dtype());
  const Tensor is_zero = ops::equal(x, zero);
  const Tensor y = keep_reduced_axes(c, c.fwd_output(0));
  const Tensor g = keep_reduced_axes(c, c.grad_output(0));
  const Tensor nonzero_prod = ops::prod(ops::where(is_zero, one, x), axes, true);
  const Tensor zeros = ops::sum(ops::cast(is_zero, x.dtype()), axes, true);
  const Tensor at_zero = ops::where(ops::equal(zeros, one), nonzero_prod, zero);
  const Tensor others = ops::where(is_zero, at_zero, y / ops::where(is_zero, one, x));
  return {expand(g, x.shape()) * others};
}
std::vector<Tensor> grad_ReduceL1(GradContext& c) {
  const Tensor x = c.fwd_input(0);
  return {expand(keep_reduced_axes(c, c.grad_output(0)), x.shape()) * ops::sign(x)};
}
std::vector<Tensor> grad_ReduceL2(GradContext& c) {
  const Tensor x = c.fwd_input(0);
  const Tensor zero = constant(0.0, x.dtype());
  const Tensor y = keep_reduced_axes(c, c.fwd_output(0));
  const Tensor is_zero = ops::equal(y, zero);
  const Tensor scale = ops::where(is_zero, zero,
                                  keep_reduced_axes(c, c.grad_output(0)) /
                                      ops::where(is_zero, constant(1.0, x.dtype()), y));
  return {x * scale};
}
std::vector<Tensor> grad_ReduceSumSquare(GradContext& c) {
  const Tensor x = c.fwd_input(0);
  return {x * (keep_reduced_axes(c, c.grad_output(0)) * 2.0)};
}
// d/dx_i log Σx = 1 / Σx = exp(-y).
std::vector<Tensor> grad_ReduceLogSum(GradContext& c) {
  const Tensor y = keep_reduced_axes(c, c.fwd_output(0));
  const Tensor g = keep_reduced_axes(c, c.grad_output(0));
  return {expand(g * ops::exp(ops::negate(y)), c.op().input(0).shape())};
}
// d/dx_i log Σexp(x) = exp(x_i - y), the softmax over the reduced axes.
std::vector<Tensor> grad_ReduceLogSumExp(GradContext& c) {
  const Tensor x = c.fwd_input(0);
  const Tensor y = keep_reduced_axes(c, c.fwd_output(0));
  return {keep_reduced_axes(c, c.grad_output(0)) * ops::exp(x - y)};
}
std::vector<Tensor> grad_ReduceMin(GradContext& c) { return extremum_grad(c); }

} // namespace pxl::detail
