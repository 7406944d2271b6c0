// Reference kernels of the collectives: each replica's evaluator exchanges its value with its
// group (see replicated_reference.hpp) and computes its own result in double.
#include "ref_util.hpp"

#include <algorithm>

namespace pxl::testing {

namespace {
double reduce(CollectiveOperator op, const std::vector<HostTensor>& values, std::int64_t i) {
  double acc = 0;
  for (std::size_t j = 0; j < values.size(); ++j) {
    const double x = ref::load(values[j], i);
    if (j == 0) {
      acc = op == CollectiveOperator::square_add ? x * x : x;
      continue;
    }
    switch (op) {
    case CollectiveOperator::add:
    case CollectiveOperator::mean:
      acc += x;
      break;
    case CollectiveOperator::square_add:
      acc += x * x;
      break;
    case CollectiveOperator::mul:
      acc *= x;
      break;
    case CollectiveOperator::min:
      acc = std::min(acc, x);
      break;
    case CollectiveOperator::max:
      acc = std::max(acc, x);
      break;
    case CollectiveOperator::logical_and:
      acc = (acc != 0) && (x != 0);
      break;
    case CollectiveOperator::logical_or:
      acc = (acc != 0) || (x != 0);
      break;
    }
  }
  if (op == CollectiveOperator::mean) {
    acc /= static_cast<double>(values.size());
    if (values[0].dtype() == int32) // integer mean truncates, as the device's does
      acc = static_cast<double>(static_cast<std::int64_t>(acc));
  }
  return acc;
}

void all_reduce(ReferenceEvaluator& ev, const Op& op, const HostTensor& in, HostTensor& out) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  if (a.variant == AllReduceVariant::identical_inputs) {
    out = in;
    return;
  }
  const auto values = ev.exchange(in, a.stride, a.group_size);
  for (std::int64_t i = 0; i < out.nelms(); ++i)
    ref::store(out, i, reduce(a.op, values, i));
}
} // namespace

PXL_REF_KERNEL(ReplicatedAllReduce) { all_reduce(ev, op, *inputs[0], *outputs[0]); }

PXL_REF_KERNEL(ReplicatedAllReduceInplace) {
  const HostTensor in = *inputs[0]; // outputs[0] is inputs[0]
  all_reduce(ev, op, in, *outputs[0]);
}

PXL_REF_KERNEL(AllReduce) { // across the IPUs of one replica: the inputs, in order
  const auto& a = op.attrs_as<CollectiveAttrs>();
  std::vector<HostTensor> values;
  for (const HostTensor* in : inputs)
    values.push_back(*in);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (a.variant == AllReduceVariant::identical_inputs) {
      *outputs[k] = values[k];
      continue;
    }
    for (std::int64_t i = 0; i < outputs[k]->nelms(); ++i)
      ref::store(*outputs[k], i, reduce(a.op, values, i));
  }
}

PXL_REF_KERNEL(ReplicatedReduceScatter) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const auto values = ev.exchange(*inputs[0], a.stride, a.group_size);
  const std::int64_t k = ev.index_in_group(a.stride, a.group_size);
  HostTensor& out = *outputs[0];
  for (std::int64_t i = 0; i < out.nelms(); ++i) {
    const std::int64_t src = k * out.nelms() + i;
    ref::store(out, i, src < inputs[0]->nelms() ? reduce(a.op, values, src) : 0.0);
  }
}

PXL_REF_KERNEL(ReplicatedAllGather) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const auto values = ev.exchange(*inputs[0], a.stride, a.group_size);
  HostTensor& out = *outputs[0];
  // Output multi-index -> (member, input multi-index) along the gathered axis.
  const Shape& in_shape = inputs[0]->shape();
  for (std::int64_t i = 0; i < out.nelms(); ++i) {
    Shape index = ref::unravel(i, out.shape());
    std::int64_t member = 0;
    if (a.new_axis) {
      member = index.front();
      index.erase(index.begin());
    } else {
      const auto ax = static_cast<std::size_t>(a.axis);
      member = index[ax] / in_shape[ax];
      index[ax] %= in_shape[ax];
    }
    ref::store(out, i,
               ref::load(values[static_cast<std::size_t>(member)], ref::ravel(index, in_shape)));
  }
}

PXL_REF_KERNEL(ReplicatedSlice) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const std::int64_t k = ev.index_in_group(a.stride, a.group_size);
  HostTensor& out = *outputs[0];
  const auto ax = static_cast<std::size_t>(a.axis);
  for (std::int64_t i = 0; i < out.nelms(); ++i) {
    Shape index = ref::unravel(i, out.shape());
    index[ax] += k * out.shape()[ax];
    ref::store(out, i, ref::load(*inputs[0], ref::ravel(index, inputs[0]->shape())));
  }
}

PXL_REF_KERNEL(ReplicaShardedSlice) {
  const auto& a = op.attrs_as<CollectiveAttrs>();
  const std::int64_t k = ev.index_in_group(a.stride, a.group_size);
  HostTensor& out = *outputs[0];
  for (std::int64_t i = 0; i < out.nelms(); ++i) {
    const std::int64_t src = k * out.nelms() + i;
    ref::store(out, i, src < inputs[0]->nelms() ? ref::load(*inputs[0], src) : 0.0);
  }
}

} // namespace pxl::testing
