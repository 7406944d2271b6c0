// Benchmark: the cost model against Graphcore's published IPU results. Each row builds a
// published workload in pxl with its published configuration (micro-batch, precision,
// replicas, gradient accumulation, device loop), estimates it offline for the IPU it ran on
// (emu::estimate through addons::Trainer::estimate: no device memory, no run) and prints
//
//     FIDELITY <name> estimate=<value> published=<value> unit=<unit> ratio=<estimate/published>
//
// Sources and configurations, as read: docs/fidelity.md. Asserts nothing.
#include "bert.hpp"
#include "flags.hpp"
#include "resnet50.hpp"

#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

using pxl::Tensor;
namespace addons = pxl::addons;

void row(const std::string& name, double estimate, double published, const char* unit) {
  std::printf("FIDELITY %s estimate=%.4g published=%.4g unit=%s ratio=%.3f\n", name.c_str(),
              estimate, published, unit, estimate / published);
  std::fflush(stdout);
}

/// Where the estimate's work goes: its largest op kinds, as shares of the replica's work.
void print_kinds(const pxl::emu::IrEstimate& e) {
  const double work = static_cast<double>(e.run.total());
  std::printf("    work by op kind:");
  for (std::size_t k = 0; k < std::min<std::size_t>(8, e.op_kinds.size()); ++k)
    std::printf(" %s %.1f%%", e.op_kinds[k].name.c_str(),
                100.0 * static_cast<double>(e.op_kinds[k].cycles.total()) / work);
  std::printf("; compute %.0f%%, exchange %.0f%%, sync %.0f%%, host %.0f%%\n",
              100.0 * static_cast<double>(e.run.compute) / work,
              100.0 * static_cast<double>(e.run.exchange) / work,
              100.0 * static_cast<double>(e.run.sync) / work,
              100.0 * static_cast<double>(e.run.host) / work);
}

/// ResNet-50 as Graphcore's TensorFlow 1 benchmark feeds it: 8-bit images streamed to the IPU
/// (`eight_bit_io`) and normalised there with ImageNet's per-channel mean and deviation; its
/// batch norms' statistics shared by pairs of replicas (`BN_span: 2`); its convolutions
/// planned within 0.15 of a tile's memory, accumulating in float16.
struct ImageNetResNet50 : addons::Module<ImageNetResNet50> {
  explicit ImageNetResNet50(std::vector<std::string> checkpoints)
      : net(addons::named_module<bench::resnet::ResNet50>(
            "net", std::move(checkpoints),
            addons::BatchNorm2DOptions{.synchronized = true, .replica_group_size = 2},
            // --available-memory-proportion 0.15, float16 partials
            bench::resnet::ConvPlanning{.available_memory_proportion = 0.15,
                                        .partials_type = pxl::float16})) {}
  Tensor build(const Tensor& images) {
    const pxl::DType d = pxl::float16;
    const Tensor mean = pxl::constant(
        pxl::HostTensor({0.485 * 255, 0.456 * 255, 0.406 * 255}, {1, 3, 1, 1}), d, "mean");
    const Tensor scale = pxl::constant(
        pxl::HostTensor({1 / (0.229 * 255), 1 / (0.224 * 255), 1 / (0.225 * 255)}, {1, 3, 1, 1}), d,
        "scale");
    return net((pxl::ops::cast(images, d) - mean) * scale);
  }
  bench::resnet::ResNet50 net;
};

/// A data-parallel ResNet-50 training configuration of a Pod16: 16 replicas of one IPU.
struct ResNetConfig {
  std::string name;
  pxl::emu::Target target;
  std::int64_t micro_batch, accumulation, updates_per_run;
  /// The bottlenecks the configuration's `pipeline_splits` follow: stages on the one IPU,
  /// recomputed in the backward pass from their inputs.
  std::vector<std::string> checkpoints;
  double published;
};

