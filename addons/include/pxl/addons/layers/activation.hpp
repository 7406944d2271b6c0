// pxl::addons::Activation: the element-wise non-linearities Keras layers name by string.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <string_view>

namespace pxl::addons {

/// What a Dense layer applies to its output (Keras's `activation=` argument).
enum class Activation {
  /// The identity (Keras's "linear"): logits stay logits.
  none,
  relu,
  /// The tanh approximation, as ops::gelu (PopXL's).
  gelu,
  tanh,
  sigmoid,
  /// Softmax over the last axis.
  softmax,
};

/// `activation` applied to `x` with the core ops (so autodiff differentiates it); `x` itself
/// for Activation::none.
///
///     Tensor p = activate(Activation::softmax, logits);  // ops::softmax(logits, -1)
Tensor activate(Activation activation, const Tensor& x);

/// Keras's name: "linear" for none, then "relu", "gelu", "tanh", "sigmoid", "softmax".
std::string_view activation_name(Activation activation);

/// The activation Keras calls `name` (as activation_name gives it; "none" also means linear).
/// ValueError listing the known names for any other.
///
///     Dense(128, parse_activation("relu"));
Activation parse_activation(std::string_view name);

} // namespace pxl::addons
