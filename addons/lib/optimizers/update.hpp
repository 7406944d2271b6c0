// Private helpers of the optimizer steps: casts and the learning-rate-scaled update.
#pragma once

#include "pxl/addons/optimizers/learning_rate.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/var_updates.hpp"

namespace pxl::addons::optimizers::impl {

/// `t` in dtype `d` (a cast only when needed).
inline Tensor as(const Tensor& t, DType d) { return t.dtype() == d ? t : pxl::ops::cast(t, d); }

/// w -= lr·u, in place. A constant lr is one scaled add (w + (−lr)·u in double, rounded once);
/// a tensor lr computes (−lr)·u in float32, casts it to w's dtype and adds it (rounded twice).
inline Tensor subtract_scaled_(const Tensor& w, const Tensor& u, const LearningRate& lr) {
  if (!lr.is_tensor())
    return pxl::ops::scaled_add_(w, as(u, w.dtype()), {.b = -lr.value()});
  return pxl::ops::add_(w, as(pxl::ops::negate(lr.tensor()) * as(u, float32), w.dtype()));
}

} // namespace pxl::addons::optimizers::impl
