// Flatten layer.
#include "pxl/addons/layers/flatten.hpp"

#include "pxl/ops/shape.hpp"

#include <span>

namespace pxl::addons {

Tensor Flatten::build(const Tensor& x) {
  if (x.rank() == 0)
    throw ShapeError("Flatten: expected an input with a batch axis, shape [b, ...], got '" +
                     x.name() + "' of shape ()");
  const Shape& shape = x.shape();
  // Computed rather than -1, so that a batch of 0 examples flattens too.
  const std::int64_t features = nelms(std::span(shape).subspan(1));
  return pxl::ops::reshape(x, {shape[0], features});
}

} // namespace pxl::addons
