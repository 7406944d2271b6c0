// The arenas behind an Ir: graphs, tensors, ops and streams, addressed by strong ids. Private
// to lib/: everything else reads the IR through IrView and changes it through the op builders
// or IrRewriter.
#pragma once

#include "ir/stable_vector.hpp"
#include "pxl/core/host_tensor.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/op_kind.hpp"
#include "pxl/ir/replica_grouping.hpp"
#include "pxl/ir/replica_sharding.hpp"
#include "pxl/ir/view.hpp"

#include <atomic>
#include <concepts>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pxl::detail {

/// A raw arena position, for tables indexed by position (the emulator's).
using Index = std::uint32_t;

struct TensorNode {
  std::string id;   ///< fully scoped name, unique in the Ir (made so by unique_tensor_id)
  std::string name; ///< as the user or op builder gave it, unscoped; need not be unique
  TensorSpec spec;
  TensorKind kind = TensorKind::intermediate;
  GraphId graph{};
  std::optional<OpId> producer; ///< none for graph inputs, variables and constants
  std::int64_t ipu = 0;
  TileSet tile_set = TileSet::compute;
  std::optional<HostTensor> data; ///< initial value of variables and constants
  /// Variables with a replica grouping (data then holds one value per group when there are
  /// several: (num_groups, *spec.shape)).
  std::optional<VariableGrouping> grouping;
  /// A remote variable's entry: its value lives in Streaming Memory, not on the IPU.
  std::optional<RemoteLocation> remote;
  /// A replica-sharded tensor: `spec` is one shard; a variable's `data` is the whole value
  /// (one per group of `grouping` when it has several).
  std::optional<ReplicaSharding> sharding;
  /// A graph input made by graph_input_for: the main-graph variable that call sites in the
  /// main graph bind it to when they do not bind it themselves.
  std::optional<TensorId> bound_by_default;
};

struct OpNode {
  OpKind kind{};
  std::string name; ///< scoped debug name
  GraphId graph{};
  std::vector<TensorId> inputs, outputs;
  OpAttrs attrs;
  std::int64_t ipu = 0;
  TileSet tile_set = TileSet::compute;
  std::vector<OpId> after; ///< ops of the same graph this one must follow (in_sequence)
  /// The innermost `pipeline_stage(k)` scope's k when the op was created.
  std::optional<std::int64_t> pipeline_stage;
  /// A host or Streaming Memory transfer created in a merge_exchange scope: the scope's id,
  /// shared by the transfers it merges into one exchange.
  std::optional<std::uint32_t> exchange_group;
};

struct GraphNode {
  std::string name;
  std::vector<TensorId> inputs, outputs;
  std::vector<bool> input_by_ref;
  std::vector<OpId> ops;         ///< the schedule: a valid topological order
  std::vector<TensorId> tensors; ///< every tensor owned by the graph
  std::vector<OpId> call_sites;  ///< Call ops (not Repeat) running this graph, in creation order
};

struct RemoteBufferNode {
  std::string name;
  TensorSpec spec; ///< one entry
  std::int64_t entries = 1;
  /// Replica-sharded buffers: how the whole tensors are split, and the grouping of their
  /// values when there is one (given to the remote variables stored in them).
  std::optional<ReplicaSharding> sharding;
  std::optional<ReplicaGrouping> value_grouping;
};

struct StreamNode {
  std::string name;
  TensorSpec spec;
  bool host_to_device = true;
};

/// The suffixes `__t<n>` assign_tensor_id has tried for an id found taken.
struct IdSuffixes {
  std::uint32_t last = 0;  ///< the largest n tried
  bool base_freed = false; ///< whether rename_tensor_id has freed the id itself since
};

/// Where handles find their Ir's storage (see HandleRef). A storage takes a free slot when it
/// is made and gives it back when destroyed, the slot's generation one higher, so that handles
/// made before find it no longer theirs. Slots are reused, never freed: a handle whose Ir is
/// long gone still reads its slot safely. The cost is one load and compare at a handle's
/// accessor; a Session checks the handles it is given once, at its API, and its run loop reads
/// none.
struct IrSlot {
  std::atomic<IrStorage*> storage{nullptr};
  std::atomic<std::uint32_t> generation{0};
};

