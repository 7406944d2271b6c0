// The compiled form of an Ir: per graph a fixed schedule of steps over buffer slots, the
// buffer layout, and the memory report. Compiled once per Session, whatever the replication
// factor; replicas bind it to their own memory (replica.hpp).
#pragma once

#include "kernel.hpp"

#include "pxl/emu/memory_report.hpp"
#include "pxl/emu/step_observer.hpp"
#include "pxl/emu/target.hpp"
#include "pxl/ir/view.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace pxl::emu::detail {

/// Where a buffer lives in a replica's memory: at `offset` in the static block (variables
/// and constants) or in its graph's arena of one IPU.
struct Slot {
  bool is_static = false;
  std::int64_t ipu = 0;
  std::size_t offset = 0;
  std::size_t bytes = 0;
  bool operator==(const Slot&) const = default;
};

struct GraphProgram;

/// One step of a graph's schedule.
struct ProgramStep {
  StepInfo info;
  std::vector<Slot> inputs, outputs;
  StepFusion fusion;                         ///< the fused step kinds
  const GraphProgram* callee = nullptr;      ///< call and repeat; a conditional's then-branch
  const GraphProgram* else_callee = nullptr; ///< a conditional's else-branch
  /// A call: by callee input, whether the callee may work on the argument's buffer itself
  /// (PopXL's aliasZeroCopy: it does not write the input, takes it by reference, or the
  /// argument is not needed after the call and passed once).
  std::vector<bool> shared_inputs;
};

/// A buffer of a graph program that is another graph's (GraphProgram::shared).
struct SharedSlot {
  Slot slot;        ///< in the graph's own program
  Slot caller_slot; ///< in its caller's
};

/// One graph, compiled once however many call sites it has. Its intermediates and inputs
/// live in its own arenas (one per IPU), placed by liveness.
struct GraphProgram {
  GraphId graph;
  std::vector<ProgramStep> steps;
  std::vector<Slot> inputs, outputs; ///< the graph's inputs and outputs
  /// A graph called from one call step only: the program holding that step, and the inputs
  /// and outputs that live in the caller's buffers (the argument, the call's result) rather
  /// than in this graph's arena, so that no copy moves them. The memory plan is unchanged
  /// (the callee's arena keeps room for them): this only saves the emulator the copies.
  const GraphProgram* caller = nullptr;
  std::vector<SharedSlot> shared;
  std::vector<std::size_t> arena_bytes; ///< per IPU
  /// Per IPU: the most intermediate bytes live at once while this graph runs, counting a
  /// called graph's peak at its call step.
  std::vector<std::int64_t> peak;
  /// Per IPU: the intermediate bytes live at each step and at the end (the outputs held).
  std::vector<std::vector<std::int64_t>> liveness;
  /// Per IPU: the most bytes of the values live at once any one tile may hold (the sum of
  /// their shares under the linear mapping), counting a called graph's at its call step.
  std::vector<std::int64_t> tile_peak;
  /// Per IPU: steps compiled for this graph (its code).
  std::vector<std::int64_t> ops;
  /// Per IPU: the not-always-live bytes at the main graph's peak step, by tile (the main
  /// graph only: the memory report's tile histogram).
  std::vector<std::vector<std::int64_t>> tiles_at_peak;
};

/// A static tensor (variable or constant) of the compiled graphs and its place.
struct StaticTensor {
  TensorId tensor;
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

/// A remote variable of the program: where each replica stores it.
struct RemoteVariable {
  TensorId tensor;
  RemoteBufferId buffer;
  std::int64_t entry = 0;
};

struct Program {
  /// By graph: the main graph's and each outlined graph's program; null for graphs that do
  /// not run or only run inlined into their callers.
  std::vector<std::unique_ptr<GraphProgram>> graphs;
  /// By graph: whether it runs (reachable from the main graph), outlined or inlined.
  std::vector<bool> reachable;
  std::vector<StaticTensor> statics; ///< in tensor order; remote variables are not among them
  std::vector<RemoteVariable> remote_variables; ///< in tensor order
  std::size_t static_bytes = 0;
  /// By stream: whether a compiled host_load / host_store uses it.
  std::vector<bool> stream_used;
  MemoryReport memory;

  const GraphProgram& main() const { return *graphs[0]; }
  /// The static tensor `t`, or null when it is not part of the program.
  const StaticTensor* find_static(TensorId t) const;
  /// The remote variable `t`, or null.
  const RemoteVariable* find_remote(TensorId t) const;
};

/// Compiles every graph reachable from the main graph: flattening (inlined calls), fusions,
/// lifetimes and first-fit placement, step descriptions and the memory report. Pure: reads
/// the Ir through `view`, allocates no device memory. Cost is near-linear in the op count.
/// What a Session asks of the compiled program beyond the target.
struct CompileOptions {
  /// float16 updates round stochastically: they are not folded into the matmul or
  /// convolution computing their operand, whose kernels round to nearest.
  bool stochastic_rounding = false;
};
Program compile_program(const IrView& view, const Target& target,
                        const CompileOptions& options = {});

/// SessionError (its message starting with `what`) unless `target` has an IPU, a tile and a
/// byte per tile, every op and tensor of `view` is placed on one of its IPUs, and every stream
/// op names a stream of the Ir.
void check_placement(const IrView& view, const Target& target, std::string_view what);

} // namespace pxl::emu::detail
