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

bool SlotQueue::end_push(bool poisoned) {
  bool failed = false;
  {
    std::lock_guard lock(mutex_);
    poisoned_[(head_ + count_) % slots_.size()] = poisoned ? failures_ : 0;
    ++count_;
    ++stats_.pushed;
    stats_.max_occupancy = std::max(stats_.max_occupancy, count_);
    failed = raised_;
  }
  changed_.notify_all();
  return failed;
}

HostTensor* SlotQueue::begin_pop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    timed_wait(
        changed_, lock, [&] { return closed_ || count_ > 0; }, stats_.pop_wait);
    if (count_ == 0)
      return nullptr;
    // Poisoned by a failure a run has already raised: fetched ahead, never to be used. Dropping
    // from the head keeps head_ + count_, the slot a producer may be filling, where it is.
    if (poisoned_[head_] == 0 || poisoned_[head_] > acknowledged_)
      return &slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    --count_;
    changed_.notify_all();
  }
}

bool SlotQueue::end_pop() {
  bool wake = false, poisoned = false;
  {
    std::lock_guard lock(mutex_);
    poisoned = poisoned_[head_] > acknowledged_;
    if (poisoned)
      raised_ = true;
    head_ = (head_ + 1) % slots_.size();
    --count_;
    ++stats_.popped;
    // wait_drained waits for count_ == 0, which is also half free.
    wake = slots_.size() - count_ >= wake_producer_at_;
  }
  if (wake)
    changed_.notify_all();
  return poisoned;
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

void SlotQueue::fail_producer(std::exception_ptr e) {
  std::lock_guard lock(mutex_);
  if (failures_ == acknowledged_) { // not already failing
    ++failures_;
    if (!raised_) // a consumer error waiting to be raised goes first
      error_ = std::move(e);
  }
}

bool SlotQueue::producer_failed() {
  std::lock_guard lock(mutex_);
  return failures_ != acknowledged_;
}

void SlotQueue::fail_consumer(std::exception_ptr e) {
  std::lock_guard lock(mutex_);
  if (!raised_) {
    error_ = std::move(e);
    raised_ = true;
  }
}

std::exception_ptr SlotQueue::take_error() {
  bool resumed = false;
  std::exception_ptr e;
  {
    std::lock_guard lock(mutex_);
    if (!raised_)
      return nullptr;
    raised_ = false;
    resumed = acknowledged_ != failures_;
    acknowledged_ = failures_;
    e = std::exchange(error_, nullptr);
  }
  if (resumed)
    changed_.notify_all();
  return e;
}

SlotQueueStats SlotQueue::stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

} // namespace pxl::emu::detail
