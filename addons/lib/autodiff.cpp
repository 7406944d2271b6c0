// addons::autodiff: core autodiff plus the bookkeeping that keeps arguments' names.
#include "pxl/addons/autodiff.hpp"

#include "pxl/transforms/recompute_graph.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace pxl::addons {

namespace {

/// A gradient graph with its inputs and outputs named after the forward tensors they read or
/// hold the gradients of (`names`: forward tensor -> name).
GraphWithNamedArgs named_grad_graph(transforms::GradGraphInfo info,
                                    const std::map<Tensor, std::string>& names) {
  using Kind = transforms::ExpectedConnection::Kind;
  const Graph grad = info.graph();
  NamedTensors args, outputs;
  const auto ins = grad.inputs();
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const auto& e = info.expected_inputs()[i];
    if (auto it = names.find(e.fwd_tensor); e.kind == Kind::fwd && it != names.end())
      args.insert(it->second, ins[i]);
  }
  const auto outs = grad.outputs();
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const auto& e = info.expected_outputs()[i];
    if (auto it = names.find(e.fwd_tensor); e.kind == Kind::fwd_grad && it != names.end())
      outputs.insert(it->second, outs[i]);
  }
  return GraphWithNamedArgs(grad, std::move(args), std::move(info), std::move(outputs));
}

} // namespace

GraphWithNamedArgs autodiff(const GraphWithNamedArgs& fwd, transforms::AutodiffOptions options) {
  std::map<Tensor, std::string> names;
  for (const auto& [key, t] : fwd.args().items())
    names.emplace(t, key);
  return named_grad_graph(transforms::autodiff(fwd.graph(), std::move(options)), names);
}

GraphWithNamedArgs recompute_graph(const GraphWithNamedArgs& grad_graph) {
  const transforms::GradGraphInfo& info = grad_graph.grad_graph_info();
  // The names of the gradient graph's named inputs and outputs, by the forward tensor each
  // reads or holds the gradient of.
  std::map<Tensor, std::string> names;
  const auto ins = grad_graph.graph().inputs();
  for (const auto& [key, t] : grad_graph.args().items()) {
    const auto i = static_cast<std::size_t>(std::ranges::find(ins, t) - ins.begin());
    names.emplace(info.expected_inputs().at(i).fwd_tensor, key);
  }
  const auto outs = grad_graph.graph().outputs();
  for (const auto& [key, t] : grad_graph.named_outputs().items()) {
    const auto i = static_cast<std::size_t>(std::ranges::find(outs, t) - outs.begin());
    names.emplace(info.expected_outputs().at(i).fwd_tensor, key);
  }
  return named_grad_graph(transforms::recompute_graph(info), names);
}

} // namespace pxl::addons
