// pxl::addons::Dense: Keras's fully connected layer, a Linear followed by an activation.
#pragma once

#include "pxl/addons/layers/activation.hpp"
#include "pxl/addons/module/module.hpp"

#include <cstdint>

namespace pxl::addons {

/// Keras's `Dense(units, activation, use_bias)`: y = activation(x · W + b). The variables are
/// Linear's, `weight` (in_features, units), truncated-normal(0, 0.02) initialised, and `bias`
/// (units), zeros, both of x's dtype and named directly under the layer (a Dense named
/// "layers.1" has "layers.1.weight" and "layers.1.bias"; Keras would say kernel and bias).
///
///     Sequential{Flatten{}, Dense(128, Activation::relu), Dense(10)}
class Dense : public Module<Dense> {
public:
  /// ValueError for units below 1.
  explicit Dense(std::int64_t units, Activation activation = Activation::none,
                 bool use_bias = true);

  /// x: (..., in_features) → (..., units). ShapeError for a rank-0 x.
  Tensor build(const Tensor& x);

  std::int64_t units;
  Activation activation;
  bool use_bias;
};

} // namespace pxl::addons
