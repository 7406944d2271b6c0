// Host IO ops: host_load reads a stream's next element, host_store writes one.
#pragma once

#include "pxl/ir/stream.hpp"
#include "pxl/ir/tensor.hpp"

namespace pxl::ops {

/// The next element of `stream`, as a tensor of the current graph.
Tensor host_load(const HostToDeviceStream& stream, std::string name = "");
/// Sends `t` as the next element of `stream`; shape and dtype must match the stream's.
void host_store(const DeviceToHostStream& stream, const Tensor& t);

} // namespace pxl::ops
