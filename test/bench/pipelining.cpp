// Pipelined training throughput of the main job's Net through addons::Trainer on the emulator:
// the Net on 1 IPU against the Net pipelined over 2 and 4 IPUs (CompileOptions::pipeline, the
// grouped schedule), at the same batch and gradient accumulation, one update per run, its
// micro-batches fed through the infeeds from random data made once. Two figures per
// configuration:
// - wall clock: images/s on the host, where a pipeline's IPUs compute on different workers at
//   once (two workers: two stages at a time) but add copies and stash traffic;
// - estimated IPU time per update (the cost model, Session::profile), where the IPUs overlap
//   as on hardware: a pipeline of K stages approaches K× at large accumulation.
// A timing is one fit over a data set of about 4,096 images after a warm-up fit that builds the
// program (trainer_timing.hpp). Prints medians of `--reps` timings, the configurations
// interleaved within each repetition, their ratios to 1 IPU, and the fraction of the machine's
// SGEMM peak; asserts nothing.
//
//     build/test/bench/pipelining [--workers 2] [--reps 5] [--batch 32] [--accumulation 16]
#include "flags.hpp"
#include "mnist_bench_data.hpp"
#include "sgemm_peak.hpp"
#include "trainer_timing.hpp"

#include "pxl/emu/profile.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

namespace {

using mnist::bench::median;
using mnist::bench::NetTrainer;

/// One update per run of `accumulation` micro-batches of `batch`, the Net over `stages` IPUs.
NetTrainer pipelined(std::int64_t stages, std::int64_t batch, std::int64_t accumulation,
                     unsigned workers, bool profile) {
  return NetTrainer({.steps_per_execution = accumulation,
                     .gradient_accumulation = accumulation,
                     .workers = workers,
                     .profile = profile},
                    batch, stages);
}

/// Estimated IPU seconds per update: deterministic, one profiled update (the warm-up's).
double estimated_seconds_per_update(std::int64_t stages, std::int64_t batch,
                                    std::int64_t accumulation, unsigned workers) {
  NetTrainer profiled = pipelined(stages, batch, accumulation, workers, true);
  const pxl::emu::Profile p = profiled.trainer().training_session().profile();
  return p.seconds() / static_cast<double>(p.runs);
}

} // namespace

int main(int argc, char** argv) {
  unsigned workers = 2;
  int reps = 5;
  std::int64_t batch = 32, accumulation = 16;
  bench::Flags flags("Pipelined MNIST training on pxl's emulator: 1 IPU against 2 and 4 stages");
  flags.option("--workers", workers, "Emulator worker threads (0: one per core)")
      .option("--reps", reps, "Timings per figure (the median is printed)", 1)
      .option("--batch", batch, "Images per micro-batch", 1)
      .option("--accumulation", accumulation, "Micro-batches per update (at least 7, for 4 stages)",
              mnist::min_pipeline_micro_batches(4), std::int64_t{1} << 20);
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;

  std::printf("MNIST Net trained by addons::Trainer, SGD, batch %lld, %lld micro-batches per "
              "update, random data, %u emulator worker(s); median of %d\n",
              static_cast<long long>(batch), static_cast<long long>(accumulation), workers, reps);
  const double peak = pxl::bench::print_sgemm_peak();
  const std::vector<std::int64_t> depths{1, 2, 4};

  // Wall clock, without the profiler's per-step cost.
  const std::int64_t updates = std::max<std::int64_t>(2, 4096 / (batch * accumulation));
  const auto dataset = mnist::bench::random_dataset(updates * accumulation, batch);
  std::vector<std::unique_ptr<NetTrainer>> timed;
  for (const std::int64_t k : depths)
    timed.push_back(
        std::make_unique<NetTrainer>(pipelined(k, batch, accumulation, workers, false)));
  std::vector<std::vector<double>> rates(timed.size());
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t i = 0; i < timed.size(); ++i)
      rates[i].push_back(timed[i]->fit(dataset).micro_batches_per_second() *
                         static_cast<double>(batch));

  std::vector<double> estimated;
  for (const std::int64_t k : depths)
    estimated.push_back(estimated_seconds_per_update(k, batch, accumulation, workers));

  const unsigned threads =
      workers == 0 ? std::max(1u, std::thread::hardware_concurrency()) : workers;
  std::printf("\n%-7s %12s %8s %7s %22s %8s\n", "stages", "images/s", "ratio", "%peak",
              "est. IPU us/update", "speedup");
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const double rate = median(rates[i]);
    std::printf(
        "%-7lld %12.0f %8.2f %6.1f%% %22.1f %8.2f\n", static_cast<long long>(depths[i]), rate,
        rate / median(rates[0]),
        pxl::bench::percent_of_peak(rate * mnist::bench::mlp_flops_per_image(), peak, threads),
        estimated[i] * 1e6, estimated[0] / estimated[i]);
  }
  return 0;
}
