// Replicated tensor sharding (RTS): a tensor equal on a group of replicas kept as one 1-D shard
// per replica (PopXL's replica_sharded_variable, remote_replica_sharded_variable and
// replica_sharded_buffer), gathered with replicated_all_gather before use.
#pragma once

#include "pxl/core/host_tensor.hpp"
#include "pxl/core/shape.hpp"
#include "pxl/ir/remote_buffer.hpp"
#include "pxl/ir/replica_grouping.hpp"
#include "pxl/ir/tensor.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pxl {

/// How a sharded tensor is split, as Poplar splits it: flattened, zero-padded to a multiple of
/// the group size, and cut into `group.group_size()` shards of shard_elements() elements;
/// the k-th replica of every group of `group` holds shard k.
struct ReplicaSharding {
  /// The whole tensor's shape (PopXL's `meta_shape`).
  Shape meta_shape;
  /// The replicas that share out one whole value (each group holds every shard once).
  ReplicaGrouping group;

  std::int64_t shards() const { return group.group_size(); }
  /// ceil(nelms(meta_shape) / shards()).
  std::int64_t shard_elements() const;
};

/// The 1-D spec of one of `shards` shards of `spec`: (ceil(nelms / shards),).
TensorSpec replica_sharded_spec(const TensorSpec& spec, std::int64_t shards);

/// `t`'s sharding: set for replica-sharded variables, remote_loads of replica-sharded buffers
/// and reduce-scatters configured for replicated tensor sharding; none for every other tensor.
std::optional<ReplicaSharding> replica_sharding(const Tensor& t);
/// The sharding of the entries of a replica-sharded buffer; none for other buffers.
std::optional<ReplicaSharding> replica_sharding(const RemoteBuffer& buffer);

/// Which replicas hold one value and how many shards it is cut into (PopXL's
/// `replica_grouping` and `shard_over`).
struct ShardingOptions {
  /// One value per group of this grouping (then `data` is shaped (num_groups, *shape) when
  /// there are several groups); every replica shares one value when unset.
  std::optional<ReplicaGrouping> replica_grouping;
  /// Shards per value: the replicas of each value group are taken `shard_over` at a time, in
  /// order, each run holding every shard once. It must divide the value group's size; the
  /// whole value group when unset.
  std::optional<std::int64_t> shard_over;
};

/// A variable kept as shards (PopXL's `replica_sharded_variable`): the k-th replica of each
/// shard group holds shard k of `data` on the IPU, so the returned tensor is that 1-D shard
/// (`replica_sharded_spec(data.spec(), shards)`; `replica_sharding(t)->meta_shape` is the
/// whole shape). The session writes and reads the whole unpadded value
/// (`write_variable_data`, `get_tensor_data`, checkpoints). Gather it with
/// ops::collectives::replicated_all_gather over the sharding's group (addons::rts does it).
/// Unlike PopXL, which returns the host-side variable and a loaded shard as two tensors, pxl
/// returns one: the shard is the variable. ValueError for a grouping of another Ir, a
/// `shard_over` that does not divide the group or a value grouping's all_replicas retrieval
/// (shards differ by design); ShapeError for grouped data without its group axis.
/// `downcast` as for pxl::variable.
Tensor replica_sharded_variable(HostTensor data, std::string name = "",
                                const ShardingOptions& options = {}, bool downcast = true);

/// A remote buffer whose entries are shards of tensors of `shape` and `dtype` (PopXL's
/// `replica_sharded_buffer`): each entry is `replica_sharded_spec({shape, dtype}, shards)`.
/// Load an entry with ops::remote_load (the result carries the sharding). ValueError as
/// remote_buffer and replica_sharded_variable.
RemoteBuffer replica_sharded_buffer(Shape shape, DType dtype, const ShardingOptions& options = {},
                                    std::int64_t entries = 1, std::string name = "");

/// A variable kept as shards in entry `entry` of a replica-sharded buffer (PopXL's
/// `remote_replica_sharded_variable`): every replica's Streaming Memory holds its shard; the
/// host sees the whole value of shape `meta_shape` (one value per group of the buffer's value
/// grouping). Errors as remote_variable, with `data` checked against the buffer's whole
/// shape; ValueError for a buffer that is not replica-sharded. `downcast` as for
/// pxl::variable.
Tensor remote_replica_sharded_variable(HostTensor data, const RemoteBuffer& buffer,
                                       std::int64_t entry = 0, std::string name = "",
                                       bool downcast = true);

/// An input of the current graph taking one shard of a tensor of `whole` (a replica-sharded
/// variable or buffer entry passed in): shaped replica_sharded_spec(whole, shards), carrying
/// the replica_sharding `options` give (popxl.addons' replica-sharded variable inputs).
/// Errors as graph_input and replica_sharded_variable.
Tensor replica_sharded_graph_input(const TensorSpec& whole, const ShardingOptions& options = {},
                                   std::string name = "", bool by_ref = false);

/// Shard `index` of `shards` of `whole` (flattened, zero-padded): the value the index-th
/// replica of a shard group holds. ValueError for an index out of range.
HostTensor replica_shard(const HostTensor& whole, std::int64_t shards, std::int64_t index);
/// The inverse: the shards in order, the padding dropped, reshaped to `meta_shape`.
/// ShapeError when the shards do not make up a tensor of that shape.
HostTensor replica_unshard(const std::vector<HostTensor>& shards, const Shape& meta_shape);

} // namespace pxl
