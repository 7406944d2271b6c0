// Replica-sharded variables and buffers in the Ir's arena, and the host-side shard layout.
#include "pxl/ir/replica_sharding.hpp"
#include "ir/handle_access.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"

#include <algorithm>
#include <cstring>

namespace pxl {

using detail::HandleAccess;

std::int64_t ReplicaSharding::shard_elements() const {
  return (nelms(meta_shape) + shards() - 1) / shards();
}

TensorSpec replica_sharded_spec(const TensorSpec& spec, std::int64_t shards) {
  if (shards < 1)
    throw ValueError("replica_sharded_spec: needs at least one shard, got " +
                     std::to_string(shards));
  return {Shape{(spec.nelms() + shards - 1) / shards}, spec.dtype};
}

std::optional<ReplicaSharding> replica_sharding(const Tensor& t) {
  if (!t.valid())
    return std::nullopt;
  return HandleAccess::storage(t)->tensor(IrView::id(t)).sharding;
}

std::optional<ReplicaSharding> replica_sharding(const RemoteBuffer& buffer) {
  if (!buffer.valid())
    return std::nullopt;
  return HandleAccess::storage(buffer)->remote_buffers[buffer.index()].sharding;
}

namespace {

/// The value grouping (if any) and the sharding of a tensor of `meta_shape` under `options`,
/// checked against the Ir of the current graph.
struct Layout {
  std::optional<ReplicaGrouping> value_grouping;
  ReplicaSharding sharding;
};

Layout layout(std::string_view what, const std::string& name, Shape meta_shape,
              const ShardingOptions& options) {
  const auto g = detail::require_graph(what);
  const Ir& ir = HandleAccess::ir(*g.ir, what);
  std::int64_t stride = 1, group_size = ir.replication_factor();
  if (const auto& v = options.replica_grouping) {
    if (v->ir_id() != ir.id() || v->replication_factor() != ir.replication_factor())
      throw ValueError(std::string(what) + ": " + v->to_string() + " for '" + name +
                       "' was not made by this Ir's replica_grouping (replication factor " +
                       std::to_string(ir.replication_factor()) + ")");
    stride = v->stride();
    group_size = v->group_size();
  }
  const std::int64_t shards = options.shard_over.value_or(group_size);
  if (shards < 1 || group_size % shards != 0)
    throw ValueError(std::string(what) + ": '" + name + "' is to be sharded over " +
                     std::to_string(shards) + " replicas, which must be at least 1 and divide " +
                     "the " + std::to_string(group_size) +
                     " replicas sharing its value (ShardingOptions::shard_over)");
  return {options.replica_grouping,
          ReplicaSharding{std::move(meta_shape), ir.replica_grouping(stride, shards)}};
}

/// `data`'s whole shape: without the group axis of a grouping of several groups.
Shape whole_shape(std::string_view what, const std::string& name, const HostTensor& data,
                  const std::optional<ReplicaGrouping>& grouping) {
  Shape shape = data.shape();
  if (!grouping || grouping->num_groups() == 1)
    return shape;
  if (shape.empty() || shape.front() != grouping->num_groups())
    throw ShapeError(std::string(what) + ": '" + name + "' has a replica grouping of " +
                     std::to_string(grouping->num_groups()) +
                     " groups, so its data needs one value per group, shaped (" +
                     std::to_string(grouping->num_groups()) + ", *shape); got " + to_string(shape));
  shape.erase(shape.begin());
  return shape;
}

/// Makes `t` (a variable whose spec is one shard) replica-sharded with `data` as its value.
void make_sharded(detail::IrStorage& ir, const Tensor& t, HostTensor data, Layout l) {
  auto& node = ir.tensor(IrView::id(t));
  node.data = std::move(data);
  if (l.value_grouping)
    node.grouping = VariableGrouping{*l.value_grouping, RetrievalMode::one_per_group};
  node.sharding = std::move(l.sharding);
}

} // namespace

Tensor replica_sharded_variable(HostTensor data, std::string name, const ShardingOptions& options,
                                bool downcast) {
  const char* what = "replica_sharded_variable";
  data = detail::downcast_for_device(what, name, std::move(data), downcast);
  Shape whole = whole_shape(what, name, data, options.replica_grouping);
  Layout l = layout(what, name, whole, options);
  const TensorSpec shard =
      replica_sharded_spec({std::move(whole), data.dtype()}, l.sharding.shards());
  const Tensor t = variable(HostTensor(shard), std::move(name));
  make_sharded(*HandleAccess::storage(t), t, std::move(data), std::move(l));
  return t;
}

Tensor replica_sharded_graph_input(const TensorSpec& whole, const ShardingOptions& options,
                                   std::string name, bool by_ref) {
  Layout l = layout("replica_sharded_graph_input", name, whole.shape, options);
  const Tensor t =
      graph_input(replica_sharded_spec(whole, l.sharding.shards()), std::move(name), by_ref);
  HandleAccess::storage(t)->tensor(IrView::id(t)).sharding = std::move(l.sharding);
  return t;
}

RemoteBuffer replica_sharded_buffer(Shape shape, DType dtype, const ShardingOptions& options,
                                    std::int64_t entries, std::string name) {
  Layout l = layout("replica_sharded_buffer", name, shape, options);
  const RemoteBuffer b =
      remote_buffer(replica_sharded_spec({shape, dtype}, l.sharding.shards()).shape, dtype, entries,
                    std::move(name));
  auto& node = HandleAccess::storage(b)->remote_buffers[b.index()];
  node.sharding = std::move(l.sharding);
  node.value_grouping = std::move(l.value_grouping);
  return b;
}

Tensor remote_replica_sharded_variable(HostTensor data, const RemoteBuffer& buffer,
                                       std::int64_t entry, std::string name, bool downcast) {
  const char* what = "remote_replica_sharded_variable";
  data = detail::downcast_for_device(what, name, std::move(data), downcast);
  const auto sharding = replica_sharding(buffer);
  if (!buffer.valid() || !sharding)
    throw ValueError(std::string(what) + ": remote buffer '" +
                     (buffer.valid() ? buffer.name() : std::string("(empty handle)")) +
                     "' is not replica-sharded; make it with replica_sharded_buffer");
  const auto& node = HandleAccess::storage(buffer)->remote_buffers[buffer.index()];
  const Shape whole = whole_shape(what, name, data, node.value_grouping);
  if (whole != sharding->meta_shape)
    throw ShapeError(std::string(what) + ": '" + name + "' has data of shape " + to_string(whole) +
                     " but remote buffer '" + buffer.name() +
                     "' holds shards of tensors of shape " + to_string(sharding->meta_shape));
  if (data.dtype() != buffer.dtype())
    throw DTypeError(std::string(what) + ": '" + name + "' has " +
                     std::string(pxl::name(data.dtype())) + " data but remote buffer '" +
                     buffer.name() + "' holds " + std::string(pxl::name(buffer.dtype())) +
                     "; convert it with astype");
  const Tensor t = remote_variable(HostTensor(buffer.spec()), buffer, entry, std::move(name));
  make_sharded(*HandleAccess::storage(t), t, std::move(data), {node.value_grouping, *sharding});
  return t;
}

HostTensor replica_shard(const HostTensor& whole, std::int64_t shards, std::int64_t index) {
  if (index < 0 || index >= shards)
    throw ValueError("replica_shard: shard " + std::to_string(index) + " of " +
                     std::to_string(shards) + " is out of range");
  HostTensor shard(replica_sharded_spec(whole.spec(), shards));
  const std::size_t size = size_of(whole.dtype());
  const std::int64_t n = shard.nelms();
  const std::int64_t count = std::clamp<std::int64_t>(whole.nelms() - index * n, 0, n);
  std::memcpy(shard.bytes().data(),
              whole.bytes().data() + static_cast<std::size_t>(index * n) * size,
              static_cast<std::size_t>(count) * size);
  return shard; // the padding stays zero
}

HostTensor replica_unshard(const std::vector<HostTensor>& shards, const Shape& meta_shape) {
  if (shards.empty())
    throw ShapeError("replica_unshard: no shards given");
  const TensorSpec whole{meta_shape, shards.front().dtype()};
  const TensorSpec each = replica_sharded_spec(whole, static_cast<std::int64_t>(shards.size()));
  for (const HostTensor& s : shards)
    if (s.spec() != each)
      throw ShapeError("replica_unshard: " + std::to_string(shards.size()) +
                       " shards of a tensor of shape " + to_string(meta_shape) + " are each " +
                       to_string(each) + ", got " + to_string(s.spec()));
  HostTensor r(whole);
  const std::size_t total = r.nbytes(), step = each.nbytes();
  for (std::size_t i = 0, at = 0; at < total; ++i, at += step)
    std::memcpy(r.bytes().data() + at, shards[i].bytes().data(), std::min(step, total - at));
  return r;
}

} // namespace pxl
