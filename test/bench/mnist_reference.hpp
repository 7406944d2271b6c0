// The MNIST benchmark's reference: the same model and SGD recipe trained with LibTorch, when
// LibTorch is installed (libtorch-dev).
#pragma once

#include <cstdint>
#include <span>

namespace bench {

/// Whether this build has the LibTorch reference.
bool have_libtorch();
/// Trains PopXL's MNIST Net (784-512-512-512-10, tanh-gelu, weights normal(0, 0.02), zero
/// biases) with SGD for `steps` steps of `batch` images taken in turn from `images`
/// ([n, 784] float32) and `labels` ([n] int32), on `threads` threads; returns steps/s.
double libtorch_steps_per_second(std::int64_t batch, std::int64_t steps,
                                 std::span<const float> images,
                                 std::span<const std::int32_t> labels, double learning_rate,
                                 int threads);

} // namespace bench
