// Pipelined training throughput of the main job's Net on the emulator: the Net on 1 IPU
// against the Net pipelined over 2 and 4 IPUs (transforms::pipeline, grouped schedule), at the
// same batch and gradient accumulation. Two figures per configuration:
// - wall clock: images/s on the host, where a pipeline's IPUs compute on different workers at
//   once (two workers: two stages at a time) but add copies and stash traffic;
// - estimated IPU time per update (the cost model, Session::profile), where the IPUs overlap
//   as on hardware: a pipeline of K stages approaches K× at large accumulation.
// Prints medians of `--reps` timings, the configurations interleaved within each repetition,
// their ratios to 1 IPU, and the fraction of the machine's SGEMM peak; asserts nothing.
//
//     build/test/bench/pipelining [--workers 2] [--reps 5] [--batch 32] [--accumulation 16]
#include "mnist_bench_data.hpp"
#include "programs.hpp"
#include "sgemm_peak.hpp"

#include "pxl/emu/profile.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace {

using mnist::bench::median;
using Clock = std::chrono::steady_clock;

/// One pipeline depth's program, its run's inputs (every micro-batch of one update), and the
/// estimated IPU seconds per update.
struct Config {
  std::int64_t stages, batch, accumulation;
  mnist::TrainingProgram program;
  pxl::HostTensor images, labels;

  Config(std::int64_t k, std::int64_t b, std::int64_t g, unsigned workers, bool profile)
      : stages(k), batch(b), accumulation(g), program({.batch_size = b,
                                                       .gradient_accumulation = g,
                                                       .workers = workers,
                                                       .profile = profile,
                                                       .pipeline_stages = k}),
        images({g, b, mnist::image_size}, pxl::float32), labels({g, b}, pxl::int32) {
    const auto batches = mnist::bench::random_batches(b, static_cast<int>(g));
    for (std::int64_t i = 0; i < g; ++i) {
      const auto& src = batches[static_cast<std::size_t>(i)];
      std::memcpy(images.bytes().data() + i * src.images.bytes().size(), src.images.bytes().data(),
                  src.images.bytes().size());
      std::memcpy(labels.bytes().data() + i * src.labels.bytes().size(), src.labels.bytes().data(),
                  src.labels.bytes().size());
    }
    program.run(images, labels); // warm-up
  }
  double images_per_second(int updates) {
    const auto t0 = Clock::now();
    for (int u = 0; u < updates; ++u)
      program.run(images, labels);
    return static_cast<double>(updates * accumulation * batch) /
           std::chrono::duration<double>(Clock::now() - t0).count();
  }
  double estimated_seconds_per_update() {
    const pxl::emu::Profile p = program.session().profile();
    return p.seconds() / static_cast<double>(p.runs);
  }
};

} // namespace

int main(int argc, char** argv) {
  unsigned workers = 2;
  int reps = 5;
  std::int64_t batch = 32, accumulation = 16;
  CLI::App app{"Pipelined MNIST training on pxl's emulator: 1 IPU against 2 and 4 stages"};
  app.add_option("--workers", workers, "Emulator worker threads (0: one per core)")
      ->capture_default_str();
  app.add_option("--reps", reps, "Timings per figure (the median is printed)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", batch, "Images per micro-batch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--accumulation", accumulation,
                 "Micro-batches per update (at least 7, for 4 stages)")
      ->check(CLI::Range(7, 1 << 20))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::printf("MNIST Net, SGD, batch %lld, %lld micro-batches per update, random data, %u "
              "emulator worker(s); median of %d\n",
              static_cast<long long>(batch), static_cast<long long>(accumulation), workers, reps);
  const double peak = pxl::bench::print_sgemm_peak();
  const std::vector<std::int64_t> depths{1, 2, 4};

  // Wall clock, without the profiler's per-step cost.
  std::vector<std::unique_ptr<Config>> timed;
  for (const std::int64_t k : depths)
    timed.push_back(std::make_unique<Config>(k, batch, accumulation, workers, false));
  std::vector<std::vector<double>> rates(timed.size());
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t i = 0; i < timed.size(); ++i)
      rates[i].push_back(timed[i]->images_per_second(
          std::max(2, static_cast<int>(4096 / (batch * accumulation)))));

  // Estimated IPU time: deterministic, one profiled update each (the warm-up's).
  std::vector<double> estimated;
  for (const std::int64_t k : depths)
    estimated.push_back(
        Config(k, batch, accumulation, workers, true).estimated_seconds_per_update());

  const unsigned threads =
      workers == 0 ? std::max(1u, std::thread::hardware_concurrency()) : workers;
  std::printf("\n%-7s %12s %8s %7s %22s %8s\n", "stages", "images/s", "ratio", "%peak",
              "est. IPU us/update", "speedup");
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const double rate = median(rates[i]);
    std::printf(
        "%-7lld %12.0f %8.2f %6.1f%% %22.1f %8.2f\n", static_cast<long long>(timed[i]->stages),
        rate, rate / median(rates[0]),
        pxl::bench::percent_of_peak(rate * mnist::bench::mlp_flops_per_image(), peak, threads),
        estimated[i] * 1e6, estimated[0] / estimated[i]);
  }
  return 0;
}
