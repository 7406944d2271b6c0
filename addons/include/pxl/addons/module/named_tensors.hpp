// pxl::addons::NamedTensors and NamedTensorData: dotted-name trees of tensors and host data.
#pragma once

#include "pxl/addons/module/dot_tree.hpp"
#include "pxl/core/host_tensor.hpp"
#include "pxl/ir/tensor.hpp"

namespace pxl::addons {

/// Named tensors of a graph (a module's variables or named graph inputs). Besides DotTree's
/// interface: `tensors()` (values sorted by tensor name) and `named_tensors()` (flat map).
using NamedTensors = DotTree<Tensor>;

/// Host data under the same names (checkpoints: to_dict / from_dict with
/// `std::map<std::string, HostTensor>`).
using NamedTensorData = DotTree<HostTensor>;

/// The host data of every tensor of `tensors`, by name, from `data` (e.g. what
/// `Session::get_tensors_data` returns); ValueError if a tensor has no data.
NamedTensorData named_data(const NamedTensors& tensors, const std::map<Tensor, HostTensor>& data);

} // namespace pxl::addons
