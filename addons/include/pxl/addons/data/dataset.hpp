// pxl::addons::data::Dataset: labelled images held on the host, as read from a data set.
#pragma once

#include "pxl/core/host_tensor.hpp"

#include <cstdint>

namespace pxl::addons::data {

/// Images and their labels, one row per example: `images` is uint8 [N, ...] (raw pixel
/// values 0–255) and `labels` is uint8 [N] (class indices). The batching pipeline
/// (`batches`) reads from it without copying it.
struct Dataset {
  HostTensor images;
  HostTensor labels;

  /// N, the number of examples (0 for a default-constructed Dataset).
  std::int64_t size() const { return images.rank() == 0 ? 0 : images.shape()[0]; }
};

} // namespace pxl::addons::data
