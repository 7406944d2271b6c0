// Random numbers from explicit uint32[2] seeds (counter-based: independent of thread count).
#pragma once

#include "pxl/ir/tensor.hpp"

#include <vector>

namespace pxl::ops {

Tensor random_uniform(const Tensor& seed, Shape shape, double low = 0.0, double high = 1.0,
                      DType dtype = float32);
Tensor random_normal(const Tensor& seed, Shape shape, double mean = 0.0, double stddev = 1.0,
                     DType dtype = float32);
/// `n` new seeds derived from `seed`, for chaining: `auto s = split_random_seed(seed);`.
std::vector<Tensor> split_random_seed(const Tensor& seed, std::int64_t n = 2);

} // namespace pxl::ops
