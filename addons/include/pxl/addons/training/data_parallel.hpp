// pxl::addons data-parallel training: every replica computes gradients on its own part of the
// batch, and they are averaged across the replicas before the optimizer updates the weights.
#pragma once

#include "pxl/addons/module/named_tensors.hpp"
#include "pxl/addons/training/accumulation.hpp"
#include "pxl/ir/replica_grouping.hpp"
#include "pxl/ir/tensor.hpp"

#include <map>
#include <optional>

namespace pxl::addons {

/// Which replicas train one model together (an aggregate):
///
///     pxl::addons::DataParallel dp{.group = ir.replica_grouping(1, 2)};   // pairs of replicas
///
/// With R replicas at batch B in one group, a step trains as one replica at batch R·B (for a
/// loss that is the mean over the batch), replica r holding rows r·B … r·B+B−1 of it.
struct DataParallel {
  /// The replicas whose gradients are averaged together; every replica when unset. Each group
  /// trains its own copy of the model (its variables need that grouping too).
  std::optional<ReplicaGrouping> group;
};

/// `grads` averaged over the replicas of `dp.group` (PopXL's
/// `ops.collectives.replicated_all_reduce(g, op="mean")` on each gradient, what TF's
/// CrossReplicaOptimizer does), under the same keys, in the current graph. Apply the optimizer
/// to the result:
///
///     auto grads = addons::average_across_replicas(bwd.grads(bwd_call));
///     addons::optimizers::apply(addons::optimizers::SGD{{.lr = 0.1}}, vars, grads);
///
/// In a group of one replica (an Ir with replication factor 1, say) the average is the
/// gradient itself, and the tensors are returned unchanged: no op is added. DTypeError for a
/// gradient that is not float32 or float16 (naming its key); the collective's errors for a
/// grouping of another Ir or another replication factor.
NamedTensors average_across_replicas(const NamedTensors& grads, const DataParallel& dp = {});

/// As above for gradients keyed by variable (what
/// `GradGraphInfo::fwd_parent_ins_to_grad_parent_outs` returns); the errors name the variable.
std::map<Tensor, Tensor> average_across_replicas(const std::map<Tensor, Tensor>& grads,
                                                 const DataParallel& dp = {});

/// With gradient accumulation, the average belongs at the end of the window, once per update
/// rather than once per micro-batch: `update` preceded by the average of each accumulated
/// gradient, for `apply_accumulated`:
///
///     apply_accumulated(s.filter_keys(vars.keys()), s,
///                       addons::averaged_across_replicas(sgd_update));
///
/// (In the main graph, `optimizers::apply(opt, vars,
/// average_across_replicas(accumulated_gradients(accums)))` then `reset_accumulators(accums)`
/// does the same.) Errors as average_across_replicas, raised when the update is built.
AccumulatedUpdate averaged_across_replicas(AccumulatedUpdate update, const DataParallel& dp = {});

} // namespace pxl::addons
