// The batching view: one permutation per epoch, one Batch buffer refilled in place.
#include "pxl/addons/data/batches.hpp"

#include "pxl/addons/data/shuffle.hpp"

#include <range/v3/algorithm/copy.hpp>
#include <range/v3/algorithm/transform.hpp>
#include <range/v3/view/drop.hpp>
#include <range/v3/view/enumerate.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/take.hpp>

#include <array>
#include <string>

namespace pxl::addons::data {
namespace {

void check_batch_size(const BatchOptions& options) {
  if (options.batch_size < 1)
    throw ValueError("batches: batch_size must be at least 1, found " +
                     std::to_string(options.batch_size));
}

} // namespace

std::int64_t num_batches(const Dataset& data, const BatchOptions& options) {
  check_batch_size(options);
  const std::int64_t n = data.size();
  return options.drop_remainder ? n / options.batch_size
                                : (n + options.batch_size - 1) / options.batch_size;
}

struct BatchView::State {
  const Dataset* data = nullptr;
  BatchOptions options;
  std::int64_t count = 0;
  /// Examples in visiting order.
  std::vector<std::int64_t> order;
  /// Shape of one example's image in the batch ([28, 28], or [784] when flattened).
  Shape image_shape;
  std::int64_t image_elems = 0;
  /// Every normalised value a pixel can take: a batch is then a gather and a table look-up.
  std::array<float, 256> normalised{};
  Batch batch;
  std::int64_t filled = -1;

  void fill(std::int64_t index) {
    const std::int64_t b = options.batch_size;
    const std::int64_t rows = std::min(b, data->size() - index * b);
    if (batch.labels.rank() != 1 || batch.labels.shape()[0] != rows) {
      // Only the first batch and a short last one allocate.
      Shape shape{rows};
      shape.insert(shape.end(), image_shape.begin(), image_shape.end());
      batch = Batch{HostTensor(shape, float32), HostTensor(Shape{rows}, int32)};
    }
    const auto pixels = data->images.data<std::uint8_t>();
    const auto labels = data->labels.data<std::uint8_t>();
    const auto images_out = batch.images.data<float>();
    const auto labels_out = batch.labels.data<std::int32_t>();
    const auto elems = static_cast<std::size_t>(image_elems);
    for (auto [slot, example] : order | ranges::views::drop(index * b) | ranges::views::take(rows) |
                                    ranges::views::enumerate) {
      const auto src = pixels.subspan(static_cast<std::size_t>(example) * elems, elems);
      ranges::transform(src, images_out.subspan(slot * elems, elems).begin(),
                        [this](std::uint8_t p) { return normalised[p]; });
      labels_out[slot] = labels[static_cast<std::size_t>(example)];
    }
    filled = index;
  }
};

BatchView::BatchView(const Dataset& data, BatchOptions options)
    : state_(std::make_shared<State>()) {
  check_batch_size(options);
  if (data.images.dtype() != uint8 || data.labels.dtype() != uint8)
    throw DTypeError("batches: expected uint8 images and labels, found images " +
                     to_string(data.images.spec()) + " and labels " +
                     to_string(data.labels.spec()));
  if (data.images.rank() < 1 || data.labels.rank() != 1 ||
      data.labels.shape()[0] != data.images.shape()[0])
    throw ShapeError("batches: expected images [N, ...] and labels [N], found images " +
                     to_string(data.images.shape()) + " and labels " +
                     to_string(data.labels.shape()));
  if (!(options.std > 0.0f))
    throw ValueError("batches: std must be positive, found " + std::to_string(options.std));

  State& s = *state_;
  s.data = &data;
  s.options = options;
  s.count = num_batches(data, options);
  const Shape& shape = data.images.shape();
  s.image_shape.assign(shape.begin() + 1, shape.end());
  s.image_elems = nelms(s.image_shape);
  if (options.flatten)
    s.image_shape = {s.image_elems};
  if (options.shuffle) {
    s.order = shuffled_indices(data.size(), options.seed, options.epoch);
  } else {
    s.order.resize(static_cast<std::size_t>(data.size()));
    ranges::copy(ranges::views::iota(std::int64_t{0}, data.size()), s.order.begin());
  }
  // In double, then rounded once to float32: every pixel value gets the closest float to
  // the exact (p / 255 - mean) / std.
  for (int p = 0; p < 256; ++p)
    s.normalised[static_cast<std::size_t>(p)] =
        static_cast<float>((p / 255.0 - double{options.mean}) / double{options.std});
}

std::int64_t BatchView::size() const { return state_ ? state_->count : 0; }

Batch& BatchView::Cursor::read() const {
  if (state_->filled != index_)
    state_->fill(index_);
  return state_->batch;
}

bool BatchView::Cursor::equal(ranges::default_sentinel_t) const {
  return state_ == nullptr || index_ >= state_->count;
}

BatchView batches(const Dataset& data, BatchOptions options) { return BatchView(data, options); }

} // namespace pxl::addons::data
