// torchvision's ResNet-50 (v1.5: the stride on each bottleneck's 3×3 convolution) as pxl
// modules, with torchvision's layer names, padding and defaults: the IPU's flagship benchmark,
// for estimating its memory and step time on the emulator.
#pragma once

#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bench::resnet {

/// How every convolution of a network is planned and accumulated (ops::ConvOptions): unset,
/// PopLibs' 0.6 of a tile and float32 partials.
struct ConvPlanning {
  std::optional<double> available_memory_proportion;
  std::optional<pxl::DType> partials_type;
};

/// torchvision's `conv{1,3}x{1,3}`: no bias, symmetric padding of (kernel − 1) / 2, and its
/// weights from kaiming_normal(fan_out, relu), as torchvision initialises them. `planning`:
/// the convolution's available memory proportion and partials type.
struct Conv : pxl::addons::Module<Conv> {
  Conv(std::int64_t out_channels, std::int64_t kernel, std::int64_t stride = 1,
       const ConvPlanning& conv_planning = {})
      : out(out_channels), k(kernel), s(stride), planning(conv_planning) {}
  pxl::Tensor build(const pxl::Tensor& x) {
    const std::int64_t in = x.shape()[1], pad = (k - 1) / 2;
    const double std = std::sqrt(2.0 / static_cast<double>(out * k * k));
    const pxl::Tensor w = add_variable_input(
        "weight", pxl::addons::init::normal(0.0, std, {out, in, k, k}), x.dtype());
    return pxl::ops::conv(x, w,
                          {.stride = {s, s},
                           .padding = {pad, pad, pad, pad},
                           .available_memory_proportion = planning.available_memory_proportion,
                           .partials_type = planning.partials_type});
  }
  std::int64_t out, k, s;
  ConvPlanning planning;
};

/// The bottleneck: 1×1 to `width`, 3×3 (stride `stride`), 1×1 to 4·width, each with batch
/// norm (`bn` its options); the shortcut a strided 1×1 convolution and batch norm where the
/// shape changes.
struct Bottleneck : pxl::addons::Module<Bottleneck> {
  Bottleneck(std::int64_t width, std::int64_t stride, bool downsample,
             const pxl::addons::BatchNorm2DOptions& bn, const ConvPlanning& planning)
      : conv1(pxl::addons::named_module<Conv>("conv1", width, 1, 1, planning)),
        conv2(pxl::addons::named_module<Conv>("conv2", width, 3, stride, planning)),
        conv3(pxl::addons::named_module<Conv>("conv3", 4 * width, 1, 1, planning)),
        shortcut(pxl::addons::named_module<Conv>("downsample.0", 4 * width, 1, stride, planning)),
        bn1(pxl::addons::named_module<pxl::addons::BatchNorm2D>("bn1", bn)),
        bn2(pxl::addons::named_module<pxl::addons::BatchNorm2D>("bn2", bn)),
        bn3(pxl::addons::named_module<pxl::addons::BatchNorm2D>("bn3", bn)),
        shortcut_bn(pxl::addons::named_module<pxl::addons::BatchNorm2D>("downsample.1", bn)),
        has_shortcut(downsample) {}
  pxl::Tensor build(const pxl::Tensor& x) {
    pxl::Tensor h = pxl::ops::relu(bn1(conv1(x)));
    h = pxl::ops::relu(bn2(conv2(h)));
    h = bn3(conv3(h));
    return pxl::ops::relu(h + (has_shortcut ? shortcut_bn(shortcut(x)) : x));
  }
  Conv conv1, conv2, conv3, shortcut;
  pxl::addons::BatchNorm2D bn1, bn2, bn3, shortcut_bn;
  bool has_shortcut;
};

/// ResNet-50 over (N, 3, H, W) images (224×224 in ImageNet training): the 7×7 stem, a 3×3
/// max pool, 3, 4, 6 and 3 bottlenecks of widths 64, 128, 256 and 512, a global average pool
/// and a 1000-way linear layer. 25.6 M parameters, about 4.1 GFLOPs per 224×224 image.
///
/// `checkpoints` names the bottlenecks ("layer1.0", ...) after which a new pipeline stage
/// begins, every stage on IPU 0: Graphcore's `pipeline_splits` with a device mapping of zeros,
/// which with recomputation makes the stages' inputs the checkpoints. Empty: no stages. `bn`:
/// every batch norm's options (synchronized over pairs of replicas, say). `conv`: every
/// convolution's memory proportion and partials type.
struct ResNet50 : pxl::addons::Module<ResNet50> {
  explicit ResNet50(std::vector<std::string> checkpoints = {},
                    const pxl::addons::BatchNorm2DOptions& bn = {}, const ConvPlanning& conv = {})
      : splits(std::move(checkpoints)),
        conv1(pxl::addons::named_module<Conv>("conv1", 64, 7, 2, conv)),
        bn1(pxl::addons::named_module<pxl::addons::BatchNorm2D>("bn1", bn)) {
    const std::int64_t blocks[] = {3, 4, 6, 3};
    for (std::int64_t stage = 0; stage < 4; ++stage)
      for (std::int64_t b = 0; b < blocks[stage]; ++b) {
        names.push_back("layer" + std::to_string(stage + 1) + "." + std::to_string(b));
        bottlenecks.push_back(pxl::addons::named_module<Bottleneck>(
            names.back(), 64 << stage, b == 0 && stage > 0 ? 2 : 1, b == 0, bn, conv));
      }
    for (const std::string& split : splits)
      if (std::ranges::find(names, split) == names.end())
        throw pxl::ValueError("ResNet50: no bottleneck '" + split + "' to split the stages after");
  }
  pxl::Tensor build(const pxl::Tensor& x) {
    const pxl::addons::PipelineStages stages(std::vector<std::int64_t>(splits.size() + 1, 0));
    std::int64_t stage = 0;
    std::optional<pxl::addons::StageScope> in_stage;
    if (!splits.empty())
      in_stage.emplace(stages.stage(stage));
    pxl::Tensor h = pxl::ops::relu(bn1(conv1(x)));
    h = pxl::ops::max_pool(h, {3, 3}, {.stride = {2, 2}, .padding = {1, 1, 1, 1}});
    for (std::size_t b = 0; b < bottlenecks.size(); ++b) {
      h = bottlenecks[b](h);
      if (std::ranges::find(splits, names[b]) != splits.end()) {
        in_stage.reset();
        in_stage.emplace(stages.stage(++stage));
        h = pxl::addons::PipelineStages::input(h);
      }
    }
    h = pxl::ops::global_average_pool(h).reshape({h.shape()[0], h.shape()[1]});
    return fc(h);
  }
  std::vector<std::string> splits, names;
  Conv conv1;
  pxl::addons::BatchNorm2D bn1;
  std::vector<Bottleneck> bottlenecks;
  PXL_SUBMODULE(pxl::addons::Linear, fc, 1000);
};

} // namespace bench::resnet
