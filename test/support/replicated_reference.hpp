// The reference evaluator for replicated Irs: one naive evaluator per replica, each on its own
// thread, meeting at every collective to exchange values (as processes do over MPI). The
// oracle for the emulator's lockstep replicas and collectives.
#pragma once

#include "reference.hpp"

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace pxl::testing {

/// Where the replicas' evaluators meet: the n-th collective each replica executes is matched
/// with the n-th of every other member of its group.
class Rendezvous {
public:
  explicit Rendezvous(std::int64_t replicas) : calls_(static_cast<std::size_t>(replicas), 0) {}
  /// Blocks until every member of `members` (replica numbers, in group order, `replica` among
  /// them) has contributed its value to this collective; returns their values in group order.
  std::vector<HostTensor> exchange(std::int64_t replica, const std::vector<std::int64_t>& members,
                                   const HostTensor& value);

private:
  struct Meeting {
    std::vector<HostTensor> values;
    std::vector<bool> given;
    std::size_t taken = 0;
  };
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::int64_t> calls_; ///< collectives executed so far, per replica
  std::map<std::pair<std::int64_t, std::int64_t>, Meeting> meetings_; ///< by (call, first member)
};

/// Runs the main graph of `ir` once per replica, like Session::run: `h2d` maps each stream's
/// name to its array shaped as a Session takes it ([num_host_transfers, replicas, *shape],
/// dims of 1 dropped). Returns the d2h arrays in the same layout, and leaves each replica's
/// evaluator (for its variables) in `evaluators`.
std::map<std::string, HostTensor>
run_replicated(const Ir& ir, const std::map<std::string, HostTensor>& h2d,
               std::vector<std::unique_ptr<ReferenceEvaluator>>* evaluators = nullptr);

} // namespace pxl::testing
