// pxl::addons::data::TensorDataset: a tf.data-style pipeline (shuffle, batch, repeat, prefetch)
// over examples held in two HostTensors.
#pragma once

#include "pxl/core/host_tensor.hpp"

#include <range/v3/view/facade.hpp>

#include <cstdint>
#include <memory>
#include <optional>

namespace pxl::addons::data {

/// One element a TensorDataset yields: after `batch(b)`, `features` [rows, ...] and `labels`
/// [rows, ...] with rows = b (fewer in a last, partial batch); before it, one example's
/// features and label without the example axis. The dtypes are the data set's own: nothing
/// is converted (the images and labels of `batches` are a different, Fashion-MNIST-specific
/// Batch).
struct LabelledBatch {
  HostTensor features;
  HostTensor labels;
};

/// The shapes and dtypes of the LabelledBatches a TensorDataset yields (TF's element_spec);
/// the first axis is the batch size, which a partial last batch has fewer rows than.
struct LabelledBatchSpec {
  TensorSpec features;
  TensorSpec labels;
  friend bool operator==(const LabelledBatchSpec&, const LabelledBatchSpec&) = default;
};

/// What the Keras-style calls of TensorDataset set; `settings()` reads them back.
struct DatasetSettings {
  /// The shuffle's buffer size (tf.data's buffer_size); none keeps the examples' order.
  std::optional<std::int64_t> shuffle_buffer_size;
  /// The shuffle's seed: the one given, or the one `shuffle` drew without one; none when not
  /// shuffled.
  std::optional<std::uint64_t> shuffle_seed;
  /// Shuffle every pass afresh (tf.data's reshuffle_each_iteration), else repeat pass 0's order.
  bool reshuffle_each_iteration = true;
  /// Examples per batch; none yields single examples.
  std::optional<std::int64_t> batch_size;
  /// Leave out the last, partial batch (true) or yield it with fewer rows (false).
  bool drop_remainder = true;
  /// Passes over the data `elements()` makes; -1 forever.
  std::int64_t repeat_count = 1;
  /// Batches a producer feeding an infeed may prepare ahead of the device (the depth of its
  /// queue); 0 for none. Carried, not acted on: iterating the data set is synchronous.
  std::int64_t prefetch_depth = 0;
};

/// A single-pass range-v3 view of the LabelledBatches of some passes over a TensorDataset
/// (see `TensorDataset::epoch` and `elements`). Its iterators share one LabelledBatch buffer
/// that each step refills in place, so iterating allocates nothing per batch (except for a
/// partial last batch); copy a batch out to keep it past the next step. The view shares the
/// data set's examples, so it may outlive the TensorDataset it came from; copies of the view
/// share its buffer.
class TensorDatasetView : public ranges::view_facade<TensorDatasetView, ranges::unknown> {
public:
  TensorDatasetView() = default;

private:
  friend class TensorDataset;
  friend ranges::range_access;
  struct State;
  explicit TensorDatasetView(std::shared_ptr<State> state) : state_(std::move(state)) {}

  class Cursor {
  public:
    using single_pass = std::true_type;
    Cursor() = default;
    explicit Cursor(State* state) : state_(state) {}
    const LabelledBatch& read() const;
    void next() { ++index_; }
    bool equal(ranges::default_sentinel_t) const;

  private:
    State* state_ = nullptr;
    /// Elements read since the view's first pass began.
    std::int64_t index_ = 0;
  };
  Cursor begin_cursor() const { return Cursor(state_.get()); }

