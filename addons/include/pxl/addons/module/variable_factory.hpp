// pxl::addons::VariableFactory and NamedVariableFactories: how to create a module's variables.
#pragma once

#include "pxl/addons/module/init.hpp"
#include "pxl/addons/module/named_tensors.hpp"

#include <cstdint>
#include <string>

namespace pxl::addons {

/// Everything needed to create one variable: its initialiser (shape + data recipe), dtype,
/// whether graphs take it by reference (their in-place updates reach the caller) and whether it
/// is replica-sharded.
struct VariableFactory {
  init::Initializer initializer;
  DType dtype = float32;
  bool by_ref = false;
  /// Above 1: the variable is replica-sharded over runs of `shard_over` consecutive replicas
  /// (replica_sharded_variable with ShardingOptions::shard_over), so graphs take its 1-D
  /// shard and the session sees the whole value (popxl.addons' `shard_over`).
  std::int64_t shard_over = 1;
  /// The IPU the variable is created on: that of the scope its module was traced in
  /// (`ipu(n)`), so a module built for IPU n keeps its variables there.
  std::int64_t ipu = 0;
  /// Whether training updates it from its gradient. A state variable (a batch norm's running
  /// statistics: PyTorch's buffer, Keras's non-trainable weight) is not: the module updates it
  /// in place while training (add_state_variable_input), and Trainer neither differentiates
  /// nor optimizes it, yet saves and loads it with the weights.
  bool trainable = true;

  /// What graphs take: the whole tensor, or one shard of it.
  TensorSpec spec() const;
  /// The whole tensor (what the initializer makes and the session reads).
  TensorSpec meta_spec() const { return {initializer.shape, dtype}; }
  /// The data of the `draw`-th variable of a full dotted name:
  /// `initializer(dtype, seed_for(base_seed, name, draw))`.
  HostTensor data(std::string_view full_name, std::uint64_t base_seed,
                  std::uint64_t draw = 0) const;
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
  /// `factory.data("prefix.key", seed, draw)`, where draw counts the main-graph variables of
  /// that name already in the Ir: every init gives fresh values (two `init()`s of one Linear
  /// are two differently initialised layers), and the same program gives the same values
  /// every run. The first variable of a name (draw 0) depends on its name and `seed` only, so
  /// it is reproduced in another Ir by the same prefix and seed; another prefix or seed gives
  /// other data. Needs a current graph (any graph of the Ir).
  ///
  ///     auto a = facts.init();      // "weight": data("weight", default_seed, 0)
  ///     auto b = facts.init();      // "weight" again (id "weight__t1"): draw 1, other values
  ///     auto c = facts.init("", 7); // draw 2 of base seed 7
  NamedTensors init(std::string_view prefix = "", std::uint64_t seed = default_seed) const;
  /// A factory with `shard_over` above 1 makes a replica_sharded_variable (ValueError when
  /// `shard_over` does not divide the replication factor).
  ///
  /// As init, each variable stored in Streaming Memory instead: a remote buffer of one entry
  /// named as the variable, holding a remote_variable of the same data (a
  /// replica_sharded_buffer and remote_replica_sharded_variable for a sharded factory). Load
  /// them with addons::load_remote, store them back with addons::store_remote.
  NamedTensors init_remote(std::string_view prefix = "", std::uint64_t seed = default_seed) const;
  /// Zero-filled tensors (`ops::init`) of each factory's spec() in the current graph, e.g.
  /// accumulators in a subgraph.
  NamedTensors init_zero() const;
  /// Tensors with unspecified contents in the current graph.
  NamedTensors init_undef() const;
  /// The trainable factories (VariableFactory::trainable), under the same keys.
  NamedVariableFactories trainable() const;
};

} // namespace pxl::addons
