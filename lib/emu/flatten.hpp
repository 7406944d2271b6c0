// Flattening a graph's schedule: inlined calls expanded in place, every tensor mapped to a
// buffer (a "value") that the planner then places.
#pragma once

#include "kernel.hpp"

#include "ir/ir_storage.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace pxl::emu::detail {

using pxl::detail::Index;
using pxl::detail::IrStorage;

/// One buffer of a flattened schedule. Tensors that alias (an in-place op's output and its
/// input, an inlined graph's input and the caller's tensor bound to it) share one value.
struct FlatValue {
  Index tensor = 0; ///< the tensor it was made for (names it in the memory report)
  std::int64_t bytes = 0;
  std::int64_t ipu = 0;
  bool is_static = false; ///< a variable's or constant's buffer (allocated by the Planner)
};

/// FlatStep::op of a copy step.
inline constexpr Index flat_copy = std::numeric_limits<Index>::max();

/// One step: an op of the flattened graph or of a graph inlined into it, with the values of
/// its inputs and outputs; or, when `op == flat_copy`, a copy of inputs[0] into outputs[0].
struct FlatStep {
  Index op = flat_copy;
  std::vector<std::size_t> inputs, outputs;
  std::int64_t ipu = 0;
  /// Bit k: input k is the operand of a Transpose of the last two axes fused into this step
  /// (see fuse_transposes), so the kernel reads it transposed.
  std::uint32_t transposed_inputs = 0;
  /// Set on a MatMul into which an in-place update of outputs[0] by its product was fused
  /// (see fuse_matmul_updates): outputs[0] = keep·outputs[0] + scale·product.
  std::optional<FusedUpdate> update;
};

/// A graph's steps in execution order, and the values of its own inputs and outputs.
struct FlatSchedule {
  std::vector<FlatValue> values;
  std::vector<FlatStep> steps;
  std::vector<std::size_t> inputs, outputs;
};

/// Flattens `graph`: its ops in order, each call marked `inline_graph` replaced by the called
/// graph's ops (recursively) working on the caller's values. A copy is added only where
/// aliasing would change the result: an inlined input that the graph writes but does not
/// take by reference (the caller's tensor must keep its value), and an inlined output that
/// is a caller's value or repeats an earlier output (the call's outputs are fresh tensors).
FlatSchedule flatten(const IrStorage& ir, std::uint32_t graph);

} // namespace pxl::emu::detail
