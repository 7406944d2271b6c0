// pxl::addons::GraphCache: reuse a module's graph when it is traced again with the same specs.
#pragma once

#include "pxl/addons/module/module.hpp"
#include "pxl/ir/scope.hpp"

#include <map>
#include <string>
#include <tuple>
#include <typeindex>

namespace pxl::addons {

/// Caches `module.create_graph(args...)` per (Ir, module object, argument specs): tracing the
/// same module object again with inputs of the same shapes and dtypes returns the graph made
/// the first time instead of a new copy (one graph, compiled once, called from many sites).
/// Arguments must all be Tensors/TensorSpecs or vectors of them. Entries refer to their Ir by
/// its id (Ir::id), so entries of another Ir never match.
class GraphCache {
public:
  template <typename M, typename... Args>
  std::pair<NamedVariableFactories, GraphWithNamedArgs> create_graph(M& module,
                                                                     const Args&... args) {
    static_assert((TraceInput<Args> && ...),
                  "GraphCache::create_graph: arguments must be Tensors, TensorSpecs or vectors of "
                  "them (their specs form the cache key)");
    // A graph is built for the IPU in scope (its inputs live there): part of the key.
    std::string specs = "ipu " + std::to_string(current_ipu()) + ";";
    (append_specs(specs, args), ...);
    Key key{current_graph().ir().id(), std::type_index(typeid(M)),
            static_cast<const void*>(&module), std::move(specs)};
    if (auto it = entries_.find(key); it != entries_.end()) {
      ++hits_;
      return it->second;
    }
    auto made = module.create_graph(args...);
    entries_.emplace(std::move(key), made);
    return made;
  }

  /// Number of graphs created through the cache.
  std::size_t size() const { return entries_.size(); }
  /// Number of calls answered from the cache.
  std::size_t hits() const { return hits_; }

private:
  using Key = std::tuple<std::uint64_t, std::type_index, const void*, std::string>;
  static void append_specs(std::string& s, const TensorSpec& spec) { s += to_string(spec) + ";"; }
  static void append_specs(std::string& s, const Tensor& t) { append_specs(s, t.spec()); }
  template <typename T>
  static void append_specs(std::string& s, const std::vector<T>& v) {
    s += "[";
    for (const auto& e : v)
      append_specs(s, e);
    s += "]";
  }

  std::map<Key, std::pair<NamedVariableFactories, GraphWithNamedArgs>> entries_;
  std::size_t hits_ = 0;
};

/// Outlines a call of sub-module `module` inside a build: traces its graph (through `cache`
/// when given, so several calls share one graph), adds its variables as inputs of the graph
/// being built under the module's name ("fc2.weight"), and calls the graph with them. Calling
/// one module object twice shares its variables. ValueError for an unnamed module.
template <typename M, typename... Ts>
requires(std::same_as<Ts, Tensor>&&...) std::vector<Tensor> call_module(GraphCache* cache,
                                                                        M& module,
                                                                        const Ts&... inputs) {
  if (module.name().empty())
    throw ValueError("call_module: the " + module.graph_name() +
                     " module has no name (declare it with PXL_SUBMODULE or call set_name)");
  auto [facts, graph] =
      cache ? cache->create_graph(module, inputs...) : module.create_graph(inputs...);
  auto vars = add_variable_inputs(module.name(), facts, /*reuse_existing=*/true);
  return graph.bind(vars).call({inputs...});
}
template <typename M, typename... Ts>
requires(std::same_as<Ts, Tensor>&&...) std::vector<Tensor> call_module(M& module,
                                                                        const Ts&... inputs) {
  return call_module(static_cast<GraphCache*>(nullptr), module, inputs...);
}
template <typename M, typename... Ts>
requires(std::same_as<Ts, Tensor>&&...) std::vector<Tensor> call_module(GraphCache& cache,
                                                                        M& module,
                                                                        const Ts&... inputs) {
  return call_module(&cache, module, inputs...);
}

} // namespace pxl::addons
