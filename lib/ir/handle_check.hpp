// The check every API taking an IR handle makes before reading through it: the handle must
// name an element of a live Ir. For code outside lib/ir (the emulator), which must not reach
// the arena itself.
#pragma once

#include "pxl/fwd.hpp"

#include <cstdint>
#include <string_view>

namespace pxl::detail {

enum class HandleKind : std::uint8_t { tensor, graph, op, h2d_stream, d2h_stream, remote_buffer };

/// GraphError: `call` was given a handle of `kind` that is empty (default-constructed, or left
/// so by a call that threw) or, if `empty` is false, whose Ir is gone.
[[noreturn]] void throw_unusable_handle(HandleKind kind, bool empty, std::string_view call);

/// GraphError naming `call` and the handle's kind unless the handle names an element of a live
/// Ir (see throw_unusable_handle).
void require_usable(const Tensor& t, std::string_view call);
void require_usable(const Graph& g, std::string_view call);
void require_usable(const Op& o, std::string_view call);
void require_usable(const HostToDeviceStream& s, std::string_view call);
void require_usable(const DeviceToHostStream& s, std::string_view call);
void require_usable(const RemoteBuffer& b, std::string_view call);

} // namespace pxl::detail
