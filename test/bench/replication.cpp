// Data-parallel training throughput of the main job's Net through addons::Trainer on the
// emulator: images/s at replicas 1, 2 and 4, and the ratio to replicas 1, (a) at the same
// per-replica batch (the global batch grows with the replicas, as data-parallel training scales
// out) and (b) at the same global batch (split across the replicas). One step per run, each
// global batch fed as arrays, on random data made once. The emulated replicas share the host's
// cores, so the ratio measures what collectives and lockstep cost: the gradients' mean
// all-reduce and the loss of the SGD update's fold into the gradient matmul. A timing is one fit
// over a data set of about 2,000 images after a warm-up fit that builds the program
// (trainer_timing.hpp). Prints medians of `--reps` timings, the replica counts interleaved
// within each repetition; asserts nothing.
//
//     build/test/bench/replication [--workers N] [--reps 5] [--batch 8] [--global-batch 32]
#include "flags.hpp"
#include "mnist_bench_data.hpp"
#include "sgemm_peak.hpp"
#include "trainer_timing.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

namespace {

namespace data = pxl::addons::data;
using mnist::bench::median;

/// One replica count's trainer and the data it is timed on.
struct Config {
  std::int64_t replicas, batch;
  mnist::bench::NetTrainer trainer;
  data::TensorDataset dataset;

  Config(std::int64_t r, std::int64_t b, unsigned workers)
      : replicas(r), batch(b), trainer({.replicas = r, .workers = workers}, r * b),
        // About 2,000 images per timing.
        dataset(mnist::bench::random_dataset(std::max<std::int64_t>(20, 2000 / (r * b)), r * b)) {}
  double images_per_second() {
    return trainer.fit(dataset).micro_batches_per_second() * static_cast<double>(replicas * batch);
  }
};

/// Times every replica count `reps` times, interleaved, and prints the medians and ratios.
void measure(const char* title, const std::vector<std::array<std::int64_t, 2>>& shapes,
             unsigned workers, int reps, double peak) {
  std::printf("\n%s\n%-9s %-10s %-12s %12s %8s %7s\n", title, "replicas", "batch/rep",
              "global batch", "images/s", "ratio", "%peak");
  std::vector<std::unique_ptr<Config>> configs;
  for (const auto& [r, b] : shapes)
    configs.push_back(std::make_unique<Config>(r, b, workers));
  std::vector<std::vector<double>> rates(configs.size());
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t i = 0; i < configs.size(); ++i)
      rates[i].push_back(configs[i]->images_per_second());
  const double base = median(rates[0]);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const double rate = median(rates[i]);
    const unsigned threads =
        workers == 0 ? std::max(1u, std::thread::hardware_concurrency()) : workers;
    std::printf(
        "%-9lld %-10lld %-12lld %12.0f %8.2f %6.1f%%\n",
        static_cast<long long>(configs[i]->replicas), static_cast<long long>(configs[i]->batch),
        static_cast<long long>(configs[i]->replicas * configs[i]->batch), rate, rate / base,
        pxl::bench::percent_of_peak(rate * mnist::bench::mlp_flops_per_image(), peak, threads));
  }
}

} // namespace

int main(int argc, char** argv) {
  unsigned workers = 1;
  int reps = 5;
  std::int64_t batch = 8, global_batch = 32;
  bench::Flags flags(
      "Data-parallel MNIST training throughput on pxl's emulator at 1, 2 and 4 replicas");
  flags.option("--workers", workers, "Emulator worker threads (0: one per core)")
      .option("--reps", reps, "Timings per figure (the median is printed)", 1)
      .option("--batch", batch, "Per-replica batch of table (a)", 1)
      .option("--global-batch", global_batch, "Global batch of table (b) (4 must divide it)", 1);
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;
  if (global_batch % 4 != 0) {
    std::fprintf(stderr, "replication: --global-batch must be a multiple of 4, got %lld\n",
                 static_cast<long long>(global_batch));
    return 1;
  }

  std::printf("MNIST Net data-parallel training by addons::Trainer, SGD lr %g, one step per run "
              "on random data, %u emulator worker(s); median of %d\n",
              mnist::bench::learning_rate, workers, reps);
  const double peak = pxl::bench::print_sgemm_peak();
  measure("(a) same per-replica batch", {{1, batch}, {2, batch}, {4, batch}}, workers, reps, peak);
  measure("(b) same global batch",
          {{1, global_batch}, {2, global_batch / 2}, {4, global_batch / 4}}, workers, reps, peak);
  return 0;
}
