// The main job's two classifiers of Fashion-MNIST: PopXL's MNIST tutorial network
// (784-512-512-512-10 with gelu, `--model mlp`) and a small CNN (`--model cnn`).
#pragma once

#include "pxl/addons/layers/batch_norm.hpp"
#include "pxl/addons/layers/conv.hpp"
#include "pxl/addons/layers/dense.hpp"
#include "pxl/addons/layers/flatten.hpp"
#include "pxl/addons/layers/linear.hpp"
#include "pxl/addons/layers/pool.hpp"
#include "pxl/addons/module/module.hpp"
#include "pxl/addons/training/pipeline.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/transforms/pipeline.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace mnist {

/// Pixels per image: the Net's input width.
inline constexpr std::int64_t image_size = 28 * 28;

/// Three gelu hidden layers of 512 and a 10-way output; variables fc1.weight … fc4.bias.
struct Net : pxl::addons::Module<Net> {
  static constexpr std::int64_t layers = 4;
  /// Pipeline stages, 1 to `layers`: layer i (from 0) in stage i·stages/layers, on the IPU
  /// `device_mapping` gives it (empty: IPU of the stage's number), activations copied from
  /// stage to stage.
  std::int64_t stages = 1;
  std::vector<std::int64_t> device_mapping;
  PXL_SUBMODULE(pxl::addons::Linear, fc1, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc2, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc3, 512);
  PXL_SUBMODULE(pxl::addons::Linear, fc4, 10);

  /// x: [batch, 784] → logits [batch, 10].
  pxl::Tensor build(const pxl::Tensor& x) {
    pxl::Tensor h = x;
    auto layer = [&](std::int64_t i, pxl::addons::Linear& fc, bool hidden) {
      auto in_stage = pxl::addons::PipelineStages(device_mapping).stage(i * stages / layers);
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

/// Two blocks of a 3×3 convolution (same padding, no bias: the batch norm shifts), batch
/// norm, ReLU and a 2×2 max pool, with 32 then 64 channels, then a dense layer of 128 with ReLU
/// and a 10-way output: 28×28 → 14×14×32 → 7×7×64 → 128 → 10. Variables block1.conv.weight,
/// block1.norm.weight, … fc2.bias; the batch norms' running statistics beside them.
struct Cnn : pxl::addons::Module<Cnn> {
  /// PyTorch's initialisation of convolutions and linear layers, U(±1 / sqrt(fan_in)).
  static pxl::addons::initializers::KerasInitializer torch_default() {
    return pxl::addons::initializers::variance_scaling(
        1.0 / 3, pxl::addons::initializers::FanMode::fan_in,
        pxl::addons::initializers::Distribution::uniform);
  }
  /// The pipeline's units: the two blocks and the two dense layers.
  static constexpr std::int64_t layers = 4;
  /// Pipeline stages, 1 to `layers`, and their IPUs, as Net's.
  std::int64_t stages = 1;
  std::vector<std::int64_t> device_mapping;

  /// Convolution, batch norm, ReLU and max pool, channels first; `memory` the convolution's
  /// available memory proportion.
  struct Block : pxl::addons::Module<Block> {
    Block(std::int64_t channels, std::optional<double> memory)
        : conv(pxl::addons::named_module<pxl::addons::Conv2D>(
              "conv", channels, std::vector<std::int64_t>{3},
              pxl::addons::ConvLayerOptions{.padding = pxl::addons::Padding::same,
                                            .data_format = pxl::addons::DataFormat::channels_first,
                                            .use_bias = false,
                                            .kernel_initializer = torch_default(),
                                            .available_memory_proportion = memory})) {}
    pxl::addons::Conv2D conv;
    // Synchronized: R replicas of batch B normalise as one replica of R·B, so --replicas
    // trains as the equivalent single replica does (to rounding).
    PXL_SUBMODULE(pxl::addons::BatchNorm2D, norm,
                  pxl::addons::BatchNorm2DOptions{.synchronized = true});
    PXL_SUBMODULE(pxl::addons::MaxPool2D, pool, std::vector<std::int64_t>{2});
    pxl::Tensor build(const pxl::Tensor& x) { return pool(pxl::ops::relu(norm(conv(x)))); }
  };
  /// `conv_memory`: the convolutions' available memory proportion (PopLibs' 0.6 when unset).
  explicit Cnn(std::optional<double> conv_memory = std::nullopt)
      : block1(pxl::addons::named_module<Block>("block1", 32, conv_memory)),
        block2(pxl::addons::named_module<Block>("block2", 64, conv_memory)) {}
  Block block1, block2;
  PXL_SUBMODULE(pxl::addons::Dense, fc1, 128, pxl::addons::Activation::relu, true, torch_default(),
                torch_default());
  PXL_SUBMODULE(pxl::addons::Dense, fc2, 10, pxl::addons::Activation::none, true, torch_default(),
                torch_default());

  /// x: [batch, 784] → logits [batch, 10].
  pxl::Tensor build(const pxl::Tensor& x) {
    pxl::Tensor h = x.reshape({x.shape()[0], 1, 28, 28});
    const pxl::addons::PipelineStages mapped(device_mapping);
    auto unit = [&](std::int64_t i, auto& layer) {
      auto in_stage = mapped.stage(i * stages / layers);
      h = layer(pxl::addons::PipelineStages::input(h));
    };
    unit(0, block1);
    unit(1, block2);
    {
      auto in_stage = mapped.stage(2 * stages / layers);
      h = fc1(pxl::addons::PipelineStages::input(h).reshape({h.shape()[0], 64 * 7 * 7}));
    }
    unit(3, fc2);
    return h;
  }
};

/// The fewest micro-batches per update that fill a pipeline of the Net in `stages` stages on
/// the IPUs of `device_mapping` (empty: stage k on IPU k) under `schedule`: its
/// 2·stages − 1 stages, backward ones included.
inline std::int64_t min_pipeline_micro_batches(
    std::int64_t stages, const std::vector<std::int64_t>& device_mapping = {},
    pxl::transforms::PipelineSchedule schedule = pxl::transforms::PipelineSchedule::grouped) {
  const pxl::addons::PipelineStages mapped(device_mapping);
  // The forward stages, then back down: 0, 1, ..., stages − 1, ..., 1, 0.
  std::vector<std::vector<std::int64_t>> stage_ipus;
  for (std::int64_t k = 0; k < 2 * stages - 1; ++k)
    stage_ipus.push_back({mapped.ipu_of(k < stages ? k : 2 * stages - 2 - k)});
  return pxl::transforms::min_steps(schedule, stage_ipus);
}

} // namespace mnist
