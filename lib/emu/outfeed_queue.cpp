// pxl::OutfeedQueue: a d2h stream's elements waiting to be polled.
#include "pxl/session.hpp"

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
  changed_.wait(lock, [&] { return !elements_.empty(); });
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

void OutfeedQueue::push(const HostTensor& element) {
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return elements_.size() < capacity_; });
    elements_.push_back(element);
  }
  changed_.notify_all();
}

} // namespace pxl
