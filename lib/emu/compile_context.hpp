// CompileContext: what a replica lends to kernels while binding its steps.
#pragma once

#include "kernel.hpp"
#include "stream_state.hpp"

#include <span>

namespace pxl::emu::detail {

struct CompileContext {
  unsigned num_workers = 1;
  std::span<StreamState> streams; ///< shared by every replica, indexed by stream index
  std::span<StreamPort> ports;    ///< this replica's side of each stream
};

} // namespace pxl::emu::detail
