// Benchmark: training throughput of a GPT-style decoder (lesson 5's model at two sizes: d_model
// 64 / seq 32 and d_model 256 / seq 128, batch 16, vocabulary 256) trained by addons::Trainer
// (one fit of N steps per timing, one batch per run) on 1 and 2 emulator workers, as steps/s and as
// a fraction of the machine's SGEMM peak (the model's matmul flops, transformer_reference.hpp);
// where the time goes, per op kind, from a StepObserver; and, when LibTorch is installed, the same
// model in LibTorch (its faster of 1 and 2 threads) and the ratio. Prints medians of `reps`
// timings; asserts nothing.
//
//     build/test/bench/transformer [reps]
//
// For LibTorch's best configuration run it as DESIGN.md says, with OMP_WAIT_POLICY=passive in
// the environment, and on a CPU with AVX-512 OPENBLAS_CORETYPE=SkylakeX (OpenBLAS 0.3.21
// falls back to AVX2 kernels there). Elsewhere OpenBLAS's own choice is right, and SkylakeX's
// kernels would stop the process with an illegal instruction: the comparison is skipped then.
#include "sgemm_peak.hpp"
#include "transformer_reference.hpp"

#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace addons = pxl::addons;
namespace ops = pxl::ops;
using bench::GptShape;
using pxl::Tensor;
using Clock = std::chrono::steady_clock;

// The model of samples/05_transformer, with its sizes taken from a GptShape at run time.
struct Attention : addons::Module<Attention> {
  explicit Attention(const GptShape& s) : shape(s) {}
  GptShape shape;
  PXL_SUBMODULE(addons::Linear, qkv, 3 * shape.width);
  PXL_SUBMODULE(addons::Linear, proj, shape.width);
  Tensor build(Tensor x, Tensor causal) {
    const std::int64_t head_width = shape.width / shape.heads;
    const auto parts = ops::split(qkv(x), 3, 2);
    // [batch, context, width] -> [batch, heads, context, head_width]
    const auto per_head = [&](const Tensor& t) {
      return ops::transpose(ops::reshape(t, {shape.batch, shape.context, shape.heads, head_width}),
                            {0, 2, 1, 3});
    };
    const Tensor q = per_head(parts[0]), k = per_head(parts[1]), v = per_head(parts[2]);
    Tensor scores = ops::matmul(q, ops::transpose(k, {0, 1, 3, 2})) *
                    (1.0 / std::sqrt(static_cast<double>(head_width)));
    scores = ops::where(causal, scores, pxl::constant(-1e9, pxl::float32));
    const Tensor mixed = ops::matmul(ops::softmax(scores, -1), v);
    return proj(ops::reshape(ops::transpose(mixed, {0, 2, 1, 3}),
                             {shape.batch, shape.context, shape.width}));
  }
};

struct Block : addons::Module<Block> {
  explicit Block(const GptShape& s) : shape(s) {}
  GptShape shape;
  PXL_SUBMODULE(addons::LayerNorm, ln1);
  PXL_SUBMODULE(Attention, attention, shape);
  PXL_SUBMODULE(addons::LayerNorm, ln2);
  PXL_SUBMODULE(addons::Linear, expand, 4 * shape.width);
  PXL_SUBMODULE(addons::Linear, contract, shape.width);
  Tensor build(Tensor x, Tensor causal) {
    x += attention(ln1(x), causal);
    x += contract(ops::gelu(expand(ln2(x))));
    return x;
  }
};

struct LanguageModel : addons::Module<LanguageModel> {
  explicit LanguageModel(const GptShape& s) : shape(s) {}
  GptShape shape;
  PXL_SUBMODULE(Block, block0, shape);
  PXL_SUBMODULE(Block, block1, shape);
  PXL_SUBMODULE(addons::LayerNorm, ln_f);
  /// tokens [batch, context] int32 → logits [batch, context, vocabulary].
  Tensor build(Tensor tokens) {
    const Tensor wte = add_variable_input(
        "wte", addons::init::normal(0.0, 0.02, {shape.vocabulary, shape.width}), pxl::float32);
    const Tensor wpe = add_variable_input(
        "wpe", addons::init::normal(0.0, 0.01, {shape.context, shape.width}), pxl::float32);
    Tensor x = ops::gather(wte, tokens) + wpe;
    const Tensor position = ops::arange(0, shape.context);
    const Tensor causal =
        ops::greater_equal(ops::unsqueeze(position, {1}), ops::unsqueeze(position, {0}));
    x = block0(x, causal);
    x = block1(x, causal);
    return ops::matmul(ln_f(x), ops::transpose(wte)); // the tied head
  }
};

