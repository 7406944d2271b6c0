// Host data for named tensors.
#include "pxl/addons/module/named_tensors.hpp"

namespace pxl::addons {

NamedTensorData named_data(const NamedTensors& tensors, const std::map<Tensor, HostTensor>& data) {
  NamedTensorData r;
  for (const auto& [key, t] : tensors.items()) {
    auto it = data.find(t);
    if (it == data.end())
      throw ValueError("named_data: no host data for '" + key + "' (tensor " + t.id() + ")");
    r.insert(key, it->second);
  }
  return r;
}

} // namespace pxl::addons
