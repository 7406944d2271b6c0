// What the convolution and pooling layers share: per-axis arguments, and the permutations
// between channels-last and channels-first layouts. Private to the layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pxl::addons::layers_detail {

/// `values` as one entry per spatial axis of `axes`: a single value spread, an empty list as
/// `fill`s. ValueError naming `layer` and `what` for another count or a value below `least`.
std::vector<std::int64_t> per_axis(std::vector<std::int64_t> values, std::size_t axes,
                                   const std::string& layer, const char* what,
                                   std::int64_t fill = 1, std::int64_t least = 1);

/// The permutation taking a tensor of `rank` from channels-last to channels-first.
std::vector<std::int64_t> to_channels_first(std::int64_t rank);
/// Its inverse.
std::vector<std::int64_t> to_channels_last(std::int64_t rank);

} // namespace pxl::addons::layers_detail