/// Sequences whose elements never move (StableVector, deques), not vectors: handles return
/// references into the nodes (shapes, names, attributes), and those must stay valid while
/// later ops are added.
struct IrStorage {
  IrStorage();
  ~IrStorage();
  IrStorage(const IrStorage&) = delete;
  IrStorage& operator=(const IrStorage&) = delete;

  IrSlot* slot;                 ///< this storage's, until it is destroyed
  std::uint32_t generation;     ///< the slot's generation while it holds this storage
  Ir* owner = nullptr;          ///< kept current when the Ir moves; null once it is destroyed
  std::deque<GraphNode> graphs; ///< graphs[0] is the main graph
  StableVector<TensorNode> tensors;
  StableVector<OpNode> ops;
  std::deque<StreamNode> streams;
  std::deque<RemoteBufferNode> remote_buffers;
  std::int64_t num_host_transfers = 1;
  std::int64_t replication_factor = 1;
  MatMulAttrs matmul_defaults;               ///< Ir::matmul_defaults
  std::uint64_t unique_id = 0;               ///< distinguishes Irs in messages and caches
  std::vector<std::string> graph_name_stems; ///< for uniquifying `Name_subgraph(n)`
  /// Every tensor's id, viewing the string in its node (stable in the deque): the set copies
  /// no strings. Ids change only through assign_tensor_id and rename_tensor_id.
  std::unordered_set<std::string_view> tensor_ids;
  /// By id asked for and found taken (assign_tensor_id): the suffixes `__t<n>` tried for it.
  std::unordered_map<std::string, IdSuffixes> id_suffixes;
  std::vector<GraphId> differentiated; ///< graphs autodiff has been applied to
  std::atomic<std::uint32_t> holds{0}; ///< live IrHolds; the Ir is frozen while > 0

  TensorNode& tensor(TensorId t) { return tensors[t.value]; }
  const TensorNode& tensor(TensorId t) const { return tensors[t.value]; }
  OpNode& op(OpId o) { return ops[o.value]; }
  const OpNode& op(OpId o) const { return ops[o.value]; }
  GraphNode& graph(GraphId g) { return graphs[g.value]; }
  const GraphNode& graph(GraphId g) const { return graphs[g.value]; }
  StreamNode& stream(StreamId s) { return streams[s.value]; }
  const StreamNode& stream(StreamId s) const { return streams[s.value]; }
};

/// Gives tensor `t`, already in the arena and without an id, the id `wanted` if no tensor of
/// `ir` has it yet, else `wanted__t<n>` (PopART's suffix) with the smallest n above those
/// already tried for `wanted` that is free; the id is then taken.
void assign_tensor_id(IrStorage& ir, TensorId t, std::string wanted);
/// The id a tensor named `name` in name scope `scope` (a prefix "a/b/") of graph `g` asks
/// for, in one allocation: scoped by its graph as PopXL's ids are, nothing in the main graph,
/// else the graph's name and a slash ("Linear_subgraph(0)/"), so that tensors of one name in
/// different graphs keep distinct, readable ids; then `scope` and `name`.
std::string scoped_tensor_id(const IrStorage& ir, GraphId g, std::string_view scope,
                             std::string_view name);
/// Gives tensor `t` the id assign_tensor_id would give it, freeing its old one.
void rename_tensor_id(IrStorage& ir, TensorId t, std::string wanted);

/// GraphError naming `what` (the change attempted) while an IrHold freezes `ir`.
void require_mutable(const IrStorage& ir, std::string_view what);
/// require_mutable with the change described by `what()`, called only to throw: for the
/// descriptions built on every op.
template <std::invocable Describe>
void require_mutable(const IrStorage& ir, Describe&& what) {
  if (ir.holds.load(std::memory_order_relaxed) > 0)
    require_mutable(ir, std::string_view(what()));
}

} // namespace pxl::detail
