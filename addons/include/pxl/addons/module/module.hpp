// pxl::addons::Module: a class whose `build` traces into a graph with named variable inputs.
#pragma once

#include "pxl/addons/module/graph_with_named_args.hpp"
#include "pxl/addons/module/variable_factory.hpp"
#include "pxl/ir/ir.hpp"

#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

namespace pxl::addons {

// impl: what the templates here call out of line. Exported, since the templates are
// instantiated in users' code, but not API (`detail` namespaces are private to the binary).
namespace impl {

/// The variables one `create_graph` trace collects, on a thread-local stack (traces nest when
/// a build outlines a sub-module).
struct BuildFrame {
  NamedVariableFactories factories;
  NamedTensors args;
  /// Dotted prefix of the sub-module being inlined ("fc1", "layers.0").
  std::string prefix;
};

/// Pushes a fresh frame for the lifetime of a trace.
class [[nodiscard]] BuildScope {
public:
  BuildScope();
  BuildScope(const BuildScope&) = delete;
  BuildScope& operator=(const BuildScope&) = delete;
  ~BuildScope();
  /// The frame's factories and named inputs.
  BuildFrame take();
};

/// While alive, variables are named under `name` (dotted) and tensors and ops under the name
/// scopes of its components. Does nothing for an empty name.
class [[nodiscard]] SubmoduleScope {
public:
  explicit SubmoduleScope(const std::string& name);
  SubmoduleScope(const SubmoduleScope&) = delete;
  SubmoduleScope& operator=(const SubmoduleScope&) = delete;
  ~SubmoduleScope();

private:
  std::vector<NameScope> name_scopes_;
  std::string saved_prefix_;
  bool active_ = false;
};

/// The class name of a type, without namespaces or enclosing functions ("Linear").
std::string short_type_name(const std::type_info& type);

} // namespace impl

/// Adds a variable input to the graph being traced by `Module::create_graph` and records its
/// factory, both under `name` prefixed by the inlined sub-modules' names ("fc1.weight"). The
/// graph input is passed by reference when `by_ref`. GraphError outside a trace, ValueError for
/// a name already used in the trace.
Tensor add_variable_input(std::string_view name, init::Initializer initializer,
                          DType dtype = float32, bool by_ref = false);
/// As add_variable_input, replica-sharded over runs of `shard_over` consecutive replicas
/// (popxl.addons' add_replica_sharded_variable_input): the graph input is the 1-D shard
/// (replica_sharded_spec of the initializer's spec) and carries its replica_sharding, and
/// `init()` makes a replica_sharded_variable. ValueError for `shard_over` below 1.
Tensor add_replica_sharded_variable_input(std::string_view name, init::Initializer initializer,
                                          std::int64_t shard_over, DType dtype = float32,
                                          bool by_ref = false);
/// Adds a state variable input: by reference and not trainable (VariableFactory::trainable),
/// PyTorch's `register_buffer`, Keras's non-trainable weight. The module updates it in place
/// while training (`ops::var_updates::copy_var_update_`, when `is_training()`), as a batch
/// norm does its running statistics; Trainer saves it with the weights but neither
/// differentiates nor optimizes it. The errors of add_variable_input.
Tensor add_state_variable_input(std::string_view name, init::Initializer initializer,
                                DType dtype = float32);
/// Adds one variable input per factory, under `name` ("fc2.weight", "fc2.bias"), and returns
/// them keyed like `factories`: the outlining idiom (one graph, several parameter sets). With
/// `reuse_existing`, a variable already added under the same full name and spec is returned
/// instead of added again (one parameter set shared by several calls).
NamedTensors add_variable_inputs(std::string_view name, const NamedVariableFactories& factories,
                                 bool reuse_existing = false);

/// Name, renaming and the helpers every module has; see Module.
class ModuleBase {
public:
  ModuleBase() = default;
  ModuleBase(const ModuleBase&) = default;
  ModuleBase& operator=(const ModuleBase&) = default;
  virtual ~ModuleBase() = default;

