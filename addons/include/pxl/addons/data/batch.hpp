// pxl::addons::data::Batch and BatchOptions: what the batching pipeline yields and its knobs.
#pragma once

#include "pxl/addons/data/fashion_mnist.hpp"
#include "pxl/core/host_tensor.hpp"

#include <cstdint>

namespace pxl::addons::data {

/// One batch ready to feed to host streams: `images` float32 [b, ...] (or [b, features] when
/// flattened), normalised as (pixel / 255 - mean) / std, and `labels` int32 [b].
struct Batch {
  HostTensor images;
  HostTensor labels;
};

/// How `batches` cuts a Dataset into batches. Defaults suit Fashion-MNIST.
struct BatchOptions {
  /// Examples per batch; at least 1.
  std::int64_t batch_size = 32;
  /// The shuffle's seed; the same seed and epoch give the same batches everywhere.
  std::uint64_t seed = 0;
  /// Mixed into the seed so that each epoch visits the examples in its own order.
  std::uint64_t epoch = 0;
  /// false keeps the data set's order.
  bool shuffle = true;
  /// Leave out the last, smaller batch (true), or yield it with fewer rows (false).
  bool drop_remainder = true;
  /// Images as [b, features] (e.g. [b, 784]) rather than [b, 28, 28].
  bool flatten = false;
  /// Normalisation applied to pixel / 255; std must be positive.
  float mean = fashion_mnist_mean;
  float std = fashion_mnist_std;
};

} // namespace pxl::addons::data
