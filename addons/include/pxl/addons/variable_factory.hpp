// pxl::addons::VariableFactory and NamedVariableFactories: how to create a module's variables.
#pragma once

#include "pxl/addons/init.hpp"
#include "pxl/addons/named_tensors.hpp"

#include <cstdint>
#include <string>

namespace pxl::addons {

/// Everything needed to create one variable: its initialiser (shape + data recipe), dtype and
/// whether graphs take it by reference (their in-place updates reach the caller).
struct VariableFactory {
  init::Initializer initializer;
  DType dtype = float32;
  bool by_ref = false;

  TensorSpec spec() const { return {initializer.shape, dtype}; }
  /// The variable's data for a full dotted name: `initializer(dtype, seed_for(base_seed, name))`.
  HostTensor data(std::string_view full_name, std::uint64_t base_seed) const;
  /// Prints "(784, 512) float32 normal(mean=0, std=0.02)".
  friend std::ostream& operator<<(std::ostream& os, const VariableFactory& f);
};

/// The base seed `NamedVariableFactories::init` uses unless told otherwise.
inline constexpr std::uint64_t default_seed = 0x5eed;

/// A module's variable factories under their dotted names (what `Module::create_graph`
/// returns beside the graph).
class NamedVariableFactories : public DotTree<VariableFactory> {
public:
  using DotTree<VariableFactory>::DotTree;
  NamedVariableFactories(DotTree<VariableFactory> tree) : DotTree(std::move(tree)) {}

  /// Creates one main-graph variable per factory, named `prefix.key` (just `key` when the
  /// prefix is empty), in sorted key order so tensor numbering is deterministic. Its data is
  /// `factory.data("prefix.key", seed)`: the same names and seed give the same data; another
  /// prefix or seed gives other data. Needs a current graph (any graph of the Ir).
  NamedTensors init(std::string_view prefix = "", std::uint64_t seed = default_seed) const;
  /// Zero-filled tensors (`ops::init`) in the current graph, e.g. accumulators in a subgraph.
  NamedTensors init_zero() const;
  /// Tensors with unspecified contents in the current graph.
  NamedTensors init_undef() const;
};

} // namespace pxl::addons
