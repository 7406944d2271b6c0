// Replicated tensor sharding helpers: gathers and reduce-scatters that keep track of shards.
#include "pxl/addons/training/rts.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ops/collectives.hpp"
#include "pxl/ops/shape.hpp"

namespace pxl::addons::rts {

namespace ops = pxl::ops;

Tensor gather(const Tensor& shard) {
  const auto sharding = replica_sharding(shard);
  if (!sharding)
    throw ValueError("rts::gather: " +
                     (shard.valid() ? "'" + shard.id() + "'" : std::string("an empty tensor")) +
                     " is not a replica-sharded tensor (it carries no replica_sharding); give "
                     "the sharding: rts::gather(shard, sharding)");
  return gather(shard, *sharding);
}

Tensor gather(const Tensor& shard, const ReplicaSharding& sharding) {
  const TensorSpec expected =
      replica_sharded_spec({sharding.meta_shape, shard.dtype()}, sharding.shards());
  if (shard.shape() != expected.shape)
    throw ShapeError("rts::gather: a shard of a tensor of shape " + to_string(sharding.meta_shape) +
                     " over " + std::to_string(sharding.shards()) + " replicas is " +
                     to_string(expected) + ", got '" + shard.id() + "' " + to_string(shard.spec()));
  const Tensor all = pxl::ops::collectives::replicated_all_gather(
      shard, 0, sharding.group, pxl::ops::collectives::GatherShape::concat);
  const std::int64_t n = nelms(sharding.meta_shape);
  const Tensor whole = all.shape().front() == n ? all : all.slice(0, n);
  return whole.reshape(sharding.meta_shape);
}

NamedTensors gather(const NamedTensors& tensors) {
  NamedTensors r;
  for (const auto& [key, t] : tensors.items())
    r.insert(key, replica_sharding(t) ? gather(t) : t);
  return r;
}

Tensor reduce_scatter(const Tensor& t, CollectiveOperator op,
                      std::optional<ReplicaGrouping> group) {
  return pxl::ops::collectives::replicated_reduce_scatter(t, op, std::move(group),
                                                          /*configure_output_for_rts=*/true);
}

NamedTensors reduce_scatter(const NamedTensors& tensors, CollectiveOperator op,
                            std::optional<ReplicaGrouping> group) {
  NamedTensors r;
  for (const auto& [key, t] : tensors.items())
    r.insert(key, reduce_scatter(t, op, group));
  return r;
}

Tensor shard(const Tensor& t, std::optional<ReplicaGrouping> group) {
  return pxl::ops::collectives::replica_sharded_slice(t, std::move(group));
}

} // namespace pxl::addons::rts
