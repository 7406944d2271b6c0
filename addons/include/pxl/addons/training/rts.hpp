// pxl::addons::rts: replicated tensor sharding helpers (popxl.addons' rts): gather shards into
// whole tensors before use, reduce-scatter gradients into shards.
#pragma once

#include "pxl/addons/module/named_tensors.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/replica_sharding.hpp"

namespace pxl::addons::rts {

/// The whole tensor from this replica's `shard` (popxl.addons' gather_replica_sharded_tensor):
/// replicated_all_gather over the sharding's group, the padding sliced off, reshaped to the
/// meta shape. ValueError when `shard` carries no replica_sharding (a replica-sharded variable,
/// sharded graph input, remote_load of a sharded buffer or RTS-configured reduce-scatter).
Tensor gather(const Tensor& shard);
/// As above, for a shard split as `sharding` says.
Tensor gather(const Tensor& shard, const ReplicaSharding& sharding);
/// Every replica-sharded tensor of `tensors` gathered (others passed through), same keys.
NamedTensors gather(const NamedTensors& tensors);

/// `t` reduced over the replicas of `group` with `op` and split among them (popxl.addons'
/// reduce_replica_sharded_tensor): replicated_reduce_scatter configured for replicated tensor
/// sharding, so the result carries its sharding and rts::gather undoes the split. Every
/// replica when no group is given. The collective's errors.
Tensor reduce_scatter(const Tensor& t, CollectiveOperator op = CollectiveOperator::add,
                      std::optional<ReplicaGrouping> group = std::nullopt);
/// Each tensor of `tensors` reduce-scattered, same keys (gradients into shards: each replica
/// then updates its shard of sharded weights or optimizer state).
NamedTensors reduce_scatter(const NamedTensors& tensors,
                            CollectiveOperator op = CollectiveOperator::add,
                            std::optional<ReplicaGrouping> group = std::nullopt);

/// This replica's shard of `t`, a tensor equal on every replica of the group (a gradient
/// already averaged, a replicated weight): replica_sharded_slice, carrying its sharding.
Tensor shard(const Tensor& t, std::optional<ReplicaGrouping> group = std::nullopt);

} // namespace pxl::addons::rts
