#include "worker_pool.hpp"

#include "pxl/core/error.hpp"

#include <string>
#include <system_error>

namespace pxl::emu::detail {

WorkerPool::WorkerPool(unsigned n) : n_(n == 0 ? 1 : n) {
  threads_.reserve(n_ - 1);
  for (unsigned w = 1; w < n_; ++w) {
    try {
      threads_.emplace_back([this, w] { loop(w); });
    } catch (const std::system_error& e) {
      stop(); // the started workers wait for a run: they see the stop flag and return
      throw SessionError("Session: could not start worker thread " + std::to_string(w) + " of " +
                         std::to_string(n_) + " (" + e.what() + "); use fewer workers");
    }
  }
}

void WorkerPool::stop() {
  if (threads_.empty())
    return;
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release); // orders the flag before the wake
  generation_.notify_all();
  threads_.clear(); // joins
}

void WorkerPool::start(std::uint64_t base) {
  if (n_ == 1)
    return;
  // Release: a worker that reads this base (even one woken for an earlier run) sees what the
  // caller wrote for the run.
  run_base_.store(base, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
}

void WorkerPool::wait_for(std::uint64_t end) const {
  for (unsigned i = 0; i < spins; ++i) {
    if (completed(end))
      return;
    __builtin_ia32_pause();
  }
  for (;;) {
    // The epoch read before the check: a publish after it changes the epoch, so the wait
    // returns at once.
    const std::uint32_t e = epoch_.load(std::memory_order_acquire);
    if (completed(end))
      return;
    epoch_.wait(e, std::memory_order_acquire);
  }
}

void WorkerPool::loop(unsigned worker) {
  std::uint32_t seen = 0;
  for (;;) {
    std::uint32_t g = generation_.load(std::memory_order_acquire);
    for (unsigned i = 0; g == seen && i < spins; ++i) {
      __builtin_ia32_pause();
      g = generation_.load(std::memory_order_acquire);
    }
    while (g == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      g = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_relaxed))
      return;
    seen = g;
    // The base of run `g` or of a later one: either way a run this worker may join (a late
    // one finds it complete and returns).
    job_(worker, run_base_.load(std::memory_order_acquire));
  }
}

} // namespace pxl::emu::detail
