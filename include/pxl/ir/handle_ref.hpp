// detail::HandleRef: what every IR handle (Tensor, Graph, Op, the streams, RemoteBuffer) holds.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace pxl::detail {

struct IrSlot;

/// Which Ir and which of its elements a handle names: a slot of the Ir, the generation the
/// slot had when the handle was made, and the element's position. Each Ir's storage takes a
/// slot when made and gives it back, one generation on, when destroyed; slots are reused but
/// never freed, so a handle can always ask its slot whether its Ir is still there (one load
/// and compare, at the handle's accessors, never in a Session's run loop). Null slot: an
/// empty handle.
struct HandleRef {
  IrSlot* slot = nullptr;
  std::uint32_t generation = 0;
  std::uint32_t index = 0;

  friend auto operator<=>(const HandleRef&, const HandleRef&) = default;
  std::size_t hash() const noexcept {
    return std::hash<const void*>{}(slot) ^
           ((std::size_t{generation} << 32 | index) * 0x9e3779b97f4a7c15ull);
  }
};

} // namespace pxl::detail
