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
class RemoteBuffer;
class CallSiteInfo;
class Session;
class StreamHandle;
class IrView;
namespace detail {
struct IrStorage;
struct HandleAccess;
} // namespace detail
} // namespace pxl
