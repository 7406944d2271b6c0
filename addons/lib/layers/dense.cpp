// Dense layer.
#include "pxl/addons/layers/dense.hpp"

#include "pxl/addons/layers/linear.hpp"

#include <string>

namespace pxl::addons {

Dense::Dense(std::int64_t output_units, Activation output_activation, bool with_bias)
    : units(output_units), activation(output_activation), use_bias(with_bias) {
  if (units < 1)
    throw ValueError("Dense: units must be at least 1, got " + std::to_string(units));
}

Tensor Dense::build(const Tensor& x) {
  if (x.rank() == 0)
    throw ShapeError("Dense: expected an input of rank >= 1 (..., in_features), got shape ()");
  // Linear's build called directly, not as a sub-module, so that the variables sit under the
  // Dense's own name ("layers.1.weight", not "layers.1.linear.weight").
  Linear linear(units, use_bias);
  return activate(activation, linear.build(x));
}

} // namespace pxl::addons
