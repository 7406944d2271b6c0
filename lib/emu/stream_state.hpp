// Device-side state of one host stream: the array of the current run or a callback channel.
#pragma once

#include "slot_queue.hpp"

#include "pxl/session.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pxl::emu::detail {

/// A host thread on the far side of a SlotQueue: for an h2d stream it calls the user's
/// callback to fill elements ahead of the device; for a d2h stream it hands each stored
/// element to the user's callback. Destruction closes the queue and joins the thread (a d2h
/// channel first delivers what is queued). The thread is marked with `owner` (the Engine),
/// so that a callback calling back into its own Session is detected instead of deadlocking.
class CallbackChannel {
public:
  CallbackChannel(const void* owner, const TensorSpec& spec, std::size_t depth, H2DCallback fn);
  CallbackChannel(const void* owner, const TensorSpec& spec, std::size_t depth, D2HCallback fn);
  CallbackChannel(const CallbackChannel&) = delete;
  CallbackChannel& operator=(const CallbackChannel&) = delete;
  ~CallbackChannel();

  SlotQueue& queue() { return queue_; }
  /// The owner of the channel whose callback the calling thread runs, or null.
  static const void* current_owner();

private:
  SlotQueue queue_;
  std::thread thread_;
};

/// Each chunk of a step (CompileContext::num_workers of them; see Executor) counts the
/// stream's element position itself, in its own cache line, so a host_load needs no extra
/// synchronisation: every chunk of every host_load runs once, so they agree.
struct alignas(64) WorkerPosition {
  std::int64_t value = 0;
};

/// What every replica shares of one stream.
struct StreamState {
  std::string name;
  TensorSpec spec;
  std::size_t bytes = 0; ///< one element
  bool host_to_device = true;
  bool used = false;          ///< read by a host_load (h2d) or written by a host_store (d2h)
  std::int64_t transfers = 1; ///< elements used per replica and run: num_host_transfers
  /// Bytes from one of a replica's elements in the host array ([transfers, replicas, *shape])
  /// to its next (replicas × one element).
  std::size_t stride = 0;
  /// Set when callback-fed. Replicas run in lockstep, so elements pass through the queue
  /// step-major: step 0 of every replica, then step 1, ...
  std::unique_ptr<CallbackChannel> channel;
  /// The OutfeedQueue the channel delivers to (Session::outfeed_queue), closed when the
  /// channel is replaced or the session destroyed.
  std::weak_ptr<OutfeedQueue> outfeed;
  /// OutfeedMode::last (d2h): an array keeps one element per replica (transfers = 1, so every
  /// store overwrites it); a channel gets each replica's last element when the run ends.
  bool last = false;
};

/// One replica's side of a stream: where its elements are in this run's host array, how far
/// each worker has read or written, and its last element for OutfeedMode::last.
struct StreamPort {
  /// The replica's element 0 in the host array of the current run.
  const std::byte* in_array = nullptr;
  std::byte* out_array = nullptr;
  std::vector<WorkerPosition> position; ///< one per chunk
  HostTensor last_element;
  bool has_last = false; ///< a store filled last_element during this run

  void reset_positions() {
    for (auto& p : position)
      p.value = 0;
  }
};

} // namespace pxl::emu::detail