/// The model trained by addons::Trainer, as a user trains it: Adam (learning rate 3e-3, built
/// in), the mean cross-entropy of each token's next-token logits, one batch per run, on a
/// session of `workers` workers; `steps` steps are one fit over 8 random batches repeated.
class Training {
public:
  Training(const GptShape& shape, unsigned workers)
      : trainer_(LanguageModel(shape)), batches_(random_batches(shape)) {
    trainer_.compile({.optimizer = addons::optimizers::AdamOptions{.lr = 3e-3},
                      .from_logits = true,
                      .constant_learning_rate = true,
                      .workers = workers});
    trainer_.build(batches_.element_spec());
    for (const auto& [name, w] : trainer_.weights())
      parameters_ += w.nelms();
  }

  /// Trains `steps` steps, each seen by `observer` if given.
  void steps(std::int64_t steps, pxl::emu::StepObserver* observer = nullptr) {
    trainer_.fit(batches_, {.steps_per_epoch = steps, .observer = observer});
  }
  std::int64_t parameters() const { return parameters_; }

private:
  /// 8 batches of random tokens and targets, repeated forever.
  static addons::data::TensorDataset random_batches(const GptShape& shape) {
    std::mt19937 gen(1);
    std::uniform_int_distribution<std::int32_t> token(
        0, static_cast<std::int32_t>(shape.vocabulary - 1));
    pxl::HostTensor tokens({8 * shape.batch, shape.context}, pxl::int32),
        targets({8 * shape.batch, shape.context}, pxl::int32);
    for (auto& t : tokens.data<std::int32_t>())
      t = token(gen);
    for (auto& t : targets.data<std::int32_t>())
      t = token(gen);
    return addons::data::TensorDataset::from_tensor_slices(tokens, targets)
        .batch(shape.batch)
        .repeat();
  }

  addons::Trainer trainer_;
  addons::data::TensorDataset batches_;
  std::int64_t parameters_ = 0;
};

/// Whether OpenBLAS's SkylakeX kernels run here (LibTorch's tuning depends on it).
bool has_avx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

double median(std::vector<double> xs) {
  std::ranges::sort(xs);
  return xs[xs.size() / 2];
}

/// Steps per timing: about a second's worth, judged from a timed warm-up step.
std::int64_t steps_per_timing(Training& t) {
  t.steps(1);
  const auto t0 = Clock::now();
  t.steps(1);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(1.0 / s), 5, 500);
}

