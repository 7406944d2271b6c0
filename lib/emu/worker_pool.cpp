#include "worker_pool.hpp"

#include "pxl/core/error.hpp"

#include <chrono>
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

template <typename Ready>
void WorkerPool::wait_on(const std::atomic<std::uint32_t>& word, Ready ready) {
  constexpr unsigned pauses = 256; // about 3 µs
  for (unsigned i = 0; i < pauses; ++i) {
    if (ready())
      return;
    __builtin_ia32_pause();
  }
  // Then yielding for 200 µs, which covers the runs of one-chunk steps (the other workers
  // wait through them) and the host's work between two runs at batch 32: 2 workers train the
  // MNIST MLP there at 1.53x 1 worker's speed, against 1.46x when the workers went to sleep
  // after 64 yields (11 µs on that machine; test/bench/contention). Sleeping costs more: the
  // wake takes tens of µs on a virtual machine. A busy machine does not notice the longer
  // poll, since a yield gives the core away.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  for (unsigned i = 1;; ++i) {
    if (ready())
      return;
    std::this_thread::yield();
    if (i % 16 == 0 && std::chrono::steady_clock::now() >= until)
      break;
  }
  for (;;) {
    // The word read before the check: a change after it makes the wait return at once.
    const std::uint32_t seen = word.load(std::memory_order_acquire);
    if (ready())
      return;
    word.wait(seen, std::memory_order_acquire);
  }
}

void WorkerPool::wait_for(std::uint64_t end) const {
  wait_on(epoch_, [this, end] { return completed(end); });
}

void WorkerPool::loop(unsigned worker) {
  std::uint32_t seen = 0;
  for (;;) {
    wait_on(generation_,
            [this, seen] { return generation_.load(std::memory_order_acquire) != seen; });
    // The generation first, the flag second: a generation that includes stop()'s increment
    // also shows its flag (acquire), and one that does not is followed by that increment,
    // which wakes the next wait. (The other order could miss both: the flag read before stop,
    // the generation after it, and the next wait would sleep forever.)
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_relaxed))
      return;
    // The base of run `seen` or of a later one: either way a run this worker may join (a late
    // one finds it complete and returns).
    job_(worker, run_base_.load(std::memory_order_acquire));
  }
}

} // namespace pxl::emu::detail