/// Images per second on the whole Pod16, estimated.
double resnet_throughput(const ResNetConfig& c) {
  constexpr std::int64_t replicas = 16;
  addons::Trainer trainer(ImageNetResNet50(c.checkpoints));
  trainer.compile(
      {.optimizer = addons::optimizers::SGDOptions{.lr = 0.1, .momentum = 0.9},
       .from_logits = true,
       .steps_per_execution = c.accumulation * c.updates_per_run,
       .gradient_accumulation = c.accumulation,
       .replicas = replicas,
       .pipeline = true,
       .pipeline_schedule = pxl::transforms::PipelineSchedule::sequential,
       .recompute = true,
       .dtype = pxl::float16,
       .stochastic_rounding = true,
       // float16 partials and --available-memory-proportion 0.15, as the convolutions
       .matmul_defaults = {.partials_type = pxl::float16, .available_memory_proportion = 0.15}});
  const std::int64_t global = c.micro_batch * replicas;
  const pxl::emu::IrEstimate e = trainer.estimate(
      {.features = {{global, 3, 224, 224}, pxl::uint8}, .labels = {{global}, pxl::int32}},
      c.target);
  const double images = static_cast<double>(global * c.accumulation * c.updates_per_run);
  std::printf("  %s on %s: %.2f ms per run of %lld micro-batches; IPU memory %.0f MiB of %.0f%s\n",
              c.name.c_str(), c.target.name.c_str(), e.seconds() * 1e3,
              static_cast<long long>(c.accumulation * c.updates_per_run),
              static_cast<double>(e.memory.ipus.at(0).total()) / (1 << 20),
              static_cast<double>(e.memory.ipus.at(0).capacity) / (1 << 20),
              e.memory.fits() ? "" : " (does not fit)");
  print_kinds(e);
  return images / e.seconds();
}

/// A PopART BERT phase-1 pre-training configuration of a Bow Pod16: 4 replicas of a 4-IPU
/// pipeline, one optimizer step per run.
struct BertConfig {
  std::string name;
  bench::bert::Shape shape;
  std::int64_t micro_batch, accumulation;
  double loss_scaling;
  /// The matmuls' available memory proportion: Base's one value; Large's on its encoder IPUs
  /// (0.25; IPU 0's 0.15 is not applied).
  double available_memory_proportion;
  double published;
};

/// Sequences per second on the whole Pod16, estimated on Bow IPUs.
double bert_throughput(const BertConfig& c) {
  constexpr std::int64_t replicas = 4;
  addons::Trainer trainer(bench::bert::Bert(c.shape));
  // LAMB (the application's LAMB_NO_BIAS) is Adam's state and update with a norm ratio per
  // variable: Adam here, its state off the chip and sharded over the replicas, as published.
  trainer.compile(
      {.optimizer = addons::optimizers::AdamOptions{.lr = 0.006},
       .from_logits = true,
       .steps_per_execution = c.accumulation,
       .gradient_accumulation = c.accumulation,
       .replicas = replicas,
       .pipeline = true,
       .recompute = true,
       .dtype = pxl::float16,
       .loss_scaling = c.loss_scaling,
       .stochastic_rounding = true,
       .matmul_defaults = {.partials_type = pxl::float16,
                           .available_memory_proportion = c.available_memory_proportion},
       .offload_optimizer_state = true,
       .shard_optimizer_state = true});
  const std::int64_t global = c.micro_batch * replicas;
  pxl::emu::Target target = pxl::emu::bow();
  target.ipus = static_cast<std::int64_t>(c.shape.layers_per_ipu.size());
  const pxl::emu::IrEstimate e =
      trainer.estimate({.features = {{global, c.shape.sequence}, pxl::int32},
                        .labels = {{global, c.shape.masked}, pxl::int32}},
                       target);
  std::printf("  %s on %s: %.1f ms per optimizer step of %lld micro-batches\n", c.name.c_str(),
              target.name.c_str(), e.seconds() * 1e3, static_cast<long long>(c.accumulation));
  for (const auto& ipu : e.memory.ipus)
    std::printf("    IPU %lld: %.0f MiB of %.0f, most loaded tile %.0f KiB of %.0f%s\n",
                static_cast<long long>(ipu.ipu), static_cast<double>(ipu.total()) / (1 << 20),
                static_cast<double>(ipu.capacity) / (1 << 20),
                static_cast<double>(ipu.max_tile) / 1024,
                static_cast<double>(ipu.tile_capacity) / 1024, ipu.fits() ? "" : " (does not fit)");
  print_kinds(e);
  return static_cast<double>(global * c.accumulation) / e.seconds();
}