/// Median over `reps` timings of `steps` steps.
double steps_per_second(Training& t, int reps, std::int64_t steps) {
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    t.steps(steps);
    rates.push_back(static_cast<double>(steps) /
                    std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median(rates);
}

/// Host time per op kind: every step but calls and loops (whose callees' steps are reported
/// on their own) is added to its op kind; the run's wall time less their sum is the calls'
/// argument copies and the run's own overhead.
class KindTimes final : public pxl::emu::StepObserver {
public:
  struct Kind {
    double seconds = 0;
    std::int64_t steps = 0, flops = 0, bytes = 0;
  };

  void on_step(const pxl::emu::StepInfo& info, const pxl::emu::StepTiming& timing,
               std::int64_t) override {
    using pxl::emu::StepKind;
    if (info.kind == StepKind::call || info.kind == StepKind::repeat)
      return;
    std::string name(info.kind == StepKind::copy ? "copy" : op_type_name(info.op_kind));
    if (info.kind == StepKind::fused_matmul)
      name += " (fused)";
    Kind& k = kinds[name];
    k.seconds += std::chrono::duration<double>(timing.end - timing.start).count();
    k.steps += 1;
    k.flops += info.flops;
    k.bytes += info.bytes_read + info.bytes_written;
  }

  std::map<std::string, Kind> kinds;
};

/// Where the time of one training step goes on 1 and on 2 workers, by op kind, largest first.
void print_split(Training& one, Training& two, std::int64_t steps) {
  KindTimes times[2];
  double wall[2] = {0, 0};
  Training* sessions[2] = {&one, &two};
  for (int w = 0; w < 2; ++w) {
    const auto t0 = Clock::now();
    sessions[w]->steps(steps, &times[w]);
    wall[w] = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  std::vector<std::pair<std::string, std::array<KindTimes::Kind, 2>>> rows;
  for (const auto& entry : times[0].kinds)
    rows.push_back({entry.first, {entry.second, times[1].kinds[entry.first]}});
  std::ranges::sort(
      rows, [](const auto& a, const auto& b) { return a.second[0].seconds > b.second[0].seconds; });
  const auto per_step = [steps](const KindTimes::Kind& k) {
    return 1e3 * k.seconds / static_cast<double>(steps);
  };
  std::printf("  %-26s %6s %10s %6s %10s %6s %9s %9s\n", "op kind", "steps", "1w ms", "1w %",
              "2w ms", "2w %", "1w GF/s", "1w GB/s");
  double rest[2] = {wall[0], wall[1]};
  for (const auto& row : rows) {
    const KindTimes::Kind &a = row.second[0], &b = row.second[1];
    rest[0] -= a.seconds;
    rest[1] -= b.seconds;
    std::printf("  %-26s %6lld %10.3f %5.1f%% %10.3f %5.1f%%", row.first.c_str(),
                static_cast<long long>(a.steps / steps), per_step(a), 100 * a.seconds / wall[0],
                per_step(b), 100 * b.seconds / wall[1]);
    const bool matmul = row.first.starts_with("MatMul");
    if (matmul)
      std::printf(" %9.1f", static_cast<double>(a.flops) / a.seconds * 1e-9);
    else
      std::printf(" %9s", "");
    std::printf(" %9.1f\n", static_cast<double>(a.bytes) / a.seconds * 1e-9);
  }
  const auto ms = [steps](double s) { return 1e3 * s / static_cast<double>(steps); };
  std::printf("  %-26s %6s %10.3f %5.1f%% %10.3f %5.1f%%\n", "(call copies, run overhead)", "",
              ms(rest[0]), 100 * rest[0] / wall[0], ms(rest[1]), 100 * rest[1] / wall[1]);
  std::printf("  %-26s %6s %10.3f %6s %10.3f\n", "total", "", ms(wall[0]), "", ms(wall[1]));
}

} // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const double peak = pxl::bench::print_sgemm_peak();
  const std::vector<GptShape> shapes = {{.context = 32, .width = 64},
                                        {.context = 128, .width = 256}};
  std::printf("GPT-style decoder training (2 pre-LN blocks, 4 heads, GELU MLP, tied head, Adam), "
              "batch 16, vocabulary 256; median of %d timings\n",
              reps);
  std::printf("%-7s %-4s %10s %11s %7s %10s %7s\n", "d_model", "seq", "parameters", "GFLOP/step",
              "workers", "steps/s", "%peak");
  struct Row {
    GptShape shape;
    std::int64_t steps;
    double rate[2];
  };
  std::vector<Row> rows;
  for (const GptShape& shape : shapes) {
    Training one(shape, 1), two(shape, 2);
    Row row{shape, steps_per_timing(one), {0, 0}};
    steps_per_timing(two);
    const double flops = bench::gpt_flops_per_step(shape);
    for (unsigned w = 1; w <= 2; ++w) {
      Training& t = w == 1 ? one : two;
      row.rate[w - 1] = steps_per_second(t, reps, row.steps * w);
      std::printf("%-7lld %-4lld %10lld %11.2f %7u %10.1f %6.1f%%\n",
                  static_cast<long long>(shape.width), static_cast<long long>(shape.context),
                  static_cast<long long>(one.parameters()), flops * 1e-9, w, row.rate[w - 1],
                  pxl::bench::percent_of_peak(row.rate[w - 1] * flops, peak, w));
    }
    std::printf("  where one step's time goes (d_model %lld, seq %lld; host time per op kind, "
                "%lld observed steps; GF/s and GB/s: matmul flops and bytes moved per second "
                "of that kind's time on 1 worker)\n",
                static_cast<long long>(shape.width), static_cast<long long>(shape.context),
                static_cast<long long>(row.steps));
    print_split(one, two, row.steps);
    rows.push_back(row);
  }

  // LibTorch last, once every pxl worker thread is gone (they would compete with its threads).
  std::printf("\nLibTorch reference (the same model and Adam recipe; its faster of 1 and 2 "
              "threads):\n");
  std::string core = std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "";
  for (char& c : core)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c))); // as OpenBLAS reads it
  if (core == "skylakex" && !has_avx512()) {
    std::printf("  skipped: OPENBLAS_CORETYPE=SkylakeX needs AVX-512, which this CPU lacks (unset "
                "it: OpenBLAS picks this CPU's kernels itself)\n");
    return 0;
  }
  for (const Row& row : rows) {
    std::optional<double> torch_rate;
    for (int threads : {1, 2}) {
      std::vector<double> rates;
      for (int r = 0; r < reps; ++r)
        if (const auto rate = bench::libtorch_gpt_steps_per_second(row.shape, row.steps, threads))
          rates.push_back(*rate);
      if (!rates.empty())
        torch_rate = std::max(torch_rate.value_or(0.0), median(rates));
    }
    if (!torch_rate) {
      std::printf("  LibTorch is not installed in this build (libtorch-dev): comparison "
                  "skipped\n");
      break;
    }
    std::printf("  d_model %lld, seq %lld: %.1f steps/s; pxl / LibTorch: %.2f (1 worker), %.2f "
                "(2 workers)\n",
                static_cast<long long>(row.shape.width), static_cast<long long>(row.shape.context),
                *torch_rate, row.rate[0] / *torch_rate, row.rate[1] / *torch_rate);
    if (&row == &rows.back() && std::getenv("OMP_WAIT_POLICY") == nullptr)
      std::printf("  (LibTorch ran untuned: set OMP_WAIT_POLICY=passive%s for its best "
                  "configuration)\n",
                  has_avx512() ? " OPENBLAS_CORETYPE=SkylakeX" : "");
  }
}
