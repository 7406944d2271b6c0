// Host streams: named, typed channels between host arrays and host_load / host_store ops.
#pragma once

#include "pxl/core/shape.hpp"
#include "pxl/fwd.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace pxl {

/// What both stream handles share: a small value `{ir, index}` naming a stream of an Ir.
class StreamHandle {
public:
  const std::string& name() const;
  const TensorSpec& spec() const;
  const Shape& shape() const { return spec().shape; }
  DType dtype() const { return spec().dtype; }
  std::uint32_t index() const { return index_; }
  /// False for a default-constructed handle.
  bool valid() const { return ir_ != nullptr; }

protected:
  StreamHandle() = default;
  StreamHandle(detail::IrStorage* ir, std::uint32_t index) : ir_(ir), index_(index) {}
  friend struct detail::HandleAccess;
  friend struct std::hash<HostToDeviceStream>;
  friend struct std::hash<DeviceToHostStream>;

  detail::IrStorage* ir_ = nullptr;
  std::uint32_t index_ = 0;
};

/// Feeds `host_load`; every execution of a host_load takes the stream's next element.
class HostToDeviceStream : public StreamHandle {
public:
  HostToDeviceStream() = default;
  friend bool operator==(const HostToDeviceStream& a, const HostToDeviceStream& b) {
    return a.ir_ == b.ir_ && a.index_ == b.index_;
  }
  friend auto operator<=>(const HostToDeviceStream& a, const HostToDeviceStream& b) {
    return std::pair(a.ir_, a.index_) <=> std::pair(b.ir_, b.index_);
  }

private:
  friend struct detail::HandleAccess;
  using StreamHandle::StreamHandle;
};

/// Filled by `host_store`; every execution of a host_store produces the stream's next element.
class DeviceToHostStream : public StreamHandle {
public:
  DeviceToHostStream() = default;
  friend bool operator==(const DeviceToHostStream& a, const DeviceToHostStream& b) {
    return a.ir_ == b.ir_ && a.index_ == b.index_;
  }
  friend auto operator<=>(const DeviceToHostStream& a, const DeviceToHostStream& b) {
    return std::pair(a.ir_, a.index_) <=> std::pair(b.ir_, b.index_);
  }

private:
  friend struct detail::HandleAccess;
  using StreamHandle::StreamHandle;
};

/// Creates a host-to-device stream in the Ir of the current graph.
HostToDeviceStream h2d_stream(Shape shape, DType dtype, std::string name = "");
/// Creates a device-to-host stream in the Ir of the current graph.
DeviceToHostStream d2h_stream(Shape shape, DType dtype, std::string name = "");

} // namespace pxl

template <>
struct std::hash<pxl::HostToDeviceStream> {
  std::size_t operator()(const pxl::HostToDeviceStream& s) const noexcept {
    return std::hash<const void*>{}(s.ir_) ^ s.index();
  }
};
template <>
struct std::hash<pxl::DeviceToHostStream> {
  std::size_t operator()(const pxl::DeviceToHostStream& s) const noexcept {
    return std::hash<const void*>{}(s.ir_) ^ s.index();
  }
};
