// pxl::addons::Sequential: Keras's Sequential model, layers of any type applied in order.
#pragma once

#include "pxl/addons/layers/layer.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace pxl::addons {

class Sequential;

namespace impl {
/// Whether `Sequential(first, rest...)` lists layers rather than copying a Sequential: tested
/// before anything else, so that copying a Sequential never asks whether a Sequential is a
/// layer while deciding how to copy one.
template <typename First, typename... Rest>
concept NotACopy = sizeof...(Rest) > 0 || !std::same_as<std::remove_cvref_t<First>, Sequential>;
} // namespace impl

/// Layers applied one after the other (Keras's and PyTorch's Sequential): a Module whose
/// build feeds each layer's output to the next.
///
///     Sequential model{Flatten{}, Dense(256, Activation::relu), Dense(10)};
///     auto [facts, fwd] = model.create_graph(TensorSpec{{32, 28, 28}, float32});
///     // variables layers.1.weight, layers.1.bias, layers.2.weight, layers.2.bias
///
/// Naming. Layer i is the sub-module "layers.i", counted over every layer, those without
/// variables included (the path `model.layers[i].weight` reads in Keras; PyTorch's
/// nn.Sequential says "i.weight"); a Sequential that is itself a sub-module `body` puts them
/// under "body.layers.i".
///
/// Seeds. Layers that take a random seed (Dropout; see Layer::needs_seed) need the
/// Sequential built as `build(x, seed)` (`create_graph(x_spec, TensorSpec{{2}, uint32})`):
/// the seeded layers draw their seeds in order from a chain, each taking
/// `ops::split_random_seed(s)[0]` of the running seed `s` and passing on `[1]`, so no two
/// share a mask.
///
/// Pipelining. With `set_pipeline_stage_assignment`, layer i is built in the pipeline stage
/// stage[i] (on that stage's IPU) and takes its input through PipelineStages::input, which
/// copies it to that IPU when the previous layer ran on another.
class Sequential : public Module<Sequential> {
public:
  Sequential() = default;
  /// The layers in order: `Sequential{Flatten{}, Dense(10)}`, or as a sub-module
  /// `PXL_SUBMODULE(Sequential, body, Dense(64), Dense(10));`.
  template <typename First, typename... Rest>
  requires impl::NotACopy<First, Rest...> && std::convertible_to<First, Layer> &&
      (std::convertible_to<Rest, Layer>&&...) explicit Sequential(First first, Rest... rest) {
    add(Layer(std::move(first)));
    (add(Layer(std::move(rest))), ...);
  }
  explicit Sequential(std::vector<Layer> layers);

  /// Appends a layer, named "layers.<its index>" (Keras's `model.add`).
  void add(Layer layer);
  std::size_t size() const { return layers_.size(); }
  /// Layer i (ValueError when out of range).
  Layer& layer(std::size_t i);
  const Layer& layer(std::size_t i) const;

  /// Keras on IPUs' `set_pipeline_stage_assignment`: layer i goes in pipeline stage
  /// `stage_of_layer[i]`, which runs on IPU `device_mapping[stage]` (on IPU `stage` when the
  /// mapping is empty; see PipelineStages). An empty list switches pipelining off. ValueError
  /// when the list's length is not the number of layers, for a negative stage, when stages
  /// decrease along the layers, or for a bad mapping (PipelineStages' errors). Adding a layer
  /// afterwards makes build throw until the assignment is set again.
  void set_pipeline_stage_assignment(std::vector<std::int64_t> stage_of_layer,
                                     std::vector<std::int64_t> device_mapping = {});
  const std::vector<std::int64_t>& pipeline_stage_assignment() const { return stages_; }

  /// Whether some layer takes a seed, so that build needs one.
  bool needs_seed() const;

  /// The layers applied to x in order. ValueError when there are none, when a layer needs a
  /// seed, or when a stage assignment no longer matches the layers; the layers' own errors
  /// otherwise.
  Tensor build(const Tensor& x);
  /// As build(x), the seeded layers drawing from `seed` (uint32 of shape (2,): DTypeError /
  /// ShapeError otherwise). A seed is accepted even when no layer needs one.
  Tensor build(const Tensor& x, const Tensor& seed);

private:
  Tensor apply(const Tensor& x, std::optional<Tensor> seed);

  std::vector<Layer> layers_;
  std::vector<std::int64_t> stages_;
  std::vector<std::int64_t> device_mapping_;
};

} // namespace pxl::addons
