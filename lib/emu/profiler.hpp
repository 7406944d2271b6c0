// The Profiler: a StepObserver a profiling Session runs with, accumulating the cost model's
// estimates into a Profile and keeping the first steps as trace events.
#pragma once

#include "ipu_timeline.hpp"

#include "pxl/emu/profile.hpp"
#include "pxl/ir/view.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pxl::emu::detail {

class Profiler final : public StepObserver {
public:
  /// At most this many device events are kept for the trace (the first ones); the profile
  /// counts every step whatever the limit.
  static constexpr std::size_t event_limit = 200'000;

  /// `view` and `target` must outlive the profiler. A distributed session's steps are run by
  /// `instances` instances alike: the replicas it reports are one instance's, and the
  /// estimates (collectives over IPU-Links) count every instance's.
  Profiler(const IrView& view, const Target& target, std::int64_t instances = 1);

  /// Around each run: the host round trip, and the run's wall-clock interval.
  void begin_run();
  void end_run();
  void on_step(const StepInfo& info, const StepTiming& timing, std::int64_t replicas) override;

  Profile profile() const;
  /// Chrome/Perfetto trace-event JSON: a process per IPU with the estimated steps (calls,
  /// loops and branches as enclosing slices), and a host process with the runs' wall clock.
  /// IoError when the file cannot be written.
  void write_trace(const std::string& path) const;

private:
  struct Event {
    StepInfo info;
    std::int64_t start = 0; ///< device cycles since the session began
    std::int64_t cycles = 0;
    StepCost own; ///< the step's own cost (a control step's copies only)
    std::int64_t replicas = 0;
    std::size_t depth = 0;
    bool round_trip = false;
  };
  struct Run {
    double start_us = 0, end_us = 0; ///< wall clock since the profiler was made
  };
  struct Totals {
    std::int64_t executions = 0;
    StepCost cycles;
  };

  static void add(Totals& t, const StepCost& c) {
    ++t.executions;
    t.cycles += c;
  }

  const IrView& view_;
  const Target& target_;
  /// The target as each tile set sees it (by TileSet), made once rather than at every step.
  std::array<Target, 2> tile_sets_;
  std::int64_t instances_;
  std::chrono::steady_clock::time_point origin_;
  /// Device cycles so far, each IPU with its own clock.
  IpuTimeline timeline_;
  /// By depth d: the elapsed time when the latest step at depth d or less ended, i.e. when a
  /// call, loop or conditional at depth d reported now began (its own steps are all deeper).
  std::vector<std::int64_t> marks_;
  std::int64_t runs_ = 0, steps_ = 0;
  StepCost total_;
  std::vector<Totals> by_ipu_, by_graph_, by_kind_, by_op_;
  Totals copies_;
  std::vector<Event> events_;
  bool truncated_ = false;
  std::vector<Run> host_runs_;
};

/// Passes every step to the profiler, then to the run's own observer.
class ProfilingObserver final : public StepObserver {
public:
  ProfilingObserver(Profiler& profiler, StepObserver* next) : profiler_(profiler), next_(next) {}
  void on_step(const StepInfo& info, const StepTiming& timing, std::int64_t replicas) override {
    profiler_.on_step(info, timing, replicas);
    if (next_)
      next_->on_step(info, timing, replicas);
  }

private:
  Profiler& profiler_;
  StepObserver* next_;
};

} // namespace pxl::emu::detail
