// What the main job's tests share: small slices of Fashion-MNIST, the batching they train
// on, and the training loops and checks over the hand-written reference programs.
#pragma once

#include "device_loop_feed.hpp"
#include "reference_programs.hpp"

#include "pxl/addons/data/batches.hpp"
#include "pxl/addons/data/fashion_mnist.hpp"

#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

namespace mnist::test {

namespace data = pxl::addons::data;

inline const data::Dataset& train_data() {
  static const auto d =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train, 2000);
  return d;
}
inline const data::Dataset& test_data() {
  static const auto d =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::test, 1000);
  return d;
}

/// 100 images: 12 batches of 8 per epoch, so that runs of several batches leave some over.
inline const data::Dataset& small_data() {
  static const auto d =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train, 100);
  return d;
}

inline data::BatchOptions batching(std::int64_t batch_size, std::uint64_t epoch = 0) {
  return {.batch_size = batch_size, .seed = 7, .epoch = epoch, .flatten = true};
}

/// Every image of `d`, flattened and normalised, and its label: the arrays a Trainer takes.
inline data::Batch as_arrays(const data::Dataset& d) {
  return *data::batches(d, {.batch_size = d.size(), .shuffle = false, .flatten = true}).begin();
}

/// Trains one epoch and returns every step's loss.
inline std::vector<float> train_epoch(TrainingProgram& program) {
  std::vector<float> losses;
  for (auto& b : data::batches(train_data(), batching(program.options().batch_size))) {
    auto l = program.run(b.images, b.labels);
    losses.insert(losses.end(), l.begin(), l.end());
  }
  return losses;
}

/// Trains one epoch of `data` from host arrays: micro_batches_per_run() batches stacked per
/// run, ⌊batches / micro_batches_per_run()⌋ runs. Returns every micro-batch's loss.
inline std::vector<float> train_epoch_from_arrays(TrainingProgram& program,
                                                  const data::Dataset& data,
                                                  const data::BatchOptions& options) {
  DeviceLoopFeed feed(program.micro_batches_per_run(), options.batch_size);
  std::vector<float> losses;
  for (auto& b : data::batches(data, options)) {
    if (!feed.add(b))
      continue;
    const auto l = program.micro_batches_per_run() == 1 ? program.run(b.images, b.labels)
                                                        : program.run(feed.images(), feed.labels());
    losses.insert(losses.end(), l.begin(), l.end());
    feed.clear();
  }
  return losses;
}

inline float mean(std::span<const float> xs) {
  return std::accumulate(xs.begin(), xs.end(), 0.0f) / static_cast<float>(xs.size());
}

// memcmp rather than std::ranges::equal: test code compiles at -O0, where the ranges
// algorithm makes several calls per byte (a tenth of test_mnist's time under ASan).
inline bool same_bits(const pxl::HostTensor& a, const pxl::HostTensor& b) {
  return a.shape() == b.shape() && a.bytes().size() == b.bytes().size() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0;
}

/// Every (index, loss) the loss callback received, in the order it received them.
struct LossLog {
  std::vector<std::pair<std::int64_t, float>> calls;
  LossCallback callback() {
    return [this](std::int64_t index, float loss) { calls.emplace_back(index, loss); };
  }
};

} // namespace mnist::test
