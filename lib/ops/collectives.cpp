// Collectives across replicas: validation and output-spec inference.
#include "pxl/ops/collectives.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/op.hpp"
#include "pxl/ir/scope.hpp"

#include <algorithm>
#include <string>

namespace pxl::ops::collectives {

using detail::add_op1;

namespace {

std::string_view operator_name(CollectiveOperator op) {
  switch (op) {
  case CollectiveOperator::add:
    return "add";
  case CollectiveOperator::mean:
    return "mean";
  case CollectiveOperator::mul:
    return "mul";
  case CollectiveOperator::min:
    return "min";
  case CollectiveOperator::max:
    return "max";
  case CollectiveOperator::logical_and:
    return "logical_and";
  case CollectiveOperator::logical_or:
    return "logical_or";
  case CollectiveOperator::square_add:
    return "square_add";
  }
  return "?";
}

/// The grouping's stride and size, checked against `t`'s Ir (all replicas when none).
CollectiveAttrs grouped(std::string_view op, const Tensor& t,
                        const std::optional<ReplicaGrouping>& group) {
  detail::require_usable(t, op);
  const Ir& ir = t.graph().ir();
  if (!group)
    return CollectiveAttrs{.stride = 1, .group_size = ir.replication_factor()};
  if (group->ir_id() != ir.id())
    throw ValueError(std::string(op) + ": " + group->to_string() +
                     " was made by another Ir than the one of " + to_string(t) +
                     "; make it with that Ir's replica_grouping");
  if (group->replication_factor() != ir.replication_factor())
    throw ValueError(std::string(op) + ": " + group->to_string() +
                     " was made for replication factor " +
                     std::to_string(group->replication_factor()) + ", but the Ir now has " +
                     std::to_string(ir.replication_factor()) + "; make the grouping again");
  return CollectiveAttrs{.stride = group->stride(), .group_size = group->group_size()};
}

/// DTypeError unless `op` applies to `t`'s dtype (see replicated_all_reduce).
void check_operator(std::string_view what, const Tensor& t, CollectiveOperator op) {
  const DType d = t.dtype();
  const bool logical =
      op == CollectiveOperator::logical_and || op == CollectiveOperator::logical_or;
  const bool ok = logical ? d == bool_ : (is_floating_point(d) || d == int32);
  if (!ok)
    throw DTypeError(std::string(what) + ": operator '" + std::string(operator_name(op)) +
                     "' cannot reduce " + to_string(t) + "; it takes " +
                     (logical ? "bool" : "float32, float16 or int32") + " tensors");
}

/// 1-D shard of `t` flattened over `group_size` replicas.
TensorSpec shard_spec(const Tensor& t, std::int64_t group_size) {
  const std::int64_t n = t.nelms(); // ceil(n / group_size), without overflowing n + group_size
  return TensorSpec{{n / group_size + (n % group_size != 0)}, t.dtype()};
}

std::int64_t normalized_axis(std::string_view op, std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank)
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Tensor replicated_reduction(OpKind kind, const Tensor& t, CollectiveOperator op,
                            const std::optional<ReplicaGrouping>& group, AllReduceVariant variant) {
  const auto name = op_type_name(kind);
  CollectiveAttrs a = grouped(name, t, group);
  check_operator(name, t, op);
  a.op = op;
  a.variant = variant;
  return add_op1(kind, {t}, t.spec(), a);
}

/// The AllReduce across the IPUs of one replica: `ts[i]` on IPU `ipus[i]`, output i there too.
std::vector<Tensor> ipu_reduction(const std::vector<Tensor>& ts,
                                  const std::optional<std::vector<std::int64_t>>& ipus,
                                  CollectiveOperator op, AllReduceVariant variant) {
  const auto name = op_type_name(OpKind::AllReduce);
  if (ts.empty())
    throw ValueError(std::string(name) + ": no tensors to reduce; give one per IPU");
  for (std::size_t i = 0; i < ts.size(); ++i)
    detail::require_usable(ts[i], std::string(name) + ": tensor " + std::to_string(i));
  if (ipus && ipus->size() != ts.size())
    throw ValueError(std::string(name) + ": " + std::to_string(ts.size()) + " tensors but " +
                     std::to_string(ipus->size()) + " IPUs given; give one IPU per tensor");
  std::vector<std::int64_t> on;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (ipus && (*ipus)[i] != t.ipu())
      throw GraphError(std::string(name) + ": tensor " + std::to_string(i) + " " + to_string(t) +
                       " is on IPU " + std::to_string(t.ipu()) + ", not on IPU " +
                       std::to_string((*ipus)[i]) + " as `ipus` says");
    if (std::ranges::find(on, t.ipu()) != on.end())
      throw GraphError(std::string(name) + ": tensor " + std::to_string(i) + " " + to_string(t) +
                       " is on IPU " + std::to_string(t.ipu()) +
                       ", which an earlier tensor is on too; give one tensor per IPU");
    on.push_back(t.ipu());
    if (t.shape() != ts[0].shape())
      throw ShapeError(std::string(name) + ": tensor " + std::to_string(i) + " " + to_string(t) +
                       " has another shape than tensor 0 " + to_string(ts[0]) +
                       "; every IPU's tensor must have one shape");
    detail::check_same_dtype(name, ts[0], t);
  }
  check_operator(name, ts[0], op);
  // The op waits for every IPU it spans; it is placed on the first.
  auto on_first = ipu(on[0]);
  const Op reduce =
      detail::add_op_node(OpKind::AllReduce, ts, std::vector<TensorSpec>(ts.size(), ts[0].spec()),
                          CollectiveAttrs{.op = op, .variant = variant});
  for (std::size_t i = 0; i < ts.size(); ++i)
    detail::place_output(reduce, i, on[i]);
  return reduce.outputs();
}

/// Records that `shard` is this replica's shard of `whole` over the op's group.
void mark_shard_of(const Tensor& shard, const Tensor& whole, const CollectiveAttrs& a) {
  detail::set_replica_sharding(
      shard,
      ReplicaSharding{whole.shape(), detail::replica_grouping_of(shard, a.stride, a.group_size)});
}

} // namespace

