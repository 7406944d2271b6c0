// IrRewriter: argument checks and handle conversions; the arena edits are lib/ir's.
#include "pxl/transforms/rewrite.hpp"
#include "ir/ir_edit.hpp"
#include "ir/op_builder.hpp"

namespace pxl::transforms {

namespace {
std::string shown(const Tensor& t) {
  return t.valid() ? to_string(t) : std::string("an empty Tensor");
}
} // namespace

void IrRewriter::require_mutable(std::string_view what) const {
  detail::edit::require_mutable(*ir_, what);
}

std::vector<TensorId> IrRewriter::add_output(GraphId graph, TensorId t) {
  const IrView v = view();
  if (graph.value >= v.num_graphs() || t.value >= v.num_tensors())
    throw GraphError("IrRewriter::add_output: graph " + std::to_string(graph.value) +
                     " or tensor %" + std::to_string(t.value) + " is not in this Ir");
  if (graph == IrView::main_graph())
    throw GraphError("IrRewriter::add_output: the main graph has no outputs; use "
                     "ops::host_store to send data to the host");
  if (v.graph(t) != graph)
    throw GraphError("IrRewriter::add_output: tensor '" + v.id(t) + "' is in graph '" +
                     v.name(v.graph(t)) + "', not in graph '" + v.name(graph) + "'");
  return detail::edit::add_output(*ir_, graph, t);
}

std::vector<Tensor> IrRewriter::add_output(const Graph& graph, const Tensor& t) {
  const IrView v = view();
  if (!v.owns(graph) || !t.valid() || !v.owns(t))
    throw GraphError("IrRewriter::add_output: graph '" + graph.name() + "' and " + shown(t) +
                     " must both belong to the rewriter's Ir");
  std::vector<Tensor> r;
  for (const TensorId id : add_output(IrView::id(graph), IrView::id(t)))
    r.push_back(v.tensor(id));
  return r;
}

Op IrRewriter::clone_op(const Op& op, const Graph& into, std::span<const Tensor> inputs) {
  const IrView v = view();
  if (!v.owns(op) || !v.owns(into))
    throw GraphError("IrRewriter::clone_op: the op and the graph must belong to the "
                     "rewriter's Ir");
  const std::string what =
      "IrRewriter::clone_op: " + op.debug_name() + " into graph '" + into.name() + "'";
  if (inputs.size() != op.num_inputs())
    throw GraphError(what + ": the op has " + std::to_string(op.num_inputs()) + " inputs, got " +
                     std::to_string(inputs.size()));
  std::vector<TensorId> ids;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.valid() || !v.owns(t) || !into.contains(t))
      throw GraphError(what + ": input " + std::to_string(i) + " " + shown(t) +
                       " is not a tensor of graph '" + into.name() + "'");
    if (t.spec() != op.input(i).spec())
      throw ShapeError(what + ": input " + std::to_string(i) + " " + shown(t) + " replaces " +
                       shown(op.input(i)) + " of another shape or dtype");
    ids.push_back(IrView::id(t));
  }
  for (const Graph& called : op.called_graphs())
    if (called == into)
      throw GraphError(what + ": the graph would call itself");
  return v.op(detail::edit::clone_op(*ir_, IrView::id(op), IrView::id(into), ids));
}

Tensor IrRewriter::copy_tensor(const Tensor& t, const std::optional<Op>& before) {
  const IrView v = view();
  if (!t.valid() || !v.owns(t))
    throw GraphError("IrRewriter::copy_tensor: " + shown(t) + " must belong to the rewriter's Ir");
  std::optional<OpId> at;
  if (before) {
    const auto& sched = v.ops(IrView::id(t.graph()));
    if (!v.owns(*before) ||
        std::find(sched.begin(), sched.end(), IrView::id(*before)) == sched.end())
      throw GraphError("IrRewriter::copy_tensor: " + before->debug_name() +
                       " is not scheduled in graph '" + t.graph().name() + "' of " + shown(t));
    at = IrView::id(*before);
  }
  return v.tensor(detail::edit::copy_tensor(*ir_, IrView::id(t), at));
}

std::size_t IrRewriter::replace_uses(const Tensor& from, const Tensor& to) {
  const IrView v = view();
  if (!from.valid() || !to.valid() || !v.owns(from) || !v.owns(to))
    throw GraphError("IrRewriter::replace_uses: " + shown(from) + " and " + shown(to) +
                     " must both belong to the rewriter's Ir");
  if (from.graph() != to.graph())
    throw GraphError("IrRewriter::replace_uses: " + shown(from) + " is in graph '" +
                     from.graph().name() + "' but " + shown(to) + " is in graph '" +
                     to.graph().name() + "'");
  if (from.spec() != to.spec())
    throw ShapeError("IrRewriter::replace_uses: " + shown(to) + " cannot stand for " + shown(from) +
                     ": their shapes or dtypes differ");
  return detail::edit::replace_uses(*ir_, IrView::id(from), IrView::id(to));
}

std::vector<Tensor> IrRewriter::inline_call(const Op& call) {
  const IrView v = view();
  if (!v.owns(call))
    throw GraphError("IrRewriter::inline_call: the op belongs to another Ir");
  if (call.kind() != OpKind::Call)
    throw GraphError("IrRewriter::inline_call: " + call.debug_name() +
                     " is not a Call op (a Loop's iterations cannot be inlined)");
  const auto& sched = v.ops(v.graph(IrView::id(call)));
  if (std::find(sched.begin(), sched.end(), IrView::id(call)) == sched.end())
    throw GraphError("IrRewriter::inline_call: " + call.debug_name() +
                     " is no longer scheduled in graph '" + call.graph().name() +
                     "' (was it inlined already?)");
  std::vector<Tensor> r;
  for (const TensorId id : detail::edit::inline_call(*ir_, IrView::id(call)))
    r.push_back(v.tensor(id));
  return r;
}

void IrRewriter::reserve_tensors(std::size_t more) { detail::edit::reserve_tensors(*ir_, more); }

void IrRewriter::mark_differentiated(const Graph& graph) {
  if (!view().owns(graph))
    throw GraphError("IrRewriter::mark_differentiated: graph '" + graph.name() +
                     "' belongs to another Ir");
  detail::edit::mark_differentiated(*ir_, IrView::id(graph));
}

} // namespace pxl::transforms
