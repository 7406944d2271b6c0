// CompileContext: what a replica lends to kernels while binding its steps.
#pragma once

#include "kernel.hpp"
#include "stream_state.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

namespace pxl::emu::detail {

class InstanceExchange;
class RunErrors;

/// One remote buffer in one replica's Streaming Memory: `entries` rows `entry_bytes` apart.
struct RemoteBlock {
  std::byte* base = nullptr;
  std::size_t entry_bytes = 0;
  std::int64_t entries = 0;
};

struct CompileContext {
  /// The most chunks a step is split into (max_chunks of the pool's workers): per-chunk state
  /// (stream positions, scratch) is sized by it.
  unsigned num_workers = 1;
  std::span<StreamState> streams;      ///< shared by every replica, indexed by stream index
  std::span<StreamPort> ports;         ///< this replica's side of each stream
  std::span<const RemoteBlock> remote; ///< this replica's remote buffers, by buffer index
  /// Where kernels record what they find wrong in a run (an offset out of range); null
  /// outside a Session.
  RunErrors* errors = nullptr;
  std::int64_t replica = 0; ///< the replica being bound (its global index)
  /// The step's buffers in every replica of this process (indexed by replica - replica_offset),
  /// for collectives: replicas run each step in lockstep, so a step may read and write its
  /// peers' buffers. Empty outside a Session (a kernel test): the op then runs as on one
  /// replica.
  std::span<const OpBuffers> peers;
  /// Replicas of every instance, and the global index of this process's first. A single
  /// process holds them all (offset 0, total = peers.size()).
  std::int64_t total_replicas = 0;
  std::int64_t replica_offset = 0;
  /// A distributed Session's link to the other instances' replicas; null in one process.
  InstanceExchange* exchange = nullptr;
  /// The seed of float16 stochastic rounding when the session rounds so
  /// (SessionOptions::stochastic_rounding); unset, kernels round to nearest.
  std::optional<std::uint64_t> stochastic_rounding;
  /// Set by a kernel that needs work done once for the whole instance before the step's
  /// items (a collective's exchange with the other instances); moved into the bound step.
  std::function<void()> before_step;

  /// Whether this process holds replica `r`.
  bool is_local(std::int64_t r) const {
    return r >= replica_offset && r < replica_offset + static_cast<std::int64_t>(peers.size());
  }
};

} // namespace pxl::emu::detail
