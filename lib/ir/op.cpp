#include "pxl/ir/op.hpp"
#include "ir/handle_access.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/view.hpp"

namespace pxl {

using detail::HandleAccess;

namespace {
/// The node behind `o`, after the check every Op accessor makes (`call` names it).
const detail::OpNode& op_node(const Op& o, std::string_view call) {
  return HandleAccess::arena(o, call).op(IrView::id(o));
}
std::vector<Tensor> op_tensors(const Op& o, const std::vector<TensorId>& ids) {
  std::vector<Tensor> r;
  r.reserve(ids.size());
  for (auto i : ids)
    r.push_back(HandleAccess::tensor(HandleAccess::storage(o), i));
  return r;
}
} // namespace

bool Op::valid() const { return HandleAccess::storage(*this) != nullptr; }
OpKind Op::kind() const { return op_node(*this, "Op::kind()").kind; }
std::string Op::debug_name() const {
  return std::string(op_type_name(op_node(*this, "Op::debug_name()").kind)) + "." +
         std::to_string(index());
}
const std::string& Op::name() const { return op_node(*this, "Op::name()").name; }
Graph Op::graph() const {
  return HandleAccess::graph(HandleAccess::storage(*this), op_node(*this, "Op::graph()").graph);
}
std::vector<Tensor> Op::inputs() const {
  return op_tensors(*this, op_node(*this, "Op::inputs()").inputs);
}
std::vector<Tensor> Op::outputs() const {
  return op_tensors(*this, op_node(*this, "Op::outputs()").outputs);
}
Tensor Op::input(std::size_t i) const {
  const auto& node = op_node(*this, "Op::input()");
  PXL_ASSERT(i < node.inputs.size());
  return HandleAccess::tensor(HandleAccess::storage(*this), node.inputs[i]);
}
Tensor Op::output(std::size_t i) const {
  const auto& node = op_node(*this, "Op::output()");
  PXL_ASSERT(i < node.outputs.size());
  return HandleAccess::tensor(HandleAccess::storage(*this), node.outputs[i]);
}
std::size_t Op::num_inputs() const { return op_node(*this, "Op::num_inputs()").inputs.size(); }
std::size_t Op::num_outputs() const { return op_node(*this, "Op::num_outputs()").outputs.size(); }
const OpAttrs& Op::attrs() const { return op_node(*this, "Op::attrs()").attrs; }
std::int64_t Op::ipu() const { return op_node(*this, "Op::ipu()").ipu; }
TileSet Op::tile_set() const { return op_node(*this, "Op::tile_set()").tile_set; }
std::optional<std::int64_t> Op::pipeline_stage() const {
  return op_node(*this, "Op::pipeline_stage()").pipeline_stage;
}
std::vector<Op> Op::after() const {
  std::vector<Op> r;
  for (auto i : op_node(*this, "Op::after()").after)
    r.push_back(HandleAccess::op(HandleAccess::storage(*this), i));
  return r;
}
std::optional<Graph> Op::called_graph() const {
  if (const auto* c = std::get_if<CallAttrs>(&op_node(*this, "Op::called_graph()").attrs))
    return HandleAccess::graph(HandleAccess::storage(*this), GraphId{c->graph});
  return std::nullopt;
}
std::vector<Graph> Op::called_graphs() const {
  detail::IrStorage& ir = HandleAccess::arena(*this, "Op::called_graphs()");
  std::vector<Graph> r;
  for (const Callee& c : HandleAccess::view(&ir).callees(IrView::id(*this)))
    r.push_back(HandleAccess::graph(&ir, c.graph));
  return r;
}

} // namespace pxl
