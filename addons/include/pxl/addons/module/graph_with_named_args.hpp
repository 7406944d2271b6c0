// pxl::addons::GraphWithNamedArgs: a graph whose parameter inputs are known by name.
#pragma once

#include "pxl/addons/module/named_tensors.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/transforms/autodiff.hpp"

#include <concepts>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace pxl::addons {

class BoundGraph;

/// What a call binds besides its positional inputs; an aggregate, so a call names what it
/// passes as popxl.addons' keyword arguments do:
///
///     auto grads = bwd.call_with_info(dx, {.args = bwd.grad_graph_info().inputs_dict(fwd)});
struct CallArgs {
  /// Graph input → parent tensor (popxl.addons' `args=`, PopXL's `inputs_dict=`): e.g. a
  /// gradient graph's activations. Overrides bound inputs.
  InputsDict args;
  /// Named inputs by dotted name (as `bind` takes them). Overrides `args` and bound inputs.
  NamedTensors named;
  /// As for ops::call (`{.inline_graph = true}`).
  pxl::ops::CallOptions options;
};

namespace impl {
/// Positional tensors, then at most one CallArgs, InputsDict (its `args`) or NamedTensors (its
/// `named`): the argument lists of the variadic `call(x, w, b)` / `call_with_info(dx, dict)`.
template <class... Ts>
constexpr bool call_arguments() {
  constexpr std::size_t n = sizeof...(Ts);
  if constexpr (n == 0) {
    return true;
  } else {
    constexpr bool is_tensor[] = {std::same_as<Ts, Tensor>...};
    for (std::size_t i = 0; i + 1 < n; ++i)
      if (!is_tensor[i])
        return false;
    using Last = std::tuple_element_t<n - 1, std::tuple<Ts...>>;
    return std::same_as<Last, Tensor> || std::same_as<Last, CallArgs> ||
           std::same_as<Last, InputsDict> || std::same_as<Last, NamedTensors>;
  }
}
template <class... Ts>
concept CallArguments = call_arguments<Ts...>();

/// Sorts a CallArguments list into positional inputs and CallArgs.
struct CallPack {
  std::vector<Tensor> inputs;
  CallArgs more;
  void add(const Tensor& t) { inputs.push_back(t); }
  void add(const CallArgs& a) { more = a; }
  void add(const InputsDict& d) { more.args = d; }
  void add(const NamedTensors& n) { more.named = n; }
  template <class... Ts>
  static CallPack of(const Ts&... ts) {
    CallPack p;
    (p.add(ts), ...);
    return p;
  }
};

/// The call spellings GraphWithNamedArgs and BoundGraph share, forwarding to their
/// `call_with_info(inputs, named, inputs_dict, options)`.
template <class Self>
class CallSpellings {
public:
  /// Positional tensors as separate arguments, as PopXL writes them: `call(x, w, b)`,
  /// `call_with_info(dx, activations)` (see CallArguments).
  template <class... Ts>
  requires CallArguments<Ts...> std::vector<Tensor> call(const Ts&... inputs)
  const { return call_with_info(inputs...).outputs(); }
  template <class... Ts>
  requires CallArguments<Ts...> CallSiteInfo call_with_info(const Ts&... inputs)
  const {
    auto p = CallPack::of(inputs...);
    return call_with_info(p.inputs, p.more);
  }
  /// With `more` naming what else is bound: `call_with_info(dx, {.args = activations})`.
  std::vector<Tensor> call(const Tensor& input, const CallArgs& more) const {
    return call_with_info(std::vector<Tensor>{input}, more).outputs();
  }
  CallSiteInfo call_with_info(const Tensor& input, const CallArgs& more) const {
    return call_with_info(std::vector<Tensor>{input}, more);
  }
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const CallArgs& more) const {
    return call_with_info(inputs, more).outputs();
  }
  /// With graph inputs bound by `args` (popxl.addons' `args=`): `call_with_info({dx},
  /// activations)`.
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const InputsDict& args) const {
    return call_with_info(inputs, CallArgs{.args = args}).outputs();
  }
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs, const InputsDict& args) const {
    return call_with_info(inputs, CallArgs{.args = args});
  }
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs, const CallArgs& more) const {
    return static_cast<const Self&>(*this).call_with_info(inputs, more.named, more.args,
                                                          more.options);
  }
};
} // namespace impl

