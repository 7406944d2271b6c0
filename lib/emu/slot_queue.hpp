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
/// Errors: a producer that cannot make an element calls `fail_producer(e)` and publishes
/// poisoned elements (`end_push(true)`) until the failure is acknowledged; the error is raised
/// only when the consumer pops a poisoned element, so an element fetched ahead but never needed
/// raises nothing. `take_error` acknowledges it: the producer may then make elements again and
/// the poisoned ones still queued are dropped, so one failure fails one run. A consumer that
/// cannot take an element calls `fail_consumer(e)`, raised by the next `take_error`.
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
  /// Publishes the slot; true when the consumer has failed (fail_consumer) and the failure is
  /// not yet raised: the device stops there.
  bool end_push(bool poisoned = false);
  /// The oldest filled slot, waiting while none is; nullptr once closed and empty.
  HostTensor* begin_pop();
  /// Frees the slot; true when it was poisoned by a failure not yet raised: the device stops
  /// there.
  bool end_pop();

  /// Blocks until every pushed element has been popped and released.
  void wait_drained();
  void close();

  /// The producer could not make an element: `e` is raised when a poisoned element is popped.
  void fail_producer(std::exception_ptr e);
  /// Whether the producer's last failure is still unacknowledged (it must keep poisoning).
  bool producer_failed();
  /// The consumer could not take an element: the next take_error returns `e` (the first one).
  void fail_consumer(std::exception_ptr e);
  /// The raised error, if any, which it acknowledges (see the class comment).
  std::exception_ptr take_error();

  SlotQueueStats stats();

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<HostTensor> slots_;
  /// Per slot: 0, or the failure (1, 2, ...) whose error a poisoned element raises.
  std::vector<std::uint32_t> poisoned_;
  std::size_t head_ = 0;  ///< oldest filled slot
  std::size_t count_ = 0; ///< filled slots, including one being popped
  bool closed_ = false;
  std::size_t wake_producer_at_ = 1; ///< free slots after a pop that wake a waiting producer
  std::exception_ptr error_;
  bool raised_ = false;
  std::uint32_t failures_ = 0;     ///< producer failures so far
  std::uint32_t acknowledged_ = 0; ///< producer failures whose error a run has raised
  SlotQueueStats stats_;
};

} // namespace pxl::emu::detail
