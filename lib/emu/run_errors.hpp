// RunErrors: what a kernel found wrong while a run went on.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace pxl::emu::detail {

/// The first error the kernels of a run met in the data they were given (a remote buffer
/// offset out of range): a kernel records it and goes on without the bad access, so the run
/// ends normally (every worker walks every phase), and the Engine throws it afterwards.
class RunErrors {
public:
  void record(std::string message) {
    std::lock_guard lock(mutex_);
    if (!first_)
      first_ = std::move(message);
    any_.store(true, std::memory_order_relaxed);
  }
  /// The first error since the last call, if any.
  std::optional<std::string> take() {
    if (!any_.load(std::memory_order_relaxed))
      return std::nullopt;
    std::lock_guard lock(mutex_);
    any_.store(false, std::memory_order_relaxed);
    return std::exchange(first_, std::nullopt);
  }

private:
  std::mutex mutex_;
  std::optional<std::string> first_;
  std::atomic<bool> any_{false};
};

} // namespace pxl::emu::detail
