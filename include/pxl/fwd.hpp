// Forward declarations of pxl's public types.
#pragma once

namespace pxl {
class HostTensor;
struct TensorSpec;
class Tensor;
class Graph;
class Op;
class Ir;
class HostToDeviceStream;
class DeviceToHostStream;
class CallSiteInfo;
class Session;
namespace detail {
struct IrStorage;
}
} // namespace pxl
