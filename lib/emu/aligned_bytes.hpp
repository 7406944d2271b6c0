// Zeroed, cache-line-aligned byte blocks: the storage behind every device buffer.
#pragma once

#include "pxl/core/error.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>

namespace pxl::emu::detail {

inline constexpr std::size_t buffer_alignment = 64;

struct AlignedFree {
  void operator()(std::byte* p) const {
    ::operator delete[](p, std::align_val_t{buffer_alignment});
  }
};
using AlignedBytes = std::unique_ptr<std::byte[], AlignedFree>;

/// Throws OutOfMemoryError when the host cannot hold the block (a plan built with
/// SessionOptions::allow_out_of_memory may be larger than the host's memory).
inline AlignedBytes allocate_aligned(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  // The nothrow form: a sanitizer's throwing new aborts on sizes it cannot serve.
  auto* p = static_cast<std::byte*>(
      ::operator new[](bytes, std::align_val_t{buffer_alignment}, std::nothrow));
  if (p == nullptr)
    throw OutOfMemoryError("Session: the host cannot allocate " + std::to_string(bytes) +
                           " bytes to emulate the device's memory; the plan is larger than this "
                           "machine can run (see Session::memory_report)");
  std::memset(p, 0, bytes);
  return AlignedBytes(p);
}

inline std::size_t align_up(std::size_t bytes) {
  return (bytes + buffer_alignment - 1) / buffer_alignment * buffer_alignment;
}

} // namespace pxl::emu::detail
