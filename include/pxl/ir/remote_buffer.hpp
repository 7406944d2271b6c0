// Remote buffers: tables of tensors in Streaming Memory, the DRAM beside each IPU (PopXL's
// remote_buffer), read and written by ops::remote_load / remote_store, and remote variables
// stored in their entries.
#pragma once

#include "pxl/core/host_tensor.hpp"
#include "pxl/core/shape.hpp"
#include "pxl/fwd.hpp"
#include "pxl/ir/handle_ref.hpp"
#include "pxl/ir/tensor.hpp"

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace pxl {

/// A small value `{ir, index}` naming a remote buffer of an Ir: `entries` rows, each a tensor
/// of `spec()`. Every replica has its own copy of every buffer, in its Streaming Memory; the
/// device reaches an entry only through remote_load and remote_store, the host through the
/// remote variables stored in it. Every accessor but valid() and index() throws GraphError,
/// naming itself, on an empty handle or one whose Ir is gone (destroyed, and no Session keeps
/// it).
class RemoteBuffer {
public:
  RemoteBuffer() = default;
  const std::string& name() const;
  /// One entry's shape and dtype.
  const TensorSpec& spec() const;
  const Shape& shape() const;
  DType dtype() const;
  std::int64_t entries() const;
  std::uint32_t index() const { return ref_.index; }
  /// False for an empty handle (default-constructed, or left so by a call that threw) and for
  /// one whose Ir is gone.
  bool valid() const;
  friend auto operator<=>(const RemoteBuffer&, const RemoteBuffer&) = default;

private:
  friend struct detail::HandleAccess;
  explicit RemoteBuffer(detail::HandleRef ref) : ref_(ref) {}
  detail::HandleRef ref_;
};

/// Where a remote variable is stored.
struct RemoteEntry {
  RemoteBuffer buffer;
  std::int64_t entry = 0;
};
/// `t`'s buffer and entry when it is a remote variable, else nothing.
std::optional<RemoteEntry> remote_entry(const Tensor& t);

/// A buffer of `entries` tensors of `shape` and `dtype` in the Ir of the current graph
/// (PopXL's `remote_buffer`), zero until written. ValueError for fewer than one entry or a
/// name already taken; DTypeError for a 64-bit dtype, which the device does not hold.
RemoteBuffer remote_buffer(Shape shape, DType dtype, std::int64_t entries = 1,
                           std::string name = "");

/// A variable stored in entry `entry` of `buffer` instead of on the IPU (PopXL's
/// `remote_variable`; the current graph must be the main graph). The session writes `data`
/// there on every replica and reads it back like any variable (`get_tensor_data`,
/// `write_variable_data`, checkpoints); the device loads it with ops::remote_load(buffer,
/// entry) and stores it back with ops::remote_store. No op may read it directly (GraphError).
/// ShapeError / DTypeError when `data` does not match the buffer's entries, ValueError for an
/// entry out of range or already holding a remote variable, GraphError for a buffer of
/// another Ir. `downcast` as for pxl::variable, before `data` is checked against the buffer.
Tensor remote_variable(HostTensor data, const RemoteBuffer& buffer, std::int64_t entry = 0,
                       std::string name = "", bool downcast = true);

} // namespace pxl
