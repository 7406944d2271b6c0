#include "slot_queue.hpp"

#include <algorithm>

namespace pxl::emu::detail {

namespace {
using Clock = std::chrono::steady_clock;

/// Waits for `ready`, adding the time waited to `total`; reads the clock only when it must
/// wait, so the uncontended path costs nothing.
template <typename Ready>
void timed_wait(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Ready ready,
                std::chrono::nanoseconds& total) {
  if (ready())
    return;
  const auto start = Clock::now();
  cv.wait(lock, ready);
  total += Clock::now() - start;
}
} // namespace

SlotQueue::SlotQueue(const TensorSpec& spec, std::size_t depth, bool lazy_producer)
    : slots_(depth == 0 ? 1 : depth, HostTensor(spec)), poisoned_(slots_.size(), 0) {
  stats_.depth = slots_.size();
  if (lazy_producer)
    wake_producer_at_ = (slots_.size() + 1) / 2;
}

HostTensor* SlotQueue::begin_push() {
  std::unique_lock lock(mutex_);
  timed_wait(
      changed_, lock, [&] { return closed_ || count_ < slots_.size(); }, stats_.push_wait);
  if (closed_)
    return nullptr;
  // The slot after the filled ones is owned by the producer until end_push.
  return &slots_[(head_ + count_) % slots_.size()];
}

void SlotQueue::end_push(bool poisoned) {
  {
    std::lock_guard lock(mutex_);
    poisoned_[(head_ + count_) % slots_.size()] = poisoned ? 1 : 0;
    ++count_;
    ++stats_.pushed;
    stats_.max_occupancy = std::max(stats_.max_occupancy, count_);
  }
  changed_.notify_all();
}

HostTensor* SlotQueue::begin_pop() {
  std::unique_lock lock(mutex_);
  timed_wait(
      changed_, lock, [&] { return closed_ || count_ > 0; }, stats_.pop_wait);
  if (count_ == 0)
    return nullptr;
  return &slots_[head_];
}

void SlotQueue::end_pop() {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (poisoned_[head_] && error_)
      raised_ = true;
    head_ = (head_ + 1) % slots_.size();
    --count_;
    ++stats_.popped;
    // wait_drained waits for count_ == 0, which is also half free.
    wake = slots_.size() - count_ >= wake_producer_at_;
  }
  if (wake)
    changed_.notify_all();
}

void SlotQueue::wait_drained() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return count_ == 0; });
}

void SlotQueue::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

void SlotQueue::set_error(std::exception_ptr e, bool raise) {
  std::lock_guard lock(mutex_);
  // Keep the first error until it is raised; a later raised one replaces one already taken.
  if (!error_ || (raise && !raised_))
    error_ = std::move(e);
  raised_ = raised_ || raise;
}

std::exception_ptr SlotQueue::take_error() {
  std::lock_guard lock(mutex_);
  if (!raised_)
    return nullptr;
  raised_ = false;
  return error_;
}

SlotQueueStats SlotQueue::stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

} // namespace pxl::emu::detail
