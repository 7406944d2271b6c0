// Gradient rules of the collectives: each is the collective that moves gradients the other way.
#include "ops/grad_rule.hpp"
#include "pxl/core/error.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ops/collectives.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/shape.hpp"

#include <numeric>

namespace pxl::detail {

namespace {
using namespace ops::collectives;

ReplicaGrouping group_of(const Op& op) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  return op.graph().ir().replica_grouping(a.stride, a.group_size);
}

/// The first `shape`'s element count of the 1-D `flat`, shaped as `shape` (drops RTS padding).
Tensor unpad(const Tensor& flat, const Shape& shape) {
  const std::int64_t n =
      std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
  const Tensor kept = flat.nelms() == n ? flat : flat.slice(0, n);
  return ops::reshape(kept, shape);
}

/// The group's shards of `g` gathered back into a tensor of `shape` (inverse of a sharding).
Tensor gather_shards(const Tensor& g, const Shape& shape, const ReplicaGrouping& group) {
  return unpad(replicated_all_gather(g, 0, group).flatten(), shape);
}

/// `g`'s part k along `axis` summed over the group, for replica k: the adjoint of a gather.
Tensor scatter_parts(const Tensor& g, std::int64_t axis, const Shape& part,
                     const ReplicaGrouping& group) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(g.rank()));
  std::iota(perm.begin(), perm.end(), 0);
  std::rotate(perm.begin(), perm.begin() + axis, perm.begin() + axis + 1);
  const Tensor front = axis == 0 ? g : g.transpose(perm);
  Shape front_part = part;
  std::rotate(front_part.begin(), front_part.begin() + axis, front_part.begin() + axis + 1);
  const Tensor summed =
      ops::reshape(replicated_reduce_scatter(front, CollectiveOperator::add, group), front_part);
  if (axis == 0)
    return summed;
  std::vector<std::int64_t> back(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    back[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return summed.transpose(back);
}

[[noreturn]] void only_add_or_mean(const Op& op) {
  throw GraphError("autodiff: " + op.debug_name() + " ('" + op.name() +
                   "') reduces with an operator other than add or mean, which has no gradient "
                   "rule (as in PopXL); detach its input or use add/mean");
}
} // namespace

std::vector<Tensor> grad_ReplicatedAllReduce(GradContext& c) {
  const auto& a = c.op().attrs_as<CollectiveAttrs>();
  const Tensor g = c.grad_output(0);
  switch (a.variant) {
  case AllReduceVariant::identical_inputs:
    return {replicated_all_reduce(g, CollectiveOperator::add, group_of(c.op()))};
  case AllReduceVariant::identical_grad_inputs:
    return {g};
  case AllReduceVariant::none:
    break;
  }
  // y = op over the group of x_j, on every replica: dx_j = Σ_r dy_r (· 1/n for mean).
  if (a.op != CollectiveOperator::add && a.op != CollectiveOperator::mean)
    only_add_or_mean(c.op());
  return {replicated_all_reduce(g, a.op, group_of(c.op()))};
}

// The same reduction, into its input's buffer: the same rule.
std::vector<Tensor> grad_ReplicatedAllReduceInplace(GradContext& c) {
  return grad_ReplicatedAllReduce(c);
}

std::vector<Tensor> grad_AllReduce(GradContext& c) {
  const Op& op = c.op();
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const std::size_t n = op.num_inputs();
  std::vector<Tensor> grads(n);
  if (a.variant == AllReduceVariant::identical_grad_inputs) {
    for (std::size_t i = 0; i < n; ++i) // identity: each input's gradient is its output's
      if (c.has_grad_output(i))
        grads[i] = c.grad_output(i);
    return grads;
  }
  // y_i = op over j of x_j on every IPU: dx_j = Σ_i dy_i (· 1/n for mean). The identical-
  // inputs variant is the identity forward, whose gradient is the same all-reduce.
  if (a.op != CollectiveOperator::add && a.op != CollectiveOperator::mean)
    only_add_or_mean(op);
  std::vector<std::int64_t> ipus(n);
  for (std::size_t i = 0; i < n; ++i) {
    ipus[i] = op.input(i).ipu();
    const Tensor y = op.output(i);
    auto on = ipu(ipus[i]); // an output without a gradient contributes zeros on its IPU
    grads[i] = c.has_grad_output(i) ? c.grad_output(i) : ops::init(y.shape(), y.dtype());
  }
  return all_reduce(grads, ipus, a.op);
}

std::vector<Tensor> grad_ReplicatedReduceScatter(GradContext& c) {
  const auto& a = c.op().attrs_as<CollectiveAttrs>();
  if (a.op != CollectiveOperator::add && a.op != CollectiveOperator::mean)
    only_add_or_mean(c.op());
  // Replica k's shard is part k of the reduction: every x_j gets all the shards' gradients.
  Tensor dx = gather_shards(c.grad_output(0), c.op().input(0).shape(), group_of(c.op()));
  if (a.op == CollectiveOperator::mean)
    dx = dx * (1.0 / static_cast<double>(a.group_size));
  return {dx};
}

std::vector<Tensor> grad_ReplicatedAllGather(GradContext& c) {
  const auto& a = c.op().attrs_as<CollectiveAttrs>();
  const Shape& x = c.op().input(0).shape();
  const Tensor g = c.grad_output(0);
  // x_j appears as part j of every replica's output: dx_j = Σ_r (dy_r)_j.
  if (a.new_axis)
    return {scatter_parts(g, 0, x, group_of(c.op())) * 1.0};
  return {scatter_parts(g, a.axis, x, group_of(c.op()))};
}

std::vector<Tensor> grad_ReplicatedSlice(GradContext& c) {
  const auto& a = c.op().attrs_as<CollectiveAttrs>();
  return {replicated_all_gather(c.grad_output(0), a.axis, group_of(c.op()), GatherShape::concat)};
}

std::vector<Tensor> grad_ReplicaShardedSlice(GradContext& c) {
  return {gather_shards(c.grad_output(0), c.op().input(0).shape(), group_of(c.op()))};
}

} // namespace pxl::detail
