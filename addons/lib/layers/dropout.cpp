// Dropout layer.
#include "pxl/addons/layers/dropout.hpp"

#include "pxl/addons/module/training_mode.hpp"

#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/nn.hpp"

#include <sstream>

namespace pxl::addons {

Dropout::Dropout(double drop_probability, bool is_training)
    : p(drop_probability), training(is_training) {
  if (!(p >= 0.0 && p < 1.0)) {
    std::ostringstream os;
    os << "Dropout: the drop probability p must satisfy 0 <= p < 1, got " << p;
    throw ValueError(os.str());
  }
}

Tensor Dropout::build(const Tensor& x, const Tensor& seed) {
  if (!is_floating_point(x.dtype()))
    throw DTypeError("Dropout: expected a float32 or float16 input, got " +
                     std::string(pxl::name(x.dtype())));
  if (seed.dtype() != uint32)
    throw DTypeError("Dropout: the seed must be uint32 of shape (2,), got " +
                     std::string(pxl::name(seed.dtype())) + " " + pxl::to_string(seed.shape()));
  if (seed.shape() != Shape{2})
    throw ShapeError("Dropout: the seed must have shape (2,), got " + pxl::to_string(seed.shape()));
  // An inference-mode trace (Trainer's evaluation and prediction) drops nothing, as Keras's.
  if (!training || !training_mode().value_or(true) || p == 0.0)
    return pxl::ops::identity(x);
  return pxl::ops::dropout(x, seed, p);
}

} // namespace pxl::addons
