// Flattening a graph's schedule: inlined calls expanded in place, every tensor mapped to a
// buffer (a "value") that compile_program then places.
#pragma once

#include "kernel.hpp"

#include "pxl/ir/view.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace pxl::emu::detail {

/// One buffer of a flattened schedule. Tensors that alias (an in-place op's output and its
/// input, an inlined graph's input and the caller's tensor bound to it) share one value.
struct FlatValue {
  TensorId tensor; ///< the tensor it was made for (names it in the memory report)
  std::int64_t bytes = 0;
  std::int64_t ipu = 0;
  bool is_static = false; ///< a variable's or constant's buffer (in the static block)
};

/// One step: an op of the flattened graph or of a graph inlined into it, with the values of
/// its inputs and outputs; or, without an op, a copy of inputs[0] into outputs[0].
struct FlatStep {
  std::optional<OpId> op;
  std::vector<std::size_t> inputs, outputs;
  std::int64_t ipu = 0;
  /// What the fusions (fusion.hpp) folded into the step.
  StepFusion fusion;

  bool is_copy() const { return !op.has_value(); }
  bool is_fused() const { return fusion.any(); }
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
FlatSchedule flatten(const IrView& ir, GraphId graph);

} // namespace pxl::emu::detail
