// The barrier between the steps of a run.
#pragma once

#include <atomic>
#include <cstdint>

namespace pxl::emu::detail {

/// A reusable barrier for `n` threads whose arrivals spin for a while before they sleep. A
/// thread that sleeps (as std::barrier's do almost at once) can take tens of microseconds to
/// wake on a virtual machine, longer than most steps of a plan; the spin covers the usual
/// wait, and sleeping after it keeps a long wait (a slow step, a host stream) from burning a
/// core.
class SpinBarrier {
public:
  explicit SpinBarrier(unsigned n) : n_(n) {}
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  void arrive_and_wait() {
    // Read before arriving: the phase cannot move on until this thread has arrived.
    const std::uint32_t phase = phase_.load(std::memory_order_acquire);
    if (arrive(phase))
      return;
    for (unsigned i = 0; i < spins; ++i) {
      if (phase_.load(std::memory_order_acquire) != phase)
        return;
      __builtin_ia32_pause();
    }
    while (phase_.load(std::memory_order_acquire) == phase)
      phase_.wait(phase, std::memory_order_acquire);
  }

  /// Arrives on behalf of a thread that will never come (one that failed to start), without
  /// waiting.
  void arrive_for_absent() { arrive(phase_.load(std::memory_order_acquire)); }

private:
  /// Counts an arrival in `phase`; the last one of the phase resets the count, moves the phase
  /// on and wakes the waiters, and returns true.
  bool arrive(std::uint32_t phase) {
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 != n_)
      return false;
    arrived_.store(0, std::memory_order_relaxed);
    phase_.store(phase + 1, std::memory_order_release); // publishes the reset too
    phase_.notify_all();
    return true;
  }

  /// About 50 µs of pauses on current x86 cores.
  static constexpr unsigned spins = 1u << 12;
  const unsigned n_;
  std::atomic<unsigned> arrived_{0};
  std::atomic<std::uint32_t> phase_{0};
};

} // namespace pxl::emu::detail
