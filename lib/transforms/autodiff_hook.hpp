// Internal: autodiff with gradients kept inside the gradient graph (autodiff_with_accumulation).
#pragma once

#include "pxl/transforms/autodiff.hpp"

#include <functional>
#include <vector>

namespace pxl::detail {

/// Gradients of some required inputs that stay inside the gradient graph.
struct KeptGradients {
  /// Members of grads_required whose gradients are not outputs.
  std::vector<Tensor> tensors;
  /// Called in the gradient graph's scope once its outputs are made, with the gradients of
  /// `tensors` in order; returns the accumulator inputs and counter it added.
  std::function<std::pair<std::vector<transforms::AccumulatorInput>, Tensor>(
      const std::vector<Tensor>& grads)>
      inside;
};

/// `transforms::autodiff` with `kept` gradients handed to `kept.inside` instead of returned.
transforms::GradGraphInfo autodiff_keeping(const Graph& graph, transforms::AutodiffOptions options,
                                           const KeptGradients& kept);

} // namespace pxl::detail
