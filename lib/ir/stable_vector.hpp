// StableVector: the IR arena's sequence of nodes, whose elements never move.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace pxl::detail {

/// A sequence that only grows at the end and never moves its elements: handles return
/// references into the nodes (shapes, names, attributes), which must stay valid while later
/// nodes are added. It grows by chunks of `Chunk` elements, each allocated once; std::deque,
/// which has the same guarantee, allocates every node of more than 256 bytes on its own.
template <typename T, std::size_t Chunk = 64>
class StableVector {
public:
  std::size_t size() const { return size_; }

  T& operator[](std::size_t i) { return chunks_[i / Chunk][i % Chunk]; }
  const T& operator[](std::size_t i) const { return chunks_[i / Chunk][i % Chunk]; }

  void push_back(T value) {
    if (size_ % Chunk == 0) {
      chunks_.emplace_back();
      chunks_.back().reserve(Chunk); // filled in place: never reallocated
    }
    chunks_.back().push_back(std::move(value));
    ++size_;
  }

private:
  std::vector<std::vector<T>> chunks_;
  std::size_t size_ = 0;
};

} // namespace pxl::detail
