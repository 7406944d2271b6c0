// Sequential: layers named by position, built in order, optionally in pipeline stages.
#include "pxl/addons/layers/sequential.hpp"

#include "pxl/addons/training/pipeline.hpp"
#include "pxl/ops/random.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace pxl::addons {
namespace {

std::string join(const std::vector<std::int64_t>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

} // namespace

Sequential::Sequential(std::vector<Layer> layers) {
  for (auto& layer : layers)
    add(std::move(layer));
}

void Sequential::add(Layer layer) {
  layer.set_name("layers." + std::to_string(layers_.size()));
  layers_.push_back(std::move(layer));
}

Layer& Sequential::layer(std::size_t i) {
  return const_cast<Layer&>(std::as_const(*this).layer(i));
}

const Layer& Sequential::layer(std::size_t i) const {
  if (i >= layers_.size())
    throw ValueError("Sequential: no layer " + std::to_string(i) + "; it has " +
                     std::to_string(layers_.size()) + " layers");
  return layers_[i];
}

void Sequential::set_pipeline_stage_assignment(std::vector<std::int64_t> stage_of_layer,
                                               std::vector<std::int64_t> device_mapping) {
  if (!stage_of_layer.empty() && stage_of_layer.size() != layers_.size())
    throw ValueError("Sequential::set_pipeline_stage_assignment: expected one stage per layer (" +
                     std::to_string(layers_.size()) + "), got " +
                     std::to_string(stage_of_layer.size()) + " stages " + join(stage_of_layer));
  for (std::size_t i = 0; i < stage_of_layer.size(); ++i) {
    if (stage_of_layer[i] < 0)
      throw ValueError("Sequential::set_pipeline_stage_assignment: layer " + std::to_string(i) +
                       " has the negative stage " + std::to_string(stage_of_layer[i]) + " in " +
                       join(stage_of_layer));
    if (i > 0 && stage_of_layer[i] < stage_of_layer[i - 1])
      throw ValueError("Sequential::set_pipeline_stage_assignment: stages must not decrease "
                       "along the layers (data flows forward through the pipeline), but layer " +
                       std::to_string(i) + " is in stage " + std::to_string(stage_of_layer[i]) +
                       " after stage " + std::to_string(stage_of_layer[i - 1]) + " in " +
                       join(stage_of_layer));
  }
  // Checks the mapping and every stage against it now rather than at the first build.
  const PipelineStages stages(device_mapping);
  for (const std::int64_t s : stage_of_layer)
    stages.ipu_of(s);
  stages_ = std::move(stage_of_layer);
  device_mapping_ = std::move(device_mapping);
}

bool Sequential::needs_seed() const {
  return std::any_of(layers_.begin(), layers_.end(),
                     [](const Layer& layer) { return layer.needs_seed(); });
}

Tensor Sequential::build(const Tensor& x) { return apply(x, std::nullopt); }

Tensor Sequential::build(const Tensor& x, const Tensor& seed) {
  if (seed.dtype() != uint32)
    throw DTypeError("Sequential: the seed must be uint32 of shape (2,), got '" + seed.name() +
                     "' " + to_string(seed.spec()));
  if (seed.shape() != Shape{2})
    throw ShapeError("Sequential: the seed must have shape (2,), got '" + seed.name() + "' " +
                     to_string(seed.spec()));
  return apply(x, seed);
}

Tensor Sequential::apply(const Tensor& x, std::optional<Tensor> seed) {
  if (layers_.empty())
    throw ValueError("Sequential: there are no layers to build; give them to the constructor or "
                     "add them with add()");
  if (!stages_.empty() && stages_.size() != layers_.size())
    throw ValueError("Sequential: the pipeline stage assignment " + join(stages_) + " has " +
                     std::to_string(stages_.size()) + " stages for " +
                     std::to_string(layers_.size()) +
                     " layers (a layer was added after it was set); set it again");
  // Checked before tracing anything, so that no half-built graph is left behind.
  for (std::size_t i = 0; i < layers_.size() && !seed; ++i)
    if (layers_[i].needs_seed())
      throw ValueError("Sequential: layer " + std::to_string(i) + " (" + layers_[i].type_name() +
                       ") needs a random seed; build the Sequential as build(x, seed), e.g. "
                       "create_graph(x_spec, TensorSpec{{2}, uint32})");
  const PipelineStages stages(device_mapping_);
  Tensor h = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& layer = layers_[i];
    std::optional<StageScope> in_stage;
    if (!stages_.empty()) {
      in_stage.emplace(stages.stage(stages_[i]));
      h = PipelineStages::input(h);
    }
    std::optional<Tensor> layer_seed;
    if (layer.needs_seed()) {
      const Tensor running = stages_.empty() ? *seed : PipelineStages::input(*seed);
      const auto split = pxl::ops::split_random_seed(running);
      layer_seed = split[0];
      seed = split[1];
    }
    h = layer(h, layer_seed);
  }
  return h;
}

} // namespace pxl::addons
