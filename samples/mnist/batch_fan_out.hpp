// mnist::BatchFanOut: one batching pipeline feeding both h2d streams of a training step.
#pragma once

#include "pxl/addons/data/batch.hpp"
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
#include <string>
#include <utility>
#include <vector>

namespace mnist {

/// Splits one pipeline of Batches between the producers of two h2d streams, images to one and
/// labels to the other, in lockstep: element k of both streams comes from batch k, and each
/// batch is pulled from the pipeline once. Whichever producer needs batch k first pulls it and
/// keeps the other half for its partner. Each producer thread calls `fill` for its own side;
/// the pipeline is only touched under the lock.
///
/// Bounded: a producer runs at most its queue depth ahead of the device, and the device takes
/// image k and label k in the same step, so one side is never more than `depth + 1` batches
/// ahead of the other; the halves kept for the lagging side are a ring of that many
/// preallocated tensors.
class BatchFanOut {
public:
  enum Side : std::size_t { images = 0, labels = 1 };
  /// The pipeline's next batch, or nullptr once it has ended. The batch may be overwritten by
  /// the next call (BatchView reuses one buffer).
  using Next = std::function<const pxl::addons::data::Batch*()>;

  /// `depth` is the queue depth of both streams; `batches_per_run` only words the errors.
  BatchFanOut(Next next, const pxl::TensorSpec& images_spec, const pxl::TensorSpec& labels_spec,
              std::int64_t depth, std::int64_t batches_per_run)
      : next_(std::move(next)), specs_{images_spec, labels_spec},
        batches_per_run_(batches_per_run) {
    for (std::size_t s = 0; s < 2; ++s)
      rings_[s].slots.assign(static_cast<std::size_t>(depth) + 1, pxl::HostTensor(specs_[s]));
  }

  /// Copies `side`'s half of that side's next batch into `element` (of the stream's spec).
  /// StreamError when the pipeline has ended or a batch does not fit the streams; the error
  /// sticks: either side rethrows it once the halves kept for it are used up.
  void fill(Side side, pxl::HostTensor& element) {
    std::lock_guard lock(mutex_);
    Ring& mine = rings_[side];
    if (mine.count > 0) {
      copy(mine.slots[mine.head], element);
      mine.head = (mine.head + 1) % mine.slots.size();
      --mine.count;
      return;
    }
    if (error_)
      std::rethrow_exception(error_);
    const pxl::addons::data::Batch* batch = nullptr;
    try {
      batch = next_();
      if (batch == nullptr)
        throw pxl::StreamError("mnist TrainingProgram::feed_from: the batches ended after " +
                               std::to_string(pulled_) +
                               ", but the device needs more (each run takes "
                               "micro_batches_per_run() = " +
                               std::to_string(batches_per_run_) + " of them)");
      check(*batch);
    } catch (...) {
      error_ = std::current_exception();
      throw;
    }
    ++pulled_;
    const pxl::HostTensor* halves[2] = {&batch->images, &batch->labels};
    copy(*halves[side], element);
    Ring& other = rings_[1 - side];
    PXL_ASSERT(other.count < other.slots.size());
    copy(*halves[1 - side], other.slots[(other.head + other.count) % other.slots.size()]);
    ++other.count;
  }

private:
  struct Ring {
    std::vector<pxl::HostTensor> slots;
    std::size_t head = 0;  ///< oldest kept half
    std::size_t count = 0; ///< halves kept
  };

  static void copy(const pxl::HostTensor& src, pxl::HostTensor& dst) {
    std::ranges::copy(src.bytes(), dst.bytes().begin());
  }

  void check(const pxl::addons::data::Batch& batch) const {
    if (batch.images.spec() == specs_[images] && batch.labels.spec() == specs_[labels])
      return;
    throw pxl::StreamError(
        "mnist TrainingProgram::feed_from: batch " + std::to_string(pulled_) + " has images " +
        to_string(batch.images.spec()) + " and labels " + to_string(batch.labels.spec()) +
        "; the streams need images " + to_string(specs_[images]) + " and labels " +
        to_string(specs_[labels]) +
        " (batch with .batch_size = " + std::to_string(specs_[labels].shape.at(0)) +
        ", .drop_remainder = true and .flatten = true)");
  }

  std::mutex mutex_;
  Next next_;
  std::array<pxl::TensorSpec, 2> specs_;
  std::array<Ring, 2> rings_;
  std::int64_t batches_per_run_;
  std::int64_t pulled_ = 0; ///< batches taken from the pipeline
  std::exception_ptr error_;
};

} // namespace mnist
