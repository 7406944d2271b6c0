// A fixed list of buffer copies that the workers share out, used at call boundaries.
#pragma once

#include <cstddef>
#include <vector>

namespace pxl::emu::detail {

/// Copies decided at compile time; `run` does this worker's share.
class CopyList {
public:
  void add(std::byte* dst, const std::byte* src, std::size_t bytes);
  bool empty() const { return copies_.empty(); }
  /// Bytes copied in all.
  std::size_t bytes() const { return total_; }
  /// Small lists go one copy per worker; large ones split every copy by byte range.
  void run(unsigned worker, unsigned num_workers) const;

private:
  struct Copy {
    std::byte* dst;
    const std::byte* src;
    std::size_t bytes;
  };
  std::vector<Copy> copies_;
  std::size_t total_ = 0;
};

} // namespace pxl::emu::detail
