// host_load, host_store and print_tensor: the ops that move data between host and device.
#include "pxl/ops/host_io.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"

namespace pxl::ops {

namespace {
/// GraphError unless `stream` was created in the Ir of the current graph.
void check_stream_ir(std::string_view op, const StreamHandle& stream) {
  const auto g = detail::require_graph(op);
  if (!stream.valid())
    detail::HandleAccess::throw_unusable(stream, op);
  if (detail::HandleAccess::storage(stream) != g.ir)
    throw GraphError(std::string(op) + ": stream '" + stream.name() +
                     "' belongs to another Ir than the current graph '" +
                     g.ir->graph(g.graph).name + "'");
}
} // namespace

Tensor host_load(const HostToDeviceStream& stream, std::string name) {
  check_stream_ir("HostLoad", stream);
  if (name.empty())
    name = stream.name();
  return detail::add_op1(OpKind::HostLoad, std::span<const Tensor>{}, stream.spec(),
                         StreamAttrs{stream.index()}, name);
}

void host_store(const DeviceToHostStream& stream, const Tensor& t) {
  check_stream_ir("HostStore", stream);
  if (t.valid() && t.shape() != stream.shape())
    throw ShapeError("HostStore: stream '" + stream.name() + "' carries " +
                     to_string(stream.spec()) + " but the tensor stored is " + to_string(t));
  if (t.valid() && t.dtype() != stream.dtype())
    throw DTypeError("HostStore: stream '" + stream.name() + "' carries " +
                     to_string(stream.spec()) + " but the tensor stored is " + to_string(t));
  const Tensor in[] = {t};
  detail::add_op(OpKind::HostStore, in, {}, StreamAttrs{stream.index()});
}

Tensor print_tensor(const Tensor& t, std::string title, bool print_gradient) {
  detail::require_graph("PrintTensor");
  detail::require_usable(t, "PrintTensor: the tensor to print");
  if (title.empty())
    title = t.id();
  const Tensor in[] = {t};
  return detail::add_op1(OpKind::PrintTensor, in, t.spec(),
                         PrintAttrs{std::move(title), print_gradient});
}

} // namespace pxl::ops
