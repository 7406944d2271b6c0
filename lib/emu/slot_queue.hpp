// A bounded queue of preallocated tensor slots between a host thread and the device.
#pragma once

#include "pxl/core/host_tensor.hpp"

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

namespace pxl::emu::detail {

/// Single producer, single consumer ring of `depth` tensors of one spec. The producer fills
/// the slot `begin_push` returns and publishes it with `end_push`; the consumer reads the slot
/// `begin_pop` returns and frees it with `end_pop`. Both sides block instead of dropping or
/// overwriting (back-pressure). After `close`, pushes fail and pops drain what is left.
class SlotQueue {
public:
  SlotQueue(const TensorSpec& spec, std::size_t depth);

  /// A free slot to fill, waiting while none is free; nullptr once closed.
  HostTensor* begin_push();
  void end_push();
  /// The oldest filled slot, waiting while none is; nullptr once closed and empty.
  HostTensor* begin_pop();
  void end_pop();

  /// Blocks until every pushed element has been popped and released.
  void wait_drained();
  void close();

  /// An error raised by the producer side, handed to the consumer side.
  void set_error(std::exception_ptr e);
  std::exception_ptr take_error();

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<HostTensor> slots_;
  std::size_t head_ = 0;  ///< oldest filled slot
  std::size_t count_ = 0; ///< filled slots, including one being popped
  bool closed_ = false;
  std::exception_ptr error_;
};

} // namespace pxl::emu::detail
