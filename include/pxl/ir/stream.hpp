// Host streams: named, typed channels between host arrays and host_load / host_store ops.
#pragma once

#include "pxl/core/shape.hpp"
#include "pxl/fwd.hpp"
#include "pxl/ir/handle_ref.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace pxl {

/// What both stream handles share: a small value `{ir, index}` naming a stream of an Ir. Every
/// accessor but valid() and index() throws GraphError, naming itself, on an empty handle or one
/// whose Ir is gone (destroyed, and no Session keeps it).
class StreamHandle {
public:
  const std::string& name() const;
  const TensorSpec& spec() const;
  const Shape& shape() const;
  DType dtype() const;
  std::uint32_t index() const { return ref_.index; }
  /// False for an empty handle (default-constructed, or left so by a call that threw) and for
  /// one whose Ir is gone.
  bool valid() const;

protected:
  explicit StreamHandle(bool host_to_device, detail::HandleRef ref = {})
      : ref_(ref), host_to_device_(host_to_device) {}
  friend struct detail::HandleAccess;
  friend struct std::hash<HostToDeviceStream>;
  friend struct std::hash<DeviceToHostStream>;

  detail::HandleRef ref_;
  /// Which of the two kinds this is, for messages about an empty handle.
  bool host_to_device_ = true;
};

/// Feeds `host_load`; every execution of a host_load takes the stream's next element.
class HostToDeviceStream : public StreamHandle {
public:
  HostToDeviceStream() : StreamHandle(true) {}
  friend bool operator==(const HostToDeviceStream& a, const HostToDeviceStream& b) {
    return a.ref_ == b.ref_;
  }
  friend auto operator<=>(const HostToDeviceStream& a, const HostToDeviceStream& b) {
    return a.ref_ <=> b.ref_;
  }

private:
  friend struct detail::HandleAccess;
  explicit HostToDeviceStream(detail::HandleRef ref) : StreamHandle(true, ref) {}
};

/// Filled by `host_store`; every execution of a host_store produces the stream's next element.
class DeviceToHostStream : public StreamHandle {
public:
  DeviceToHostStream() : StreamHandle(false) {}
  friend bool operator==(const DeviceToHostStream& a, const DeviceToHostStream& b) {
    return a.ref_ == b.ref_;
  }
  friend auto operator<=>(const DeviceToHostStream& a, const DeviceToHostStream& b) {
    return a.ref_ <=> b.ref_;
  }

private:
  friend struct detail::HandleAccess;
  explicit DeviceToHostStream(detail::HandleRef ref) : StreamHandle(false, ref) {}
};

/// Creates a host-to-device stream in the Ir of the current graph.
HostToDeviceStream h2d_stream(Shape shape, DType dtype, std::string name = "");
/// Creates a device-to-host stream in the Ir of the current graph.
DeviceToHostStream d2h_stream(Shape shape, DType dtype, std::string name = "");

} // namespace pxl

template <>
struct std::hash<pxl::HostToDeviceStream> {
  std::size_t operator()(const pxl::HostToDeviceStream& s) const noexcept { return s.ref_.hash(); }
};
template <>
struct std::hash<pxl::DeviceToHostStream> {
  std::size_t operator()(const pxl::DeviceToHostStream& s) const noexcept { return s.ref_.hash(); }
};
