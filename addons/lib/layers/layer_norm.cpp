// LayerNorm layer.
#include "pxl/addons/layers/layer_norm.hpp"

#include "pxl/ops/nn.hpp"

#include <sstream>
#include <utility>

namespace pxl::addons {

LayerNorm::LayerNorm(double epsilon, initializers::KerasInitializer gamma,
                     initializers::KerasInitializer beta)
    : eps(epsilon), gamma_initializer(std::move(gamma)), beta_initializer(std::move(beta)) {
  if (!(eps >= 0.0)) {
    std::ostringstream os;
    os << "LayerNorm: eps must be >= 0, got " << eps;
    throw ValueError(os.str());
  }
}

Tensor LayerNorm::build(const Tensor& x) {
  // Checked here as well as in the op so the message names the layer before any variable
  // input is added.
  if (x.rank() == 0)
    throw ShapeError("LayerNorm: expected an input of rank >= 1 (..., features), got shape ()");
  if (!is_floating_point(x.dtype()))
    throw DTypeError("LayerNorm: expected a float32 or float16 input, got " +
                     std::string(pxl::name(x.dtype())));
  const std::int64_t features = x.shape().back();
  Tensor weight = add_variable_input("weight", gamma_initializer({features}), x.dtype());
  Tensor bias = add_variable_input("bias", beta_initializer({features}), x.dtype());
  return pxl::ops::layer_norm(x, weight, bias, eps);
}

} // namespace pxl::addons
