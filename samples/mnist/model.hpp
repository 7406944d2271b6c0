// The Fashion-MNIST classifier of PopXL's MNIST tutorial: 784-512-512-512-10 with gelu.
#pragma once

#include "pxl/addons/layers/linear.hpp"
#include "pxl/addons/module.hpp"
#include "pxl/ops/elementwise.hpp"

namespace mnist {

/// Three gelu hidden layers of 512 and a 10-way output; variables fc1.weight … fc4.bias.
struct Net : pxl::addons::Module<Net> {
  PXL_SUBMODULE(pxl::addons::Linear, fc1, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc2, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc3, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc4, 10);

  /// x: [batch, 784] → logits [batch, 10].
  pxl::Tensor build(const pxl::Tensor& x) {
    auto h = pxl::ops::gelu(fc1(x));
    h = pxl::ops::gelu(fc2(h));
    h = pxl::ops::gelu(fc3(h));
    return fc4(h);
  }
};

} // namespace mnist
