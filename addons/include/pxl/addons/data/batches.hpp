// pxl::addons::data::batches: a range of shuffled, normalised batches over a Dataset.
#pragma once

#include "pxl/addons/data/batch.hpp"
#include "pxl/addons/data/dataset.hpp"

#include <range/v3/view/facade.hpp>

#include <cstdint>
#include <memory>

namespace pxl::addons::data {

/// Number of batches `batches(data, options)` yields: ⌊N / b⌋ with `drop_remainder`,
/// ⌈N / b⌉ without. Throws ValueError for a batch size below 1.
std::int64_t num_batches(const Dataset& data, const BatchOptions& options);

/// A single-pass range-v3 view of Batches over a Dataset (see `batches`). Its iterators share
/// one Batch buffer that each step refills in place, so iterating allocates nothing per
/// batch; copy a Batch out if you need to keep it past the next step. Copies of the view
/// share its state.
class BatchView : public ranges::view_facade<BatchView, ranges::finite> {
public:
  BatchView() = default;
  BatchView(const Dataset& data, BatchOptions options);

  /// The number of batches, as `num_batches` gives it.
  std::int64_t size() const;

private:
  friend ranges::range_access;
  struct State;

  /// Refers to the view's shared state; reading fills the shared Batch for `index`.
  class Cursor {
  public:
    using single_pass = std::true_type;
    Cursor() = default;
    explicit Cursor(State* state) : state_(state) {}
    Batch& read() const;
    void next() { ++index_; }
    bool equal(ranges::default_sentinel_t) const;

  private:
    State* state_ = nullptr;
    std::int64_t index_ = 0;
  };
  Cursor begin_cursor() const { return Cursor(state_.get()); }

  std::shared_ptr<State> state_;
};

/// The batches of one epoch: the examples of `data` in the order
/// `shuffled_indices(N, options.seed, options.epoch)` (or in file order without `shuffle`),
/// cut into batches of `options.batch_size`, images converted to float32 with
/// (pixel / 255 - mean) / std and labels to int32. `data` must outlive the view.
///
///     for (auto& b : batches(train, {.batch_size = 8, .seed = 42, .epoch = e}))
///       session.run({{img_stream, b.images}, {label_stream, b.labels}});
///
/// Throws DTypeError unless images and labels are uint8, ShapeError unless images are
/// [N, ...] with N labels [N], ValueError for a batch size below 1 or a std that is not
/// positive.
BatchView batches(const Dataset& data, BatchOptions options = {});
/// A temporary Dataset would die before the loop that iterates its batches.
BatchView batches(Dataset&& data, BatchOptions options = {}) = delete;

} // namespace pxl::addons::data
