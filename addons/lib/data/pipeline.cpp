// TensorDataset: settings on an immutable value; a view that gathers rows into one buffer.
#include "pxl/addons/data/pipeline.hpp"

#include "pxl/addons/data/shuffle.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <string>

namespace pxl::addons::data {

/// The data set's examples, shared by every TensorDataset made from them and every view.
struct TensorDataset::Examples {
  HostTensor features;
  HostTensor labels;
  std::int64_t count = 0;
  /// Bytes of one example's features and of its label.
  std::size_t feature_bytes = 0;
  std::size_t label_bytes = 0;
};

namespace {

/// `spec` with its first (example) axis replaced by `rows`, or removed when there is none.
TensorSpec element_of(const TensorSpec& spec, std::optional<std::int64_t> rows) {
  Shape shape(spec.shape.begin() + 1, spec.shape.end());
  if (rows)
    shape.insert(shape.begin(), *rows);
  return {std::move(shape), spec.dtype};
}

} // namespace

struct TensorDatasetView::State {
  std::shared_ptr<const TensorDataset::Examples> examples;
  DatasetSettings settings;
  std::uint64_t first_pass = 0;
  /// Passes to make; -1 forever.
  std::int64_t passes = 1;
  std::int64_t per_pass = 0;
  /// Examples in the visiting order of pass `order_pass`.
  std::vector<std::int64_t> order;
  std::optional<std::uint64_t> order_pass;
  LabelledBatch element;
  std::int64_t filled = -1;

  void fill(std::int64_t index) {
    const std::uint64_t pass = first_pass + static_cast<std::uint64_t>(index / per_pass);
    const std::int64_t position = index % per_pass;
    if (order_pass != pass) {
      // Without a shuffle the order is the same in every pass: made once.
      if (settings.shuffle_buffer_size) {
        order = buffered_shuffled_indices(examples->count, *settings.shuffle_buffer_size,
                                          *settings.shuffle_seed,
                                          settings.reshuffle_each_iteration ? pass : 0);
      } else if (!order_pass) {
        order.resize(static_cast<std::size_t>(examples->count));
        std::iota(order.begin(), order.end(), std::int64_t{0});
      }
      order_pass = pass;
    }
    const std::int64_t b = settings.batch_size.value_or(1);
    const std::int64_t rows = std::min(b, examples->count - position * b);
    // Only the first element and a partial last batch allocate: an unbatched element's shape
    // never changes, a batch's only in its row count.
    if (filled < 0 || (settings.batch_size && element.features.shape()[0] != rows)) {
      const auto leading = settings.batch_size ? std::optional(rows) : std::nullopt;
      element = LabelledBatch{HostTensor(element_of(examples->features.spec(), leading)),
                              HostTensor(element_of(examples->labels.spec(), leading))};
    }
    const std::byte* features_in = examples->features.bytes().data();
    const std::byte* labels_in = examples->labels.bytes().data();
    std::byte* features_out = element.features.bytes().data();
    std::byte* labels_out = element.labels.bytes().data();
    const std::size_t fb = examples->feature_bytes, lb = examples->label_bytes;
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto example =
          static_cast<std::size_t>(order[static_cast<std::size_t>(position * b + r)]);
      const auto slot = static_cast<std::size_t>(r);
      std::memcpy(features_out + slot * fb, features_in + example * fb, fb);
      std::memcpy(labels_out + slot * lb, labels_in + example * lb, lb);
    }
    filled = index;
  }
};

const LabelledBatch& TensorDatasetView::Cursor::read() const {
  if (state_->filled != index_)
    state_->fill(index_);
  return state_->element;
}

bool TensorDatasetView::Cursor::equal(ranges::default_sentinel_t) const {
  if (state_ == nullptr || state_->per_pass == 0)
    return true;
  return state_->passes >= 0 && index_ / state_->per_pass >= state_->passes;
}

