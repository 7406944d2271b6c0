// The trace state behind Module: variables collected per create_graph, sub-module prefixes.
#include "pxl/addons/module/module.hpp"
#include "pxl/addons/module/training_mode.hpp"
#include "pxl/ir/replica_sharding.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace pxl::addons {

namespace impl {

namespace {
thread_local std::vector<BuildFrame> frames;

BuildFrame& current_frame(std::string_view what) {
  if (frames.empty())
    throw GraphError(std::string(what) +
                     ": no module is being traced (call it inside a Module's build, through "
                     "create_graph)");
  return frames.back();
}

std::string full_name(const BuildFrame& f, std::string_view name) {
  return f.prefix.empty() ? std::string(name) : f.prefix + "." + std::string(name);
}
} // namespace

BuildScope::BuildScope() { frames.emplace_back(); }
BuildScope::~BuildScope() { frames.pop_back(); }
BuildFrame BuildScope::take() { return std::move(frames.back()); }

SubmoduleScope::SubmoduleScope(const std::string& name) {
  if (name.empty())
    return;
  const auto parts = split_key(name, "sub-module name");
  for (const auto& part : parts)
    name_scopes_.emplace_back(part);
  if (!frames.empty()) {
    active_ = true;
    saved_prefix_ = frames.back().prefix;
    frames.back().prefix = full_name(frames.back(), name);
  }
}

SubmoduleScope::~SubmoduleScope() {
  if (active_ && !frames.empty())
    frames.back().prefix = saved_prefix_;
  // Name scopes are a stack: close the innermost first.
  while (!name_scopes_.empty())
    name_scopes_.pop_back();
}

std::string short_type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  std::string full = status == 0 && demangled ? demangled.get() : type.name();
  // Cut at the last "::" outside template arguments and parentheses.
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '<' || c == '(')
      ++depth;
    else if (c == '>' || c == ')')
      --depth;
    else if (depth == 0 && c == ':' && i + 1 < full.size() && full[i + 1] == ':')
      start = i + 2;
  }
  return full.substr(start);
}

} // namespace impl

namespace {
/// The graph input for `factory` under `name` (add_variable_input and the sharded variant).
Tensor add_factory_input(std::string_view what, std::string_view name, VariableFactory factory) {
  auto& frame = impl::current_frame(std::string(what) + "('" + std::string(name) + "')");
  auto parts = impl::split_key(name, what);
  const std::string key = impl::full_name(frame, name);
  if (frame.factories.contains(key))
    throw ValueError(std::string(what) + ": a variable named '" + key +
                     "' was already added in this module");
  // A dotted name ("fc2.weight") names the tensor like an inlined sub-module would: fc2/weight.
  std::vector<NameScope> scopes;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i)
    scopes.emplace_back(parts[i]);
  Tensor t =
      factory.shard_over > 1
          ? replica_sharded_graph_input(factory.meta_spec(), {.shard_over = factory.shard_over},
                                        parts.back(), factory.by_ref)
          : graph_input(factory.spec(), parts.back(), factory.by_ref);
  while (!scopes.empty())
    scopes.pop_back();
  factory.ipu = t.ipu();
  frame.factories.insert(key, std::move(factory));
  frame.args.insert(key, t);
  return t;
}
} // namespace

Tensor add_variable_input(std::string_view name, init::Initializer initializer, DType dtype,
                          bool by_ref) {
  return add_factory_input("add_variable_input", name,
                           VariableFactory{std::move(initializer), dtype, by_ref});
}

Tensor add_state_variable_input(std::string_view name, init::Initializer initializer, DType dtype) {
  return add_factory_input("add_state_variable_input", name,
                           VariableFactory{.initializer = std::move(initializer),
                                           .dtype = dtype,
                                           .by_ref = true,
                                           .trainable = false});
}

Tensor add_replica_sharded_variable_input(std::string_view name, init::Initializer initializer,
                                          std::int64_t shard_over, DType dtype, bool by_ref) {
  if (shard_over < 1)
    throw ValueError("add_replica_sharded_variable_input: '" + std::string(name) +
                     "' needs shard_over of at least 1, got " + std::to_string(shard_over));
  return add_factory_input("add_replica_sharded_variable_input", name,
                           VariableFactory{std::move(initializer), dtype, by_ref, shard_over});
}

NamedTensors add_variable_inputs(std::string_view name, const NamedVariableFactories& factories,
                                 bool reuse_existing) {
  auto& frame = impl::current_frame("add_variable_inputs('" + std::string(name) + "')");
  impl::split_key(name, "add_variable_inputs");
  NamedTensors r;
  const std::string prefix(name);
  for (const auto& [key, f] : factories.items()) {
    const std::string full = impl::full_name(frame, prefix + "." + key);
    if (reuse_existing && frame.args.is_leaf(full) && frame.factories.at(full).spec() == f.spec()) {
      r.insert(key, frame.args.at(full));
      continue;
    }
    r.insert(key, add_factory_input("add_variable_inputs", prefix + "." + key, f));
  }
  return r;
}

namespace {
thread_local std::optional<bool> current_training_mode;
} // namespace

TrainingMode::TrainingMode(bool training) : saved_(current_training_mode) {
  current_training_mode = training;
}
TrainingMode::~TrainingMode() { current_training_mode = saved_; }

std::optional<bool> training_mode() { return current_training_mode; }

} // namespace pxl::addons
