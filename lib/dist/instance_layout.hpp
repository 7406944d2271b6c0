// InstanceLayout: what a distributed Session needs to know of the instances, read from
// pxl::dist once, when the Session is made, and handed to the emulator as a value.
#pragma once

#include <cstdint>

namespace pxl::dist::detail {

struct InstanceLayout {
  std::int64_t instances = 1;       ///< processes in all (mpirun -np N)
  std::int64_t local_instances = 1; ///< processes on this host, which share its cores
  std::int64_t total_replicas = 1;  ///< replicas over every instance
  std::int64_t local_replicas = 1;  ///< this instance's replicas
  std::int64_t replica_offset = 0;  ///< the global index of this instance's first replica
};

/// The layout pxl::dist is configured with (the environment, then `configure`).
InstanceLayout current_layout();

} // namespace pxl::dist::detail
