// call, repeat and CallSiteInfo: binding parent tensors to a subgraph's inputs.
#include "pxl/ops/call.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"

#include <algorithm>

namespace pxl {

Graph CallSiteInfo::called_graph() const { return *op_.called_graph(); }

Tensor CallSiteInfo::graph_to_parent(const Tensor& graph_tensor) const {
  const Graph g = called_graph();
  const auto ins = g.inputs();
  if (auto it = std::find(ins.begin(), ins.end(), graph_tensor); it != ins.end())
    return op_.input(static_cast<std::size_t>(it - ins.begin()));
  const auto outs = g.outputs();
  if (auto it = std::find(outs.begin(), outs.end(), graph_tensor); it != outs.end())
    return op_.output(static_cast<std::size_t>(it - outs.begin()));
  throw GraphError("CallSiteInfo::graph_to_parent: " +
                   (graph_tensor.valid() ? to_string(graph_tensor) : std::string("empty tensor")) +
                   " is neither an input nor an output of graph '" + g.name() + "'");
}

Tensor CallSiteInfo::parent_to_graph(const Tensor& parent_tensor) const {
  const Graph g = called_graph();
  const auto ins = op_.inputs();
  if (auto it = std::find(ins.begin(), ins.end(), parent_tensor); it != ins.end())
    return g.inputs()[static_cast<std::size_t>(it - ins.begin())];
  const auto outs = op_.outputs();
  if (auto it = std::find(outs.begin(), outs.end(), parent_tensor); it != outs.end())
    return g.outputs()[static_cast<std::size_t>(it - outs.begin())];
  throw GraphError(
      "CallSiteInfo::parent_to_graph: " +
      (parent_tensor.valid() ? to_string(parent_tensor) : std::string("empty tensor")) +
      " is neither an input nor an output of call site " + op_.debug_name() + " of graph '" +
      g.name() + "'");
}

InputsDict CallSiteInfo::inputs_dict() const {
  InputsDict d;
  const auto graph_ins = called_graph().inputs();
  for (std::size_t i = 0; i < graph_ins.size(); ++i)
    d.emplace_back(graph_ins[i], op_.input(i));
  return d;
}

CallSiteInfo::CallSiteInfo(Op call_op) : op_(call_op) {
  if (!op_.called_graph())
    throw GraphError("CallSiteInfo: op " + op_.debug_name() + " does not call a graph");
}

ConditionalSiteInfo::ConditionalSiteInfo(Op conditional_op) : op_(conditional_op) {
  if (op_.kind() != OpKind::Conditional)
    throw GraphError("ConditionalSiteInfo: op " + op_.debug_name() + " is not a conditional");
}
Graph ConditionalSiteInfo::then_graph() const { return op_.called_graphs()[0]; }
Graph ConditionalSiteInfo::else_graph() const { return op_.called_graphs()[1]; }
std::vector<Tensor> ConditionalSiteInfo::then_inputs() const {
  const auto ins = op_.inputs();
  const auto n = op_.attrs<OpKind::Conditional>().then_inputs;
  return {ins.begin() + 1, ins.begin() + 1 + n};
}
std::vector<Tensor> ConditionalSiteInfo::else_inputs() const {
  const auto ins = op_.inputs();
  const auto n = op_.attrs<OpKind::Conditional>().then_inputs;
  return {ins.begin() + 1 + n, ins.end()};
}

namespace ops {

namespace {
std::string input_label(const Tensor& t) { return "'" + t.name() + "' " + to_string(t.spec()); }

/// PopXL-style table of the called graph's inputs and what is bound to each.
std::string binding_table(const Graph& graph, const std::vector<Tensor>& bound) {
  std::string s;
  const auto ins = graph.inputs();
  for (std::size_t i = 0; i < ins.size(); ++i)
    s += "\n  " + std::to_string(i) + ": " + input_label(ins[i]) + " <- " +
         (bound[i].valid() ? to_string(bound[i]) : std::string("(missing)"));
  return s;
}

/// Whether `from` calls `target`, directly or through other graphs.
bool calls_transitively(const Graph& from, const Graph& target, std::vector<Graph>& seen) {
  for (const auto& g : from.called_graphs()) {
    if (g == target)
      return true;
    if (std::find(seen.begin(), seen.end(), g) != seen.end())
      continue;
    seen.push_back(g);
    if (calls_transitively(g, target, seen))
      return true;
  }
  return false;
}

/// Checks `graph` may be called from the current graph and returns the parent tensors in the
/// graph's input order.
std::vector<Tensor> bind_inputs(std::string_view op, const Graph& graph,
                                const std::vector<Tensor>& inputs, const InputsDict& inputs_dict) {
  const auto current = detail::require_graph(op);
  const std::string gname = "'" + graph.name() + "'";
  if (detail::HandleAccess::storage(graph) != current.ir)
    throw GraphError(std::string(op) + ": graph " + gname +
                     " belongs to another Ir than the current graph");
  if (graph.is_main())
    throw GraphError(std::string(op) + ": cannot call the main graph; call a subgraph made with "
                                       "ir.create_graph or ir.create_empty_graph");
  const Graph caller = detail::HandleAccess::graph(current.ir, current.graph);
  std::vector<Graph> seen;
  if (graph == caller || calls_transitively(graph, caller, seen))
    throw GraphError(std::string(op) + ": graph " + gname + " cannot be called from graph '" +
                     caller.name() + "': that would be recursion, which pxl does not support");

  const auto graph_ins = graph.inputs();
  if (inputs.size() > graph_ins.size())
    throw GraphError(std::string(op) + ": graph " + gname + " takes " +
                     std::to_string(graph_ins.size()) + " inputs but " +
                     std::to_string(inputs.size()) + " positional inputs were given" +
                     binding_table(graph, std::vector<Tensor>(graph_ins.size())));
  std::vector<Tensor> bound(graph_ins.size());
  std::copy(inputs.begin(), inputs.end(), bound.begin());
  for (const auto& [graph_tensor, parent] : inputs_dict) {
    const auto it = std::find(graph_ins.begin(), graph_ins.end(), graph_tensor);
    if (it == graph_ins.end())
      throw GraphError(std::string(op) + ": inputs_dict key " +
                       (graph_tensor.valid() ? to_string(graph_tensor) : std::string("(empty)")) +
                       " is not an input of graph " + gname + binding_table(graph, bound));
    auto& slot = bound[static_cast<std::size_t>(it - graph_ins.begin())];
    if (slot.valid())
      throw GraphError(std::string(op) + ": input " + input_label(graph_tensor) + " of graph " +
                       gname + " is bound twice, to " + to_string(slot) + " and to " +
                       (parent.valid() ? to_string(parent) : std::string("(empty)")) +
                       binding_table(graph, bound));
    slot = parent;
  }
  std::string missing;
  for (std::size_t i = 0; i < bound.size(); ++i) {
    if (bound[i].valid())
      continue;
    // An input made by graph_input_for: its variable, in the main graph.
    const auto variable = current.ir->tensor(IrView::id(graph_ins[i])).bound_by_default;
    if (variable && current.graph == IrView::main_graph()) {
      bound[i] = detail::HandleAccess::tensor(current.ir, *variable);
      continue;
    }
    missing += (missing.empty() ? "" : ", ") + input_label(graph_ins[i]);
    if (variable)
      missing += " (bound by default to main-graph variable " +
                 to_string(detail::HandleAccess::tensor(current.ir, *variable)) +
                 " only at call sites in the main graph; pass it into graph '" + caller.name() +
                 "' and bind it here)";
  }
  if (!missing.empty())
    throw GraphError(std::string(op) + ": missing inputs of graph " + gname + ": " + missing +
                     binding_table(graph, bound));
  for (std::size_t i = 0; i < bound.size(); ++i) {
    // The parent must live in the current graph; add_op re-checks, but the spec check below
    // would otherwise compare against a tensor of the wrong graph first.
    if (detail::HandleAccess::storage(bound[i]) != current.ir)
      throw GraphError(std::string(op) + ": parent tensor for input " + input_label(graph_ins[i]) +
                       " of graph " + gname + " belongs to another Ir");
    if (bound[i].shape() != graph_ins[i].shape())
      throw ShapeError(std::string(op) + ": input " + input_label(graph_ins[i]) + " of graph " +
                       gname + " is bound to " + to_string(bound[i]) + " of another shape");
    if (bound[i].dtype() != graph_ins[i].dtype())
      throw DTypeError(std::string(op) + ": input " + input_label(graph_ins[i]) + " of graph " +
                       gname + " is bound to " + to_string(bound[i]) + " of another dtype");
    if (bound[i].ipu() != graph_ins[i].ipu())
      throw GraphError(std::string(op) + ": input " + input_label(graph_ins[i]) + " of graph " +
                       gname + " is on IPU " + std::to_string(graph_ins[i].ipu()) +
                       " but is bound to " + to_string(bound[i]) + " on IPU " +
                       std::to_string(bound[i].ipu()) + "; build the graph under ipu(" +
                       std::to_string(bound[i].ipu()) + "), or copy the tensor with ops::ipu_copy");
  }
  return bound;
}

std::vector<TensorSpec> output_specs(const Graph& graph) {
  std::vector<TensorSpec> specs;
  for (const auto& t : graph.outputs())
    specs.push_back(t.spec());
  return specs;
}

/// Each output of `call` on the IPU and tile set of the callee's output it returns.
Op place_outputs(Op call, const Graph& callee) {
  const auto outs = callee.outputs();
  for (std::size_t i = 0; i < outs.size(); ++i) {
    detail::place_output(call, i, outs[i].ipu());
    detail::place_output_tiles(call, i, outs[i].tile_set());
  }
  return call;
}

Op add_call_op(OpKind kind, const Graph& graph, const std::vector<Tensor>& bound, CallAttrs attrs) {
  return place_outputs(detail::add_op_node(kind, bound, output_specs(graph), attrs), graph);
}
} // namespace

CallSiteInfo call_with_info(const Graph& graph, const std::vector<Tensor>& inputs,
                            const InputsDict& inputs_dict, CallOptions options) {
  const auto bound = bind_inputs("Call", graph, inputs, inputs_dict);
  return CallSiteInfo(
      add_call_op(OpKind::Call, graph, bound, CallAttrs{graph.index(), 1, options.inline_graph}));
}

std::vector<Tensor> call(const Graph& graph, const std::vector<Tensor>& inputs,
                         const InputsDict& inputs_dict, CallOptions options) {
  return call_with_info(graph, inputs, inputs_dict, options).outputs();
}

CallSiteInfo repeat_with_info(const Graph& graph, std::int64_t count,
                              const std::vector<Tensor>& inputs, const InputsDict& inputs_dict) {
  if (count < 1)
    throw ValueError("Loop: repeat count must be >= 1, got " + std::to_string(count) +
                     " for graph '" + graph.name() + "'");
  const auto bound = bind_inputs("Loop", graph, inputs, inputs_dict);
  const auto graph_ins = graph.inputs();
  const auto graph_outs = graph.outputs();
  if (graph_outs.size() > graph_ins.size())
    throw GraphError("Loop: graph '" + graph.name() + "' has " + std::to_string(graph_outs.size()) +
                     " outputs but only " + std::to_string(graph_ins.size()) +
                     " inputs; each output is carried into the input of the same position");
  for (std::size_t i = 0; i < graph_outs.size(); ++i)
    if (graph_outs[i].spec() != graph_ins[i].spec())
      throw ShapeError("Loop: output " + std::to_string(i) + " " + to_string(graph_outs[i]) +
                       " of graph '" + graph.name() + "' is carried into input " +
                       std::to_string(i) + " " + to_string(graph_ins[i]) +
                       ", so their shapes and dtypes must be equal");
  return CallSiteInfo(add_call_op(OpKind::Repeat, graph, bound, CallAttrs{graph.index(), count}));
}

ConditionalSiteInfo conditional_with_info(const Tensor& condition, const Graph& then_branch,
                                          const Graph& else_branch,
                                          const std::vector<Tensor>& then_inputs,
                                          const std::vector<Tensor>& else_inputs,
                                          const InputsDict& then_inputs_dict,
                                          const InputsDict& else_inputs_dict) {
  detail::require_usable(condition, "If: the condition");
  if (condition.dtype() != DType::bool_ || condition.spec().nelms() != 1)
    throw DTypeError("If: the condition must be a bool_ tensor of one element, got " +
                     to_string(condition));
  const auto then_bound = bind_inputs("If", then_branch, then_inputs, then_inputs_dict);
  const auto else_bound = bind_inputs("If", else_branch, else_inputs, else_inputs_dict);
  const auto then_outs = then_branch.outputs(), else_outs = else_branch.outputs();
  if (then_outs.size() != else_outs.size())
    throw GraphError("If: the then-branch '" + then_branch.name() + "' returns " +
                     std::to_string(then_outs.size()) + " outputs but the else-branch '" +
                     else_branch.name() + "' returns " + std::to_string(else_outs.size()) +
                     "; both must return the same outputs");
  for (std::size_t i = 0; i < then_outs.size(); ++i)
    if (then_outs[i].spec() != else_outs[i].spec())
      throw ShapeError("If: output " + std::to_string(i) + " is " + to_string(then_outs[i]) +
                       " in the then-branch '" + then_branch.name() + "' but " +
                       to_string(else_outs[i]) + " in the else-branch '" + else_branch.name() +
                       "'; both branches must return equal shapes and dtypes");
  std::vector<Tensor> inputs{condition};
  inputs.insert(inputs.end(), then_bound.begin(), then_bound.end());
  inputs.insert(inputs.end(), else_bound.begin(), else_bound.end());
  for (std::size_t i = 0; i < then_outs.size(); ++i)
    if (then_outs[i].ipu() != else_outs[i].ipu())
      throw GraphError("If: output " + std::to_string(i) + " is on IPU " +
                       std::to_string(then_outs[i].ipu()) + " in the then-branch '" +
                       then_branch.name() + "' but on IPU " + std::to_string(else_outs[i].ipu()) +
                       " in the else-branch '" + else_branch.name() +
                       "'; both branches must return it on one IPU");
  return ConditionalSiteInfo(place_outputs(
      detail::add_op_node(OpKind::Conditional, inputs, output_specs(then_branch),
                          ConditionalAttrs{then_branch.index(), else_branch.index(),
                                           static_cast<std::uint32_t>(then_bound.size())}),
      then_branch));
}

std::vector<Tensor> conditional(const Tensor& condition, const Graph& then_branch,
                                const Graph& else_branch, const std::vector<Tensor>& then_inputs,
                                const std::vector<Tensor>& else_inputs,
                                const InputsDict& then_inputs_dict,
                                const InputsDict& else_inputs_dict) {
  return conditional_with_info(condition, then_branch, else_branch, then_inputs, else_inputs,
                               then_inputs_dict, else_inputs_dict)
      .outputs();
}

std::vector<Tensor> repeat(const Graph& graph, std::int64_t count,
                           const std::vector<Tensor>& inputs, const InputsDict& inputs_dict) {
  return repeat_with_info(graph, count, inputs, inputs_dict).outputs();
}

} // namespace ops
} // namespace pxl
