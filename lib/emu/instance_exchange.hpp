// InstanceExchange: what a distributed Session's collectives need of the other instances.
#pragma once

#include "aligned_bytes.hpp"
#include "program.hpp"

#include "dist/instance_link.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace pxl::emu::detail {

/// The replicas of every instance and a staging block holding, during one collective step,
/// every replica's input: each instance puts its local replicas' inputs in place and an
/// all-gather over the instances fills in the rest. Replica r's input is at r·block, so
/// kernels read a remote member's input from a fixed address and reduce in replica order,
/// with results bitwise those of one process holding every replica. Steps run one at a time,
/// so one block serves them all; it is sized for the largest collective input at
/// construction and never moves.
class InstanceExchange {
public:
  /// For `program`'s collectives, over `link`'s instances, each holding `local` replicas.
  InstanceExchange(dist::detail::InstanceLink& link, const Program& program, std::int64_t local);

  std::int64_t total_replicas() const { return local_ * link_.size(); }
  std::int64_t offset() const { return local_ * link_.rank(); }
  std::int64_t instance_of(std::int64_t replica) const { return replica / local_; }
  /// Replica `replica`'s input of the current collective, of `block` bytes.
  std::byte* input(std::int64_t replica, std::size_t block) const {
    return staging_.get() + static_cast<std::size_t>(replica) * block;
  }
  /// Copies `local_inputs` (this instance's replicas', in order) into place, then gathers the
  /// other instances'. `what` names the collective in the timeout message.
  void gather(std::span<const std::byte* const> local_inputs, std::size_t block,
              const std::string& what);

  dist::detail::InstanceLink& link() { return link_; }

private:
  dist::detail::InstanceLink& link_;
  std::int64_t local_;
  AlignedBytes staging_;
};

} // namespace pxl::emu::detail
