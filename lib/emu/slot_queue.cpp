#include "slot_queue.hpp"

namespace pxl::emu::detail {

SlotQueue::SlotQueue(const TensorSpec& spec, std::size_t depth)
    : slots_(depth == 0 ? 1 : depth, HostTensor(spec)) {}

HostTensor* SlotQueue::begin_push() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return closed_ || count_ < slots_.size(); });
  if (closed_)
    return nullptr;
  // The slot after the filled ones is owned by the producer until end_push.
  return &slots_[(head_ + count_) % slots_.size()];
}

void SlotQueue::end_push() {
  {
    std::lock_guard lock(mutex_);
    ++count_;
  }
  changed_.notify_all();
}

HostTensor* SlotQueue::begin_pop() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return closed_ || count_ > 0; });
  if (count_ == 0)
    return nullptr;
  return &slots_[head_];
}

void SlotQueue::end_pop() {
  {
    std::lock_guard lock(mutex_);
    head_ = (head_ + 1) % slots_.size();
    --count_;
  }
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

void SlotQueue::set_error(std::exception_ptr e) {
  std::lock_guard lock(mutex_);
  if (!error_)
    error_ = std::move(e);
}

std::exception_ptr SlotQueue::take_error() {
  std::lock_guard lock(mutex_);
  return std::exchange(error_, nullptr);
}

} // namespace pxl::emu::detail
