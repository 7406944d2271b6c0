// Remote buffers and remote variables in the Ir's arena.
#include "pxl/ir/remote_buffer.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"

namespace pxl {

using detail::HandleAccess;

namespace {
/// The node behind `b`, after the check every RemoteBuffer accessor makes (`call` names it).
const detail::RemoteBufferNode& remote_buffer_node(const RemoteBuffer& b, std::string_view call) {
  return HandleAccess::arena(b, call).remote_buffers[b.index()];
}
} // namespace

bool RemoteBuffer::valid() const { return HandleAccess::storage(*this) != nullptr; }
const std::string& RemoteBuffer::name() const {
  return remote_buffer_node(*this, "RemoteBuffer::name()").name;
}
const TensorSpec& RemoteBuffer::spec() const {
  return remote_buffer_node(*this, "RemoteBuffer::spec()").spec;
}
const Shape& RemoteBuffer::shape() const {
  return remote_buffer_node(*this, "RemoteBuffer::shape()").spec.shape;
}
DType RemoteBuffer::dtype() const {
  return remote_buffer_node(*this, "RemoteBuffer::dtype()").spec.dtype;
}
std::int64_t RemoteBuffer::entries() const {
  return remote_buffer_node(*this, "RemoteBuffer::entries()").entries;
}

RemoteBuffer remote_buffer(Shape shape, DType dtype, std::int64_t entries, std::string name) {
  auto& ir = *detail::require_graph("remote_buffer").ir;
  const RemoteBufferId index{static_cast<std::uint32_t>(ir.remote_buffers.size())};
  if (name.empty())
    name = "remote_buffer" + std::to_string(index.value);
  if (entries < 1)
    throw ValueError("remote_buffer: '" + name + "' needs at least one entry, got " +
                     std::to_string(entries));
  const std::int64_t bytes = nbytes(shape, dtype, "remote_buffer '" + name + "'");
  detail::check_device_dtype("remote_buffer", name, dtype, shape);
  std::int64_t total = 0;
  if (__builtin_mul_overflow(bytes, entries, &total))
    throw ValueError("remote_buffer: '" + name + "' of " + std::to_string(entries) +
                     " entries of " + std::to_string(bytes) + " bytes overflows 64 bits");
  detail::require_mutable(ir, "remote_buffer: adding remote buffer '" + name + "'");
  for (const auto& b : ir.remote_buffers)
    if (b.name == name)
      throw ValueError("remote_buffer: a remote buffer named '" + name + "' already exists");
  ir.remote_buffers.push_back({std::move(name), TensorSpec{std::move(shape), dtype}, entries});
  return HandleAccess::remote_buffer(&ir, index);
}

std::optional<RemoteEntry> remote_entry(const Tensor& t) {
  if (!t.valid())
    return std::nullopt;
  detail::IrStorage* ir = HandleAccess::storage(t);
  const auto& r = ir->tensor(IrView::id(t)).remote;
  if (!r)
    return std::nullopt;
  return RemoteEntry{HandleAccess::remote_buffer(ir, r->buffer), r->entry};
}

Tensor remote_variable(HostTensor data, const RemoteBuffer& buffer, std::int64_t entry,
                       std::string name, bool downcast) {
  const auto g = detail::require_graph("remote_variable");
  detail::require_usable(buffer, "remote_variable");
  if (HandleAccess::storage(buffer) != g.ir)
    throw GraphError("remote_variable: remote buffer '" + buffer.name() +
                     "' belongs to another Ir than the current graph's");
  if (name.empty())
    name = buffer.name() + "_" + std::to_string(entry);
  data = detail::downcast_for_device("remote_variable", name, std::move(data), downcast);
  if (data.shape() != buffer.shape())
    throw ShapeError("remote_variable: '" + name + "' has data of shape " +
                     to_string(data.shape()) + " but the entries of remote buffer '" +
                     buffer.name() + "' are " + to_string(buffer.spec()));
  if (data.dtype() != buffer.dtype())
    throw DTypeError("remote_variable: '" + name + "' has " + std::string(pxl::name(data.dtype())) +
                     " data but the entries of remote buffer '" + buffer.name() + "' are " +
                     to_string(buffer.spec()) + "; convert it with astype");
  if (entry < 0 || entry >= buffer.entries())
    throw ValueError("remote_variable: entry " + std::to_string(entry) + " of remote buffer '" +
                     buffer.name() + "' is out of range: it has " +
                     std::to_string(buffer.entries()) + " entries");
  const RemoteBufferId id = IrView::id(buffer);
  for (std::size_t i = 0; i < g.ir->tensors.size(); ++i)
    if (const auto& t = g.ir->tensors[i];
        t.remote && t.remote->buffer == id && t.remote->entry == entry)
      throw ValueError("remote_variable: entry " + std::to_string(entry) + " of remote buffer '" +
                       buffer.name() + "' already holds remote variable '" + t.id + "'");
  const Tensor t = variable(std::move(data), std::move(name));
  g.ir->tensor(IrView::id(t)).remote = RemoteLocation{id, entry};
  return t;
}

} // namespace pxl
