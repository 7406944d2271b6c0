// addons::autodiff: core autodiff plus the bookkeeping that keeps arguments' names.
#include "pxl/addons/autodiff.hpp"

namespace pxl::addons {

GraphWithNamedArgs autodiff(const GraphWithNamedArgs& fwd, transforms::AutodiffOptions options) {
  auto info = transforms::autodiff(fwd.graph(), std::move(options));
  std::map<Tensor, std::string> names;
  for (const auto& [key, t] : fwd.args().items())
    names.emplace(t, key);

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

} // namespace pxl::addons