/// The TensorFlow 2 infeed tutorial's model: Flatten, Dense(128, relu), Dense(10) on 28×28
/// images, batch 32, SGD at 0.01, on one IPU; the estimated seconds per step with
/// `steps_per_execution` steps per run.
double mlp_step_seconds(std::int64_t steps_per_execution) {
  addons::Trainer trainer(addons::Sequential{
      addons::Flatten{}, addons::Dense(128, addons::Activation::relu), addons::Dense(10)});
  trainer.compile({.optimizer = addons::optimizers::SGDOptions{.lr = 0.01},
                   .from_logits = true,
                   .steps_per_execution = steps_per_execution});
  const pxl::emu::IrEstimate e = trainer.estimate(
      {.features = {{32, 28, 28}, pxl::float32}, .labels = {{32}, pxl::int32}}, pxl::emu::ipu2());
  return e.seconds() / static_cast<double>(steps_per_execution);
}

} // namespace

int main(int argc, char** argv) {
  bench::Flags flags("The cost model's estimates of Graphcore's published IPU results, offline "
                     "(sources: docs/fidelity.md)");
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;

  // The infeed tutorial: 10,000 steps in 23.77 s one step per run, in 14.62 s with 10.
  const double one = mlp_step_seconds(1), ten = mlp_step_seconds(10);
  std::printf("  MLP step: %.1f us one per run, %.1f us ten per run\n", one * 1e6, ten * 1e6);
  row("device_loop_speedup", one / ten, 23.77 / 14.62, "x");

  // MLPerf Training v1.1 on an IPU-POD16 (GC200): micro-batch 20, 10 accumulated, 80 updates
  // per run; ~30,000 images/s. Bow Pod16: micro-batch 20, 6 accumulated, 133 updates per
  // run; 42,029 images/s.
  for (const ResNetConfig& c :
       {ResNetConfig{"resnet50_pod16_mlperf_v1.1",
                     pxl::emu::ipu2(),
                     20,
                     10,
                     80,
                     {"layer1.0", "layer1.2", "layer2.0", "layer2.2", "layer3.0", "layer3.3"},
                     30000},
        ResNetConfig{"resnet50_bow_pod16",
                     pxl::emu::bow(),
                     20,
                     6,
                     133,
                     {"layer1.0", "layer1.2", "layer2.3"},
                     42029}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const double estimate = resnet_throughput(c);
    std::printf("  (traced and estimated in %.1f s)\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    row(c.name, estimate, c.published, "images/s");
  }
  // PopART BERT phase 1 (sequence length 128) on a Bow Pod16, 4 replicas x 4 IPUs, global
  // batch 65,536: Base at micro-batch 32 (the embedding alone on IPU 0, 4 layers on each
  // other IPU), 16,391 sequences/s; Large at micro-batch 8 (3 layers beside the embedding,
  // then 7 on each other IPU), 5,179 sequences/s.
  for (const BertConfig& c :
       {BertConfig{"bert_base_phase1_bow_pod16",
                   {.layers = 12, .hidden = 768, .heads = 12, .layers_per_ipu = {0, 4, 4, 4}},
                   32,
                   512,
                   512,
                   0.28,
                   16391},
        BertConfig{"bert_large_phase1_bow_pod16",
                   {.layers = 24, .hidden = 1024, .heads = 16, .layers_per_ipu = {3, 7, 7, 7}},
                   8,
                   2048,
                   64,
                   0.25,
                   5179}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const double estimate = bert_throughput(c);
    std::printf("  (traced and estimated in %.1f s)\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    row(c.name, estimate, c.published, "sequences/s");
  }
  return 0;
}
