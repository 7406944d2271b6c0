// What the MNIST benchmarks share: random data shaped like the data set, the MLP's flops, and
// medians.
#pragma once

#include "model.hpp"

#include "pxl/addons/data/batch.hpp"
#include "pxl/addons/data/pipeline.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace mnist::bench {

/// `n` normalised-looking random images [n, 784] float32 and random labels [n] int32, the same
/// for the same `n` (in every instance of an mpirun too).
inline pxl::addons::data::Batch random_examples(std::int64_t n) {
  std::mt19937 gen(1);
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, 9);
  pxl::addons::data::Batch out{pxl::HostTensor({n, image_size}, pxl::float32),
                               pxl::HostTensor({n}, pxl::int32)};
  for (auto& x : out.images.data<float>())
    x = pixel(gen);
  for (auto& y : out.labels.data<std::int32_t>())
    y = label(gen);
  return out;
}

/// `batches` batches of `batch` random examples, in order: made once, so that a fit over them
/// spends its time training rather than preparing data.
inline pxl::addons::data::TensorDataset random_dataset(std::int64_t batches, std::int64_t batch) {
  const pxl::addons::data::Batch examples = random_examples(batches * batch);
  return pxl::addons::data::TensorDataset::from_tensor_slices(examples.images, examples.labels)
      .batch(batch);
}

/// Matmul flops of one training step per image of the 784-512-512-512-10 MLP: forward, weight
/// gradients, and input gradients of every layer but the first (the rest is a few percent).
constexpr double mlp_flops_per_image() {
  constexpr double all = 784 * 512 + 512 * 512 + 512 * 512 + 512 * 10, first = 784 * 512;
  return 2 * (all + all + (all - first));
}

inline double median(std::vector<double> xs) {
  std::ranges::sort(xs);
  return xs[xs.size() / 2];
}

} // namespace mnist::bench