Tensor replicated_all_reduce(const Tensor& t, CollectiveOperator op,
                             std::optional<ReplicaGrouping> group, AllReduceVariant variant) {
  return replicated_reduction(OpKind::ReplicatedAllReduce, t, op, group, variant);
}

Tensor replicated_all_reduce_(const Tensor& t, CollectiveOperator op,
                              std::optional<ReplicaGrouping> group) {
  return replicated_reduction(OpKind::ReplicatedAllReduceInplace, t, op, group,
                              AllReduceVariant::none);
}

Tensor replicated_all_reduce_identical_inputs(const Tensor& t,
                                              std::optional<ReplicaGrouping> group) {
  return replicated_all_reduce(t, CollectiveOperator::add, std::move(group),
                               AllReduceVariant::identical_inputs);
}

Tensor replicated_all_reduce_identical_grad_inputs(const Tensor& t,
                                                   std::optional<ReplicaGrouping> group) {
  return replicated_all_reduce(t, CollectiveOperator::add, std::move(group),
                               AllReduceVariant::identical_grad_inputs);
}

std::vector<Tensor> all_reduce(const std::vector<Tensor>& ts,
                               std::optional<std::vector<std::int64_t>> ipus,
                               CollectiveOperator op) {
  return ipu_reduction(ts, ipus, op, AllReduceVariant::none);
}

std::vector<Tensor> all_reduce_identical_inputs(const std::vector<Tensor>& ts,
                                                std::optional<std::vector<std::int64_t>> ipus,
                                                CollectiveOperator op) {
  return ipu_reduction(ts, ipus, op, AllReduceVariant::identical_inputs);
}

std::vector<Tensor> all_reduce_identical_grad_inputs(const std::vector<Tensor>& ts,
                                                     std::optional<std::vector<std::int64_t>> ipus,
                                                     CollectiveOperator op) {
  return ipu_reduction(ts, ipus, op, AllReduceVariant::identical_grad_inputs);
}

Tensor replicated_reduce_scatter(const Tensor& t, CollectiveOperator op,
                                 std::optional<ReplicaGrouping> group,
                                 bool configure_output_for_replicated_tensor_sharding) {
  const auto name = op_type_name(OpKind::ReplicatedReduceScatter);
  CollectiveAttrs a = grouped(name, t, group);
  check_operator(name, t, op);
  a.op = op;
  const Tensor r = add_op1(OpKind::ReplicatedReduceScatter, {t}, shard_spec(t, a.group_size), a);
  // Configured for RTS, the output is a shard of `t` (addons::rts gathers it back).
  if (configure_output_for_replicated_tensor_sharding)
    mark_shard_of(r, t, a);
  return r;
}

Tensor replicated_all_gather(const Tensor& t, std::int64_t axis,
                             std::optional<ReplicaGrouping> group, GatherShape output_shape) {
  const auto name = op_type_name(OpKind::ReplicatedAllGather);
  CollectiveAttrs a = grouped(name, t, group);
  Shape shape = t.shape();
  if (output_shape == GatherShape::new_axis) {
    a.new_axis = true;
    shape.insert(shape.begin(), a.group_size);
  } else {
    if (t.rank() == 0)
      throw ValueError(std::string(name) + ": cannot concatenate scalars " + to_string(t) +
                       "; use GatherShape::new_axis");
    a.axis = normalized_axis(name, axis, t.rank());
    shape[static_cast<std::size_t>(a.axis)] *= a.group_size;
  }
  return add_op1(OpKind::ReplicatedAllGather, {t}, TensorSpec{std::move(shape), t.dtype()}, a);
}

Tensor replicated_slice(const Tensor& t, std::int64_t axis, std::optional<ReplicaGrouping> group) {
  const auto name = op_type_name(OpKind::ReplicatedSlice);
  CollectiveAttrs a = grouped(name, t, group);
  if (t.rank() == 0)
    throw ValueError(std::string(name) + ": cannot slice the scalar " + to_string(t));
  a.axis = normalized_axis(name, axis, t.rank());
  Shape shape = t.shape();
  auto& d = shape[static_cast<std::size_t>(a.axis)];
  if (d % a.group_size != 0)
    throw ShapeError(std::string(name) + ": axis " + std::to_string(a.axis) + " of " +
                     to_string(t) + " has " + std::to_string(d) +
                     " elements, which the group size " + std::to_string(a.group_size) +
                     " does not divide");
  d /= a.group_size;
  return add_op1(OpKind::ReplicatedSlice, {t}, TensorSpec{std::move(shape), t.dtype()}, a);
}

Tensor replica_sharded_slice(const Tensor& t, std::optional<ReplicaGrouping> group) {
  const auto name = op_type_name(OpKind::ReplicaShardedSlice);
  CollectiveAttrs a = grouped(name, t, group);
  const Tensor r = add_op1(OpKind::ReplicaShardedSlice, {t}, shard_spec(t, a.group_size), a);
  mark_shard_of(r, t, a);
  return r;
}

} // namespace pxl::ops::collectives
