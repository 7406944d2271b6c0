// pxl::addons pipelining: stages mapped to IPUs, and popxl.addons' pipelined_execution over
// transforms::pipeline.
#pragma once

#include "pxl/addons/module/named_tensors.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/transforms/pipeline.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace pxl::addons {

/// Both scopes of one pipeline stage: its stage number and its IPU.
struct [[nodiscard]] StageScope {
  IpuScope ipu;
  PipelineStageScope stage;
};

/// The forward stages of a model and the IPU each runs on (TF's `device_mapping`): by default
/// stage k on IPU k. Stages may share an IPU; stages sharing a variable must, since an op reads
/// only tensors of its own IPU (a GraphError names both IPUs otherwise). Stages on one IPU run
/// one after the other; with recomputation their inputs are the checkpoints (TF's
/// `device_mapping` of zeros with the sequential schedule, as Graphcore's ResNet-50 runs).
///
///     addons::PipelineStages stages({0, 1});
///     Tensor h;
///     { auto s = stages.stage(0); h = layer0(x); }
///     { auto s = stages.stage(1); y = layer1(stages.input(h)); } // an ipu_copy to IPU 1
class PipelineStages {
public:
  /// `device_mapping[k]` is stage k's IPU; empty: stage k on IPU k. ValueError for a negative
  /// IPU.
  explicit PipelineStages(std::vector<std::int64_t> device_mapping = {});
  /// Ops created in its lifetime are in stage k, on its IPU. ValueError for a stage the
  /// mapping does not have.
  StageScope stage(std::int64_t k) const;
  /// The IPU of stage k.
  std::int64_t ipu_of(std::int64_t k) const;
  /// `t` as the current stage's input: its ops::ipu_copy to the current IPU when `t` is on
  /// another IPU or was made in an earlier stage on this one (a copy on the chip, which marks
  /// where transforms::pipeline splits the stages), else `t` itself.
  static Tensor input(const Tensor& t);

private:
  std::vector<std::int64_t> mapping_;
};

/// popxl.addons' `pipelined_execution`, for a training step: traces `micro_batch` (one
/// micro-batch: loads, forward, backward, accumulate_gradients) into a new graph that takes
/// `state` by reference (`micro_batch` receives it as that graph's inputs, under the same
/// keys), pipelines that graph over `options.steps` micro-batches (transforms::pipeline), and
/// calls the result in the current graph. Returns what the transform made.
///
///     auto p = addons::pipelined_execution(state, {.steps = 8},
///         [&](const NamedTensors& s) { accumulate_gradients(s, grads_of(s), accumulation); });
///     apply_accumulated(vars, state, update);
///
/// Throws what transforms::pipeline throws.
transforms::PipelinedGraph
pipelined_execution(const NamedTensors& state, const transforms::PipelineOptions& options,
                    const std::function<void(const NamedTensors&)>& micro_batch);

} // namespace pxl::addons
