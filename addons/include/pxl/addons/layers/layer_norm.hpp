// pxl::addons::LayerNorm: normalise over the last axis, then scale and shift.
#pragma once

#include "pxl/addons/module/initializers.hpp"
#include "pxl/addons/module/module.hpp"

namespace pxl::addons {

/// Layer normalisation over the last axis (popxl.addons' LayerNorm, any rank ≥ 1):
/// y = (x − mean) / sqrt(var + eps) · weight + bias, with the biased variance of the last
/// axis. Variables `weight` (from `gamma_initializer`, ones) and `bias` (from
/// `beta_initializer`, zeros: Keras's LayerNormalization's arguments and defaults), both
/// shaped (x.shape[-1],) and of x's dtype. Built on the core `ops::layer_norm`, so autodiff
/// uses its gradient rule.
class LayerNorm : public Module<LayerNorm> {
public:
  /// ValueError for eps < 0 (or NaN).
  explicit LayerNorm(double eps = 1e-5,
                     initializers::KerasInitializer gamma_initializer = initializers::ones(),
                     initializers::KerasInitializer beta_initializer = initializers::zeros());

  /// x: (..., features) floating point → same shape. ShapeError for a rank-0 x, DTypeError
  /// for an integer x.
  Tensor build(const Tensor& x);

  double eps;
  initializers::KerasInitializer gamma_initializer;
  initializers::KerasInitializer beta_initializer;
};

} // namespace pxl::addons
