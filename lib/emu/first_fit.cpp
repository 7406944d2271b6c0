#include "first_fit.hpp"
#include "aligned_bytes.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace pxl::emu::detail {

std::int64_t place_first_fit(const std::vector<Lifetime>& buffers,
                             std::vector<std::int64_t>& offsets) {
  const std::size_t n = buffers.size();
  offsets.assign(n, 0);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Earlier first, then larger: big long-lived buffers settle at the bottom.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (buffers[a].first != buffers[b].first)
      return buffers[a].first < buffers[b].first;
    return buffers[a].bytes > buffers[b].bytes;
  });
  std::vector<std::size_t> placed;
  std::vector<std::pair<std::int64_t, std::int64_t>> busy; // [offset, end) of live neighbours
  std::int64_t arena = 0;
  for (std::size_t i : order) {
    const auto size =
        static_cast<std::int64_t>(align_up(static_cast<std::size_t>(buffers[i].bytes)));
    busy.clear();
    for (std::size_t j : placed)
      if (buffers[j].first <= buffers[i].last && buffers[i].first <= buffers[j].last)
        busy.emplace_back(offsets[j],
                          offsets[j] + static_cast<std::int64_t>(
                                           align_up(static_cast<std::size_t>(buffers[j].bytes))));
    std::sort(busy.begin(), busy.end());
    std::int64_t at = 0;
    for (const auto& [b, e] : busy) {
      if (b - at >= size)
        break;
      at = std::max(at, e);
    }
    offsets[i] = at;
    arena = std::max(arena, at + size);
    placed.push_back(i);
  }
  return arena;
}

} // namespace pxl::emu::detail
