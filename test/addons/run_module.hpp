// run_module: one module run on the emulator, forward and optionally backward, for the layer
// tests.
#pragma once

#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace pxl::test_addons {

/// What one forward (and optionally backward) run of a module gave.
struct Run {
  HostTensor y;
  /// Gradients by variable name, and "input0" for the first input's.
  std::map<std::string, HostTensor> grads;
  addons::NamedVariableFactories factories;
  std::map<std::string, HostTensor> variables;
};

/// Runs `module` on the emulator with `inputs` fed through host streams. With `dy`, also runs
/// the gradient graph with it as the output gradient. `weights` overwrite variables' initial
/// data by name.
template <typename M, std::size_t N>
Run run_module(M module, const std::array<HostTensor, N>& inputs,
               std::optional<HostTensor> dy = std::nullopt,
               const std::map<std::string, HostTensor>& weights = {}) {
  Ir ir;
  Run r;
  std::array<HostToDeviceStream, N> in_streams;
  DeviceToHostStream y_stream;
  std::map<std::string, DeviceToHostStream> grad_streams;
  addons::NamedTensors vars;
  {
    auto main = ir.main_graph().scope();
    std::array<Tensor, N> xs;
    for (std::size_t i = 0; i < N; ++i) {
      in_streams[i] = h2d_stream(inputs[i].shape(), inputs[i].dtype(), "in" + std::to_string(i));
      xs[i] = ops::host_load(in_streams[i]);
    }
    auto [facts, fwd] = std::apply([&](auto&... t) { return module.create_graph(t...); }, xs);
    r.factories = facts;
    std::optional<addons::GraphWithNamedArgs> bwd;
    if (dy) {
      // Gradients for every floating-point input (not for indices or seeds) but state
      // variables (a batch norm's running statistics).
      std::vector<Tensor> state;
      for (const auto& [key, f] : facts.items())
        if (!f.trainable)
          state.push_back(fwd.args().at(key));
      std::vector<Tensor> required;
      for (const auto& t : fwd.graph().inputs())
        if (is_floating_point(t.dtype()) && std::find(state.begin(), state.end(), t) == state.end())
          required.push_back(t);
      bwd = addons::autodiff(fwd, {.grads_required = required});
    }
    vars = facts.init();
    auto fwd_info = fwd.bind(vars).call_with_info({xs.begin(), xs.end()});
    y_stream =
        d2h_stream(fwd_info.parent_output(0).shape(), fwd_info.parent_output(0).dtype(), "y");
    ops::host_store(y_stream, fwd_info.parent_output(0));
    if (dy) {
      auto dy_t = constant(*dy, "dy");
      auto bwd_info =
          bwd->bind(vars).call_with_info({dy_t}, {}, bwd->grad_graph_info().inputs_dict(fwd_info));
      auto store = [&](const std::string& key, const Tensor& g) {
        grad_streams[key] = d2h_stream(g.shape(), g.dtype(), "d_" + key);
        ops::host_store(grad_streams[key], g);
      };
      const auto grads = bwd->grads(bwd_info);
      for (const auto& [key, g] : grads.items())
        store(key, g);
      const auto by_parent =
          bwd->grad_graph_info().fwd_parent_ins_to_grad_parent_outs(fwd_info, bwd_info);
      if (auto it = by_parent.find(xs[0]); it != by_parent.end())
        store("input0", it->second);
    }
  }
  Session session{ir, "ipu_model"};
  for (const auto& [key, data] : weights)
    session.write_variable_data(vars.at(key), data);
  auto attached = session.attach();
  StreamInputs feed;
  for (std::size_t i = 0; i < N; ++i)
    feed.emplace(in_streams[i], inputs[i]);
  auto out = session.run(feed);
  r.y = out.at(y_stream);
  for (const auto& [key, s] : grad_streams)
    r.grads[key] = out.at(s);
  for (const auto& [key, v] : vars.items())
    r.variables[key] = session.get_tensor_data(v);
  return r;
}

} // namespace pxl::test_addons
