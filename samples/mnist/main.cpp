// pxl's main job: PopXL's MNIST tutorial in C++, training and testing a classifier on
// Fashion-MNIST on the built-in IPU emulator.
//
//     mnist --epochs 1 --batch-size 8 --learning-rate 0.05
//     mnist --replicas 2 --batch-size 4      # data-parallel: the same steps on two replicas
//     mnist --dtype float16                  # mixed precision: float16 weights, float32 loss
//     mnist --dtype float16 --stochastic-rounding  # ... their updates rounded stochastically
//     mnist --dtype float16 --matmul-partials-type float16  # ... matmuls accumulating in float16
//     mpirun -np 2 mnist --replicas 4        # 2 instances (processes), 2 replicas each
//     mnist --optimizer adam --offload-optimizer-state   # Adam's state in Streaming Memory
//     mnist --optimizer adam --replicas 2 --shard-optimizer-state   # half of it per replica
//     mnist --pipeline-stages 2 --gradient-accumulation 8   # the Net pipelined over 2 IPUs
//     mnist --pipeline-stages 4 --device-mapping 0,0,0,0 --pipeline-schedule sequential
//           --recompute --gradient-accumulation 2   # 4 stages on one IPU: checkpoints
//     mnist --model cnn                      # a CNN: conv, batch norm, ReLU and pool blocks
//     mnist --estimate-only --target bow     # memory and step time on a Bow IPU, no training
#include "command_line.hpp"
#include "model.hpp"
#include "settings.hpp"

#include "pxl/addons/data/batches.hpp"
#include "pxl/addons/data/fashion_mnist.hpp"
#include "pxl/addons/training/trainer.hpp"
#include "pxl/core/error.hpp"
#include "pxl/dist.hpp"
#include "pxl/emu/estimate.hpp"
#include "pxl/emu/profile.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <variant>

