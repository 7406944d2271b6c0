#include "worker_pool.hpp"

#include "pxl/core/error.hpp"

#include <string>
#include <system_error>

namespace pxl::emu::detail {

WorkerPool::WorkerPool(unsigned n) : n_(n == 0 ? 1 : n), start_(n_), step_(n_), done_(n_) {
  threads_.reserve(n_ - 1);
  for (unsigned w = 1; w < n_; ++w) {
    try {
      threads_.emplace_back([this, w] { loop(w); });
    } catch (const std::system_error& e) {
      // The started workers wait at the start barrier: release them with the stop flag set,
      // arriving for the workers that never started, then join them.
      stop_.store(true, std::memory_order_relaxed);
      for (unsigned absent = w; absent < n_; ++absent)
        start_.arrive_for_absent();
      start_.arrive_and_wait();
      threads_.clear();
      throw SessionError("Session: could not start worker thread " + std::to_string(w) + " of " +
                         std::to_string(n_) + " (" + e.what() + "); use fewer workers");
    }
  }
}

WorkerPool::~WorkerPool() {
  if (n_ == 1)
    return;
  stop_.store(true, std::memory_order_relaxed);
  // The start barrier releases the waiting workers, which then see the stop flag (the barrier
  // orders the store before their load).
  start_.arrive_and_wait();
  threads_.clear(); // joins
}

void WorkerPool::run(const std::function<void(unsigned)>& job) {
  if (n_ == 1) {
    job(0);
    return;
  }
  job_ = &job;
  start_.arrive_and_wait();
  job(0);
  done_.arrive_and_wait();
  job_ = nullptr;
}

void WorkerPool::loop(unsigned worker) {
  for (;;) {
    start_.arrive_and_wait();
    if (stop_.load(std::memory_order_relaxed))
      return;
    (*job_)(worker);
    done_.arrive_and_wait();
  }
}

} // namespace pxl::emu::detail
