// What the MNIST benchmarks share: random batches shaped like the data set, and medians.
#pragma once

#include "programs.hpp"

#include "pxl/addons/data/batch.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace mnist::bench {

/// `count` batches of `batch` normalised-looking random images and random labels.
inline std::vector<pxl::addons::data::Batch> random_batches(std::int64_t batch, int count) {
  std::mt19937 gen(1);
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, 9);
  std::vector<pxl::addons::data::Batch> out;
  for (int i = 0; i < count; ++i) {
    pxl::addons::data::Batch b{pxl::HostTensor({batch, image_size}, pxl::float32),
                               pxl::HostTensor({batch}, pxl::int32)};
    for (auto& x : b.images.data<float>())
      x = pixel(gen);
    for (auto& y : b.labels.data<std::int32_t>())
      y = label(gen);
    out.push_back(std::move(b));
  }
  return out;
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