  /// The member name this module has in its parent (dotted for list elements: "layers.0");
  /// empty for a top-level module.
  const std::string& name() const { return name_; }
  /// Renames (containers rename their elements too).
  virtual void set_name(std::string name) { name_ = std::move(name); }

protected:
  static Tensor add_variable_input(std::string_view name, init::Initializer initializer,
                                   DType dtype = float32, bool by_ref = false) {
    return addons::add_variable_input(name, std::move(initializer), dtype, by_ref);
  }
  static Tensor add_replica_sharded_variable_input(std::string_view name,
                                                   init::Initializer initializer,
                                                   std::int64_t shard_over, DType dtype = float32,
                                                   bool by_ref = false) {
    return addons::add_replica_sharded_variable_input(name, std::move(initializer), shard_over,
                                                      dtype, by_ref);
  }
  static Tensor add_state_variable_input(std::string_view name, init::Initializer initializer,
                                         DType dtype = float32) {
    return addons::add_state_variable_input(name, std::move(initializer), dtype);
  }
  static NamedTensors add_variable_inputs(std::string_view name,
                                          const NamedVariableFactories& factories,
                                          bool reuse_existing = false) {
    return addons::add_variable_inputs(name, factories, reuse_existing);
  }

private:
  std::string name_;
};

/// A model component (popxl.addons' Module). `Derived` implements `build(...)` taking any
/// number of Tensor (or std::vector<Tensor>, or plain value) arguments and returning a Tensor,
/// a std::vector<Tensor> or a tuple of Tensors; inside it, `add_variable_input` declares
/// parameters. Sub-modules are members declared with PXL_SUBMODULE, which names them after
/// the member:
///
///     struct Net : pxl::addons::Module<Net> {
///       PXL_SUBMODULE(Linear, fc1, 512);
///       PXL_SUBMODULE(Linear, fc2, 10);
///       pxl::Tensor build(pxl::Tensor x) { return fc2(pxl::ops::gelu(fc1(x))); }
///     };
///     auto [facts, fwd] = Net{}.create_graph(x);   // variables fc1.weight, ..., fc2.bias
///
/// Calling a sub-module (`fc1(x)`) inlines its ops under its name; outline one with
/// `call_module` or with its own `create_graph` + `add_variable_inputs` + `bind(...).call`.
/// (A CRTP base rather than a virtual `build`: build's signature is the module's own.)
template <typename Derived>
class Module : public ModuleBase {
public:
  /// Traces `build` into a new subgraph of the current graph's Ir, named
  /// "<class name>_subgraph(n)". Tensor/TensorSpec arguments (and vectors of them) become the
  /// positional graph inputs, in order; every add_variable_input becomes a named input after
  /// them. Returns the variables' factories and the graph with its named args.
  template <typename... Args>
  std::pair<NamedVariableFactories, GraphWithNamedArgs> create_graph(Args&&... args) {
    Ir& ir = current_graph().ir();
    impl::BuildScope trace;
    Graph g = ir.create_graph(
        graph_name(),
        [this](auto&&... ts) { return self().build(std::forward<decltype(ts)>(ts)...); },
        std::forward<Args>(args)...);
    auto frame = trace.take();
    return {std::move(frame.factories), GraphWithNamedArgs(g, std::move(frame.args))};
  }

  /// Inlines `build` in the current graph under this module's name (as a sub-module).
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    impl::SubmoduleScope scope(name());
    return self().build(std::forward<Args>(args)...);
  }

  /// The name graphs traced from this module get (before "_subgraph(n)").
  std::string graph_name() const { return impl::short_type_name(typeid(Derived)); }

private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

/// `Type(args...)` named `name`; what PXL_SUBMODULE expands to.
template <typename M, typename... Args>
M named_module(std::string name, Args&&... args) {
  M m(std::forward<Args>(args)...);
  m.set_name(std::move(name));
  return m;
}

} // namespace pxl::addons

/// Declares a sub-module member named after itself: `PXL_SUBMODULE(Linear, fc1, 512);` is
/// `Linear fc1 = Linear(512)` whose variables are named "fc1.*" when called in a build.
#define PXL_SUBMODULE(Type, member, ...)                                                           \
  Type member = ::pxl::addons::named_module<Type>(#member __VA_OPT__(, ) __VA_ARGS__)
