// Dense layer.
#include "pxl/addons/layers/dense.hpp"

#include "pxl/ops/matmul.hpp"

#include <string>
#include <utility>

namespace pxl::addons {

Dense::Dense(std::int64_t output_units, Activation output_activation, bool with_bias,
             initializers::KerasInitializer kernel, initializers::KerasInitializer bias)
    : units(output_units), activation(output_activation), use_bias(with_bias),
      kernel_initializer(std::move(kernel)), bias_initializer(std::move(bias)) {
  if (units < 1)
    throw ValueError("Dense: units must be at least 1, got " + std::to_string(units));
}

Tensor Dense::build(const Tensor& x) {
  if (x.rank() == 0)
    throw ShapeError("Dense: expected an input of rank >= 1 (..., in_features), got shape ()");
  // The variables sit under the Dense's own name ("layers.1.weight"), as Linear's would.
  const std::int64_t in = x.shape().back();
  Tensor y =
      pxl::ops::matmul(x, add_variable_input("weight", kernel_initializer({in, units}), x.dtype()));
  if (use_bias)
    y = y + add_variable_input("bias", bias_initializer({units}), x.dtype());
  return activate(activation, y);
}

} // namespace pxl::addons