/// A graph plus its named inputs (`args`: e.g. "fc1.weight" → the graph input for it). The
/// remaining inputs are positional: a call passes them in graph order.
///
///     auto [facts, fwd] = Linear(4).create_graph(x);
///     auto vars = facts.init();
///     auto y = fwd.bind(vars).call(x)[0];
///
/// Positional inputs are passed as tensors (`call(x, w, b)`) or as one list (`call({x, w})`,
/// `call(inputs)`), optionally followed by what else the call binds: `{.args = inputs_dict}`,
/// `{.named = named_tensors}`, `{.options = ...}` (CallArgs), or an InputsDict or NamedTensors
/// alone (`bwd.call_with_info(dx, activations)`).
///
/// A gradient graph (from `autodiff`) also carries its `grad_graph_info()`; its inputs that
/// read named forward inputs (weights) and its outputs that hold their gradients are named
/// after them.
class GraphWithNamedArgs : public impl::CallSpellings<GraphWithNamedArgs> {
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
  /// named input must be given (GraphError lists the missing ones), and exactly as many
  /// positional inputs as the graph has left (GraphError otherwise).
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const NamedTensors& args = {}) const;
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs,
                              const NamedTensors& args = {}) const;
  /// The other spellings: `call(x, w, b)`, `call_with_info(dx, {.args = activations})`.
  using impl::CallSpellings<GraphWithNamedArgs>::call;
  using impl::CallSpellings<GraphWithNamedArgs>::call_with_info;
  /// As above, with some graph inputs bound explicitly by `inputs_dict` (e.g. a gradient
  /// graph's activations: `grad_graph_info().inputs_dict(fwd_info)`); `inputs` then fill the
  /// inputs bound neither by `args` nor by `inputs_dict`, in graph order. `options` as for
  /// ops::call (`{.inline_graph = true}` expands the call site: no argument copies).
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const NamedTensors& args,
                           const InputsDict& inputs_dict, pxl::ops::CallOptions options = {}) const;
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs, const NamedTensors& args,
                              const InputsDict& inputs_dict,
                              pxl::ops::CallOptions options = {}) const;

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
class BoundGraph : public impl::CallSpellings<BoundGraph> {
public:
  BoundGraph(GraphWithNamedArgs graph, std::map<Tensor, Tensor> bound);

  const GraphWithNamedArgs& graph_with_args() const { return graph_; }
  Graph graph() const { return graph_.graph(); }
  /// Graph input → parent tensor.
  const std::map<Tensor, Tensor>& bound() const { return bound_; }

  /// Calls with `inputs` for the unbound inputs (in graph order); `args` override or
  /// complete the bound named inputs. The other spellings are GraphWithNamedArgs's:
  /// `bound.call(x)`, `bound.call(x, w)`, `bound.call_with_info(dx, {.args = activations})`.
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const NamedTensors& args = {}) const;
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs,
                              const NamedTensors& args = {}) const;
  using impl::CallSpellings<BoundGraph>::call;
  using impl::CallSpellings<BoundGraph>::call_with_info;
  /// As above, with some graph inputs bound explicitly by `inputs_dict` (see
  /// GraphWithNamedArgs::call_with_info).
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const NamedTensors& args,
                           const InputsDict& inputs_dict, pxl::ops::CallOptions options = {}) const;
  CallSiteInfo call_with_info(const std::vector<Tensor>& inputs, const NamedTensors& args,
                              const InputsDict& inputs_dict,
                              pxl::ops::CallOptions options = {}) const;
  /// A new BoundGraph with `args` bound as well (overriding earlier bindings).
  BoundGraph bind(const NamedTensors& args) const;

private:
  GraphWithNamedArgs graph_;
  std::map<Tensor, Tensor> bound_;
};

} // namespace pxl::addons
