// Data-parallel training: gradients averaged across replicas with a mean all-reduce.
#include "pxl/addons/training/data_parallel.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/collectives.hpp"

#include <string>
#include <utility>

namespace pxl::addons {

namespace {

/// Whether averaging `t` over `dp`'s group is the identity: a group of one replica of `t`'s
/// Ir. A grouping made for another Ir or replication factor is not, so that the collective
/// reports it.
bool single_replica_group(const Tensor& t, const DataParallel& dp) {
  const Ir& ir = t.graph().ir();
  if (!dp.group)
    return ir.replication_factor() == 1;
  return dp.group->ir_id() == ir.id() &&
         dp.group->replication_factor() == ir.replication_factor() && dp.group->group_size() == 1;
}

Tensor average(const std::string& name, const Tensor& grad, const DataParallel& dp) {
  if (!is_floating_point(grad.dtype()))
    throw DTypeError("average_across_replicas: the gradient of " + name + " is '" + grad.name() +
                     "' " + to_string(grad.spec()) +
                     "; only float32 and float16 gradients are averaged");
  if (single_replica_group(grad, dp))
    return grad;
  return pxl::ops::collectives::replicated_all_reduce(grad, CollectiveOperator::mean, dp.group);
}

} // namespace

NamedTensors average_across_replicas(const NamedTensors& grads, const DataParallel& dp) {
  NamedTensors r;
  for (const auto& [key, g] : grads.items())
    r.insert(key, average("'" + key + "'", g, dp));
  return r;
}

std::map<Tensor, Tensor> average_across_replicas(const std::map<Tensor, Tensor>& grads,
                                                 const DataParallel& dp) {
  std::map<Tensor, Tensor> r;
  for (const auto& [var, g] : grads)
    r.emplace(var, average("variable '" + var.name() + "'", g, dp));
  return r;
}

AccumulatedUpdate averaged_across_replicas(AccumulatedUpdate update, const DataParallel& dp) {
  if (!update)
    throw ValueError("averaged_across_replicas: the update is empty; pass one taking (key, "
                     "variable, gradient)");
  return [update = std::move(update), dp](const std::string& key, const Tensor& variable,
                                          const Tensor& gradient) {
    update(key, variable, average("'" + key + "'", gradient, dp));
  };
}

} // namespace pxl::addons
