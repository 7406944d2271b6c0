// pxl::addons::GraphWithNamedArgs: a graph whose parameter inputs are known by name.
#pragma once

#include "pxl/addons/named_tensors.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/transforms/autodiff.hpp"

#include <optional>
#include <string>
#include <vector>

namespace pxl::addons {

class BoundGraph;

/// A graph plus its named inputs (`args`: e.g. "fc1.weight" → the graph input for it). The
/// remaining inputs are positional: a call passes them in graph order.
///
///     auto [facts, fwd] = Linear(4).create_graph(x);
///     auto vars = facts.init();
///     auto y = fwd.bind(vars).call({x})[0];
///
/// A gradient graph (from `autodiff`) also carries its `grad_graph_info()`; its inputs that
/// read named forward inputs (weights) and its outputs that hold their gradients are named
/// after them.
class GraphWithNamedArgs {
public:
  GraphWithNamedArgs() = default;
  /// `args` must be inputs of `graph` (GraphError otherwise).
  GraphWithNamedArgs(Graph graph, NamedTensors args = {},
                     std::optional<transforms::GradGraphInfo> grad_info = {},
                     NamedTensors named_outputs = {});

  Graph graph() const { return graph_; }
  const NamedTensors& args() const { return args_; }
  /// Named graph outputs (gradient graphs: the gradients of named forward inputs).
  const NamedTensors& named_outputs() const { return named_outputs_; }
  /// The graph inputs that are not named, in graph order.
  std::vector<Tensor> positional_inputs() const;

  /// Binds named args to parent tensors of the same dotted names (keys of `args` the graph
  /// does not have are ignored, as popxl.addons does).
  BoundGraph bind(const NamedTensors& args) const;
  /// Calls with `inputs` for the positional inputs (in order) and `args` for named ones; every
  /// named input must be given (GraphError lists the missing ones).
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const NamedTensors& args = {}) const;
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs,
                              const NamedTensors& args = {}) const;
  /// As above, with some graph inputs bound explicitly by `inputs_dict` (e.g. a gradient
  /// graph's activations: `grad_graph_info().inputs_dict(fwd_info)`); `inputs` then fill the
  /// inputs bound neither by `args` nor by `inputs_dict`, in graph order. `options` as for
  /// ops::call (`{.inline_graph = true}` expands the call site: no argument copies).
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const NamedTensors& args,
                           const InputsDict& inputs_dict, ops::CallOptions options = {}) const;
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs, const NamedTensors& args,
                              const InputsDict& inputs_dict, ops::CallOptions options = {}) const;

  /// The schedule listing with named inputs shown by name (`fc1.weight=%2`); Call ops are
  /// followed by the graph they call (`Call.7 (...) -> (...) calls Linear_subgraph(1)`).
  std::string print_schedule() const;

  /// The gradient graph of this graph (see addons::autodiff).
  GraphWithNamedArgs autodiff(transforms::AutodiffOptions options = {}) const;
  /// Whether this is a gradient graph.
  bool is_grad_graph() const { return grad_info_.has_value(); }
  /// ValueError unless this is a gradient graph.
  const transforms::GradGraphInfo& grad_graph_info() const;
  /// The gradient call site's outputs under the forward args' names ("fc1.weight" → its
  /// gradient in the parent). ValueError unless this is a gradient graph.
  NamedTensors grads(const CallSiteInfo& grad_call) const;

  /// A copy (handles and names; the graph itself is shared, as in popxl.addons).
  GraphWithNamedArgs copy() const { return *this; }

private:
  Graph graph_;
  NamedTensors args_;
  std::optional<transforms::GradGraphInfo> grad_info_;
  NamedTensors named_outputs_;
};

/// A graph with some named inputs bound to parent tensors (popxl.addons' BoundGraph).
class BoundGraph {
public:
  BoundGraph(GraphWithNamedArgs graph, std::map<Tensor, Tensor> bound);

  const GraphWithNamedArgs& graph_with_args() const { return graph_; }
  Graph graph() const { return graph_.graph(); }
  /// Graph input → parent tensor.
  const std::map<Tensor, Tensor>& bound() const { return bound_; }

  /// Calls with `inputs` for the unbound inputs (in graph order); `args` override or
  /// complete the bound named inputs.
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const NamedTensors& args = {}) const;
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs,
                              const NamedTensors& args = {}) const;
  /// As above, with some graph inputs bound explicitly by `inputs_dict` (see
  /// GraphWithNamedArgs::call_with_info).
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const NamedTensors& args,
                           const InputsDict& inputs_dict, ops::CallOptions options = {}) const;
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs, const NamedTensors& args,
                              const InputsDict& inputs_dict, ops::CallOptions options = {}) const;
  /// A new BoundGraph with `args` bound as well (overriding earlier bindings).
  BoundGraph bind(const NamedTensors& args) const;

private:
  GraphWithNamedArgs graph_;
  std::map<Tensor, Tensor> bound_;
};

} // namespace pxl::addons
