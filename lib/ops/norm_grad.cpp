// Gradient rules of the normalisations: batch norm's input, scale and bias gradients are one
// BatchNormGrad (oneDNN's backward pass), group norm's one GroupNormGrad and two sums.
#include "ops/grad_rule.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/norm.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"

#include <algorithm>

namespace pxl::detail {

namespace {

/// A (C) tensor as (1, C, 1...), to broadcast against an input of rank `rank`.
Tensor per_channel(const Tensor& p, std::int64_t rank) {
  Shape s(static_cast<std::size_t>(rank), 1);
  s[1] = p.shape()[0];
  return ops::reshape(p, std::move(s));
}

/// Every axis of an (N, C, spatial...) tensor but the channels'.
std::vector<std::int64_t> all_but_channels(std::int64_t rank) {
  std::vector<std::int64_t> axes{0};
  for (std::int64_t a = 2; a < rank; ++a)
    axes.push_back(a);
  return axes;
}

} // namespace

std::vector<Tensor> grad_BatchNormInference(GradContext& c) {
  const double eps = c.op().attrs<OpKind::BatchNormInference>().epsilon;
  const Tensor x = c.fwd_input(0), scale = c.fwd_input(1), mean = c.fwd_input(3),
               var = c.fwd_input(4);
  const auto g =
      ops::batch_norm_grad(x, scale, mean, var, c.grad_output(0), eps, /*global_stats=*/true);
  std::vector<Tensor> r{g.t, g.scale, g.bias, Tensor{}, Tensor{}};
  // y = (x − mean)·rstd·scale + bias with rstd = (var + eps)^−½: ∂y/∂mean = −scale·rstd, and
  // ∂y/∂var = −½·scale·rstd²·x̂, summed against the gradient as d bias and d scale are.
  if (c.needs_grad(3) || c.needs_grad(4)) {
    const Tensor rstd = 1.0 / ops::sqrt(var + eps);
    if (c.needs_grad(3))
      r[3] = -(scale * rstd * g.bias);
    if (c.needs_grad(4))
      r[4] = -0.5 * scale * rstd * rstd * g.scale;
  }
  return r;
}

std::vector<Tensor> grad_BatchNormTraining(GradContext& c) {
  const double eps = c.op().attrs<OpKind::BatchNormTraining>().epsilon;
  const Tensor x = c.fwd_input(0), scale = c.fwd_input(1);
  const Tensor mean = c.fwd_output(1), var = c.fwd_output(2);
  auto g = ops::batch_norm_grad(x, scale, mean, var, c.grad_output(0), eps, /*global_stats=*/false);
  // The returned statistics depend on x too: mean = Σ x / M, var = Σ (x − mean)² / M (the
  // variance's gradient through the mean vanishes, as Σ (x − mean) = 0).
  const double m = static_cast<double>(
      std::max<std::int64_t>(1, x.nelms() / std::max<std::int64_t>(1, x.shape()[1])));
  if (c.needs_grad(0) && c.has_grad_output(1))
    g.t = g.t + per_channel(c.grad_output(1), x.rank()) / m;
  if (c.needs_grad(0) && c.has_grad_output(2))
    g.t = g.t +
          per_channel(c.grad_output(2), x.rank()) * (x - per_channel(mean, x.rank())) * (2.0 / m);
  return {g.t, g.scale, g.bias};
}

std::vector<Tensor> grad_GroupNorm(GradContext& c) {
  const NormAttrs& a = c.op().attrs<OpKind::GroupNorm>();
  const Tensor x = c.fwd_input(0), w = c.fwd_input(1), g = c.grad_output(0);
  const auto axes = all_but_channels(x.rank());
  std::vector<Tensor> r(3);
  if (c.needs_grad(0) || c.needs_grad(1)) {
    const auto [dx, weighted] = ops::group_norm_grad(x, w, g, a.num_groups, a.epsilon);
    if (c.needs_grad(0))
      r[0] = dx;
    if (c.needs_grad(1))
      r[1] = ops::sum(weighted, axes);
  }
  if (c.needs_grad(2))
    r[2] = ops::sum(g, axes);
  return r;
}

} // namespace pxl::detail
