#include "first_fit.hpp"
#include "aligned_bytes.hpp"

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>
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
  auto size_of = [&](std::size_t i) {
    return static_cast<std::int64_t>(align_up(static_cast<std::size_t>(buffers[i].bytes)));
  };
  // Buffers are placed in order of their first step, so the placed buffers that overlap the
  // next one in time are exactly those still live at its first step: only those are kept,
  // by offset, and retired once dead. Placement costs O(live buffers), not O(placed).
  using Busy = std::multiset<std::pair<std::int64_t, std::int64_t>>; // [offset, end)
  Busy busy;
  using Retire = std::pair<std::int64_t, Busy::iterator>; // last step, entry
  auto later = [](const Retire& a, const Retire& b) { return a.first > b.first; };
  std::priority_queue<Retire, std::vector<Retire>, decltype(later)> retire(later);
  std::int64_t arena = 0;
  for (std::size_t i : order) {
    while (!retire.empty() && retire.top().first < buffers[i].first) {
      busy.erase(retire.top().second);
      retire.pop();
    }
    const std::int64_t size = size_of(i);
    std::int64_t at = 0;
    for (const auto& [b, e] : busy) {
      if (b - at >= size)
        break;
      at = std::max(at, e);
    }
    offsets[i] = at;
    arena = std::max(arena, at + size);
    retire.emplace(buffers[i].last, busy.emplace(at, at + size));
  }
  return arena;
}

} // namespace pxl::emu::detail
