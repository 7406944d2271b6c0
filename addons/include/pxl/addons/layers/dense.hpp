// pxl::addons::Dense: Keras's fully connected layer, a Linear followed by an activation.
#pragma once

#include "pxl/addons/layers/activation.hpp"
#include "pxl/addons/module/initializers.hpp"
#include "pxl/addons/module/module.hpp"

#include <cstdint>

namespace pxl::addons {

/// Keras's `Dense(units, activation, use_bias, kernel_initializer, bias_initializer)`:
/// y = activation(x · W + b). The variables are `weight` (in_features, units), from
/// `kernel_initializer` (Keras's default glorot_uniform: U(±sqrt(6 / (in_features + units)))),
/// and `bias` (units), from `bias_initializer` (zeros), both of x's dtype and named directly
/// under the layer (a Dense named "layers.1" has "layers.1.weight" and "layers.1.bias"; Keras
/// would say kernel and bias).
///
///     Sequential{Flatten{}, Dense(128, Activation::relu), Dense(10, Activation::softmax)}
///     Dense(64, Activation::relu, true, initializers::he_normal())
///
/// (Before 0.2 Dense started from truncated-normal(0, 0.02), popxl.addons' Linear's; pass
/// `initializers::truncated_normal(0, 0.02)` for that.)
class Dense : public Module<Dense> {
public:
  /// ValueError for units below 1.
  explicit Dense(std::int64_t units, Activation activation = Activation::none, bool use_bias = true,
                 initializers::KerasInitializer kernel_initializer = initializers::glorot_uniform(),
                 initializers::KerasInitializer bias_initializer = initializers::zeros());

  /// x: (..., in_features) → (..., units). ShapeError for a rank-0 x.
  Tensor build(const Tensor& x);

  std::int64_t units;
  Activation activation;
  bool use_bias;
  initializers::KerasInitializer kernel_initializer;
  initializers::KerasInitializer bias_initializer;
};

} // namespace pxl::addons
