// The transformer benchmark's model shape and flop count, and its reference: the same
// GPT-style decoder and Adam recipe trained with LibTorch, when LibTorch is installed.
#pragma once

#include <cstdint>
#include <optional>

namespace bench {

/// A GPT-style decoder: token and position embeddings, two pre-LayerNorm blocks of causal
/// self-attention (`heads` heads) and a 4x GELU (tanh) MLP, a final LayerNorm and a head tied
/// to the token embedding; cross-entropy over every position, Adam (lr 3e-3).
struct GptShape {
  std::int64_t batch = 16;
  std::int64_t context = 32; ///< sequence length
  std::int64_t width = 64;   ///< d_model
  std::int64_t heads = 4;
  std::int64_t vocabulary = 256;
  static constexpr std::int64_t blocks = 2;
};

/// Matmul flops of one training step: the forward products (the four projections of each
/// block, the attention's scores and mix at full T x T, the tied head) and twice as many for
/// their gradients, which every product needs with respect to both operands. Element-wise
/// work, layer norms, softmax and Adam are left out, as in the usual model-flops count.
constexpr double gpt_flops_per_step(const GptShape& s) {
  const double tokens = static_cast<double>(s.batch * s.context);
  const auto d = static_cast<double>(s.width);
  const double projections = 2 * tokens * d * (3 * d + d + 4 * d + 4 * d);
  const double attention = 2 * 2 * tokens * static_cast<double>(s.context) * d;
  const double head = 2 * tokens * d * static_cast<double>(s.vocabulary);
  return 3 * (GptShape::blocks * (projections + attention) + head);
}

/// Trains the model in LibTorch for `steps` steps (after a warm-up) on random tokens with
/// `threads` intra-op threads; returns steps/s, or nothing when this build has no LibTorch.
std::optional<double> libtorch_gpt_steps_per_second(const GptShape& shape, std::int64_t steps,
                                                    int threads);

} // namespace bench
