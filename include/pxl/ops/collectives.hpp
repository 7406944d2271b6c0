// Collectives (PopXL's popxl.ops.collectives): across replicas, all-reduce, reduce-scatter,
// all-gather and the replica slices over a ReplicaGrouping; across the IPUs of one replica,
// all-reduce (what tensor-parallel layers split over IPUs use).
#pragma once

#include "pxl/ir/attrs.hpp"
#include "pxl/ir/replica_grouping.hpp"
#include "pxl/ir/tensor.hpp"

#include <optional>
#include <vector>

namespace pxl::ops::collectives {

/// Every replica of `group` (all replicas when none is given) gets `op` over the group's
/// values of `t`, combined in replica order (so results do not depend on the emulator's
/// workers). Types: float32 and float16 for every operator, int32 for add, mean, mul, min,
/// max and square_add, bool for logical_and and logical_or. With one replica per group it
/// is the identity (as in an Ir with replication factor 1).
/// Autodiff: add and mean are differentiable (the gradient is the all-reduce of the output
/// gradients); `variant` selects PopXL's identical-inputs pair instead (see AllReduceVariant).
Tensor replicated_all_reduce(const Tensor& t, CollectiveOperator op = CollectiveOperator::add,
                             std::optional<ReplicaGrouping> group = std::nullopt,
                             AllReduceVariant variant = AllReduceVariant::none);
/// As replicated_all_reduce, in place: `t` is overwritten (not differentiable).
Tensor replicated_all_reduce_(const Tensor& t, CollectiveOperator op = CollectiveOperator::add,
                              std::optional<ReplicaGrouping> group = std::nullopt);
/// PopXL's replicated_all_reduce_identical_inputs: identity forward, all-reduce (add) of the
/// gradients backward (tensor parallelism's "f").
Tensor replicated_all_reduce_identical_inputs(const Tensor& t,
                                              std::optional<ReplicaGrouping> group = std::nullopt);
/// PopXL's replicated_all_reduce_identical_grad_inputs: all-reduce (add) forward, identity
/// backward (tensor parallelism's "g").
Tensor
replicated_all_reduce_identical_grad_inputs(const Tensor& t,
                                            std::optional<ReplicaGrouping> group = std::nullopt);

/// `t` flattened and reduced over the group with `op`; replica k of the group keeps shard k, a
/// 1-D tensor of ceil(nelms / group size) elements (the last shards padded with zeros, as
/// replicated tensor sharding pads). The gradient of add is the all-gather of the shards.
/// With `configure_output_for_replicated_tensor_sharding` the output carries t's
/// replica_sharding (meta shape t.shape(), the group), so addons::rts can gather it back.
Tensor replicated_reduce_scatter(const Tensor& t, CollectiveOperator op = CollectiveOperator::add,
                                 std::optional<ReplicaGrouping> group = std::nullopt,
                                 bool configure_output_for_replicated_tensor_sharding = false);

/// How replicated_all_gather shapes its output.
enum class GatherShape : std::uint8_t {
  new_axis, ///< (group size, *t.shape): the values stacked in group order (PopXL's "auto")
  concat,   ///< t.shape with `axis` multiplied by the group size: concatenated along it
};
/// Every replica of the group gets the group's values of `t`, in group order. The gradient is
/// the reduce-scatter (add) of the output gradients, each replica keeping its own part.
Tensor replicated_all_gather(const Tensor& t, std::int64_t axis = 0,
                             std::optional<ReplicaGrouping> group = std::nullopt,
                             GatherShape output_shape = GatherShape::new_axis);

/// Replica k of the group keeps part k of `t` along `axis` (which the group size must
/// divide). As in PopXL, `t` is taken to be identical across the group (a replicated tensor
/// about to be sharded), so the gradient is the all-gather of the parts.
Tensor replicated_slice(const Tensor& t, std::int64_t axis = 0,
                        std::optional<ReplicaGrouping> group = std::nullopt);
/// Replica k of the group keeps shard k of `t` flattened: ceil(nelms / group size) elements,
/// zero-padded (the shard replicated_reduce_scatter would give), carrying its
/// replica_sharding. Gradient: the all-gather.
Tensor replica_sharded_slice(const Tensor& t, std::optional<ReplicaGrouping> group = std::nullopt);

/// PopXL's all_reduce across the IPUs of one replica: `ts[i]` lives on IPU `ipus[i]` (every
/// IPU once; the tensors' own IPUs when `ipus` is not given, which must match it when it is),
/// all of one shape and dtype; output i, on IPU `ipus[i]`, is `op` over every `ts[j]` combined
/// in the order of `ts` (so every output is the same, and results do not depend on the
/// emulator's workers). Types as replicated_all_reduce. The op is placed on `ipus[0]` and
/// waits for every IPU it spans. Autodiff: add and mean, the gradient being the same
/// all-reduce of the output gradients.
std::vector<Tensor> all_reduce(const std::vector<Tensor>& ts,
                               std::optional<std::vector<std::int64_t>> ipus = std::nullopt,
                               CollectiveOperator op = CollectiveOperator::add);
/// PopXL's all_reduce_identical_inputs: the inputs are taken to be identical, so the forward
/// is the identity on each IPU (nothing is sent), and the gradient is the all-reduce (`op`) of
/// the output gradients (tensor parallelism's "f").
std::vector<Tensor>
all_reduce_identical_inputs(const std::vector<Tensor>& ts,
                            std::optional<std::vector<std::int64_t>> ipus = std::nullopt,
                            CollectiveOperator op = CollectiveOperator::add);
/// PopXL's all_reduce_identical_grad_inputs: the all-reduce forward, the identity backward (each
/// input's gradient is its output's), for output gradients that are identical on every IPU
/// (tensor parallelism's "g").
std::vector<Tensor>
all_reduce_identical_grad_inputs(const std::vector<Tensor>& ts,
                                 std::optional<std::vector<std::int64_t>> ipus = std::nullopt,
                                 CollectiveOperator op = CollectiveOperator::add);

} // namespace pxl::ops::collectives
