// GroupNorm layer.
#include "pxl/addons/layers/group_norm.hpp"

#include "pxl/addons/module/init.hpp"
#include "pxl/ops/norm.hpp"

#include <sstream>
#include <string>

namespace pxl::addons {

GroupNorm::GroupNorm(std::int64_t groups, double epsilon) : num_groups(groups), eps(epsilon) {
  if (num_groups < 1)
    throw ValueError("GroupNorm: num_groups must be at least 1, got " + std::to_string(num_groups));
  if (!(eps >= 0)) {
    std::ostringstream os;
    os << "GroupNorm: eps must be at least 0, got " << eps;
    throw ValueError(os.str());
  }
}

Tensor GroupNorm::build(const Tensor& x) {
  if (x.rank() < 2)
    throw ShapeError("GroupNorm: expected an input of rank 2 to 5 (N, C, spatial...), got shape " +
                     pxl::to_string(x.shape()));
  const std::int64_t channels = x.shape()[1];
  const Tensor weight = add_variable_input("weight", init::ones({channels}), x.dtype());
  const Tensor bias = add_variable_input("bias", init::zeros({channels}), x.dtype());
  return ops::group_norm(x, weight, bias, num_groups, eps);
}

} // namespace pxl::addons
