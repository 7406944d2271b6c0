// pxl::ReplicaGrouping: which replicas a collective or a variable groups together.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace pxl {

/// Replicas split into groups of `group_size`, each group taking every `stride`-th replica
/// (PopXL's `ir.replica_grouping(stride, group_size)`). Groups are filled in order: group 0
/// starts at replica 0 and takes `group_size` replicas `stride` apart, group 1 starts at the
/// first replica not yet taken, and so on. With 8 replicas:
///
///     stride 1, group_size 8   [0, 0, 0, 0, 0, 0, 0, 0]   (every replica together: the default)
///     stride 1, group_size 2   [0, 0, 1, 1, 2, 2, 3, 3]
///     stride 2, group_size 2   [0, 1, 0, 1, 2, 3, 2, 3]
///     stride 2, group_size 4   [0, 1, 0, 1, 0, 1, 0, 1]
///
/// (the list gives each replica's group). `stride × group_size` must divide the replication
/// factor. Made by Ir::replica_grouping; a value, compared by its parameters and Ir.
class ReplicaGrouping {
public:
  std::int64_t stride() const { return stride_; }
  std::int64_t group_size() const { return group_size_; }
  std::int64_t replication_factor() const { return replicas_; }
  std::int64_t num_groups() const { return replicas_ / group_size_; }
  /// The group of replica `r`.
  std::int64_t group_of(std::int64_t r) const;
  /// Position of replica `r` within its group.
  std::int64_t index_in_group(std::int64_t r) const;
  /// The replicas of group `g`, in order.
  std::vector<std::int64_t> replicas(std::int64_t g) const;
  /// Each replica's group (PopXL's `assignment`).
  std::vector<std::int64_t> assignment() const;
  /// The grouping whose group k holds the k-th replica of every group of this one (PopXL's
  /// `transpose`); ValueError when that is not a stride-and-size grouping.
  ReplicaGrouping transpose() const;
  /// The Ir the grouping was made for (its `Ir::id()`).
  std::uint64_t ir_id() const { return ir_; }
  std::string to_string() const;

  friend bool operator==(const ReplicaGrouping&, const ReplicaGrouping&) = default;

private:
  friend class Ir;
  ReplicaGrouping(std::uint64_t ir, std::int64_t replicas, std::int64_t stride,
                  std::int64_t group_size)
      : ir_(ir), replicas_(replicas), stride_(stride), group_size_(group_size) {}

  std::uint64_t ir_ = 0;
  std::int64_t replicas_ = 1, stride_ = 1, group_size_ = 1;
};

/// What Session::get_tensor_data returns for a variable with a replica grouping (PopXL's
/// `retrieval_mode`).
enum class RetrievalMode : std::uint8_t {
  one_per_group, ///< (num_groups, *shape): each group's value, read from its first replica
  all_replicas,  ///< (replicas, *shape): every replica's value, read from the device
};

/// How a variable is shared by the replicas (see pxl::variable): one value per group of
/// `grouping`.
struct VariableGrouping {
  ReplicaGrouping grouping;
  RetrievalMode retrieval_mode = RetrievalMode::one_per_group;
};

} // namespace pxl
