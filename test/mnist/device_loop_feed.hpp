// The arrays one run of a device loop consumes, filled from the batching pipeline.
#pragma once

#include "model.hpp"

#include "pxl/addons/data/batch.hpp"
#include "pxl/core/host_tensor.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace mnist {

/// The [steps, batch, ...] arrays one device loop consumes, filled batch by batch (the batch
/// pipeline reuses its buffer, so each batch is copied in as it comes).
class DeviceLoopFeed {
public:
  DeviceLoopFeed(std::int64_t steps, std::int64_t batch_size)
      : steps_(steps), images_({steps, batch_size, image_size}, pxl::float32),
        labels_({steps, batch_size}, pxl::int32) {}

  /// Copies `batch` into the next slot; true when all `steps` slots are full.
  bool add(const pxl::addons::data::Batch& batch) {
    copy_into(images_, batch.images);
    copy_into(labels_, batch.labels);
    return ++filled_ == steps_;
  }
  const pxl::HostTensor& images() const { return images_; }
  const pxl::HostTensor& labels() const { return labels_; }
  void clear() { filled_ = 0; }

private:
  void copy_into(pxl::HostTensor& dst, const pxl::HostTensor& src) {
    const auto bytes = src.bytes();
    std::ranges::copy(bytes,
                      dst.bytes().begin() + filled_ * static_cast<std::ptrdiff_t>(bytes.size()));
  }
  std::int64_t steps_;
  pxl::HostTensor images_, labels_;
  std::int64_t filled_ = 0;
};

} // namespace mnist
