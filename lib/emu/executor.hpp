// The Executor: steps every replica through a Program in lockstep on the worker pool.
#pragma once

#include "program.hpp"
#include "replica.hpp"
#include "run_errors.hpp"
#include "worker_pool.hpp"

#include "pxl/emu/step_observer.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <vector>

namespace pxl::emu::detail {

/// How many chunks a step's work is cut into at most on `workers` workers: the number of
/// workers kernels are compiled for (CompileContext::num_workers). Several per worker, so
/// that a worker another process keeps off its core holds up at most one small chunk while
/// the others take the rest; exactly one for one worker, which then runs each step whole.
constexpr unsigned max_chunks(unsigned workers) { return workers > 1 ? 4 * workers : 1; }

/// A maximal run of consecutive IPU-local steps of a graph program (is_ipu_local). Its phase j
/// runs the j-th step of each IPU that has one in the run, so the IPUs of a replica work at
/// the same time; on one IPU, phase j is step begin + j.
struct Wave {
  std::size_t begin = 0, end = 0; ///< its steps [begin, end) of the graph program
  std::uint32_t phases = 0;       ///< the most steps one IPU has in it
};

/// A graph program cut into waves, fixed when the Executor is made.
struct GraphWaves {
  std::vector<Wave> waves; ///< in program order; every other step runs alone between them
  /// Over each wave's range [begin, end): its steps phase by phase, each phase's in program
  /// order. Elsewhere: the step itself.
  std::vector<std::size_t> order;
  std::vector<std::uint32_t> phase; ///< by step of a wave: the phase it runs in
};

/// Runs the main graph's program on every replica at once. Each step is a phase of items, one
/// per replica and chunk (a kernel called as chunk c of C, C <= max_chunks: results do not
/// depend on the split); a worker claims any item, and runs the first not yet run of its own
/// share of the phase if one is left (the same part of each step's data, which so stays on
/// its core), else another's; no item of a phase is claimed
/// before the phase before it is complete, so all replicas finish step i before any starts
/// step i+1. A step may therefore read a peer replica's buffers (collectives), and streams
/// see elements step-major. Within a wave, one phase holds a step of each IPU instead: they
/// touch different memory. A step with work for the whole instance (BoundStep::before: a
/// distributed collective's exchange with the other instances) gets a phase of one item
/// first. Calls and loops are stepped here, their callees in lockstep too;
/// so are both branches of a conditional, each replica skipping the items of the branch its
/// condition did not choose.
///
/// A run stops early when `errors` asks it to (RunErrors): the worker that completes the
/// step in which the stop was requested locates it and ends the run in the pool at once, so
/// no replica runs a later step, and none waits in a collective for another.
class Executor {
public:
  /// Installs itself as `pool`'s job; `program`, `replicas` and `errors` must outlive it.
  Executor(WorkerPool& pool, const Program& program,
           std::span<const std::unique_ptr<Replica>> replicas, RunErrors& errors);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  /// Stops the pool: no worker reads the program after this.
  ~Executor() { pool_.stop(); }

  /// One run; `observer` (may be null) sees every step, on whichever worker completes it.
  void run(StepObserver* observer);

private:
  class Walk;
  friend class Walk;

  WorkerPool& pool_;
  const Program& program_;
  std::span<const std::unique_ptr<Replica>> replicas_;
  RunErrors& errors_;
  unsigned max_chunks_;
  std::uint64_t items_per_run_ = 0; ///< every phase's items, fixed by the program
  /// By item of the current phase: the end of the last phase that picked it (Walk::pick).
  std::unique_ptr<std::atomic<std::uint64_t>[]> picked_;
  std::vector<GraphWaves> waves_; ///< by graph index; empty for graphs without a program
  /// A call, loop or conditional a worker's walk is inside: step `i` of `g`, a loop's
  /// iteration (-1 otherwise), and how many enclosing branches (Walk::guards_) are outside it.
  struct Open {
    const GraphProgram* g = nullptr;
    std::size_t i = 0;
    std::int64_t iteration = -1;
    std::size_t guards = 0;
  };
  /// By worker: its walk's stack of Open, as deep as the program nests (no allocation in runs).
  std::vector<std::vector<Open>> open_;
  /// By call depth and phase of the wave being run there (observed runs only): when the phase
  /// started and completed; [0] for a step run alone.
  std::vector<std::vector<StepTiming>> timings_;
  /// The current run's observer, read only by workers that complete a phase of that run.
  std::atomic<StepObserver*> observer_{nullptr};
  /// What the observer threw in the current run (written by the reporting worker).
  std::exception_ptr observer_error_;
};

} // namespace pxl::emu::detail
