// Tensor-parallel Linear layer.
#include "pxl/addons/layers/tensor_parallel_linear.hpp"

#include "pxl/ir/scope.hpp"
#include "pxl/ops/collectives.hpp"
#include "pxl/ops/matmul.hpp"

#include <algorithm>
#include <string>

namespace pxl::addons {

namespace {
std::string split_name(TensorParallelSplit s) {
  return s == TensorParallelSplit::columns ? "columns" : "rows";
}
} // namespace

std::vector<Tensor> TensorParallelLinear::build(const std::vector<Tensor>& xs) {
  const std::string what = "TensorParallelLinear (" + split_name(split) + ")";
  const auto n = static_cast<std::int64_t>(ipus.size());
  if (n == 0)
    throw ValueError(what + ": no IPUs to split the layer over");
  for (std::size_t k = 0; k < ipus.size(); ++k)
    if (std::ranges::count(ipus, ipus[k]) > 1)
      throw ValueError(what + ": IPU " + std::to_string(ipus[k]) +
                       " is listed more than once; give each IPU once");
  if (xs.size() != ipus.size())
    throw ValueError(what + ": " + std::to_string(xs.size()) + " inputs for " + std::to_string(n) +
                     " IPUs; give one input per IPU");
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if (xs[k].rank() == 0)
      throw ShapeError(what + ": expected inputs of rank >= 1 (..., features), got " +
                       to_string(xs[k]));
    if (xs[k].shape() != xs[0].shape())
      throw ShapeError(what + ": input " + std::to_string(k) + " " + to_string(xs[k]) +
                       " has another shape than input 0 " + to_string(xs[0]));
    if (xs[k].ipu() != ipus[k])
      throw GraphError(what + ": input " + std::to_string(k) + " " + to_string(xs[k]) +
                       " is on IPU " + std::to_string(xs[k].ipu()) + ", not on IPU " +
                       std::to_string(ipus[k]) + "; copy it there with ops::ipu_copy");
  }
  const std::int64_t features = xs[0].shape().back();
  const bool columns = split == TensorParallelSplit::columns;
  if (columns && out_features % n != 0)
    throw ValueError(what + ": " + std::to_string(n) + " IPUs do not divide the " +
                     std::to_string(out_features) + " output features");
  const std::int64_t part = columns ? out_features / n : out_features;
  const DType dtype = xs[0].dtype();
  std::vector<Tensor> ins = columns ? ops::collectives::all_reduce_identical_inputs(xs, ipus) : xs;
  std::vector<Tensor> ys;
  for (std::int64_t k = 0; k < n; ++k) {
    auto on = ipu(ipus[static_cast<std::size_t>(k)]);
    const std::string prefix = std::to_string(k) + ".";
    const Tensor w = add_variable_input(prefix + "weight",
                                        init::truncated_normal(0.0, 0.02, {features, part}), dtype);
    ys.push_back(pxl::ops::matmul(ins[static_cast<std::size_t>(k)], w));
  }
  if (!columns)
    ys = ops::collectives::all_reduce_identical_grad_inputs(ys, ipus);
  if (bias)
    for (std::int64_t k = 0; k < n; ++k) {
      auto on = ipu(ipus[static_cast<std::size_t>(k)]);
      Tensor& y = ys[static_cast<std::size_t>(k)];
      y = y + add_variable_input(std::to_string(k) + ".bias", init::zeros({part}), dtype);
    }
  return ys;
}

} // namespace pxl::addons
