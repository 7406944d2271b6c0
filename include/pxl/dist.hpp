// pxl::dist: instances of one program joined by MPI, the way PopRun launches them and PopDist
// describes them.
//
//     mpirun -np 2 ./train --replicas 4     # 2 instances, each emulating 2 of the 4 replicas
//
// Every instance builds the same Ir with the global replication factor R
// (`ir.set_replication_factor(pxl::dist::num_total_replicas())`) and a Session with
// SessionOptions::distributed; each emulates its R / N local replicas, and the collectives
// span every replica of every instance, with results bitwise equal to one process running all
// R. Each instance feeds only its local replicas' data.
#pragma once

#include <chrono>
#include <cstdint>

namespace pxl::dist {

/// Explicit settings, in place of what the environment says. A default member keeps the
/// environment's value (PopRun's `--num-instances`, `--num-replicas`).
struct Options {
  /// Instances of the program (0: from MPI's environment, `mpirun -np N`; 1 without one).
  std::int64_t num_instances = 0;
  /// This process's index among them (-1: from MPI's environment; 0 without one).
  std::int64_t instance_index = -1;
  /// Replicas over all instances (0: one per instance, as PopRun without --num-replicas). A
  /// multiple of num_instances: each instance emulates as many.
  std::int64_t num_total_replicas = 0;
  /// How long an instance waits for the others in one exchange before it ends every instance
  /// with an error naming the exchange: an instance that failed or stopped never leaves the
  /// rest hanging. At least one second.
  std::chrono::seconds timeout{300};
};

/// Replaces the settings (ValueError for values out of range, or a total that the instances
/// do not divide). Call it before making a distributed Session.
void configure(const Options& options);
/// The settings in force (with the environment's values filled in).
Options options();

/// Whether this build of pxl can join instances (built with MPI: Meson option `mpi`).
bool mpi_enabled();
/// PopDist's getters: instances, this one's index, replicas in all, this instance's replicas,
/// and the global index of its first (replicas offset .. offset + local - 1 are its own).
std::int64_t num_instances();
std::int64_t instance_index();
std::int64_t num_total_replicas();
std::int64_t num_local_replicas();
std::int64_t replica_offset();
/// Whether there is more than one instance.
inline bool is_distributed() { return num_instances() > 1; }
/// The instances on this host, this one included, which share its cores: what the launcher
/// says (Open MPI's, MPICH's or PMIx's local size), else all num_instances().
std::int64_t num_local_instances();

/// Waits until every instance has called it (SessionError in a build without MPI when there
/// are several instances).
void barrier();
/// Ends every instance with exit status `code` (MPI_Abort): what an instance that cannot go
/// on calls, so that the others do not wait for it until their timeout.
[[noreturn]] void abort(int code);

/// What this process has exchanged with the other instances: the bytes a direct exchange
/// moves (MPI may route them differently) and the messages, one per peer and exchange.
struct Traffic {
  std::int64_t exchanges = 0; ///< collective calls (all-gathers, broadcasts, barriers)
  std::int64_t messages_sent = 0;
  std::int64_t messages_received = 0;
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
};
Traffic traffic();

} // namespace pxl::dist
