// CompileContext: what the planner lends to control and host-IO kernels while compiling.
#pragma once

#include "graph_plan.hpp"
#include "kernel.hpp"
#include "stream_state.hpp"
#include "worker_pool.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace pxl::emu::detail {

struct CompileContext {
  WorkerPool& pool;
  std::vector<StreamState>& streams; ///< indexed by stream index
  /// The plan of a graph, compiled on first request.
  std::function<const GraphPlan&(std::uint32_t graph)> plan_of;
};

} // namespace pxl::emu::detail
