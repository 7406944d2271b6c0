// The Fashion-MNIST classifier of PopXL's MNIST tutorial: 784-512-512-512-10 with gelu.
#pragma once

#include "pxl/addons/layers/linear.hpp"
#include "pxl/addons/module/module.hpp"
#include "pxl/addons/training/pipeline.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/transforms/pipeline.hpp"

#include <cstdint>
#include <vector>

namespace mnist {

/// Pixels per image: the Net's input width.
inline constexpr std::int64_t image_size = 28 * 28;

/// Three gelu hidden layers of 512 and a 10-way output; variables fc1.weight … fc4.bias.
struct Net : pxl::addons::Module<Net> {
  static constexpr std::int64_t layers = 4;
  /// Pipeline stages, 1 to `layers`: layer i (from 0) in stage i·stages/layers, on IPU
  /// of that number, activations copied from IPU to IPU.
  std::int64_t stages = 1;
  PXL_SUBMODULE(pxl::addons::Linear, fc1, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc2, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc3, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc4, 10);

  /// x: [batch, 784] → logits [batch, 10].
  pxl::Tensor build(const pxl::Tensor& x) {
    pxl::Tensor h = x;
    auto layer = [&](std::int64_t i, pxl::addons::Linear& fc, bool hidden) {
      auto in_stage = pxl::addons::PipelineStages().stage(i * stages / layers);
      h = fc(pxl::addons::PipelineStages::input(h));
      if (hidden)
        h = pxl::ops::gelu(h);
    };
    layer(0, fc1, true);
    layer(1, fc2, true);
    layer(2, fc3, true);
    layer(3, fc4, false);
    return h;
  }
};

/// The fewest micro-batches per update that fill a pipeline of the Net over `stages` IPUs: its
/// 2·stages − 1 stages, backward ones included, under the grouped schedule.
inline std::int64_t min_pipeline_micro_batches(std::int64_t stages) {
  // Stage k on IPU k forward, then back down: 0, 1, ..., stages − 1, ..., 1, 0.
  std::vector<std::vector<std::int64_t>> stage_ipus;
  for (std::int64_t k = 0; k < 2 * stages - 1; ++k)
    stage_ipus.push_back({k < stages ? k : 2 * stages - 2 - k});
  return pxl::transforms::min_steps(pxl::transforms::PipelineSchedule::grouped, stage_ipus);
}

} // namespace mnist
