// RunErrors: what went wrong in a run, and the step where the run stopped.
#pragma once

#include "pxl/emu/step_observer.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace pxl::emu::detail {

/// A run's failure and where it stopped. A kernel that meets bad data (a remote buffer offset
/// out of range) records the error and skips the bad access; a host_load that takes the
/// element of a failed producer, a host_store whose consumer failed, a stream closed by the
/// Session's destruction and an observer that throws request a stop without a message (the
/// error is theirs). Either way the step completes on every replica and chunk, and the worker
/// that completes it (Executor) locates the stop there and ends the run: no later step runs,
/// on any replica. The Engine then throws.
class RunErrors {
public:
  /// A call, loop or conditional around the stopping step, outermost first.
  struct Frame {
    const StepInfo* step = nullptr;
    std::size_t index = 0;       ///< its step in its graph's program
    std::int64_t iteration = -1; ///< a loop's iteration (from 0); -1 otherwise
  };
  /// The step after which a run stopped.
  struct Where {
    const StepInfo* step = nullptr; ///< null: between steps (an observer in a wave)
    std::size_t index = 0;          ///< the step in its graph's program
    std::array<Frame, 8> frames{};  ///< the outermost enclosing steps
    std::size_t depth = 0;          ///< how many enclose it (frames holds at most 8)
  };
  struct Failure {
    std::optional<std::string> message; ///< a kernel's error; none when the error is elsewhere
    Where where;
  };

  /// A kernel found `message` wrong (the first is kept): the run stops after this step.
  void record(std::string message) {
    std::lock_guard lock(mutex_);
    if (!first_)
      first_ = std::move(message);
    stop_.store(true, std::memory_order_relaxed);
  }
  /// The run stops after this step; the error is raised by whoever requested it.
  void stop() { stop_.store(true, std::memory_order_relaxed); }
  /// Whether a stop was requested. A worker that has seen a step complete sees every request
  /// made in it (the pool's phase completion orders them).
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  /// Where the run stopped: set once, by the worker that completed the step.
  void locate(const Where& where) { where_ = where; }
  /// The failure of the run that has just ended, if any; clears it for the next run.
  std::optional<Failure> take() {
    if (!stop_.load(std::memory_order_relaxed))
      return std::nullopt;
    std::lock_guard lock(mutex_);
    stop_.store(false, std::memory_order_relaxed);
    return Failure{std::exchange(first_, std::nullopt), std::exchange(where_, Where{})};
  }

private:
  std::mutex mutex_;
  std::optional<std::string> first_;
  Where where_;
  std::atomic<bool> stop_{false};
};

} // namespace pxl::emu::detail
