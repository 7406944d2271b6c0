// pxl::addons::Flatten: Keras's Flatten, every axis but the batch axis folded into one.
#pragma once

#include "pxl/addons/module/module.hpp"

namespace pxl::addons {

/// Keras's `Flatten()`: [b, d1, d2, ...] → [b, d1·d2·...] (a reshape; [b] → [b, 1]). No
/// variables.
///
///     Flatten{}(x);  // x [32, 28, 28] → [32, 784]
class Flatten : public Module<Flatten> {
public:
  /// ShapeError for a rank-0 x (it has no batch axis).
  Tensor build(const Tensor& x);
};

} // namespace pxl::addons
