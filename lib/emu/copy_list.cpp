#include "copy_list.hpp"
#include "kernel.hpp"

#include <cstring>

namespace pxl::emu::detail {

namespace {
// Below this, splitting a copy costs more in cache traffic than it saves.
constexpr std::size_t split_threshold = 64 * 1024;
} // namespace

void CopyList::add(std::byte* dst, const std::byte* src, std::size_t bytes) {
  if (bytes == 0 || dst == src)
    return;
  copies_.push_back({dst, src, bytes});
  total_ += bytes;
}

void CopyList::run(unsigned worker, unsigned num_workers) const {
  if (total_ < split_threshold) {
    for (std::size_t i = worker; i < copies_.size(); i += num_workers)
      std::memcpy(copies_[i].dst, copies_[i].src, copies_[i].bytes);
    return;
  }
  for (const auto& c : copies_) {
    const auto [b, e] = worker_range(static_cast<std::int64_t>(c.bytes), worker, num_workers);
    if (e > b)
      std::memcpy(c.dst + b, c.src + b, static_cast<std::size_t>(e - b));
  }
}

} // namespace pxl::emu::detail
