// pxl::transforms::pipeline: the graph of one micro-batch, its ops in pipeline stages,
// rewritten to run N micro-batches with the stages overlapping (PopART's pipelining,
// popxl.addons' pipelined_execution, the schedules of TensorFlow's IPU pipelining).
#pragma once

#include "pxl/ir/graph.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pxl::transforms {

/// How a pipeline's stages share time. Stage s works on micro-batch m in pipeline cycle
/// m·k + o(s), the cycles of one micro-batch following its data from stage to stage; on the
/// emulator, work of different IPUs within a cycle runs concurrently.
enum class PipelineSchedule : std::uint8_t {
  /// k = 1, o(s) = s: every stage works in every cycle, each on its own micro-batch (TF's
  /// default). Fastest; stage s keeps an activation for the backward stage q for q − s
  /// cycles (PopART's stash depth).
  grouped,
  /// k = the most stages any IPU holds: an IPU runs one of its stages per cycle, alternating
  /// between forward and backward work, so fewer of one stage's intermediates are live at once.
  interleaved,
  /// k = the number of stages: one stage at a time, each micro-batch through every stage
  /// before the next starts. Behaves like a sharded model (TF's debugging schedule).
  sequential,
};

/// "grouped", "interleaved" or "sequential".
std::string_view schedule_name(PipelineSchedule schedule);

/// Options of `pipeline` (an aggregate):
///
///     transforms::pipeline(micro_batch, {.steps = 8, .schedule = PipelineSchedule::grouped});
struct PipelineOptions {
  /// Micro-batches per call of the pipelined graph: the gradient accumulation count.
  std::int64_t steps = 1;
  PipelineSchedule schedule = PipelineSchedule::grouped;
  /// Keep only each stage's inputs (what it receives by IpuCopy or loads from the host, and
  /// what ops with side effects make) for the later stages on its IPU, and recompute the rest
  /// there (TF's RecomputeThenBackpropagate): less stashed memory, more compute.
  bool recompute = false;
};

/// An activation kept from the stage that makes it for a later stage that reads it.
struct PipelineStash {
  std::string tensor; ///< the micro-batch graph's tensor id
  std::int64_t from_stage = 0, to_stage = 0;
  std::int64_t depth = 0; ///< the most micro-batches of it held at once
  std::int64_t ipu = 0;
};

/// What `pipeline` made.
struct PipelinedGraph {
  /// Takes the micro-batch graph's inputs, in order, by reference where it does; runs
  /// `steps` micro-batches and returns nothing.
  Graph graph;
  /// The pipeline stages, backward ones included: 2S − 1 for S forward stages split by
  /// IpuCopy, the last forward stage sharing a stage with its own backward.
  std::int64_t stages = 0;
  /// The IPUs each stage's ops run on (several for concurrent stages).
  std::vector<std::vector<std::int64_t>> stage_ipus;
  std::int64_t cycles = 0;           ///< pipeline cycles of one call
  std::int64_t ramp_up_cycles = 0;   ///< unrolled before the loop (fill)
  std::int64_t main_cycles = 0;      ///< run by the loop (every stage busy)
  std::int64_t ramp_down_cycles = 0; ///< unrolled after the loop (flush)
  std::vector<PipelineStash> stashes;
};

/// Pipelines `micro_batch`, a subgraph running one micro-batch (loading it from host streams,
/// its forward and backward, accumulating gradients into by-ref inputs), over
/// `options.steps` micro-batches. Returns a new graph to call in its place; the micro-batch
/// graph is left as it was (calls in it are expanded in a copy, so that their ops can take
/// their own stages).
///
/// Stages. An op's stage is the largest of: its `pipeline_stage(k)` scope's k, its inputs'
/// stages, and one more than its input's stage for an IpuCopy; an op reading only graph inputs
/// and constants (a host load, say) and outside any stage scope takes the earliest stage that
/// reads its outputs. So a `pipeline_stage(k)` scope is a lower bound, and a model whose
/// layers are split over IPUs with ops::ipu_copy pipelines as it is, and its backward
/// (autodiff places gradient ops on their forward ops' IPUs, the gradient of an IpuCopy is
/// the copy back) fills the stages after the last forward one. Stage numbers are compacted to
/// 0, 1, ... in order.
///
/// Semantics: the graph does what `ops::repeat(micro_batch, steps, inputs)` does, to float
/// rounding (in fact bitwise: every micro-batch runs the same ops, and each by-ref input is
/// changed by one stage only, micro-batch after micro-batch). Streams see their elements in
/// micro-batch order.
///
/// Errors (GraphError unless said):
/// - `micro_batch` is the main graph, has outputs, or the Ir is frozen by a Session;
/// - ValueError: steps < 1, or fewer micro-batches than the schedule needs to fill the
///   pipeline (min_steps);
/// - a tensor written in place (a by-ref input, or an activation) by one stage and read or
///   written by another: the stages would see another micro-batch's value;
/// - one host stream loaded or stored in two stages.
PipelinedGraph pipeline(const Graph& micro_batch, const PipelineOptions& options);

/// The fewest micro-batches a schedule needs so that one cycle has every stage busy (below
/// it, the pipeline never fills): `stages` for grouped, one for sequential, and for
/// interleaved the cycles a micro-batch spends in the pipeline over its period.
/// `stage_ipus[s]` lists the IPUs of stage s, as PipelinedGraph::stage_ipus.
std::int64_t min_steps(PipelineSchedule schedule,
                       const std::vector<std::vector<std::int64_t>>& stage_ipus);

} // namespace pxl::transforms
