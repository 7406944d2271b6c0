// pxl::ReadOptions: the bounds a file reader puts on what an untrusted file can make it do.
#pragma once

#include <cstdint>

namespace pxl {

/// Limits for the readers of tensor files (`HostTensor::load_npy`, `addons::data::read_idx`,
/// `addons::load_safetensors`). Whatever the limit, a reader checks the sizes a file's header
/// promises against the file's own size before it allocates anything, so a small file never
/// makes it allocate much; the limit bounds what a large (or gzip-compressed) file may ask for.
///
///     auto t = HostTensor::load_npy("x.npy", {.max_bytes = 1 << 20}); // at most 1 MiB of data
struct ReadOptions {
  /// The most bytes of tensor data one call may load; a file that needs more is an IoError.
  std::uint64_t max_bytes = std::uint64_t{16} << 30; // 16 GiB
};

} // namespace pxl
