#include "stream_state.hpp"

#include <cstring>

namespace pxl::emu::detail {

namespace {
thread_local const void* callback_owner = nullptr;
} // namespace

const void* CallbackChannel::current_owner() { return callback_owner; }

CallbackChannel::CallbackChannel(const void* owner, const TensorSpec& spec, std::size_t depth,
                                 H2DCallback fn)
    : queue_(spec, depth, /*lazy_producer=*/true) {
  thread_ = std::thread([this, owner, spec, fn = std::move(fn)] {
    callback_owner = owner;
    while (HostTensor* slot = queue_.begin_push()) {
      // After a failure the device still gets (zeroed, poisoned) elements so that it never
      // waits forever, until the run that consumes one has raised the error; then the
      // callback is called again for the next run.
      bool poisoned = queue_.producer_failed();
      if (!poisoned) {
        try {
          fn(*slot);
          if (slot->spec() != spec)
            throw StreamError("h2d stream callback: the element must stay " + to_string(spec) +
                              ", the callback made it " + to_string(slot->spec()));
        } catch (...) {
          queue_.fail_producer(std::current_exception());
          poisoned = true;
        }
      }
      if (slot->spec() != spec)
        *slot = HostTensor(spec);
      if (poisoned)
        std::memset(slot->bytes().data(), 0, slot->nbytes());
      queue_.end_push(poisoned);
    }
  });
}

CallbackChannel::CallbackChannel(const void* owner, const TensorSpec& spec, std::size_t depth,
                                 D2HCallback fn)
    : queue_(spec, depth) {
  thread_ = std::thread([this, owner, fn = std::move(fn)] {
    callback_owner = owner;
    while (HostTensor* slot = queue_.begin_pop()) {
      try {
        fn(*slot);
      } catch (...) {
        queue_.fail_consumer(std::current_exception());
      }
      queue_.end_pop();
    }
  });
}

CallbackChannel::~CallbackChannel() {
  queue_.close();
  thread_.join();
}

} // namespace pxl::emu::detail
