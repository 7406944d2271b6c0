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
/// a·x + b·y, a new tensor (x and y may differ in dtype from each other only if castable).
Tensor scaled_add(const Tensor& x, const Tensor& y, double a = 1.0, double b = 1.0);
/// x = a·x + b·y: the SGD step is `scaled_add_(w, grad, 1.0, -lr)`.
Tensor scaled_add_(const Tensor& x, const Tensor& y, double a = 1.0, double b = 1.0);

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
