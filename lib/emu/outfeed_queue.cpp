// pxl::OutfeedQueue: a d2h stream's elements waiting to be polled.
#include "pxl/session.hpp"

#include "pxl/core/error.hpp"

namespace pxl {

std::optional<HostTensor> OutfeedQueue::try_pop() {
  std::optional<HostTensor> r;
  {
    std::lock_guard lock(mutex_);
    if (elements_.empty())
      return r;
    r.emplace(std::move(elements_.front()));
    elements_.pop_front();
  }
  changed_.notify_all();
  return r;
}

HostTensor OutfeedQueue::pop() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !elements_.empty() || closed_; });
  if (elements_.empty())
    throw SessionError("OutfeedQueue::pop: the queue is empty and closed (its session was "
                       "destroyed or its stream bound to another consumer), so no element "
                       "will arrive; use try_pop to poll");
  HostTensor r = std::move(elements_.front());
  elements_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return r;
}

std::size_t OutfeedQueue::size() const {
  std::lock_guard lock(mutex_);
  return elements_.size();
}

bool OutfeedQueue::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

void OutfeedQueue::push(const HostTensor& element) {
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return elements_.size() < capacity_ || closed_; });
    if (closed_)
      return;
    elements_.push_back(element);
  }
  changed_.notify_all();
}

void OutfeedQueue::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

} // namespace pxl