namespace {

namespace data = pxl::addons::data;

using mnist::compile_options;
using mnist::make_trainer;
using mnist::Options;
using mnist::parse_target;
using mnist::pipeline_ipus;

/// Under `mpirun -np N`: the replicas spread over the N instances, PopRun's way. Only
/// instance 0 prints (PopRun's --only-output-from-instance 0): the others' standard output
/// goes nowhere, their errors still show.
void join_instances(const Options& o) {
  const std::int64_t n = pxl::dist::num_instances();
  if (o.replicas % n != 0)
    throw pxl::ValueError("--replicas: " + std::to_string(o.replicas) +
                          " replica(s) cannot be shared evenly by the " + std::to_string(n) +
                          " instances of mpirun; use a multiple of " + std::to_string(n));
  pxl::dist::configure({.num_total_replicas = o.replicas});
  if (pxl::dist::instance_index() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr)
    throw pxl::IoError("mnist: cannot silence instance " +
                       std::to_string(pxl::dist::instance_index()) + "'s output");
}

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

/// The images flattened and normalised, and their labels, as the Trainer takes them.
data::Batch as_arrays(const data::Dataset& d) {
  return *data::batches(d, {.batch_size = d.size(), .shuffle = false, .flatten = true}).begin();
}

/// Prints what the training program is: the emulator, the batch and the update; with
/// pipelining, the stages and the variables per IPU.
void print_setup(const Options& o, const pxl::addons::CompileOptions& compile,
                 pxl::addons::Trainer& trainer) {
  pxl::Session& session = trainer.training_session();
  const bool adam = std::holds_alternative<pxl::addons::optimizers::AdamOptions>(compile.optimizer);
  const double lr = std::visit([](const auto& opt) { return opt.lr.value(); }, compile.optimizer);
  std::printf("Emulator: %u worker(s), %lld replica(s)", session.num_workers(),
              static_cast<long long>(o.replicas));
  if (compile.distributed)
    std::printf(" over %lld instances (%lld each)",
                static_cast<long long>(pxl::dist::num_instances()),
                static_cast<long long>(pxl::dist::num_local_replicas()));
  std::printf("; batch %lld", static_cast<long long>(o.batch_size));
  if (o.replicas > 1)
    std::printf(" per replica (%lld in all, gradients averaged across replicas)",
                static_cast<long long>(o.replicas * o.batch_size));
  std::printf(", %s at learning rate %g, %lld step(s) per run", adam ? "Adam" : "SGD", lr,
              static_cast<long long>(o.steps_per_execution));
  if (compile.dtype == pxl::float16)
    std::printf(", float16 (float32 loss, loss scaling %g%s%s)", compile.loss_scaling,
                compile.stochastic_rounding ? ", stochastic rounding" : "",
                compile.matmul_defaults.partials_type == pxl::float16 ? ", float16 matmul partials"
                                                                      : "");
  if (o.gradient_accumulation > 1)
    std::printf(", %lld micro-batches per update", static_cast<long long>(o.gradient_accumulation));
  std::printf("\n");
  if (const pxl::transforms::PipelinedGraph* pipeline = trainer.pipelined()) {
    std::printf("Pipeline: the %s over %lld IPU%s in %lld stages (IPUs",
                o.model == "cnn" ? "CNN" : "Net", static_cast<long long>(pipeline_ipus(o)),
                pipeline_ipus(o) == 1 ? "" : "s", static_cast<long long>(pipeline->stages));
    for (const auto& ipus : pipeline->stage_ipus)
      std::printf(" %lld", static_cast<long long>(ipus.front()));
    std::printf(
        "), %s schedule%s: %lld cycles per update (%lld to fill, %lld to drain)\n",
        o.pipeline_schedule.c_str(), o.recompute ? ", recomputing from each stage's inputs" : "",
        static_cast<long long>(pipeline->cycles), static_cast<long long>(pipeline->ramp_up_cycles),
        static_cast<long long>(pipeline->ramp_down_cycles));
    // The weights and their gradient accumulators, split over the IPUs.
    const auto memory = session.memory_report();
    std::printf("Variables per IPU:");
    for (std::int64_t i = 0; i < pipeline_ipus(o); ++i)
      std::printf("%s IPU %lld %s", i > 0 ? "," : "", static_cast<long long>(i),
                  mib(memory.ipus[static_cast<std::size_t>(i)].variables).c_str());
    std::printf("\n");
  }
}

/// With the optimizer state offloaded or sharded: the on-chip memory beside that of the same
/// program with the whole state on the IPU, built only to compare.
void print_state_memory(const Options& o, const pxl::addons::CompileOptions& compile,
                        const data::LabelledBatchSpec& batch, pxl::addons::Trainer& trainer) {
  auto on_chip = compile;
  on_chip.offload_optimizer_state = false;
  on_chip.shard_optimizer_state = false;
  pxl::addons::Trainer reference = make_trainer(o);
  reference.compile(on_chip);
  reference.build(batch);
  const auto with = trainer.training_session().memory_report();
  const auto without = reference.training_session().memory_report();
  const std::string sharded =
      o.shard_optimizer_state ? ", sharded over " + std::to_string(o.replicas) + " replicas" : "";
  if (o.offload_optimizer_state)
    std::printf("On-chip always-live memory: %s with the optimizer state in Streaming Memory "
                "(%s there%s), %s with it on the IPU\n",
                mib(with.ipus[0].always_live()).c_str(), mib(with.streaming.used).c_str(),
                sharded.c_str(), mib(without.ipus[0].always_live()).c_str());
  else
    std::printf("On-chip always-live memory: %s with the optimizer state%s, %s with all of "
                "it on each replica\n",
                mib(with.ipus[0].always_live()).c_str(), sharded.c_str(),
                mib(without.ipus[0].always_live()).c_str());
}

/// What training did: images trained and the seconds it took.
struct Trained {
  std::int64_t images = 0;
  double seconds = 0;
};

/// Fits --epochs passes over the training images, shuffled with --seed afresh every epoch
/// (data::batches's order), in global batches, printing each epoch's line.
Trained train(const Options& o, const data::Dataset& train_data, pxl::addons::Trainer& trainer) {
  const std::int64_t global_batch = o.replicas * o.batch_size;
  const std::int64_t per_run = o.steps_per_execution * o.gradient_accumulation;
  const std::int64_t per_run_images = per_run * global_batch;
  if (o.epochs > 0 && train_data.size() < per_run_images)
    throw pxl::ValueError(
        "the training set has " + std::to_string(train_data.size()) +
        " images, fewer than one run takes: " + std::to_string(o.replicas) + " replica(s) x " +
        std::to_string(o.batch_size) + " images x " + std::to_string(per_run) +
        " micro-batch(es) per run = " + std::to_string(per_run_images) +
        "; lower --replicas, --batch-size, --steps-per-execution or --gradient-accumulation, "
        "or raise --limit");
  if (o.epochs == 0)
    return {};

  // Prints each epoch's line as the fit ends it, and sums the training time.
  struct EpochLines : pxl::addons::Callback {
    std::int64_t batches = 0; ///< micro-batches trained per epoch
    double seconds = 0;       ///< training time of the epochs so far
    std::chrono::steady_clock::time_point begun = std::chrono::steady_clock::now();
    bool on_epoch_end(int epoch, const pxl::addons::Logs& logs) override {
      const auto now = std::chrono::steady_clock::now();
      const double s = std::chrono::duration<double>(now - begun).count();
      seconds += s;
      begun = now;
      std::printf("epoch %d: mean loss %.4f over %lld batches in %.1f s (training accuracy "
                  "%.2f%%)\n",
                  epoch + 1, logs.at("loss"), static_cast<long long>(batches), s,
                  100.0 * logs.at("accuracy"));
      return false;
    }
  };
  const data::Batch all = as_arrays(train_data);
  const auto dataset = data::TensorDataset::from_tensor_slices(all.images, all.labels)
                           .shuffle(all.images.shape()[0], o.seed)
                           .batch(global_batch);
  auto epoch_lines = std::make_shared<EpochLines>();
  epoch_lines->batches = dataset.batches_per_epoch() / per_run * per_run;
  epoch_lines->begun = std::chrono::steady_clock::now();
  const pxl::addons::History history =
      trainer.fit(dataset, {.epochs = o.epochs, .progress = stdout, .callbacks = {epoch_lines}});
  return {history.epochs() * epoch_lines->batches * global_batch, epoch_lines->seconds};
}

/// After training: MPI's traffic per step, the profile and the trace, the saved weights.
void report_training(const Options& o, const Trained& trained, const pxl::dist::Traffic& before,
                     pxl::addons::Trainer& trainer) {
  const std::int64_t global_batch = o.replicas * o.batch_size;
  // Files are written by instance 0 alone.
  const bool writes = pxl::dist::instance_index() == 0;
  if (pxl::dist::is_distributed() && trained.images > 0) {
    const pxl::dist::Traffic after = pxl::dist::traffic();
    const auto steps = static_cast<double>(trained.images / global_batch);
    std::printf("MPI: instance 0 sent %.1f messages and %.0f bytes per step\n",
                static_cast<double>(after.messages_sent - before.messages_sent) / steps,
                static_cast<double>(after.bytes_sent - before.bytes_sent) / steps);
  }
  pxl::Session& session = trainer.training_session();
  if (o.profile) {
    const pxl::emu::Profile profile = session.profile();
    std::printf("%s", profile.summary().c_str());
    // A micro-batch is one step of the device program.
    const auto steps = trained.images / global_batch;
    std::printf("estimated device time per step: %.2f us\n",
                steps > 0 ? profile.seconds() * 1e6 / static_cast<double>(steps) : 0.0);
    if (trained.images > 0 && profile.seconds() > 0)
      std::printf("estimated throughput on %s: %.0f images/s (the emulator trained at %.0f)\n",
                  profile.target.c_str(), static_cast<double>(trained.images) / profile.seconds(),
                  static_cast<double>(trained.images) / trained.seconds);
  }
  if (!o.trace.empty() && writes) {
    session.write_trace(o.trace);
    std::printf("Wrote the trace of the training runs to %s (open it in ui.perfetto.dev)\n",
                o.trace.c_str());
  }
  if (!o.save.empty()) {
    // Every instance gathers the weights; instance 0 writes them.
    trainer.save_weights(o.save, {{"model", o.model == "cnn" ? "mnist.Cnn" : "mnist.Net"}});
    std::printf("Saved weights to %s\n", o.save.c_str());
  }
}

/// --estimate-only: the training program compiled for the target without a Session (no device
/// memory, no run, no data): its memory per IPU, and the estimated time of a step and the
/// throughput, from the cost model.
int estimate_only(const Options& o, const pxl::addons::CompileOptions& compile) {
  const std::pair<const char*, bool> unused[] = {{"--profile", o.profile},
                                                 {"--trace", !o.trace.empty()},
                                                 {"--save", !o.save.empty()},
                                                 {"--load", !o.load.empty()},
                                                 {"--report", !o.report.empty()}};
  for (const auto& [flag, given] : unused)
    if (given)
      throw pxl::ValueError(std::string("--estimate-only: trains nothing, so ") + flag +
                            " has nothing to work on; drop one of them");
  if (compile.distributed)
    throw pxl::ValueError("--estimate-only: estimates on one process; run it without mpirun");
  const pxl::emu::Target target = parse_target(o);
  const std::int64_t global_batch = o.replicas * o.batch_size;
  pxl::addons::Trainer trainer = make_trainer(o);
  trainer.compile(compile);
  const pxl::emu::IrEstimate e = trainer.estimate(
      {.features = pxl::TensorSpec{{global_batch, mnist::image_size}, pxl::float32},
       .labels = pxl::TensorSpec{{global_batch}, pxl::int32}},
      target);
  std::printf("Estimate on target '%s' (%lld IPU(s) per replica, %lld replica(s)), without "
              "running:\n%s",
              e.target.c_str(), static_cast<long long>(target.ipus),
              static_cast<long long>(e.replicas), e.memory.summary().c_str());
  if (!e.memory.fits())
    std::printf("The training program does not fit target '%s'.\n", e.target.c_str());
  if (!o.memory_report.empty()) {
    std::ofstream out(o.memory_report);
    if (!(out << e.memory.to_json()))
      throw pxl::IoError("--memory-report: cannot open '" + o.memory_report + "' for writing");
    std::printf("Wrote the training program's memory report to %s\n", o.memory_report.c_str());
  }
  // A run is steps_per_execution updates of gradient_accumulation micro-batches.
  const std::int64_t per_run = o.steps_per_execution * o.gradient_accumulation;
  std::printf("estimated device time per step: %.2f us (%lld step(s) per run, the host round "
              "trip included)\n",
              e.seconds() * 1e6 / static_cast<double>(per_run), static_cast<long long>(per_run));
  std::printf("estimated throughput: %.0f images/s\n",
              static_cast<double>(per_run * global_batch) / e.seconds());
  return 0;
}

int train_and_test(const Options& o) {
  const pxl::addons::CompileOptions compile = compile_options(o);
  if (o.target && !o.estimate_only)
    throw pxl::ValueError("--target: only --estimate-only estimates for a target (training "
                          "runs on the emulator); add --estimate-only");
  if (o.estimate_only)
    return estimate_only(o, compile);
  if (compile.distributed)
    join_instances(o);
  // The trace is written after training: find out now whether it can be.
  if (!o.trace.empty() && !std::ofstream(o.trace))
    throw pxl::IoError("--trace: cannot open '" + o.trace + "' for writing");
  if (!o.report.empty()) {
    std::error_code failed;
    std::filesystem::create_directories(o.report, failed);
    if (failed || !std::filesystem::is_directory(o.report))
      throw pxl::IoError("--report: cannot create the directory '" + o.report +
                         "': " + (failed ? failed.message() : std::string("not a directory")));
  }
  const auto train_data = data::load_fashion_mnist(o.data_dir, data::Split::train, o.limit);
  const auto test_data = data::load_fashion_mnist(o.data_dir, data::Split::test, o.test_limit);
  std::printf("Fashion-MNIST: %lld training and %lld test images from %s\n",
              static_cast<long long>(train_data.size()), static_cast<long long>(test_data.size()),
              o.data_dir.c_str());

  // The model as a Keras user trains it: addons::Trainer builds the training program (a device
  // loop fed through infeeds; accumulation, replicas, pipelining, float16 and the optimizer
  // state's placement as asked). One micro-batch is a global batch: replica r trains on its
  // rows r·B … r·B+B−1.
  const std::int64_t global_batch = o.replicas * o.batch_size;
  const data::LabelledBatchSpec batch_spec{
      .features = pxl::TensorSpec{{global_batch, mnist::image_size}, pxl::float32},
      .labels = pxl::TensorSpec{{global_batch}, pxl::int32}};
  pxl::addons::Trainer trainer = make_trainer(o);
  trainer.compile(compile);
  trainer.build(batch_spec);
  print_setup(o, compile, trainer);
  if (o.offload_optimizer_state || o.shard_optimizer_state)
    print_state_memory(o, compile, batch_spec, trainer);
  if (!o.memory_report.empty() && pxl::dist::instance_index() == 0) {
    trainer.training_session().write_memory_report(o.memory_report);
    std::printf("Wrote the training program's memory report to %s\n", o.memory_report.c_str());
  }
  if (!o.load.empty()) {
    trainer.load_weights(o.load);
    std::printf("Loaded weights from %s\n", o.load.c_str());
  }

  const pxl::dist::Traffic before = pxl::dist::traffic();
  const Trained trained = train(o, train_data, trainer);
  report_training(o, trained, before, trainer);

  // Every instance evaluates (the weights are gathered from all of them); instance 0 prints.
  const data::Batch test = as_arrays(test_data);
  const pxl::addons::Logs scores = trainer.evaluate(test.images, test.labels, 100);
  std::printf("test accuracy: %.2f%% (%lld images)\n", 100.0 * scores.at("accuracy"),
              static_cast<long long>(test_data.size()));
  if (trained.images > 0)
    std::printf("training throughput: %.0f images/s\n",
                static_cast<double>(trained.images) / trained.seconds);
  if (!compile.report_directory.empty())
    std::printf("Reports of the training and test programs: %s/train and %s/test (each with "
                "report.html; `pxl-report %s/train %s/test` compares them)\n",
                o.report.c_str(), o.report.c_str(), o.report.c_str(), o.report.c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  const std::optional<Options> parsed = mnist::parse_command_line(argc, argv, exit_code);
  if (!parsed)
    return exit_code;
  const Options& o = *parsed;

  // Under mpirun an instance that fails ends them all at once (dist::abort), rather than
  // leaving the others waiting for it in an exchange until their timeout.
  auto fail = [](int code) {
    if (pxl::dist::is_distributed())
      pxl::dist::abort(code);
    return code;
  };
  try {
    return train_and_test(o);
  } catch (const pxl::Error& e) {
    std::fprintf(stderr, "mnist: %s\n", e.what());
    return fail(1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist: unexpected error: %s\n", e.what());
    return fail(2);
  }
}
