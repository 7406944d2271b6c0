// One configuration of the instances benchmark (test/bench/instances.sh runs the others and
// the ratios): the main job's data-parallel training at --replicas R, timed in this process,
// or in every instance of an `mpirun -np N` that spreads the R replicas over the N processes.
// Instance 0 prints images/s (the median of --reps timings, each after a barrier so that the
// instances start together), the fraction of the SGEMM peak, and what this instance sent and
// received per step.
//
//     build/test/bench/instances --replicas 2
//     mpirun -np 2 build/test/bench/instances --replicas 2
#include "mnist_bench_data.hpp"
#include "programs.hpp"
#include "sgemm_peak.hpp"

#include "pxl/dist.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  std::int64_t replicas = 2, batch = 32, steps = 200;
  unsigned workers = 1;
  int reps = 5;
  CLI::App app{"MNIST data-parallel training on pxl's emulator, in one process or several "
               "instances under mpirun"};
  app.add_option("--replicas", replicas, "Replicas in all (a multiple of the instances)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", batch, "Images per replica and step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--steps", steps, "Steps per timing (one run each)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--workers", workers, "Emulator worker threads per process")
      ->capture_default_str();
  app.add_option("--reps", reps, "Timings (the median is printed)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const bool distributed = pxl::dist::is_distributed();
  const bool prints = pxl::dist::instance_index() == 0;
  try {
    if (distributed)
      pxl::dist::configure({.num_total_replicas = replicas});
    // Every instance measures the peak (they share the machine alike); instance 0 prints it.
    const double peak = pxl::bench::sgemm_peak_gflops();
    mnist::TrainingProgram program({.batch_size = batch,
                                    .replicas = replicas,
                                    .distributed = distributed,
                                    .workers = workers});
    const auto batches = mnist::bench::random_batches(replicas * batch, 8);
    auto run = [&](std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) {
        const auto& g = batches[static_cast<std::size_t>(i) % batches.size()];
        program.run(g.images, g.labels);
      }
    };
    run(5); // warm-up
    std::vector<double> rates;
    const pxl::dist::Traffic before = pxl::dist::traffic();
    for (int rep = 0; rep < reps; ++rep) {
      pxl::dist::barrier();
      const auto t0 = std::chrono::steady_clock::now();
      run(steps);
      rates.push_back(static_cast<double>(steps * replicas * batch) /
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const pxl::dist::Traffic after = pxl::dist::traffic();
    if (prints) {
      const double rate = mnist::bench::median(rates);
      const double total_steps = static_cast<double>(steps) * reps;
      const auto processes = static_cast<unsigned>(pxl::dist::num_instances());
      std::printf("%lld process(es) x %lld replica(s), %u worker(s) each, batch %lld per "
                  "replica: %.0f images/s (%.1f%% of %u x the SGEMM peak of %.1f GFLOP/s); per "
                  "step this instance sent %.1f messages, %.0f bytes and received %.0f bytes\n",
                  static_cast<long long>(processes),
                  static_cast<long long>(replicas / static_cast<std::int64_t>(processes)),
                  program.session().num_workers(), static_cast<long long>(batch), rate,
                  pxl::bench::percent_of_peak(rate * mnist::bench::mlp_flops_per_image(), peak,
                                              processes * program.session().num_workers()),
                  processes * program.session().num_workers(), peak,
                  static_cast<double>(after.messages_sent - before.messages_sent) / total_steps,
                  static_cast<double>(after.bytes_sent - before.bytes_sent) / total_steps,
                  static_cast<double>(after.bytes_received - before.bytes_received) / total_steps);
      std::printf("images/s: %.0f\n", rate);
    }
  } catch (const pxl::Error& e) {
    std::fprintf(stderr, "instances: %s\n", e.what());
    if (distributed)
      pxl::dist::abort(1);
    return 1;
  }
  return 0;
}
