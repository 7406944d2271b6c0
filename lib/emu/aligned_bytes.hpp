// Zeroed, cache-line-aligned byte blocks: the storage behind every device buffer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace pxl::emu::detail {

inline constexpr std::size_t buffer_alignment = 64;

struct AlignedFree {
  void operator()(std::byte* p) const {
    ::operator delete[](p, std::align_val_t{buffer_alignment});
  }
};
using AlignedBytes = std::unique_ptr<std::byte[], AlignedFree>;

inline AlignedBytes allocate_aligned(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  auto* p = static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{buffer_alignment}));
  std::memset(p, 0, bytes);
  return AlignedBytes(p);
}

inline std::size_t align_up(std::size_t bytes) {
  return (bytes + buffer_alignment - 1) / buffer_alignment * buffer_alignment;
}

} // namespace pxl::emu::detail
