#include "pxl/addons/training/pipeline.hpp"

#include "pxl/addons/training/accumulation.hpp"
#include "pxl/core/error.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/ops/shape.hpp"

#include <optional>
#include <string>

namespace pxl::addons {

PipelineStages::PipelineStages(std::vector<std::int64_t> device_mapping)
    : mapping_(std::move(device_mapping)) {
  for (std::size_t k = 0; k < mapping_.size(); ++k)
    if (mapping_[k] < 0)
      throw ValueError("PipelineStages: the device mapping puts stage " + std::to_string(k) +
                       " on IPU " + std::to_string(mapping_[k]) + "; IPUs are numbered from 0");
}

std::int64_t PipelineStages::ipu_of(std::int64_t k) const {
  if (k < 0 || (!mapping_.empty() && k >= static_cast<std::int64_t>(mapping_.size())))
    throw ValueError("PipelineStages: no stage " + std::to_string(k) + "; the device mapping has " +
                     std::to_string(mapping_.size()) + " stages");
  return mapping_.empty() ? k : mapping_[static_cast<std::size_t>(k)];
}

StageScope PipelineStages::stage(std::int64_t k) const {
  return StageScope{ipu(ipu_of(k)), pipeline_stage(k)};
}

Tensor PipelineStages::input(const Tensor& t) {
  const std::int64_t here = current_ipu();
  if (t.ipu() != here)
    return pxl::ops::ipu_copy(t, here);
  // A stage on the IPU of the stage that made `t` still begins with a copy, on the chip: the
  // pipeline splits its stages at copies, in the backward pass too (the gradient of a copy is
  // a copy back), and a recomputing stage keeps what it copied in (TF's stages on one IPU,
  // recomputation checkpoints).
  const std::optional<std::int64_t> now = current_pipeline_stage();
  const std::optional<Op> producer = t.producer();
  const std::optional<std::int64_t> made = producer ? producer->pipeline_stage() : std::nullopt;
  return now && made && *made < *now ? pxl::ops::ipu_copy(t, here) : t;
}

transforms::PipelinedGraph
pipelined_execution(const NamedTensors& state, const transforms::PipelineOptions& options,
                    const std::function<void(const NamedTensors&)>& micro_batch) {
  const Graph caller = current_graph();
  Graph micro = caller.ir().create_empty_graph("pipeline_micro_batch");
  {
    auto in_micro = micro.scope();
    micro_batch(named_graph_inputs(state));
  }
  transforms::PipelinedGraph p = transforms::pipeline(micro, options);
  pxl::ops::call(p.graph, state.values_flat());
  return p;
}

} // namespace pxl::addons
