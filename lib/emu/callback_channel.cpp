#include "stream_state.hpp"

#include <cstring>

namespace pxl::emu::detail {

CallbackChannel::CallbackChannel(const TensorSpec& spec, std::size_t depth, H2DCallback fn)
    : queue_(spec, depth, /*lazy_producer=*/true) {
  thread_ = std::thread([this, spec, fn = std::move(fn)] {
    bool failed = false;
    while (HostTensor* slot = queue_.begin_push()) {
      // After a failure the device still gets (zeroed, poisoned) elements so that it never
      // waits forever; a run that consumes one rethrows the error, and only such a run: an
      // element fetched ahead that no run needs raises nothing.
      if (!failed) {
        try {
          fn(*slot);
          if (slot->spec() != spec)
            throw StreamError("h2d stream callback: the element must stay " + to_string(spec) +
                              ", the callback made it " + to_string(slot->spec()));
        } catch (...) {
          queue_.set_error(std::current_exception(), false);
          failed = true;
        }
      }
      if (slot->spec() != spec)
        *slot = HostTensor(spec);
      if (failed)
        std::memset(slot->bytes().data(), 0, slot->nbytes());
      queue_.end_push(failed);
    }
  });
}

CallbackChannel::CallbackChannel(const TensorSpec& spec, std::size_t depth, D2HCallback fn)
    : queue_(spec, depth) {
  thread_ = std::thread([this, fn = std::move(fn)] {
    while (HostTensor* slot = queue_.begin_pop()) {
      try {
        fn(*slot);
      } catch (...) {
        queue_.set_error(std::current_exception());
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