  std::shared_ptr<State> state_;
};

/// Labelled examples as a Keras user feeds them to `fit` (tf.data.Dataset's
/// from_tensor_slices, shuffle, batch, repeat and prefetch). An immutable value: every call
/// returns a new data set and copies share the examples rather than copying them.
///
///     auto train = TensorDataset::from_tensor_slices(x_train, y_train)
///                      .shuffle(60000, /*seed=*/42).batch(32).repeat().prefetch(4);
///     for (const LabelledBatch& b : train.epoch(e))  // epoch e's 1875 batches of 32
///       session.run({{x_stream, b.features}, {y_stream, b.labels}});
///
/// The stages always apply in this order, whatever order the calls come in: shuffle the
/// examples (a fresh order every pass), cut them into batches within the pass, repeat the
/// passes. (In tf.data the order of the calls is the order of the stages; the order above is
/// what Keras on IPUs recommends, and batches never straddle passes.) Calling a method again
/// replaces its setting.
class TensorDataset {
public:
  /// Example i is (features[i], labels[i]): both have the examples along their first axis, of
  /// any dtype and any further shape. Named after tf.data's from_tensor_slices, which slices
  /// the first axis this way (its from_tensors would make one element of the whole tensors).
  /// ShapeError when either is rank 0 or their example counts differ.
  static TensorDataset from_tensor_slices(HostTensor features, HostTensor labels);

  /// tf.data's `shuffle(buffer_size, seed, reshuffle_each_iteration)`: a buffer of
  /// `buffer_size` examples is filled from the data; each example out is drawn uniformly from
  /// the buffer, and the next example of the data takes its place. Pass e visits the examples
  /// in the order `buffered_shuffled_indices(size(), buffer_size, seed, e)` (with e = 0 for
  /// every pass unless `reshuffle_each_iteration`): a buffer_size of at least size() is a full
  /// shuffle (exactly `shuffled_indices(size(), seed, e)`), a smaller one shuffles locally (as
  /// tf.data's does: `.shuffle(1000)` on 60,000 examples moves none by more than ~1000 places).
  /// Without a seed, one is drawn at random (std::random_device) here, as tf.data does without
  /// a global seed; this data set value then keeps it (`settings().shuffle_seed`).
  /// ValueError for a buffer_size below 1.
  ///
  /// Migration: the one argument used to be the seed of a full shuffle; `.shuffle(seed)`
  /// is now `.shuffle(size(), seed)`.
  TensorDataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                        bool reshuffle_each_iteration = true) const;
  /// Groups `size` consecutive examples into a batch. On IPUs the program is compiled for one
  /// shape, so keep `drop_remainder` (Keras on IPUs requires it); false yields a last batch of
  /// the size() mod `size` remaining examples. ValueError for a size below 1.
  TensorDataset batch(std::int64_t size, bool drop_remainder = true) const;
  /// `elements()` makes `count` passes over the data, forever for -1 (the default, as in
  /// tf.data); 0 makes none. ValueError below -1.
  TensorDataset repeat(std::int64_t count = -1) const;
  /// Records `depth` (DatasetSettings::prefetch_depth) for whoever feeds the batches to an
  /// infeed. ValueError for a negative depth.
  TensorDataset prefetch(std::int64_t depth) const;

  const DatasetSettings& settings() const { return settings_; }
  /// The number of examples.
  std::int64_t size() const;
  /// Elements in one pass: ⌊size / b⌋ batches with drop_remainder, ⌈size / b⌉ without, or
  /// size() single examples when not batched.
  std::int64_t batches_per_epoch() const;
  /// Elements `elements()` yields: batches_per_epoch() × the repeat count, or -1 for
  /// forever (tf.data's INFINITE_CARDINALITY; an empty pass repeated forever is 0).
  std::int64_t cardinality() const;
  /// The shapes and dtypes of one element.
  LabelledBatchSpec element_spec() const;

  /// The elements of pass `e` alone, shuffled with e mixed into the seed (unless
  /// reshuffle_each_iteration is off; the repeat count does not matter here). Feeding epoch 0, 1,
  /// 2, ... in turn gives `elements()` in order.
  TensorDatasetView epoch(std::uint64_t e) const;
  /// Every element: passes 0, 1, ... one after the other, as many as the repeat count.
  TensorDatasetView elements() const;

private:
  friend class TensorDatasetView;
  struct Examples;
  TensorDataset(std::shared_ptr<const Examples> examples, DatasetSettings settings)
      : examples_(std::move(examples)), settings_(settings) {}
  TensorDatasetView passes(std::uint64_t first, std::int64_t count) const;

  std::shared_ptr<const Examples> examples_;
  DatasetSettings settings_;
};

} // namespace pxl::addons::data
