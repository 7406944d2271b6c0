// The emulator's fixed pool of host worker threads and the counters they share work out with.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace pxl::emu::detail {

/// `n` workers: the thread that starts a run is worker 0, `n - 1` threads wait for runs. A run is
/// a sequence of phases, each a range of items numbered on pool-wide monotonic counters; any
/// worker may claim any item of the current phase, and the items of a phase are claimed only
/// once the phase before it is complete. Nobody waits for a worker to be scheduled: a worker
/// that was descheduled finds the items it missed claimed and completed, and skips ahead.
/// Not movable (workers hold its address); one run at a time.
class WorkerPool {
public:
  /// What a worker does in a run: `job(worker, base)`, `base` being the run's first item. The
  /// job may be called for a run that has already ended (a worker woken late); it then finds
  /// nothing to claim. It must read nothing that lives only as long as one run.
  using Job = std::function<void(unsigned worker, std::uint64_t base)>;

  /// Starts the `n - 1` threads; SessionError when one cannot start.
  explicit WorkerPool(unsigned n);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool() { stop(); }

  unsigned size() const { return n_; }
  /// Installs the job of every run; once, before the first run.
  void set_job(Job job) { job_ = std::move(job); }
  /// The first item of the next run. The caller is worker 0 of that run: it calls `start` with
  /// this base, then claims items like any worker (it need not wait for the others).
  std::uint64_t next_base() const { return completed_.load(std::memory_order_relaxed); }
  /// Wakes the other workers into the run starting at item `base`; the caller must have
  /// written everything the run's job reads (release).
  void start(std::uint64_t base);
  /// Joins the workers (no run may be in flight); then nothing reads the job's data. Idempotent.
  void stop();

  /// Claims the next item below `end` into `item`; false when every one is claimed.
  bool claim(std::uint64_t end, std::uint64_t& item) {
    std::uint64_t c = claimed_.load(std::memory_order_relaxed);
    while (c < end)
      if (claimed_.compare_exchange_weak(c, c + 1, std::memory_order_relaxed)) {
        item = c;
        return true;
      }
    return false;
  }
  /// Counts a claimed item of the phase ending at `end` as done. True for the phase's last
  /// one: its worker then owns the phase's completion and must `publish(end)` it.
  bool finish(std::uint64_t end) {
    return finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == end;
  }
  /// Completes the phase ending at `end`: the next phase's items may be claimed.
  void publish(std::uint64_t end) {
    completed_.store(end, std::memory_order_release);
    // Ordered after the store, so a waiter that read the old epoch sees `end` or wakes.
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
  }
  /// Ends the run whose last item is `run_end - 1` early: called instead of `publish` by the
  /// worker that completed a phase (every item claimed so far is then done, and no later one
  /// is claimed before a publish). Every phase of the run counts as complete; the next run
  /// starts at `run_end` as it would have.
  void end_run(std::uint64_t run_end) {
    claimed_.store(run_end, std::memory_order_relaxed);
    finished_.store(run_end, std::memory_order_relaxed);
    publish(run_end); // releases both stores to whoever sees the run complete
  }
  /// Whether the phase ending at `end` is complete (every earlier phase then is too).
  bool completed(std::uint64_t end) const {
    return completed_.load(std::memory_order_acquire) >= end;
  }
  /// Waits until the phase ending at `end` is complete (see wait_on).
  void wait_for(std::uint64_t end) const;

private:
  void loop(unsigned worker);
  /// Waits until `ready()`, which becomes true only with a change of `word` (notified): spins
  /// for a few microseconds (a handoff between running workers), then polls while yielding
  /// the core for 200 (a short step: another process on the core runs meanwhile, where
  /// a spinning wait would take the core from it or from a worker with work), then sleeps (a
  /// long wait: a slow step, a host stream). A thread that sleeps can take tens of
  /// microseconds to wake on a virtual machine, longer than most steps.
  template <typename Ready>
  static void wait_on(const std::atomic<std::uint32_t>& word, Ready ready);

  unsigned n_;
  Job job_;
  // Each counter in its own cache line: every worker hits them for every item.
  alignas(64) std::atomic<std::uint64_t> claimed_{0};
  alignas(64) std::atomic<std::uint64_t> finished_{0};
  alignas(64) std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint32_t> epoch_{0}; ///< bumped by every publish: what sleepers wait on
  alignas(64) std::atomic<std::uint64_t> run_base_{0};
  std::atomic<std::uint32_t> generation_{0}; ///< bumped by every run and by stop
  std::atomic<bool> stop_{false};
  std::vector<std::jthread> threads_;
};

} // namespace pxl::emu::detail
