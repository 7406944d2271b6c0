// The transformer benchmark's reference in LibTorch: the model of transformer.cpp, layer for
// layer, trained with torch::optim::Adam on random tokens.
#include "timing.hpp"
#include "transformer_reference.hpp"

#include <torch/torch.h>

#include <cmath>
#include <utility>
#include <vector>

namespace bench {
namespace {

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(const GptShape& s)
      : shape(s),
        ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.width})))),
        qkv(register_module("qkv", torch::nn::Linear(s.width, 3 * s.width))),
        proj(register_module("proj", torch::nn::Linear(s.width, s.width))),
        ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.width})))),
        expand(register_module("expand", torch::nn::Linear(s.width, 4 * s.width))),
        contract(register_module("contract", torch::nn::Linear(4 * s.width, s.width))) {}

  torch::Tensor forward(torch::Tensor x, const torch::Tensor& causal) {
    const std::int64_t b = shape.batch, t = shape.context, h = shape.heads;
    const std::int64_t head_width = shape.width / h;
    const auto parts = qkv(ln1(x)).chunk(3, -1);
    // [batch, context, width] -> [batch, heads, context, head_width]
    const auto per_head = [&](const torch::Tensor& u) {
      return u.view({b, t, h, head_width}).transpose(1, 2);
    };
    const auto q = per_head(parts[0]), k = per_head(parts[1]), v = per_head(parts[2]);
    auto scores =
        torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_width)));
    scores = scores.masked_fill(causal.logical_not(), -1e9);
    const auto mixed = torch::matmul(torch::softmax(scores, -1), v);
    x = x + proj(mixed.transpose(1, 2).reshape({b, t, shape.width}));
    return x + contract(torch::gelu(expand(ln2(x)), "tanh"));
  }

  GptShape shape;
  torch::nn::LayerNorm ln1;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm ln2;
  torch::nn::Linear expand, contract;
};
TORCH_MODULE(Block);

struct GptImpl : torch::nn::Module {
  explicit GptImpl(const GptShape& s)
      : shape(s), wte(register_parameter("wte", torch::randn({s.vocabulary, s.width}) * 0.02)),
        wpe(register_parameter("wpe", torch::randn({s.context, s.width}) * 0.01)),
        block0(register_module("block0", Block(s))), block1(register_module("block1", Block(s))),
        ln_f(
            register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.width})))) {
    const auto position = torch::arange(s.context);
    causal = register_buffer("causal", position.unsqueeze(1).ge(position.unsqueeze(0)));
  }

  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& targets) {
    auto x = torch::embedding(wte, tokens) + wpe;
    x = block1(block0(x, causal), causal);
    const auto logits = torch::matmul(ln_f(x), wte.t()); // the tied head
    return torch::nn::functional::cross_entropy(logits.reshape({-1, shape.vocabulary}),
                                                targets.reshape({-1}));
  }

  GptShape shape;
  torch::Tensor wte, wpe, causal;
  Block block0, block1;
  torch::nn::LayerNorm ln_f;
};
TORCH_MODULE(Gpt);

} // namespace

std::optional<double> libtorch_gpt_steps_per_second(const GptShape& shape, std::int64_t steps,
                                                    int threads) {
  torch::manual_seed(42);
  torch::set_num_threads(threads);
  Gpt model(shape);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(3e-3));
  std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
  for (int i = 0; i < 8; ++i)
    batches.emplace_back(
        torch::randint(shape.vocabulary, {shape.batch, shape.context}, torch::kInt64),
        torch::randint(shape.vocabulary, {shape.batch, shape.context}, torch::kInt64));
  const auto step = [&](std::int64_t i) {
    const auto& b = batches[static_cast<std::size_t>(i) % batches.size()];
    adam.zero_grad();
    auto loss = model->forward(b.first, b.second);
    loss.backward();
    adam.step();
  };
  return static_cast<double>(steps) / time_calls(3, steps, step);
}

} // namespace bench
