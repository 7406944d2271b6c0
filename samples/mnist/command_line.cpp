// The main job's flags, defined with CLI11 (command_line.hpp).
#include "command_line.hpp"

#include "pxl/emu/target.hpp"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <functional>
#include <string>

namespace mnist {
namespace {

/// A check that a flag's value is a number `accept`s, naming what it needs: CLI11 2.1's
/// PositiveNumber and NonNegativeNumber print their bound as a 309-digit double.
CLI::Validator number_check(std::function<bool(double)> accept, const std::string& needs) {
  return CLI::Validator(
      [accept, needs](std::string& value) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0')
          return "expected a number, got '" + value + "'";
        return accept(x) ? std::string() : "expected " + needs + ", got " + value;
      },
      needs);
}

const CLI::Validator positive = number_check([](double x) { return x > 0; }, "a positive number");
const CLI::Validator non_negative = number_check([](double x) { return x >= 0; }, "0 or more");

} // namespace

std::optional<Options> parse_command_line(int argc, char** argv, int& exit_code) {
  Options o;
  CLI::App app{"Train and test PopXL's MNIST tutorial network on Fashion-MNIST, on pxl's "
               "built-in IPU emulator."};
  app.add_option("--model", o.model,
                 "mlp: PopXL's MNIST tutorial network (784-512-512-512-10, gelu); cnn: two "
                 "blocks of a 3x3 convolution (32, then 64 channels), batch norm, ReLU and 2x2 "
                 "max pool, then dense 128 and 10, trained by default with Adam at batch 32")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "Passes over the training set (0: test only)")
      ->check(non_negative)
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size,
                 "Images per training step and replica (default 8; 32 for --model cnn)")
      ->check(positive)
      ->capture_default_str();
  app.add_option("--learning-rate", o.learning_rate,
                 "Learning rate (default 0.05 for SGD, 0.001 for Adam)")
      ->check(positive);
  app.add_option("--optimizer", o.optimizer,
                 "sgd, or adam (Adam with PyTorch's defaults; its state on the IPU, or in "
                 "Streaming Memory with --offload-optimizer-state); default sgd, adam for "
                 "--model cnn");
  app.add_flag("--offload-optimizer-state", o.offload_optimizer_state,
               "Keep the optimizer's state in Streaming Memory, loaded and stored around each "
               "update (training is bitwise the same); prints the on-chip memory with and "
               "without");
  app.add_flag("--shard-optimizer-state", o.shard_optimizer_state,
               "Shard the optimizer's state over the replicas (needs --replicas 2 or more; "
               "each replica updates its shard of the weights, which are then all-gathered; "
               "training is bitwise the same); prints the on-chip memory with and without");
  app.add_option("--steps-per-execution", o.steps_per_execution,
                 "Optimizer steps run on the device per session.run (a device loop), each "
                 "of --gradient-accumulation batches")
      ->check(positive)
      ->capture_default_str();
  app.add_option("--gradient-accumulation", o.gradient_accumulation,
                 "Micro-batches of --batch-size whose mean gradient makes one update")
      ->check(positive)
      ->capture_default_str();
  app.add_option("--replicas", o.replicas,
                 "Data-parallel replicas: each trains on its --batch-size images of every "
                 "global batch of replicas x batch-size, gradients averaged across them; under "
                 "`mpirun -np N`, spread over the N instances (a multiple of N)")
      ->capture_default_str();
  app.add_option("--pipeline-stages", o.pipeline_stages,
                 "Pipeline the model in this many stages (1 to 4, its 4 layers or the CNN's "
                 "2 blocks and 2 dense layers in order), stage k on IPU k unless "
                 "--device-mapping, over the --gradient-accumulation micro-batches of each "
                 "update (for the grouped schedule at least 2 x stages - 1 of them); training "
                 "equals the unpipelined run's")
      ->capture_default_str();
  app.add_option("--device-mapping", o.device_mapping,
                 "With --pipeline-stages: the IPU of each stage, comma-separated (TF's "
                 "device_mapping; default stage k on IPU k). Stages may share an IPU, as "
                 "recomputation checkpoints: --device-mapping 0,0,0,0 --pipeline-schedule "
                 "sequential --recompute")
      ->delimiter(',');
  app.add_option("--pipeline-schedule", o.pipeline_schedule,
                 "With --pipeline-stages: grouped (every stage busy at once), interleaved or "
                 "sequential (one micro-batch through every stage before the next)")
      ->capture_default_str();
  app.add_flag("--recompute", o.recompute,
               "With --pipeline-stages 2 or more: keep only each stage's inputs and recompute "
               "its activations in the backward pass (less memory, a forward pass more; "
               "training is bitwise the same)");
  app.add_option("--data-dir", o.data_dir, "Directory with the Fashion-MNIST IDX files")
      ->capture_default_str();
  app.add_option("--limit", o.limit, "Use only the first N training images")->check(positive);
  app.add_option("--test-limit", o.test_limit, "Use only the first N test images")->check(positive);
  app.add_option("--seed", o.seed, "Seed for the weights and the shuffle")->capture_default_str();
  app.add_option("--save", o.save, "Save the trained weights to this safetensors file");
  app.add_option("--load", o.load, "Start from the weights in this safetensors file");
  app.add_option("--workers", o.workers,
                 "Emulator worker threads (0: one per core, shared by the instances on this host "
                 "under mpirun; 1 may be a little faster at small batches beside a busy process)")
      ->capture_default_str();
  app.add_flag("--profile", o.profile,
               "Estimate the IPU's time for every training step (the cost model) and print "
               "PopVision's execution summary after training");
  app.add_option("--trace", o.trace,
                 "Write a Chrome/Perfetto trace of the training runs' estimated steps to FILE");
  app.add_option("--memory-report", o.memory_report,
                 "Write the training program's memory report to FILE (JSON)");
  app.add_option("--report", o.report,
                 "Write PopVision-style reports of the training and test programs into DIR/train "
                 "and DIR/test: memory, trace, profile and an HTML page (docs/report.md)");
  app.add_flag("--estimate-only", o.estimate_only,
               "Compile the training program for --target without running it or loading data, "
               "print its memory per IPU and tile and the estimated step time and throughput "
               "(the cost model), and exit");
  app.add_option("--target", o.target,
                 "With --estimate-only, the preset IPU system to estimate for: " +
                     pxl::emu::target_preset_names() + " (default ipu2, the GC200)");
  app.add_option("--dtype", o.dtype,
                 "float32, or float16: mixed precision (float16 weights and activations, the "
                 "loss in float32, loss scaling)")
      ->capture_default_str();
  app.add_flag("--stochastic-rounding", o.stochastic_rounding,
               "With --dtype float16: round the weights' updates stochastically (the IPU's "
               "stochastic rounding, seeded by --seed), so that updates below a weight's spacing "
               "are not lost");
  app.add_option("--matmul-partials-type", o.matmul_partials_type,
                 "The type the matmuls' partial sums accumulate in: float32, or float16 with "
                 "--dtype float16 (runs of 16 products added into a float16 accumulator, as the "
                 "IPU's half partials; PopART's partialsTypeMatMuls)")
      ->capture_default_str();
  app.add_option("--available-memory-proportion", o.available_memory_proportion,
                 "The share of a tile's memory, in (0, 1], that the matmuls' and convolutions' "
                 "plans may use (PopLibs' availableMemoryProportion, default 0.6): it changes "
                 "the estimated step time, never the results");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the help, or the error and a hint; a bad flag or value exits 1, as every
    // other error of the main job does, not with CLI11's own code (105 for a value out of range).
    const int cli_code = app.exit(e);
    exit_code = cli_code == 0 ? 0 : 1;
    return std::nullopt;
  }
  // The CNN's own defaults, where the flags leave them.
  if (o.model == "cnn") {
    if (app.count("--batch-size") == 0)
      o.batch_size = 32;
    if (app.count("--optimizer") == 0)
      o.optimizer = "adam";
  }
  return o;
}

} // namespace mnist
