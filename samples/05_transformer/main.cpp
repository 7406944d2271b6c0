// Lesson 5: a GPT-style decoder. Token and position embeddings, two pre-LayerNorm blocks of
// causal self-attention and a GELU MLP with `x += f(x)` residuals, and a head tied to the token
// embedding, trained with Adam to predict the next character of a text every Debian system
// ships (the GNU GPL, version 3). Run: build/samples/05_transformer/05_transformer [steps]
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace addons = pxl::addons;
namespace ops = pxl::ops;
using pxl::Tensor;

namespace {

constexpr std::int64_t batch = 16, context = 32, width = 32, heads = 4;
constexpr std::int64_t head_width = width / heads;

// Causal self-attention: each position attends to itself and the positions before it.
struct Attention : addons::Module<Attention> {
  PXL_SUBMODULE(addons::Linear, qkv, 3 * width);
  PXL_SUBMODULE(addons::Linear, proj, width);
  Tensor build(Tensor x, Tensor causal) {
    const auto parts = ops::split(qkv(x), 3, 2);
    // [batch, context, width] -> [batch, heads, context, head_width]
    const auto per_head = [](const Tensor& t) {
      return ops::transpose(ops::reshape(t, {batch, context, heads, head_width}), {0, 2, 1, 3});
    };
    const Tensor q = per_head(parts[0]), k = per_head(parts[1]), v = per_head(parts[2]);
    Tensor scores = ops::matmul(q, ops::transpose(k, {0, 1, 3, 2})) *
                    (1.0 / std::sqrt(static_cast<double>(head_width)));
    scores = ops::where(causal, scores, pxl::constant(-1e9, pxl::float32));
    const Tensor mixed = ops::matmul(ops::softmax(scores, -1), v);
    return proj(ops::reshape(ops::transpose(mixed, {0, 2, 1, 3}), {batch, context, width}));
  }
};

struct Block : addons::Module<Block> {
  PXL_SUBMODULE(addons::LayerNorm, ln1);
  PXL_SUBMODULE(Attention, attention);
  PXL_SUBMODULE(addons::LayerNorm, ln2);
  PXL_SUBMODULE(addons::Linear, expand, 4 * width);
  PXL_SUBMODULE(addons::Linear, contract, width);
  Tensor build(Tensor x, Tensor causal) {
    x += attention(ln1(x), causal); // residuals in place: autodiff follows the update
    x += contract(ops::gelu(expand(ln2(x))));
    return x;
  }
};

// Next-character logits for every position, and their cross-entropy against the targets.
struct LanguageModel : addons::Module<LanguageModel> {
  explicit LanguageModel(std::int64_t vocabulary_size) : vocabulary(vocabulary_size) {}
  std::int64_t vocabulary;
  PXL_SUBMODULE(Block, block0);
  PXL_SUBMODULE(Block, block1);
  PXL_SUBMODULE(addons::LayerNorm, ln_f);
  Tensor build(Tensor tokens, Tensor targets) {
    const Tensor wte = add_variable_input(
        "wte", addons::init::normal(0.0, 0.02, {vocabulary, width}), pxl::float32);
    const Tensor wpe =
        add_variable_input("wpe", addons::init::normal(0.0, 0.01, {context, width}), pxl::float32);
    Tensor x = ops::gather(wte, tokens) + wpe;
    const Tensor position = ops::arange(0, context);
    const Tensor causal =
        ops::greater_equal(ops::unsqueeze(position, {1}), ops::unsqueeze(position, {0}));
    x = block0(x, causal);
    x = block1(x, causal);
    const Tensor logits = ops::matmul(ln_f(x), ops::transpose(wte)); // the tied head
    return addons::ops::cross_entropy(ops::reshape(logits, {batch * context, vocabulary}),
                                      ops::reshape(targets, {batch * context}));
  }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw pxl::IoError("cannot read " + path + " (Debian's base-files package installs it)");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

int main(int argc, char** argv) try {
  const int steps = argc > 1 ? std::stoi(argv[1]) : 300;
  const std::string text = read_text("/usr/share/common-licenses/GPL-3");
  const std::set<unsigned char> chars(text.begin(), text.end());
  const std::vector<unsigned char> alphabet(chars.begin(), chars.end());
  std::vector<std::int32_t> id_of(256, 0);
  for (std::size_t i = 0; i < alphabet.size(); ++i)
    id_of[alphabet[i]] = static_cast<std::int32_t>(i);
  const auto vocabulary = static_cast<std::int64_t>(alphabet.size());
  std::cout << "corpus: " << text.size() << " characters, " << vocabulary << " distinct\n";

  pxl::Ir ir;
  pxl::HostToDeviceStream tokens_in, targets_in;
  pxl::DeviceToHostStream loss_out;
  {
    auto in_main = ir.main_graph().scope();
    tokens_in = pxl::h2d_stream({batch, context}, pxl::int32, "tokens");
    targets_in = pxl::h2d_stream({batch, context}, pxl::int32, "targets");
    loss_out = pxl::d2h_stream({}, pxl::float32, "loss");
    const Tensor tokens = ops::host_load(tokens_in), targets = ops::host_load(targets_in);
    auto [facts, fwd] = LanguageModel(vocabulary).create_graph(tokens, targets);
    auto bwd = addons::autodiff(fwd, {.grads_required = fwd.args().values_flat()});
    const auto vars = facts.init();
    std::int64_t parameters = 0;
    for (const auto& t : vars.tensors())
      parameters += t.nelms();
    std::cout << "model: 2 blocks, " << heads << " heads, width " << width << ", context "
              << context << ", " << parameters << " parameters in " << vars.tensors().size()
              << " variables\n";
    const auto fwd_call = fwd.bind(vars).call_with_info(tokens, targets);
    ops::host_store(loss_out, fwd_call.parent_output(0));
    const auto bwd_call =
        bwd.bind(vars).call_with_info(pxl::constant(1.0, pxl::float32, "dloss"),
                                      {.args = bwd.grad_graph_info().inputs_dict(fwd_call)});
    addons::optimizers::apply(addons::optimizers::Adam({.lr = 3e-3}), vars, bwd.grads(bwd_call));
  }

  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  std::mt19937 pick(5489u); // random windows of the text: mt19937's sequence is standard
  pxl::HostTensor tokens({batch, context}, pxl::int32), targets({batch, context}, pxl::int32);
  const auto windows = static_cast<std::uint32_t>(text.size() - context - 1);
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::size_t start = pick() % windows;
      for (std::int64_t t = 0; t < context; ++t) {
        const auto at = static_cast<std::size_t>(b * context + t);
        tokens.data<std::int32_t>()[at] = id_of[static_cast<unsigned char>(text[start + t])];
        targets.data<std::int32_t>()[at] = id_of[static_cast<unsigned char>(text[start + t + 1])];
      }
    }
    last = session.run({{tokens_in, tokens}, {targets_in, targets}}).at(loss_out).item(0);
    if (step == 0)
      first = last;
    if (step % 50 == 0 || step == steps - 1) {
      char line[64];
      std::snprintf(line, sizeof line, "step %4d  loss %.2f\n", step, last);
      std::cout << line;
    }
  }
  // Chance is log(vocabulary); a model that learned nothing stays there.
  const double bound = 0.65 * std::log(static_cast<double>(vocabulary));
  std::cout << "loss " << (last < bound ? "fell" : "did NOT fall") << " below "
            << std::round(bound * 100) / 100 << " (65% of chance)\n";
  return last < bound && last < first ? 0 : 1;
} catch (const pxl::Error& e) {
  std::cerr << "05_transformer: " << e.what() << "\n";
  return 1;
}
