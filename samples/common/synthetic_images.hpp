// Synthetic images for the lessons: something to learn without downloading a data set.
#pragma once

#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace samples {

/// Images of 28×28 N(0, 1) pixels drawn from `seed`, `batch_shape` of them (e.g. {n}, or
/// {micro_batches, batch}), with their int32 classes in `batch_shape`: an image's class is
/// the brightest of its first ten pixels.
inline std::pair<pxl::HostTensor, pxl::HostTensor> images(const pxl::Shape& batch_shape,
                                                          std::uint64_t seed) {
  pxl::Shape shape = batch_shape;
  shape.insert(shape.end(), {28, 28});
  const auto x = pxl::addons::init::normal(0.0, 1.0, shape)(pxl::float32, seed);
  std::vector<std::int32_t> y;
  const auto pixels = x.data<float>();
  for (std::int64_t i = 0; i < pxl::nelms(batch_shape); ++i) {
    std::int32_t best = 0;
    for (std::int32_t k = 1; k < 10; ++k)
      if (pixels[static_cast<std::size_t>(i * 784 + k)] >
          pixels[static_cast<std::size_t>(i * 784 + best)])
        best = k;
    y.push_back(best);
  }
  return {x, pxl::HostTensor(y, batch_shape)};
}

} // namespace samples
