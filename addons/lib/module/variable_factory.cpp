// Creating variables and buffers from factories.
#include "pxl/addons/module/variable_factory.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/remote_buffer.hpp"
#include "pxl/ir/replica_sharding.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ops/shape.hpp"

#include <functional>
#include <map>

namespace pxl::addons {

HostTensor VariableFactory::data(std::string_view full_name, std::uint64_t base_seed,
                                 std::uint64_t draw) const {
  return initializer(dtype, init::seed_for(base_seed, full_name, draw));
}

TensorSpec VariableFactory::spec() const {
  return shard_over > 1 ? replica_sharded_spec(meta_spec(), shard_over) : meta_spec();
}

std::ostream& operator<<(std::ostream& os, const VariableFactory& f) {
  os << pxl::to_string(f.initializer.shape) << " " << name(f.dtype) << " "
     << f.initializer.description;
  if (f.by_ref)
    os << " by_ref";
  if (f.shard_over > 1)
    os << " sharded over " << f.shard_over;
  if (!f.trainable)
    os << " non-trainable";
  return os;
}

namespace {
/// What init and init_remote share: one variable per factory, made by `make(name, data,
/// factory)` in the main graph, with init's names and draws.
template <typename Make>
NamedTensors create_variables(const NamedVariableFactories& factories, std::string_view prefix,
                              std::uint64_t seed, Make make) {
  if (!prefix.empty())
    impl::split_key(prefix, "NamedVariableFactories::init prefix");
  auto in_main = main_graph().scope();
  // The variables of each name the Ir holds: a per-Ir count kept by the Ir itself, so a
  // program draws the same values every run and each init draws values of its own.
  std::map<std::string, std::uint64_t, std::less<>> draws;
  for (const Tensor& v : main_graph().variables())
    ++draws[v.name()];
  NamedTensors vars;
  for (const auto& [key, factory] : factories.to_dict()) {
    const std::string name = prefix.empty() ? key : std::string(prefix) + "." + key;
    std::uint64_t& draw = draws[name];
    auto on = pxl::ipu(factory.ipu);
    vars.insert(key, make(name, factory.data(name, seed, draw++), factory));
  }
  // Keep the factories' (module) order in the tree; only creation followed sorted order.
  NamedTensors ordered;
  for (const auto& key : factories.keys_flat())
    ordered.insert(key, vars.at(key));
  return ordered;
}
} // namespace

NamedTensors NamedVariableFactories::init(std::string_view prefix, std::uint64_t seed) const {
  return create_variables(
      *this, prefix, seed, [](const std::string& name, HostTensor data, const VariableFactory& f) {
        if (f.shard_over > 1)
          return replica_sharded_variable(std::move(data), name, {.shard_over = f.shard_over});
        return variable(std::move(data), name);
      });
}

NamedTensors NamedVariableFactories::init_remote(std::string_view prefix,
                                                 std::uint64_t seed) const {
  return create_variables(
      *this, prefix, seed, [](const std::string& name, HostTensor data, const VariableFactory& f) {
        if (f.shard_over > 1) {
          const RemoteBuffer buffer = replica_sharded_buffer(f.initializer.shape, f.dtype,
                                                             {.shard_over = f.shard_over}, 1, name);
          return remote_replica_sharded_variable(std::move(data), buffer, 0, name);
        }
        const RemoteBuffer buffer = remote_buffer(f.initializer.shape, f.dtype, 1, name);
        return remote_variable(std::move(data), buffer, 0, name);
      });
}

namespace {
NamedTensors buffers(const NamedVariableFactories& f, InitType type) {
  NamedTensors r;
  for (const auto& [key, factory] : f.items()) {
    auto on = pxl::ipu(factory.ipu);
    r.insert(key, pxl::ops::init(factory.spec().shape, factory.dtype, key, type));
  }
  return r;
}
} // namespace

NamedTensors NamedVariableFactories::init_zero() const { return buffers(*this, InitType::zero); }
NamedTensors NamedVariableFactories::init_undef() const { return buffers(*this, InitType::undef); }

NamedVariableFactories NamedVariableFactories::trainable() const {
  NamedVariableFactories r;
  for (const auto& [key, factory] : items())
    if (factory.trainable)
      r.insert(key, factory);
  return r;
}

} // namespace pxl::addons
