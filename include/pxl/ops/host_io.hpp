// Host IO ops: host_load reads a stream's next element, host_store writes one, print_tensor
// prints a tensor on the host.
#pragma once

#include "pxl/ir/stream.hpp"
#include "pxl/ir/tensor.hpp"

namespace pxl::ops {

/// The next element of `stream`, as a tensor of the current graph.
Tensor host_load(const HostToDeviceStream& stream, std::string name = "");
/// Sends `t` as the next element of `stream`; shape and dtype must match the stream's.
void host_store(const DeviceToHostStream& stream, const Tensor& t);
/// PopXL's print_tensor: returns a copy of `t` and, each time the op runs, prints
/// "<title>: <t>" (NumPy-style, summarised when large) as one line on standard output, in the
/// order the ops run (each replica's line says which replica it is). With `print_gradient`,
/// autodiff prints the gradient the same way, titled "grad <title>". The title defaults to
/// the tensor's id.
Tensor print_tensor(const Tensor& t, std::string title = "", bool print_gradient = false);

} // namespace pxl::ops
