// The CNN benchmark's flop count and its reference: the main job's CNN (mnist::Cnn) and Adam
// recipe trained with LibTorch, when LibTorch is installed (libtorch-dev).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace bench {

/// Flops of one training step per image of the CNN's convolutions and dense layers: forward,
/// data gradient and weight gradient of each, but for the first convolution's data gradient,
/// which neither pxl nor LibTorch computes (the images need none). 25.0 MFLOP; batch norm,
/// ReLU, pooling and Adam are left out, as in the usual model-flops count.
constexpr double cnn_flops_per_image() {
  // Multiply-adds of each forward product: output pixels × output channels × kernel × inputs.
  constexpr double conv1 = 28.0 * 28 * 32 * 9 * 1, conv2 = 14.0 * 14 * 64 * 9 * 32;
  constexpr double fc1 = 64.0 * 7 * 7 * 128, fc2 = 128.0 * 10;
  return 2 * (3 * (conv1 + conv2 + fc1 + fc2) - conv1);
}

/// Images [n, 784] float32 (normalised) and their labels [n] int32.
struct LabelledImages {
  std::span<const float> images;
  std::span<const std::int32_t> labels;
};

/// Trains the CNN in LibTorch — nn::Conv2d(1, 32, 3, padding 1, no bias), BatchNorm2d, ReLU,
/// MaxPool2d(2), the same with 64 channels, Linear(3136, 128), ReLU, Linear(128, 10), PyTorch's
/// default initialisation, cross-entropy on the logits, Adam at `learning_rate` — on `threads`
/// intra-op threads, for 5 warm-up steps and then `steps` timed steps of `batch` images taken in
/// turn from `data`. Returns the timed steps per second, or nothing when this build has no
/// LibTorch.
std::optional<double> libtorch_cnn_steps_per_second(std::int64_t batch, std::int64_t steps,
                                                    LabelledImages data, double learning_rate,
                                                    int threads);

/// Trains the CNN as above for `epochs` epochs over `train` in batches of `batch` (a partial
/// last batch dropped), shuffled afresh every epoch by torch::randperm after
/// torch::manual_seed(`seed`), and returns the accuracy on `test` after each epoch (in
/// evaluation mode: batch norm on its running statistics); nothing without LibTorch.
std::optional<std::vector<double>> libtorch_cnn_accuracy(LabelledImages train, LabelledImages test,
                                                         std::int64_t batch, int epochs,
                                                         double learning_rate, std::uint64_t seed,
                                                         int threads);

} // namespace bench
