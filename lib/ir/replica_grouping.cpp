#include "pxl/ir/replica_grouping.hpp"
#include "pxl/core/error.hpp"
#include "pxl/ir/ir.hpp"

namespace pxl {

ReplicaGrouping Ir::replica_grouping(std::int64_t stride, std::int64_t group_size) const {
  const std::int64_t replicas = replication_factor();
  if (group_size == 0)
    group_size = replicas;
  if (stride < 1 || group_size < 1 || replicas % (stride * group_size) != 0)
    throw ValueError("Ir::replica_grouping: stride " + std::to_string(stride) + " x group_size " +
                     std::to_string(group_size) +
                     " must be positive and divide the replication factor " +
                     std::to_string(replicas) + ", or some replicas would be left out");
  return ReplicaGrouping(id(), replicas, stride, group_size);
}

std::int64_t ReplicaGrouping::group_of(std::int64_t r) const {
  // Groups fill blocks of stride × group_size replicas: `stride` interleaved groups each.
  const std::int64_t block = stride_ * group_size_;
  return r / block * stride_ + r % block % stride_;
}

std::int64_t ReplicaGrouping::index_in_group(std::int64_t r) const {
  return r % (stride_ * group_size_) / stride_;
}

std::vector<std::int64_t> ReplicaGrouping::replicas(std::int64_t g) const {
  const std::int64_t first = g / stride_ * stride_ * group_size_ + g % stride_;
  std::vector<std::int64_t> r;
  for (std::int64_t k = 0; k < group_size_; ++k)
    r.push_back(first + k * stride_);
  return r;
}

std::vector<std::int64_t> ReplicaGrouping::assignment() const {
  std::vector<std::int64_t> a;
  for (std::int64_t r = 0; r < replicas_; ++r)
    a.push_back(group_of(r));
  return a;
}

ReplicaGrouping ReplicaGrouping::transpose() const {
  // Group k of the transpose holds the k-th replica of every group of this one.
  std::vector<std::int64_t> want(static_cast<std::size_t>(replicas_));
  for (std::int64_t r = 0; r < replicas_; ++r)
    want[static_cast<std::size_t>(r)] = index_in_group(r);
  const std::int64_t size = num_groups();
  for (std::int64_t stride = 1; stride * size <= replicas_; ++stride) {
    if (replicas_ % (stride * size) != 0)
      continue;
    const ReplicaGrouping t(ir_, replicas_, stride, size);
    // The same partition, whatever the numbering of its groups.
    bool same = true;
    for (std::int64_t r = 0; r < replicas_ && same; ++r)
      for (std::int64_t q = r + 1; q < replicas_ && same; ++q)
        same = (want[static_cast<std::size_t>(r)] == want[static_cast<std::size_t>(q)]) ==
               (t.group_of(r) == t.group_of(q));
    if (same)
      return t;
  }
  throw ValueError("ReplicaGrouping::transpose: the transpose of " + to_string() +
                   " is not a grouping by stride and group size");
}

std::string ReplicaGrouping::to_string() const {
  return "ReplicaGrouping(replicas=" + std::to_string(replicas_) +
         ", stride=" + std::to_string(stride_) + ", group_size=" + std::to_string(group_size_) +
         ")";
}

} // namespace pxl
