#include "pxl/ir/op.hpp"
#include "ir/handle_access.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/view.hpp"

namespace pxl {

using detail::HandleAccess;

OpKind Op::kind() const { return ir_->ops[index_].kind; }
std::string Op::debug_name() const {
  return std::string(op_type_name(kind())) + "." + std::to_string(index_);
}
const std::string& Op::name() const { return ir_->ops[index_].name; }
Graph Op::graph() const { return HandleAccess::graph(ir_, ir_->ops[index_].graph); }
std::vector<Tensor> Op::inputs() const {
  std::vector<Tensor> r;
  for (auto i : ir_->ops[index_].inputs)
    r.push_back(HandleAccess::tensor(ir_, i));
  return r;
}
std::vector<Tensor> Op::outputs() const {
  std::vector<Tensor> r;
  for (auto i : ir_->ops[index_].outputs)
    r.push_back(HandleAccess::tensor(ir_, i));
  return r;
}
Tensor Op::input(std::size_t i) const {
  PXL_ASSERT(i < ir_->ops[index_].inputs.size());
  return HandleAccess::tensor(ir_, ir_->ops[index_].inputs[i]);
}
Tensor Op::output(std::size_t i) const {
  PXL_ASSERT(i < ir_->ops[index_].outputs.size());
  return HandleAccess::tensor(ir_, ir_->ops[index_].outputs[i]);
}
std::size_t Op::num_inputs() const { return ir_->ops[index_].inputs.size(); }
std::size_t Op::num_outputs() const { return ir_->ops[index_].outputs.size(); }
const OpAttrs& Op::attrs() const { return ir_->ops[index_].attrs; }
std::int64_t Op::ipu() const { return ir_->ops[index_].ipu; }
std::optional<std::int64_t> Op::pipeline_stage() const { return ir_->ops[index_].pipeline_stage; }
std::vector<Op> Op::after() const {
  std::vector<Op> r;
  for (auto i : ir_->ops[index_].after)
    r.push_back(HandleAccess::op(ir_, i));
  return r;
}
std::optional<Graph> Op::called_graph() const {
  if (const auto* c = std::get_if<CallAttrs>(&attrs()))
    return HandleAccess::graph(ir_, GraphId{c->graph});
  return std::nullopt;
}
std::vector<Graph> Op::called_graphs() const {
  std::vector<Graph> r;
  for (const Callee& c : HandleAccess::view(ir_).callees(IrView::id(*this)))
    r.push_back(HandleAccess::graph(ir_, c.graph));
  return r;
}

} // namespace pxl
