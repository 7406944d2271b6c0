// Linear layer.
#include "pxl/addons/layers/linear.hpp"

#include "pxl/ops/matmul.hpp"

namespace pxl::addons {

Tensor Linear::build(const Tensor& x) {
  if (x.rank() == 0)
    throw ShapeError("Linear: expected an input of rank >= 1 (..., in_features), got shape ()");
  const std::int64_t in = x.shape().back();
  Tensor w = add_variable_input("weight", init::truncated_normal(0.0, 0.02, {in, out_features}),
                                x.dtype());
  Tensor y = pxl::ops::matmul(x, w);
  if (bias)
    y = y + add_variable_input("bias", init::zeros({out_features}), x.dtype());
  return y;
}

} // namespace pxl::addons
