// pxl::emu::Profile: the estimated device time of a Session's runs (PopVision's execution
// summary), from the cost model.
#pragma once

#include "pxl/emu/cost_model.hpp"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace pxl::emu {

/// Estimated cycles of one IPU, graph, op kind or op, over every execution.
struct ProfileLine {
  std::string name;
  std::int64_t executions = 0;
  StepCost cycles;
};

/// What `Session::profile()` returns: every step the runs executed, estimated by the cost
/// model, and the runs' host round trips. The lines are sorted by total cycles, largest first.
struct Profile {
  std::string target;
  double clock_hz = 1;
  std::int64_t runs = 0;
  std::int64_t steps = 0; ///< step executions (a loop body's steps once per iteration)
  StepCost total;         ///< every step, plus one host round trip per run: the work
  /// The device time the runs took: `total` less the overlap of the IPUs of a replica, whose
  /// IPU-local steps (is_ipu_local) run at the same time; any other step waits for every IPU.
  /// total.total() on one IPU.
  std::int64_t elapsed_cycles = 0;
  std::vector<ProfileLine> ipus;
  std::vector<ProfileLine> graphs;
  std::vector<ProfileLine> op_kinds; ///< by op kind; "copy" for the compiler's copies
  std::vector<ProfileLine> top_ops;  ///< the ten ops with the most cycles

  /// The elapsed device time, in seconds.
  double seconds() const { return static_cast<double>(elapsed_cycles) / clock_hz; }
  /// A printable table: the elapsed time, the work and its split (of the work), then per IPU,
  /// graph, op kind and top op.
  std::string summary() const;
  /// Every field as JSON: {"target", "clock_hz", "runs", "steps", "elapsed_cycles", "total",
  /// "ipus", "graphs", "op_kinds", "top_ops"}, each cost split into compute, exchange, sync
  /// and host cycles.
  std::string to_json() const;
  friend std::ostream& operator<<(std::ostream& os, const Profile& p) { return os << p.summary(); }
};

} // namespace pxl::emu
