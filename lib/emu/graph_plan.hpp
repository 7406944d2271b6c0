// The compiled form of one graph: its steps and the buffers they use.
#pragma once

#include "aligned_bytes.hpp"
#include "kernel.hpp"
#include "worker_pool.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pxl::emu::detail {

/// One graph, compiled once however many call sites it has. Its intermediates and inputs
/// live in its own arenas (one per IPU), placed by liveness.
struct GraphPlan {
  std::uint32_t graph = 0;
  std::vector<StepFn> steps;
  std::vector<std::byte*> inputs, outputs; ///< buffers of the graph's inputs and outputs
  std::vector<std::size_t> input_bytes, output_bytes;
  std::vector<AlignedBytes> arenas;      ///< per IPU
  std::vector<std::int64_t> arena_bytes; ///< per IPU
  /// Per IPU: the most intermediate bytes live at once while this graph runs, counting a
  /// called graph's peak at its call step.
  std::vector<std::int64_t> peak;
  /// Per IPU: ops compiled for this graph (its code).
  std::vector<std::int64_t> ops;
};

/// Every worker runs every step of `plan` with its index, a barrier after each.
inline void run_plan(const GraphPlan& plan, WorkerPool& pool, unsigned worker,
                     unsigned num_workers) {
  for (const auto& step : plan.steps) {
    step(worker, num_workers);
    pool.barrier();
  }
}

} // namespace pxl::emu::detail
