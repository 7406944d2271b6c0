// A bounded queue of preallocated tensor slots between a host thread and the device.
#pragma once

#include "pxl/core/host_tensor.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

namespace pxl::emu::detail {

/// What a SlotQueue has seen since it was made: for the statistics of Session::feed_stats.
struct SlotQueueStats {
  std::int64_t pushed = 0;
  std::int64_t popped = 0;
  std::chrono::nanoseconds push_wait{0}; ///< time begin_push waited for a free slot
  std::chrono::nanoseconds pop_wait{0};  ///< time begin_pop waited for a filled slot
  std::size_t max_occupancy = 0;         ///< most filled slots at once
  std::size_t depth = 0;
};

/// Single producer, single consumer ring of `depth` tensors of one spec. The producer fills
/// the slot `begin_push` returns and publishes it with `end_push`; the consumer reads the slot
/// `begin_pop` returns and frees it with `end_pop`. Both sides block instead of dropping or
/// overwriting (back-pressure). After `close`, pushes fail and pops drain what is left.
///
/// Errors: a producer that cannot make an element publishes a poisoned one
/// (`end_push(true)`) after `set_error(e, false)`; the error is raised only when the consumer
/// pops a poisoned element, so an element fetched ahead but never needed raises nothing.
class SlotQueue {
public:
  /// `lazy_producer`: the producer is a host thread that may be woken in batches, once half
  /// the slots are free, instead of after every pop (each wake costs the popping device a
  /// system call and the host a context switch). Safe because the device only waits on an
  /// empty queue, and an empty queue is at least half free. Consumers are always woken at
  /// once: a host consumer may be what some producer waits for.
  SlotQueue(const TensorSpec& spec, std::size_t depth, bool lazy_producer = false);

  /// A free slot to fill, waiting while none is free; nullptr once closed.
  HostTensor* begin_push();
  void end_push(bool poisoned = false);
  /// The oldest filled slot, waiting while none is; nullptr once closed and empty.
  HostTensor* begin_pop();
  void end_pop();

  /// Blocks until every pushed element has been popped and released.
  void wait_drained();
  void close();

  /// Records an error (the first one until it is raised and taken); `raise` makes the next
  /// take_error return it, otherwise it waits for a poisoned element to be popped.
  void set_error(std::exception_ptr e, bool raise = true);
  /// The raised error, if any; it stays recorded so that later poisoned elements raise it again.
  std::exception_ptr take_error();

  SlotQueueStats stats();

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<HostTensor> slots_;
  std::vector<char> poisoned_; ///< per slot
  std::size_t head_ = 0;       ///< oldest filled slot
  std::size_t count_ = 0;      ///< filled slots, including one being popped
  bool closed_ = false;
  std::size_t wake_producer_at_ = 1; ///< free slots after a pop that wake a waiting producer
  std::exception_ptr error_;
  bool raised_ = false;
  SlotQueueStats stats_;
};

} // namespace pxl::emu::detail
