// Per-axis arguments and layout permutations of the spatial layers.
#include "spatial.hpp"

#include "pxl/core/error.hpp"

namespace pxl::addons::layers_detail {

std::vector<std::int64_t> per_axis(std::vector<std::int64_t> values, std::size_t axes,
                                   const std::string& layer, const char* what, std::int64_t fill,
                                   std::int64_t least) {
  if (values.empty())
    values.assign(axes, fill);
  else if (values.size() == 1)
    values.assign(axes, values[0]);
  if (values.size() != axes)
    throw ValueError(layer + ": " + what + " needs 1 or " + std::to_string(axes) + " values, got " +
                     std::to_string(values.size()));
  for (const std::int64_t v : values)
    if (v < least)
      throw ValueError(layer + ": every " + what + " must be at least " + std::to_string(least) +
                       ", got " + std::to_string(v));
  return values;
}

std::vector<std::int64_t> to_channels_first(std::int64_t rank) {
  std::vector<std::int64_t> perm{0, rank - 1};
  for (std::int64_t i = 1; i < rank - 1; ++i)
    perm.push_back(i);
  return perm;
}

std::vector<std::int64_t> to_channels_last(std::int64_t rank) {
  std::vector<std::int64_t> perm{0};
  for (std::int64_t i = 2; i < rank; ++i)
    perm.push_back(i);
  perm.push_back(1);
  return perm;
}

} // namespace pxl::addons::layers_detail
