// Random numbers from explicit uint32[2] seeds (counter-based: independent of thread count).
#pragma once

#include "pxl/ir/tensor.hpp"

#include <vector>

namespace pxl::ops {

/// Uniform in [low, high): element i is low + (high - low) * random_uniform01(seed, i), rounded
/// to `dtype`. low == high gives a constant; low > high, or a range that is not finite, is a
/// ValueError naming both values (NumPy would silently swap the ends).
Tensor random_uniform(const Tensor& seed, Shape shape, double low = 0.0, double high = 1.0,
                      DType dtype = float32);
/// Normal: element i is mean + stddev * random_standard_normal(seed, i). A mean or stddev that
/// is not finite, or stddev < 0, is a ValueError (as NumPy rejects a negative scale).
Tensor random_normal(const Tensor& seed, Shape shape, double mean = 0.0, double stddev = 1.0,
                     DType dtype = float32);
/// `n` new seeds derived from `seed`, for chaining: `auto s = split_random_seed(seed);`.
std::vector<Tensor> split_random_seed(const Tensor& seed, std::int64_t n = 2);

} // namespace pxl::ops
