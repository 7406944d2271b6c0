// In-place updates. Each returns a tensor aliasing its first argument, which it modifies.
#pragma once

#include "pxl/ir/tensor.hpp"

namespace pxl::ops {

/// a += b (b broadcast to a's shape).
Tensor add_(const Tensor& a, const Tensor& b);
/// a -= b (b broadcast to a's shape).
Tensor sub_(const Tensor& a, const Tensor& b);
/// a *= b (b broadcast to a's shape).
Tensor mul_(const Tensor& a, const Tensor& b);
/// The coefficients of `a·x + b·y`, named at every call so that neither can be mistaken for
/// the other: `scaled_add_(w, grad, {.a = 1, .b = -lr})`, or `{.b = -lr}` since a defaults
/// to 1. (PopXL's `scaled_add_(w, g, b=-lr)`; a bare trailing number does not compile.)
struct ScaledAddFactors {
  double a = 1.0; ///< the factor of x
  double b = 1.0; ///< the factor of y
};

/// a·x + b·y, a new tensor (x and y of one float dtype; y broadcast to x's shape).
Tensor scaled_add(const Tensor& x, const Tensor& y, ScaledAddFactors f = {});
/// x = a·x + b·y in place: the SGD step is `scaled_add_(w, grad, {.b = -lr})`.
Tensor scaled_add_(const Tensor& x, const Tensor& y, ScaledAddFactors f = {});

} // namespace pxl::ops

namespace pxl::ops::var_updates {

/// t += f·x.
Tensor accumulate_(const Tensor& t, const Tensor& x, double f = 1.0);
/// t = x.
Tensor copy_var_update_(const Tensor& t, const Tensor& x);
/// t *= f.
Tensor accumulator_scale_(const Tensor& t, double f);
/// t = 0.
Tensor accumulator_zero_(const Tensor& t);

} // namespace pxl::ops::var_updates
