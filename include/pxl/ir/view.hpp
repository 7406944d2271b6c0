// pxl::IrView: a read-only, non-allocating view of an Ir, addressed by strong ids.
#pragma once

#include "pxl/core/host_tensor.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/op.hpp"
#include "pxl/ir/op_kind.hpp"
#include "pxl/ir/remote_buffer.hpp"
#include "pxl/ir/replica_grouping.hpp"
#include "pxl/ir/replica_sharding.hpp"
#include "pxl/ir/stream.hpp"
#include "pxl/ir/tensor.hpp"

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

namespace pxl {

/// Strong ids: the position of a tensor, op, graph or stream in its Ir. Ids of different
/// kinds do not convert into each other; `value` is the number print_schedule shows.
#define PXL_STRONG_ID(Name)                                                                        \
  struct Name {                                                                                    \
    std::uint32_t value = 0;                                                                       \
    friend constexpr auto operator<=>(Name, Name) = default;                                       \
  };
PXL_STRONG_ID(TensorId)
PXL_STRONG_ID(OpId)
PXL_STRONG_ID(GraphId)
PXL_STRONG_ID(StreamId)
PXL_STRONG_ID(RemoteBufferId)
#undef PXL_STRONG_ID

/// Where a remote variable lives: an entry of a remote buffer.
struct RemoteLocation {
  RemoteBufferId buffer;
  std::int64_t entry = 0;
};

/// What a tensor is: made by an op, an input of its graph, a variable or a constant.
enum class TensorKind : std::uint8_t { intermediate, graph_input, variable, constant };

/// A graph an op runs: op input `first_input + k` is bound to the graph's input k.
struct Callee {
  GraphId graph;
  std::size_t first_input = 0;
};

/// The graphs one op runs (at most two: a conditional's branches), iterable without allocating.
class Callees {
public:
  Callees() = default;
  explicit Callees(Callee only) : items_{only, Callee{}}, size_(1) {}
  Callees(Callee first, Callee second) : items_{first, second}, size_(2) {}
  const Callee* begin() const { return items_.data(); }
  const Callee* end() const { return items_.data() + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Callee& operator[](std::size_t i) const { return items_[i]; }

private:
  std::array<Callee, 2> items_{};
  std::size_t size_ = 0;
};

/// Reads an Ir without changing it and without allocating: every accessor returns a value, a
/// reference or a span into the Ir. The emulator, the schedule printer, autodiff and the test
/// reference evaluator read the IR through it. A view is as long-lived as the Ir's storage
/// (see Session for how a Session keeps it); ops added later are visible through it.
class IrView {
public:
  explicit IrView(const Ir& ir);

  std::size_t num_graphs() const;
  std::size_t num_tensors() const;
  std::size_t num_ops() const;
  std::size_t num_streams() const;
  std::size_t num_remote_buffers() const;
  static constexpr GraphId main_graph() { return GraphId{0}; }
  std::int64_t num_host_transfers() const;
  std::int64_t replication_factor() const;

  // Graphs.
  const std::string& name(GraphId g) const;
  /// Ops in schedule order: a valid topological order (creation order, except where
  /// IrRewriter::inline_call put a callee's ops in place of the call).
  std::span<const OpId> ops(GraphId g) const;
  std::span<const TensorId> inputs(GraphId g) const;
  std::span<const TensorId> outputs(GraphId g) const;
  /// Whether input `i` of `g` is passed by reference (its modifications reach the caller).
  bool input_is_by_ref(GraphId g, std::size_t i) const;
  /// Whether the ops of `g` may modify input `i`'s buffer: in place, or through a by-ref input
  /// of a call, repeat or conditional whose graph writes it (a by-value input written in place
  /// changes only the callee's copy; a by-ref one reaches the caller). Cost: the ops of `g` and of
  /// the graphs it calls.
  bool input_is_written(GraphId g, std::size_t i) const;
  /// Every tensor owned by `g`, in creation order.
  std::span<const TensorId> tensors(GraphId g) const;
  /// The Call ops running `g` (Repeat ops are not call sites), in creation order.
  std::span<const OpId> call_sites(GraphId g) const;
  /// Whether autodiff has been applied to `g` (it gained activation outputs then).
  bool is_differentiated(GraphId g) const;