TensorDataset TensorDataset::from_tensor_slices(HostTensor features, HostTensor labels) {
  if (features.rank() < 1 || labels.rank() < 1 || features.shape()[0] != labels.shape()[0])
    throw ShapeError("TensorDataset::from_tensor_slices: expected features [N, ...] and labels "
                     "[N, ...] with the examples along their first axis, found features " +
                     to_string(features.spec()) + " and labels " + to_string(labels.spec()));
  auto examples = std::make_shared<Examples>();
  examples->count = features.shape()[0];
  examples->feature_bytes =
      static_cast<std::size_t>(nbytes(std::span(features.shape()).subspan(1), features.dtype()));
  examples->label_bytes =
      static_cast<std::size_t>(nbytes(std::span(labels.shape()).subspan(1), labels.dtype()));
  examples->features = std::move(features);
  examples->labels = std::move(labels);
  return TensorDataset(std::move(examples), {});
}

TensorDataset TensorDataset::shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed,
                                     bool reshuffle_each_iteration) const {
  if (buffer_size < 1)
    throw ValueError("TensorDataset::shuffle: the buffer size must be at least 1, found " +
                     std::to_string(buffer_size) + "; pass size() (" + std::to_string(size()) +
                     ") for a full shuffle");
  DatasetSettings s = settings_;
  s.shuffle_buffer_size = buffer_size;
  if (!seed) {
    std::random_device entropy;
    seed = (std::uint64_t{entropy()} << 32) | entropy();
  }
  s.shuffle_seed = seed;
  s.reshuffle_each_iteration = reshuffle_each_iteration;
  return TensorDataset(examples_, s);
}

TensorDataset TensorDataset::batch(std::int64_t size, bool drop_remainder) const {
  if (size < 1)
    throw ValueError("TensorDataset::batch: the batch size must be at least 1, found " +
                     std::to_string(size));
  DatasetSettings s = settings_;
  s.batch_size = size;
  s.drop_remainder = drop_remainder;
  return TensorDataset(examples_, s);
}

TensorDataset TensorDataset::repeat(std::int64_t count) const {
  if (count < -1)
    throw ValueError("TensorDataset::repeat: the count must be -1 (forever) or at least 0, found " +
                     std::to_string(count));
  DatasetSettings s = settings_;
  s.repeat_count = count;
  return TensorDataset(examples_, s);
}

TensorDataset TensorDataset::prefetch(std::int64_t depth) const {
  if (depth < 0)
    throw ValueError("TensorDataset::prefetch: the depth must be at least 0, found " +
                     std::to_string(depth));
  DatasetSettings s = settings_;
  s.prefetch_depth = depth;
  return TensorDataset(examples_, s);
}

std::int64_t TensorDataset::size() const { return examples_->count; }

std::int64_t TensorDataset::batches_per_epoch() const {
  const std::int64_t n = size();
  if (!settings_.batch_size)
    return n;
  const std::int64_t b = *settings_.batch_size;
  return settings_.drop_remainder ? n / b : (n + b - 1) / b;
}

std::int64_t TensorDataset::cardinality() const {
  const std::int64_t per_pass = batches_per_epoch();
  if (settings_.repeat_count < 0)
    return per_pass == 0 ? 0 : -1;
  return per_pass * settings_.repeat_count;
}

LabelledBatchSpec TensorDataset::element_spec() const {
  return {element_of(examples_->features.spec(), settings_.batch_size),
          element_of(examples_->labels.spec(), settings_.batch_size)};
}

TensorDatasetView TensorDataset::epoch(std::uint64_t e) const { return passes(e, 1); }

TensorDatasetView TensorDataset::elements() const { return passes(0, settings_.repeat_count); }

TensorDatasetView TensorDataset::passes(std::uint64_t first, std::int64_t count) const {
  auto state = std::make_shared<TensorDatasetView::State>();
  state->examples = examples_;
  state->settings = settings_;
  state->first_pass = first;
  state->passes = count;
  state->per_pass = batches_per_epoch();
  return TensorDatasetView(std::move(state));
}

} // namespace pxl::addons::data
