// Placing buffers with known lifetimes in an arena: first fit, reusing dead buffers' space.
#pragma once

#include <cstdint>
#include <vector>

namespace pxl::emu::detail {

/// A buffer live over the steps [first, last] (inclusive: an op's output never shares bytes
/// with an input it reads in the same step).
struct Lifetime {
  std::int64_t first = 0, last = 0;
  std::int64_t bytes = 0;
};

/// Offsets for `buffers` such that buffers live at the same step never overlap, each at the
/// lowest offset that fits, buffers placed in order of their first step. Offsets are
/// multiples of the buffer alignment. Returns the arena size.
std::int64_t place_first_fit(const std::vector<Lifetime>& buffers,
                             std::vector<std::int64_t>& offsets);

} // namespace pxl::emu::detail
