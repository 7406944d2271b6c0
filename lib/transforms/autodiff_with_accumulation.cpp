// A gradient graph that folds some gradients into running-mean accumulators.
#include "pxl/transforms/autodiff_with_accumulation.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/ops/var_updates.hpp"
#include "transforms/autodiff_hook.hpp"

#include <algorithm>
#include <map>

namespace pxl::transforms {

namespace {
constexpr std::string_view fn = "autodiff_with_accumulation";

void check_accumulated(const Graph& graph, const std::vector<Tensor>& tensors,
                       const std::vector<Tensor>& required) {
  if (tensors.empty())
    throw ValueError(std::string(fn) +
                     ": tensors_to_accumulate_grads is empty; list the inputs of graph '" +
                     graph.name() + "' whose gradients to accumulate, or use autodiff");
  const auto inputs = graph.inputs();
  for (auto t = tensors.begin(); t != tensors.end(); ++t) {
    if (std::find(inputs.begin(), inputs.end(), *t) == inputs.end())
      throw GraphError(
          std::string(fn) + ": " + (t->valid() ? to_string(*t) : std::string("an empty tensor")) +
          " in tensors_to_accumulate_grads is not an input of graph '" + graph.name() + "'");
    if (std::find(tensors.begin(), t, *t) != t)
      throw ValueError(std::string(fn) + ": " + to_string(*t) +
                       " is listed twice in tensors_to_accumulate_grads; list each tensor once");
    if (std::find(required.begin(), required.end(), *t) != required.end())
      throw ValueError(std::string(fn) + ": " + to_string(*t) +
                       " is in both tensors_to_accumulate_grads and grads_required; its "
                       "gradient is either accumulated or returned, not both");
    if (!is_floating_point(t->dtype()))
      throw DTypeError(std::string(fn) + ": cannot accumulate the gradient of " + to_string(*t) +
                       ": gradients exist for float32 and float16 tensors only");
  }
}

Tensor on_ipu(const Tensor& t, std::int64_t ipu_index) {
  return t.ipu() == ipu_index ? t : ops::ipu_copy(t, ipu_index);
}

/// In the gradient graph: the counter and one accumulator per gradient, updated as a running
/// mean (addons' running_mean, op for op), then the counter incremented.
std::pair<std::vector<AccumulatorInput>, Tensor>
accumulate_running_mean(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grads) {
  const Tensor counter = graph_input(Shape{}, float32, std::string(mean_accum_counter_name),
                                     /*by_ref=*/true);
  std::vector<AccumulatorInput> accumulators;
  for (const auto& t : tensors) {
    auto on = ipu(t.ipu());
    accumulators.push_back(
        {t, graph_input(t.spec(), std::string(accumulator_name_prefix) + t.name(), true)});
  }
  // 1/(k+1) once per accumulator dtype, read before the counter's update.
  const Tensor w = 1.0 / (counter + 1.0);
  std::map<DType, Tensor> weight;
  for (const auto& a : accumulators)
    if (!weight.contains(a.input.dtype()))
      weight.emplace(a.input.dtype(),
                     a.input.dtype() == w.dtype() ? w : ops::cast(w, a.input.dtype()));
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    const Tensor& acc = accumulators[i].input;
    auto on = ipu(acc.ipu());
    ops::var_updates::accumulate_(acc,
                                  (grads[i] - acc) * on_ipu(weight.at(acc.dtype()), acc.ipu()));
  }
  {
    auto on = ipu(counter.ipu());
    ops::var_updates::accumulate_(counter, constant(1.0, counter.dtype()));
  }
  return {std::move(accumulators), counter};
}
} // namespace

GradGraphInfo autodiff_with_accumulation(const Graph& graph,
                                         const std::vector<Tensor>& tensors_to_accumulate_grads,
                                         std::optional<std::vector<Tensor>> grads_required) {
  std::vector<Tensor> required = grads_required.value_or(std::vector<Tensor>{});
  check_accumulated(graph, tensors_to_accumulate_grads, required);
  required.insert(required.end(), tensors_to_accumulate_grads.begin(),
                  tensors_to_accumulate_grads.end());
  const detail::KeptGradients kept{
      .tensors = tensors_to_accumulate_grads, .inside = [&](const std::vector<Tensor>& grads) {
        return accumulate_running_mean(tensors_to_accumulate_grads, grads);
      }};
  return detail::autodiff_keeping(graph, {.grads_required = std::move(required)}, kept);
}

} // namespace pxl::transforms
