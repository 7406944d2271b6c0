// pxl::addons::TensorParallelLinear: a Linear layer whose weight is split over the IPUs of one
// replica (Megatron-LM's tensor parallelism), joined by the all-reduces across IPUs.
#pragma once

#include "pxl/addons/module/module.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace pxl::addons {

/// Which way TensorParallelLinear splits its weight (in_features, out_features) over n IPUs.
enum class TensorParallelSplit : std::uint8_t {
  /// IPU k holds columns part k of the weight (and part k of the bias). Every IPU takes the
  /// whole input, identical on every IPU, through all_reduce_identical_inputs (so each IPU's
  /// input gradient is the sum of the parts' gradients), and returns its part of the output,
  /// (..., out_features / n).
  columns,
  /// IPU k holds rows part k of the weight and the whole bias. IPU k takes part k of the input,
  /// (..., in_features / n), as a columns layer returns it, and every IPU returns the whole
  /// output: the all_reduce_identical_grad_inputs of the IPUs' products (the output gradient
  /// is taken to be identical on every IPU), plus the bias.
  rows,
};

/// A fully connected layer split over the IPUs `ipus` of one replica. A columns layer, an
/// element-wise function of its parts and a rows layer compute two Linear layers with one
/// all-reduce each way (Megatron-LM's MLP). Around the pair every IPU holds the same tensors
/// and computes the same loss: a replicated tensor's gradient is whole on every IPU, and its
/// copies (the rows layer's bias) receive the same gradient, so the same optimizer step keeps
/// them equal.
///
/// Variables, like Linear's and created on their IPU: "<k>.weight" on IPU ipus[k], its part of
/// the (in_features, out_features) weight, truncated-normal(0, 0.02), and "<k>.bias", its part
/// of the bias (columns) or the whole bias (rows), zero; in the input's dtype.
class TensorParallelLinear : public Module<TensorParallelLinear> {
public:
  TensorParallelLinear(std::int64_t outputs, std::vector<std::int64_t> over_ipus,
                       TensorParallelSplit split_as, bool with_bias = true)
      : out_features(outputs), ipus(std::move(over_ipus)), split(split_as), bias(with_bias) {}

  /// `xs[k]`, on IPU ipus[k]: the whole input (columns) or its part k (rows), all of one
  /// shape (..., features). Returns one tensor per IPU, on it. ValueError for no IPUs, an
  /// IPU listed twice, or a feature count that n does not divide; GraphError for an input on
  /// another IPU; ShapeError for inputs of rank 0 or of different shapes.
  std::vector<Tensor> build(const std::vector<Tensor>& xs);

  std::int64_t out_features;
  std::vector<std::int64_t> ipus;
  TensorParallelSplit split;
  bool bias;
};

} // namespace pxl::addons
