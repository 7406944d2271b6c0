// pxl::addons::Linear: y = x · W (+ b).
#pragma once

#include "pxl/addons/module/module.hpp"

#include <cstdint>

namespace pxl::addons {

/// A fully connected layer (popxl.addons' Linear): variables `weight` of shape
/// (in_features, out_features), truncated-normal(0, 0.02) initialised, and `bias` of shape
/// (out_features), zero initialised, both of the input's dtype; in_features is x's last dim.
class Linear : public Module<Linear> {
public:
  explicit Linear(std::int64_t outputs, bool with_bias = true)
      : out_features(outputs), bias(with_bias) {}

  /// x: (..., in_features) → (..., out_features). ShapeError for a rank-0 x.
  Tensor build(const Tensor& x);

  std::int64_t out_features;
  bool bias;
};

} // namespace pxl::addons