  // Ops.
  OpKind kind(OpId o) const;
  /// Scoped name given at creation ("fc1/MatMul").
  const std::string& name(OpId o) const;
  GraphId graph(OpId o) const;
  std::span<const TensorId> inputs(OpId o) const;
  std::span<const TensorId> outputs(OpId o) const;
  const OpAttrs& attrs(OpId o) const;
  /// Typed attributes; the op must carry `A` (an internal error otherwise).
  template <typename A>
  const A& attrs_as(OpId o) const {
    const auto* a = std::get_if<A>(&attrs(o));
    PXL_ASSERT(a != nullptr);
    return *a;
  }
  std::int64_t ipu(OpId o) const;
  TileSet tile_set(OpId o) const;
  /// The `pipeline_stage(k)` scope `o` was created in, if any.
  std::optional<std::int64_t> pipeline_stage(OpId o) const;
  /// For a host or Streaming Memory transfer created in a transforms::merge_exchange scope:
  /// the scope's id, the same for every transfer it merges.
  std::optional<std::uint32_t> exchange_group(OpId o) const;
  /// Ops of the same graph that must run before `o` though no data links them.
  std::span<const OpId> after(OpId o) const;
  /// The graph run by a call or repeat (not a conditional: see callees).
  std::optional<GraphId> called_graph(OpId o) const;
  /// Every graph `o` runs: its callee for call and repeat, the then- and else-branch (in that
  /// order) for a conditional, none for other ops.
  Callees callees(OpId o) const;
  /// Whether running `o` may change the buffer of its input `k`: it is input 0 of an in-place
  /// op, or bound to a by-ref input of a graph `o` runs, which writes it.
  bool op_writes_input(OpId o, std::size_t k) const;
  /// As op_writes_input, for an op of kind `op_kind` with `attrs` that is not built yet.
  bool would_write_input(OpKind op_kind, const OpAttrs& attrs, std::size_t k) const;

  // Tensors.
  const TensorSpec& spec(TensorId t) const;
  TensorKind kind(TensorId t) const;
  /// Fully scoped name, unique in the Ir.
  const std::string& id(TensorId t) const;
  /// Name without its scope.
  const std::string& name(TensorId t) const;
  GraphId graph(TensorId t) const;
  std::int64_t ipu(TensorId t) const;
  TileSet tile_set(TensorId t) const;
  /// The op writing `t`; none for graph inputs, variables and constants.
  std::optional<OpId> producer(TensorId t) const;
  /// The tensor whose buffer `t` is: `t` itself, unless an in-place op made it (its output 0
  /// is its input 0, modified), then the alias root of that op's input 0.
  TensorId alias_root(TensorId t) const;
  /// Initial value of a variable or constant (null for other tensors); for a variable with a
  /// replica grouping of several groups, one value per group: (num_groups, *spec(t).shape),
  /// with a replica-sharded variable's meta shape in place of spec(t).shape.
  const HostTensor* data(TensorId t) const;
  /// The replica grouping of a variable created with one (null otherwise).
  const VariableGrouping* grouping(TensorId t) const;
  /// How a replica-sharded tensor is split (null for others): its spec is one shard, and a
  /// sharded variable's data() is the whole value (one per value group).
  const ReplicaSharding* sharding(TensorId t) const;

  // Streams.
  // Remote buffers.
  const std::string& name(RemoteBufferId b) const;
  /// One entry's shape and dtype.
  const TensorSpec& spec(RemoteBufferId b) const;
  std::int64_t entries(RemoteBufferId b) const;
  /// Where a remote variable is stored, or null for every other tensor.
  const RemoteLocation* remote_location(TensorId t) const;
  static RemoteBufferId id(const RemoteBuffer& b) { return RemoteBufferId{b.index()}; }

  const std::string& name(StreamId s) const;
  const TensorSpec& spec(StreamId s) const;
  bool host_to_device(StreamId s) const;

  // Between ids and the public handles.
  /// Whether the handle names something of this Ir.
  bool owns(const Tensor& t) const;
  bool owns(const Op& o) const;
  bool owns(const Graph& g) const;
  bool owns(const HostToDeviceStream& s) const;
  bool owns(const DeviceToHostStream& s) const;
  static TensorId id(const Tensor& t) { return TensorId{t.index()}; }
  static OpId id(const Op& o) { return OpId{o.index()}; }
  static GraphId id(const Graph& g) { return GraphId{g.index()}; }
  static StreamId id(const HostToDeviceStream& s) { return StreamId{s.index()}; }
  static StreamId id(const DeviceToHostStream& s) { return StreamId{s.index()}; }
  Tensor tensor(TensorId t) const;
  Op op(OpId o) const;
  Graph graph(GraphId g) const;
  HostToDeviceStream h2d_stream(StreamId s) const;
  DeviceToHostStream d2h_stream(StreamId s) const;

  friend bool operator==(const IrView& a, const IrView& b) { return a.ir_ == b.ir_; }

private:
  friend struct detail::HandleAccess;
  explicit IrView(const detail::IrStorage* ir) : ir_(ir) {}
  const detail::IrStorage* ir_;
};

} // namespace pxl

template <>
struct std::hash<pxl::TensorId> {
  std::size_t operator()(pxl::TensorId t) const noexcept { return t.value; }
};
template <>
struct std::hash<pxl::OpId> {
  std::size_t operator()(pxl::OpId o) const noexcept { return o.value; }
};
template <>
struct std::hash<pxl::GraphId> {
  std::size_t operator()(pxl::GraphId g) const noexcept { return g.value; }
};
