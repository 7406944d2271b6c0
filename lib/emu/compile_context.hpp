// CompileContext: what a replica lends to kernels while binding its steps.
#pragma once

#include "kernel.hpp"
#include "stream_state.hpp"

#include <cstdint>
#include <span>

namespace pxl::emu::detail {

struct CompileContext {
  /// The most chunks a step is split into (max_chunks of the pool's workers): per-chunk state
  /// (stream positions, scratch) is sized by it.
  unsigned num_workers = 1;
  std::span<StreamState> streams; ///< shared by every replica, indexed by stream index
  std::span<StreamPort> ports;    ///< this replica's side of each stream
  std::int64_t replica = 0;       ///< the replica being bound
  /// The step's buffers in every replica (indexed by replica), for collectives: replicas run
  /// each step in lockstep, so a step may read and write its peers' buffers. Empty outside a
  /// Session (a kernel test): the op then runs as on one replica.
  std::span<const OpBuffers> peers;
};

} // namespace pxl::emu::detail
