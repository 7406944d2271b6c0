// IrView: reads straight from the arena, returning references and spans into its nodes.
#include "pxl/ir/view.hpp"
#include "ir/handle_access.hpp"

namespace pxl {

using detail::HandleAccess;

IrView::IrView(const Ir& ir) : ir_(HandleAccess::storage(ir)) { PXL_ASSERT(ir_ != nullptr); }

std::size_t IrView::num_graphs() const { return ir_->graphs.size(); }
std::size_t IrView::num_tensors() const { return ir_->tensors.size(); }
std::size_t IrView::num_ops() const { return ir_->ops.size(); }
std::size_t IrView::num_streams() const { return ir_->streams.size(); }
std::size_t IrView::num_remote_buffers() const { return ir_->remote_buffers.size(); }
std::int64_t IrView::num_host_transfers() const { return ir_->num_host_transfers; }
std::int64_t IrView::replication_factor() const { return ir_->replication_factor; }

const std::string& IrView::name(GraphId g) const { return ir_->graph(g).name; }
std::span<const OpId> IrView::ops(GraphId g) const { return ir_->graph(g).ops; }
std::span<const TensorId> IrView::inputs(GraphId g) const { return ir_->graph(g).inputs; }
std::span<const TensorId> IrView::outputs(GraphId g) const { return ir_->graph(g).outputs; }
bool IrView::input_is_by_ref(GraphId g, std::size_t i) const {
  return ir_->graph(g).input_by_ref[i];
}
bool IrView::input_is_written(GraphId g, std::size_t i) const {
  const TensorId target = ir_->graph(g).inputs[i];
  for (const OpId o : ir_->graph(g).ops) {
    const auto ins = inputs(o);
    for (std::size_t k = 0; k < ins.size(); ++k)
      if (alias_root(ins[k]) == target && op_writes_input(o, k))
        return true;
  }
  return false;
}
std::span<const TensorId> IrView::tensors(GraphId g) const { return ir_->graph(g).tensors; }
std::span<const OpId> IrView::call_sites(GraphId g) const { return ir_->graph(g).call_sites; }
bool IrView::is_differentiated(GraphId g) const {
  for (auto d : ir_->differentiated)
    if (d == g)
      return true;
  return false;
}

OpKind IrView::kind(OpId o) const { return ir_->op(o).kind; }
const std::string& IrView::name(OpId o) const { return ir_->op(o).name; }
GraphId IrView::graph(OpId o) const { return ir_->op(o).graph; }
std::span<const TensorId> IrView::inputs(OpId o) const { return ir_->op(o).inputs; }
std::span<const TensorId> IrView::outputs(OpId o) const { return ir_->op(o).outputs; }
const OpAttrs& IrView::attrs(OpId o) const { return ir_->op(o).attrs; }
std::int64_t IrView::ipu(OpId o) const { return ir_->op(o).ipu; }
TileSet IrView::tile_set(OpId o) const { return ir_->op(o).tile_set; }
std::optional<std::int64_t> IrView::pipeline_stage(OpId o) const {
  return ir_->op(o).pipeline_stage;
}
std::optional<std::uint32_t> IrView::exchange_group(OpId o) const {
  return ir_->op(o).exchange_group;
}
std::span<const OpId> IrView::after(OpId o) const { return ir_->op(o).after; }
std::optional<GraphId> IrView::called_graph(OpId o) const {
  if (const auto* c = std::get_if<CallAttrs>(&ir_->op(o).attrs))
    return GraphId{c->graph};
  return std::nullopt;
}
namespace {
Callees callees_of(const OpAttrs& a) {
  if (const auto* c = std::get_if<CallAttrs>(&a))
    return Callees(Callee{GraphId{c->graph}, 0});
  if (const auto* c = std::get_if<ConditionalAttrs>(&a))
    return Callees(Callee{GraphId{c->then_graph}, 1},
                   Callee{GraphId{c->else_graph}, 1 + std::size_t{c->then_inputs}});
  return {};
}
} // namespace
Callees IrView::callees(OpId o) const { return callees_of(ir_->op(o).attrs); }
bool IrView::op_writes_input(OpId o, std::size_t k) const {
  return would_write_input(kind(o), ir_->op(o).attrs, k);
}
bool IrView::would_write_input(OpKind op_kind, const OpAttrs& attrs, std::size_t k) const {
  if (k == 0 && is_inplace(op_kind))
    return true;
  for (const Callee& c : callees_of(attrs)) {
    const auto n = ir_->graph(c.graph).inputs.size();
    if (k >= c.first_input && k - c.first_input < n &&
        input_is_by_ref(c.graph, k - c.first_input) && input_is_written(c.graph, k - c.first_input))
      return true;
  }
  return false;
}

TensorId IrView::alias_root(TensorId t) const {
  for (auto p = producer(t); p && is_inplace(kind(*p)) && !inputs(*p).empty(); p = producer(t))
    t = inputs(*p)[0];
  return t;
}
const TensorSpec& IrView::spec(TensorId t) const { return ir_->tensor(t).spec; }
TensorKind IrView::kind(TensorId t) const { return ir_->tensor(t).kind; }
const std::string& IrView::id(TensorId t) const { return ir_->tensor(t).id; }
const std::string& IrView::name(TensorId t) const { return ir_->tensor(t).name; }
GraphId IrView::graph(TensorId t) const { return ir_->tensor(t).graph; }
std::int64_t IrView::ipu(TensorId t) const { return ir_->tensor(t).ipu; }
TileSet IrView::tile_set(TensorId t) const { return ir_->tensor(t).tile_set; }
std::optional<OpId> IrView::producer(TensorId t) const { return ir_->tensor(t).producer; }
const HostTensor* IrView::data(TensorId t) const {
  const auto& d = ir_->tensor(t).data;
  return d ? &*d : nullptr;
}
const VariableGrouping* IrView::grouping(TensorId t) const {
  const auto& g = ir_->tensor(t).grouping;
  return g ? &*g : nullptr;
}
const ReplicaSharding* IrView::sharding(TensorId t) const {
  const auto& s = ir_->tensor(t).sharding;
  return s ? &*s : nullptr;
}

const std::string& IrView::name(RemoteBufferId b) const {
  return ir_->remote_buffers[b.value].name;
}
const TensorSpec& IrView::spec(RemoteBufferId b) const { return ir_->remote_buffers[b.value].spec; }
std::int64_t IrView::entries(RemoteBufferId b) const {
  return ir_->remote_buffers[b.value].entries;
}
const RemoteLocation* IrView::remote_location(TensorId t) const {
  const auto& r = ir_->tensor(t).remote;
  return r ? &*r : nullptr;
}
const std::string& IrView::name(StreamId s) const { return ir_->stream(s).name; }
const TensorSpec& IrView::spec(StreamId s) const { return ir_->stream(s).spec; }
bool IrView::host_to_device(StreamId s) const { return ir_->stream(s).host_to_device; }

bool IrView::owns(const Tensor& t) const { return HandleAccess::storage(t) == ir_; }
bool IrView::owns(const Op& o) const { return HandleAccess::storage(o) == ir_; }
bool IrView::owns(const Graph& g) const { return HandleAccess::storage(g) == ir_; }
bool IrView::owns(const HostToDeviceStream& s) const { return HandleAccess::storage(s) == ir_; }
bool IrView::owns(const DeviceToHostStream& s) const { return HandleAccess::storage(s) == ir_; }

// Handles carry a mutable arena pointer; changes made through them check the freeze.
Tensor IrView::tensor(TensorId t) const {
  return HandleAccess::tensor(const_cast<detail::IrStorage*>(ir_), t);
}
Op IrView::op(OpId o) const { return HandleAccess::op(const_cast<detail::IrStorage*>(ir_), o); }
Graph IrView::graph(GraphId g) const {
  return HandleAccess::graph(const_cast<detail::IrStorage*>(ir_), g);
}
HostToDeviceStream IrView::h2d_stream(StreamId s) const {
  PXL_ASSERT(host_to_device(s));
  return HandleAccess::h2d_stream(const_cast<detail::IrStorage*>(ir_), s);
}
DeviceToHostStream IrView::d2h_stream(StreamId s) const {
  PXL_ASSERT(!host_to_device(s));
  return HandleAccess::d2h_stream(const_cast<detail::IrStorage*>(ir_), s);
}

} // namespace pxl
