#include "pxl/addons/training/checkpoint.hpp"

#include "pxl/addons/safetensors.hpp"
#include "pxl/core/error.hpp"
#include "pxl/dist.hpp"

#include <vector>

namespace pxl::addons {

void save_checkpoint(Session& session, const NamedTensors& variables,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& metadata) {
  const auto named = variables.to_dict();
  std::vector<Tensor> tensors;
  for (const auto& [name, t] : named)
    tensors.push_back(t);
  const auto values = session.get_tensors_data(tensors); // collective when distributed
  if (dist::instance_index() == 0) {
    std::map<std::string, HostTensor> data;
    for (const auto& [name, t] : named)
      data.emplace(name, values.at(t));
    save_safetensors(path, data, metadata);
  }
  dist::barrier();
}

void load_checkpoint(Session& session, const NamedTensors& variables,
                     const std::filesystem::path& path) {
  const auto stored = load_safetensors(path);
  const auto named = variables.to_dict();
  std::string missing, unexpected;
  for (const auto& [name, t] : named)
    if (!stored.contains(name))
      missing += " '" + name + "'";
  for (const auto& [name, value] : stored)
    if (!named.contains(name))
      unexpected += " '" + name + "'";
  if (!missing.empty() || !unexpected.empty())
    throw ValueError(
        "load_checkpoint: " + path.string() + " does not hold the variables' names (missing:" +
        (missing.empty() ? std::string(" none") : missing) +
        "; unexpected:" + (unexpected.empty() ? std::string(" none") : unexpected) + ")");
  std::map<Tensor, HostTensor> data;
  for (const auto& [name, t] : named)
    data.emplace(t, stored.at(name));
  session.write_variables_data(data);
}

} // namespace pxl::addons
