// pxl::addons::GroupNorm: PyTorch's group normalisation layer, over ops::group_norm.
#pragma once

#include "pxl/addons/module/module.hpp"

#include <cstdint>

namespace pxl::addons {

/// PyTorch's `GroupNorm(num_groups, num_channels, eps=1e-5, affine=True)` over
/// (N, C, spatial...): each image's C channels in `num_groups` consecutive groups, each group
/// normalised by its own mean and biased variance, then scaled by `weight` (ones) and shifted
/// by `bias` (zeros), (C) each, of x's dtype. The same in training and inference: no running
/// statistics. (The channels come from x, so there is no num_channels argument.)
class GroupNorm : public Module<GroupNorm> {
public:
  /// ValueError for num_groups below 1 or eps below 0.
  explicit GroupNorm(std::int64_t num_groups, double eps = 1e-5);

  /// x: (N, C, spatial...) with 0 to 3 spatial axes, C divisible by num_groups; ops::group_norm's
  /// errors otherwise.
  Tensor build(const Tensor& x);

  std::int64_t num_groups;
  double eps;
};

} // namespace pxl::addons
