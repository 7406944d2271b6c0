// remote_load, remote_load_ and remote_store: the ops that move data between the IPU and its
// Streaming Memory; remote_code_load, which loads a graph's code from it.
#include "pxl/ops/remote.hpp"
#include "ir/handle_access.hpp"
#include "ir/handle_check.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"

#include <optional>
#include <vector>

namespace pxl::ops {

namespace {

/// The op's attributes after checking `buffer` (of the current graph's Ir) and the offset: a
/// constant in range, or an int32 scalar tensor (appended to `inputs`).
RemoteAttrs remote_attrs(std::string_view op, const RemoteBuffer& buffer,
                         std::optional<std::int64_t> fixed, const Tensor* offset,
                         std::vector<Tensor>& inputs) {
  const auto g = detail::require_graph(op);
  if (!buffer.valid())
    detail::HandleAccess::throw_unusable(buffer, op);
  if (detail::HandleAccess::storage(buffer) != g.ir)
    throw GraphError(std::string(op) + ": remote buffer '" + buffer.name() +
                     "' belongs to another Ir than the current graph '" +
                     g.ir->graph(g.graph).name + "'");
  RemoteAttrs a{IrView::id(buffer).value, 0, false};
  if (fixed) {
    if (*fixed < 0 || *fixed >= buffer.entries())
      throw ValueError(std::string(op) + ": offset " + std::to_string(*fixed) +
                       " is out of range for remote buffer '" + buffer.name() + "' of " +
                       std::to_string(buffer.entries()) + " entries");
    a.offset = *fixed;
    return a;
  }
  detail::require_usable(*offset, std::string(op) + ": the offset");
  if (offset->dtype() != int32)
    throw DTypeError(std::string(op) + ": the offset into remote buffer '" + buffer.name() +
                     "' must be an int32 scalar, got " + to_string(*offset));
  if (offset->rank() != 0)
    throw ShapeError(std::string(op) + ": the offset into remote buffer '" + buffer.name() +
                     "' must be an int32 scalar, got " + to_string(*offset));
  a.runtime_offset = true;
  inputs.push_back(*offset);
  return a;
}

void check_entry(std::string_view op, const RemoteBuffer& buffer, const Tensor& t) {
  detail::require_usable(t, op);
  if (t.shape() != buffer.shape())
    throw ShapeError(std::string(op) + ": the entries of remote buffer '" + buffer.name() +
                     "' are " + to_string(buffer.spec()) + " but the tensor is " + to_string(t));
  if (t.dtype() != buffer.dtype())
    throw DTypeError(std::string(op) + ": the entries of remote buffer '" + buffer.name() +
                     "' are " + to_string(buffer.spec()) + " but the tensor is " + to_string(t));
}

Tensor load(const RemoteBuffer& buffer, std::optional<std::int64_t> fixed, const Tensor* offset,
            std::string name) {
  std::vector<Tensor> inputs;
  const RemoteAttrs a = remote_attrs("RemoteLoad", buffer, fixed, offset, inputs);
  if (name.empty())
    name = buffer.name();
  const Tensor r = detail::add_op1(OpKind::RemoteLoad, inputs, buffer.spec(), a, name);
  // A shard of a replica-sharded buffer stays one: addons::rts gathers it by its sharding.
  detail::set_replica_sharding(r, replica_sharding(buffer));
  return r;
}

Tensor load_into(const RemoteBuffer& buffer, std::optional<std::int64_t> fixed,
                 const Tensor* offset, const Tensor& t) {
  std::vector<Tensor> inputs{t};
  const RemoteAttrs a = remote_attrs("RemoteLoadInplace", buffer, fixed, offset, inputs);
  check_entry("RemoteLoadInplace", buffer, t);
  return detail::add_op1(OpKind::RemoteLoadInplace, inputs, t.spec(), a, t.name());
}

void store(const RemoteBuffer& buffer, std::optional<std::int64_t> fixed, const Tensor* offset,
           const Tensor& t) {
  std::vector<Tensor> inputs{t};
  const RemoteAttrs a = remote_attrs("RemoteStore", buffer, fixed, offset, inputs);
  check_entry("RemoteStore", buffer, t);
  detail::add_op(OpKind::RemoteStore, inputs, {}, a);
}

} // namespace

Tensor remote_load(const RemoteBuffer& buffer, std::int64_t offset, std::string name) {
  return load(buffer, offset, nullptr, std::move(name));
}
Tensor remote_load(const RemoteBuffer& buffer, const Tensor& offset, std::string name) {
  return load(buffer, std::nullopt, &offset, std::move(name));
}
Tensor remote_load_(const RemoteBuffer& buffer, std::int64_t offset, const Tensor& t) {
  return load_into(buffer, offset, nullptr, t);
}
Tensor remote_load_(const RemoteBuffer& buffer, const Tensor& offset, const Tensor& t) {
  return load_into(buffer, std::nullopt, &offset, t);
}
void remote_store(const RemoteBuffer& buffer, std::int64_t offset, const Tensor& t) {
  store(buffer, offset, nullptr, t);
}
void remote_store(const RemoteBuffer& buffer, const Tensor& offset, const Tensor& t) {
  store(buffer, std::nullopt, &offset, t);
}

void remote_code_load(const Graph& graph, CodeLocation destination) {
  const std::string_view op = op_type_name(OpKind::RemoteCodeLoad);
  detail::require_usable(graph, std::string(op) + ": the graph");
  const auto g = detail::require_graph(op);
  if (detail::HandleAccess::storage(graph) != g.ir)
    throw GraphError(std::string(op) + ": graph '" + graph.name() +
                     "' belongs to another Ir than the current graph '" +
                     g.ir->graph(g.graph).name + "'");
  if (IrView::id(graph) == g.graph)
    throw ValueError(std::string(op) + ": cannot load the code of graph '" + graph.name() +
                     "', which it is in; load it from the graph that calls it");
  if (destination != CodeLocation::executable)
    throw ValueError(std::string(op) + ": destination '" +
                     (destination == CodeLocation::io_buffer ? "io_buffer" : "compute_buffer") +
                     "' for graph '" + graph.name() +
                     "' is not supported (as in PopXL); load it to 'executable'");
  detail::add_op(OpKind::RemoteCodeLoad, {}, {},
                 CodeLoadAttrs{IrView::id(graph).value, destination});
}

} // namespace pxl::ops
