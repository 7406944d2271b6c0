// pxl::addons::data::BatchFanOut: one pipeline of labelled batches feeding the two h2d
// streams (features and labels) of a training program's infeed.
#pragma once

#include "pxl/core/error.hpp"
#include "pxl/core/host_tensor.hpp"
#include "pxl/core/shape.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace pxl::addons::data {

/// The replicas a process feeds: `count` of `total`, from `first` (all of them in one
/// process; its own under mpirun).
struct LocalReplicas {
  std::int64_t total = 1;
  std::int64_t first = 0;
  std::int64_t count = 1;
};

/// A batch's two halves, borrowed from the pipeline that yields it.
struct BatchHalves {
  const HostTensor* features = nullptr;
  const HostTensor* labels = nullptr;
};

/// How BatchFanOut words its errors: who feeds (e.g. "Trainer::fit"), what the features are
/// called ("images"), and advice appended when a batch does not fit the streams.
struct FanOutWording {
  std::string feeder = "BatchFanOut";
  std::string features = "features";
  std::string hint;
};

/// Splits one pipeline of batches between the producers of two h2d streams, features to one
/// and labels to the other, in lockstep: element k of both streams comes from batch k, and
/// each batch is pulled from the pipeline once. Whichever producer needs batch k first pulls
/// it and keeps the other half for its partner. Each producer thread calls `fill` for its own
/// side; the pipeline is only touched under the lock.
///
/// With R replicas a batch is a global batch of R·b rows, and the device takes an element of
/// each stream per step for each replica it holds, the first's first (the Session's order for
/// a stream shared by replicas): a batch then gives an element per local replica and side,
/// replica r's being rows r·b … r·b+b−1.
///
/// Bounded: a producer runs at most its queue depth ahead of the device, and the device takes
/// every element of a run before the run ends, so one side is at most `depth` elements plus a
/// run's ahead of the other. A program that takes a step's features and labels together keeps
/// it within `depth + R`: the parts kept for each side are a ring of (depth + 2)·R tensors,
/// preallocated. A pipelined program loads the features in its first stage, micro-batches
/// before its last stage loads their labels: the ring then grows, once, to what that lead
/// needs, and runs without allocating from then on.
class BatchFanOut {
public:
  enum Side : std::size_t { features = 0, labels = 1 };
  /// The pipeline's next batch, or halves of nullptr once it has ended. The batch may be
  /// overwritten by the next call (pipelines reuse one buffer).
  using Next = std::function<BatchHalves()>;

  /// `features_spec` and `labels_spec` are a whole batch's (the global batch), which
  /// `replicas.total` divides into the streams' elements. `depth` is the queue depth of both
  /// streams; `batches_per_run` only words the errors.
  BatchFanOut(Next next, const TensorSpec& features_spec, const TensorSpec& labels_spec,
              std::int64_t depth, std::int64_t batches_per_run, LocalReplicas replicas = {},
              FanOutWording wording = {})
      : next_(std::move(next)), specs_{features_spec, labels_spec},
        batches_per_run_(batches_per_run), parts_(static_cast<std::size_t>(replicas.total)),
        first_(static_cast<std::size_t>(replicas.first)),
        local_(static_cast<std::size_t>(replicas.count)), wording_(std::move(wording)) {
    for (std::size_t s = 0; s < 2; ++s) {
      TensorSpec part = specs_[s];
      part.shape.at(0) /= replicas.total;
      rings_[s].slots.assign((static_cast<std::size_t>(depth) + 2) * local_, HostTensor(part));
    }
  }

  /// Copies `side`'s part of that side's next element into `element` (of the stream's spec).
  /// StreamError when the pipeline has ended or a batch does not fit the streams; the error
  /// sticks: either side rethrows it once the parts kept for it are used up.
  void fill(Side side, HostTensor& element) {
    std::lock_guard lock(mutex_);
    Ring& mine = rings_[side];
    if (mine.count > 0) {
      std::ranges::copy(mine.slots[mine.head].bytes(), element.bytes().begin());
      mine.head = (mine.head + 1) % mine.slots.size();
      --mine.count;
      return;
    }
    if (error_)
      std::rethrow_exception(error_);
    BatchHalves batch;
    try {
      batch = next_();
      if (batch.features == nullptr || batch.labels == nullptr)
        throw StreamError(wording_.feeder + ": the batches ended after " + std::to_string(pulled_) +
                          ", but the device needs more (each run takes " +
                          std::to_string(batches_per_run_) + " of them)");
      check(batch);
    } catch (...) {
      error_ = std::current_exception();
      throw;
    }
    ++pulled_;
    const HostTensor* halves[2] = {batch.features, batch.labels};
    copy_part(*halves[side], first_, element.bytes());
    for (std::size_t r = first_ + 1; r < first_ + local_; ++r)
      copy_part(*halves[side], r, mine.push());
    Ring& other = rings_[1 - side];
    for (std::size_t r = first_; r < first_ + local_; ++r)
      copy_part(*halves[1 - side], r, other.push());
  }

private:
  struct Ring {
    std::vector<HostTensor> slots;
    std::size_t head = 0;  ///< oldest kept part
    std::size_t count = 0; ///< parts kept
    /// The bytes of a new slot at the back; a full ring grows by a slot, its parts kept in
    /// order from the front.
    std::span<std::byte> push() {
      if (count == slots.size()) {
        std::rotate(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(head), slots.end());
        head = 0;
        slots.emplace_back(slots.front().spec());
      }
      return slots[(head + count++) % slots.size()].bytes();
    }
  };

  /// Part `r` of `parts_` equal parts of `src`'s bytes into `dst`.
  void copy_part(const HostTensor& src, std::size_t r, std::span<std::byte> dst) const {
    PXL_ASSERT(dst.size() * parts_ == src.bytes().size());
    std::ranges::copy(src.bytes().subspan(r * dst.size(), dst.size()), dst.begin());
  }

  void check(const BatchHalves& batch) const {
    if (batch.features->spec() == specs_[features] && batch.labels->spec() == specs_[labels])
      return;
    const std::string& name = wording_.features;
    throw StreamError(wording_.feeder + ": batch " + std::to_string(pulled_) + " has " + name +
                      " " + to_string(batch.features->spec()) + " and labels " +
                      to_string(batch.labels->spec()) + "; the streams need " + name + " " +
                      to_string(specs_[features]) + " and labels " + to_string(specs_[labels]) +
                      wording_.hint);
  }

  std::mutex mutex_;
  Next next_;
  std::array<TensorSpec, 2> specs_;
  std::array<Ring, 2> rings_;
  std::int64_t batches_per_run_;
  std::size_t parts_;         ///< replicas in all: each takes a part of every batch
  std::size_t first_, local_; ///< the replicas fed here
  FanOutWording wording_;
  std::int64_t pulled_ = 0; ///< batches taken from the pipeline
  std::exception_ptr error_;
};

} // namespace pxl::addons::data
