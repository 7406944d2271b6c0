// Creating variables and buffers from factories.
#include "pxl/addons/variable_factory.hpp"

#include "pxl/ir/graph.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ops/shape.hpp"

namespace pxl::addons {

HostTensor VariableFactory::data(std::string_view full_name, std::uint64_t base_seed) const {
  return initializer(dtype, init::seed_for(base_seed, full_name));
}

std::ostream& operator<<(std::ostream& os, const VariableFactory& f) {
  os << pxl::to_string(f.initializer.shape) << " " << name(f.dtype) << " "
     << f.initializer.description;
  if (f.by_ref)
    os << " by_ref";
  return os;
}

NamedTensors NamedVariableFactories::init(std::string_view prefix, std::uint64_t seed) const {
  if (!prefix.empty())
    impl::split_key(prefix, "NamedVariableFactories::init prefix");
  auto in_main = main_graph().scope();
  NamedTensors vars;
  for (const auto& [key, factory] : to_dict()) {
    const std::string name = prefix.empty() ? key : std::string(prefix) + "." + key;
    vars.insert(key, variable(factory.data(name, seed), name));
  }
  // Keep the factories' (module) order in the tree; only creation followed sorted order.
  NamedTensors ordered;
  for (const auto& key : keys_flat())
    ordered.insert(key, vars.at(key));
  return ordered;
}

namespace {
NamedTensors buffers(const NamedVariableFactories& f, InitType type) {
  NamedTensors r;
  for (const auto& [key, factory] : f.items())
    r.insert(key, ops::init(factory.initializer.shape, factory.dtype, key, type));
  return r;
}
} // namespace

NamedTensors NamedVariableFactories::init_zero() const { return buffers(*this, InitType::zero); }
NamedTensors NamedVariableFactories::init_undef() const { return buffers(*this, InitType::undef); }

} // namespace pxl::addons
