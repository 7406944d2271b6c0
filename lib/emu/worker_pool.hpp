// The emulator's fixed pool of host worker threads, stepping through a plan in lockstep.
#pragma once

#include "spin_barrier.hpp"

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace pxl::emu::detail {

/// `n` workers: the thread calling `run` is worker 0, `n - 1` threads wait for jobs. Not
/// movable (workers hold its address); one `run` at a time.
class WorkerPool {
public:
  explicit WorkerPool(unsigned n);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();

  unsigned size() const { return n_; }
  /// Calls `job(worker)` on every worker and returns when all have returned.
  void run(const std::function<void(unsigned)>& job);
  /// Inside a job: waits until every worker has reached this point (a no-op for one worker).
  void barrier() {
    if (n_ > 1)
      step_.arrive_and_wait();
  }

private:
  void loop(unsigned worker);

  unsigned n_;
  SpinBarrier start_, step_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;
  std::atomic<bool> stop_{false};
  std::vector<std::jthread> threads_;
};

} // namespace pxl::emu::detail
