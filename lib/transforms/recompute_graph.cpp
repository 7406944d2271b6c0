// A gradient graph that reruns its forward graph instead of reading stored activations.
#include "pxl/transforms/recompute_graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/transforms/rewrite.hpp"

#include <algorithm>
#include <map>

namespace pxl::transforms {

namespace {
std::size_t index_of(const std::vector<Tensor>& ts, const Tensor& t) {
  return static_cast<std::size_t>(std::find(ts.begin(), ts.end(), t) - ts.begin());
}
} // namespace

GradGraphInfo recompute_graph(const GradGraphInfo& grad_info) {
  const Graph grad = grad_info.graph();
  const Graph fwd = grad_info.forward_graph();
  IrRewriter(grad.ir()).require_mutable(
      "recompute_graph: adding recomputation to gradient graph '" + grad.name() + "'");
  const Graph recomp = grad.ir().create_empty_graph(grad.name() + "_recomp");
  const auto in_recomp = recomp.scope();
  using Kind = ExpectedConnection::Kind;
  const auto grad_inputs = grad.inputs();
  const auto fwd_inputs = fwd.inputs();
  const auto& expected = grad_info.expected_inputs();

  // The inputs: provided gradients and forward inputs in the gradient graph's order, then the
  // other forward inputs, then the gradient graph's own extra inputs (accumulators, counter).
  std::vector<Tensor> grad_args(grad_inputs.size());
  std::map<Tensor, Tensor> fwd_args;
  std::vector<ExpectedConnection> recomp_expected;
  const auto input_like = [](const Tensor& t, bool by_ref) {
    auto on = ipu(t.ipu());
    return graph_input(t.spec(), t.name(), by_ref);
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const ExpectedConnection& e = expected[i];
    if (e.kind == Kind::fwd_grad)
      grad_args[i] = input_like(grad_inputs[i], false);
    else if (index_of(fwd_inputs, e.fwd_tensor) < fwd_inputs.size())
      fwd_args.emplace(e.fwd_tensor, input_like(e.fwd_tensor, false));
    else
      continue;
    recomp_expected.push_back(e);
  }
  for (const auto& t : fwd_inputs)
    if (!fwd_args.contains(t)) {
      fwd_args.emplace(t, input_like(t, false));
      recomp_expected.push_back({t, Kind::fwd});
    }
  for (std::size_t i = expected.size(); i < grad_inputs.size(); ++i)
    grad_args[i] = input_like(grad_inputs[i], grad.input_is_by_ref(i));

  // The forward pass again, then the gradient graph on its activations.
  std::vector<Tensor> fwd_call_args;
  for (const auto& t : fwd_inputs)
    fwd_call_args.push_back(fwd_args.at(t));
  const CallSiteInfo fwd_call = ops::call_with_info(fwd, fwd_call_args);
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (expected[i].kind == Kind::fwd)
      grad_args[i] = fwd_call.graph_to_parent(expected[i].fwd_tensor);
  for (const auto& out : ops::call(grad, grad_args))
    graph_output(out);

  std::vector<AccumulatorInput> accumulators;
  for (const auto& a : grad_info.accumulators())
    accumulators.push_back({a.fwd_tensor, grad_args[index_of(grad_inputs, a.input)]});
  const Tensor counter = grad_info.mean_accum_counter().valid()
                             ? grad_args[index_of(grad_inputs, grad_info.mean_accum_counter())]
                             : Tensor();
  return GradGraphInfo(recomp, fwd, std::move(recomp_expected), grad_info.expected_outputs(),
                       std::move(accumulators), counter);
}

} // namespace pxl::transforms
