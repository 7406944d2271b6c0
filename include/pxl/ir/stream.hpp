// Host streams: named, typed channels between host arrays and host_load / host_store ops.
#pragma once

#include "pxl/core/shape.hpp"
#include "pxl/fwd.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace pxl {

namespace detail {
/// Shared part of both stream handles.
class StreamHandle {
public:
  StreamHandle() = default;
  StreamHandle(IrStorage* ir, std::uint32_t index) : ir_(ir), index_(index) {}
  const std::string& name() const;
  const TensorSpec& spec() const;
  const Shape& shape() const { return spec().shape; }
  DType dtype() const { return spec().dtype; }
  std::uint32_t index() const { return index_; }
  IrStorage* storage() const { return ir_; }

protected:
  IrStorage* ir_ = nullptr;
  std::uint32_t index_ = 0;
};
} // namespace detail

/// Feeds `host_load`; every execution of a host_load takes the stream's next element.
class HostToDeviceStream : public detail::StreamHandle {
public:
  using StreamHandle::StreamHandle;
  friend bool operator==(const HostToDeviceStream& a, const HostToDeviceStream& b) {
    return a.ir_ == b.ir_ && a.index_ == b.index_;
  }
  friend auto operator<=>(const HostToDeviceStream& a, const HostToDeviceStream& b) {
    return std::pair(a.ir_, a.index_) <=> std::pair(b.ir_, b.index_);
  }
};

/// Filled by `host_store`; every execution of a host_store produces the stream's next element.
class DeviceToHostStream : public detail::StreamHandle {
public:
  using StreamHandle::StreamHandle;
  friend bool operator==(const DeviceToHostStream& a, const DeviceToHostStream& b) {
    return a.ir_ == b.ir_ && a.index_ == b.index_;
  }
  friend auto operator<=>(const DeviceToHostStream& a, const DeviceToHostStream& b) {
    return std::pair(a.ir_, a.index_) <=> std::pair(b.ir_, b.index_);
  }
};

/// Creates a host-to-device stream in the Ir of the current graph.
HostToDeviceStream h2d_stream(Shape shape, DType dtype, std::string name = "");
/// Creates a device-to-host stream in the Ir of the current graph.
DeviceToHostStream d2h_stream(Shape shape, DType dtype, std::string name = "");

} // namespace pxl

template <>
struct std::hash<pxl::HostToDeviceStream> {
  std::size_t operator()(const pxl::HostToDeviceStream& s) const noexcept {
    return std::hash<const void*>{}(s.storage()) ^ s.index();
  }
};
template <>
struct std::hash<pxl::DeviceToHostStream> {
  std::size_t operator()(const pxl::DeviceToHostStream& s) const noexcept {
    return std::hash<const void*>{}(s.storage()) ^ s.index();
  }
};
