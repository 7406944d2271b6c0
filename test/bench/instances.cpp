// One configuration of the instances benchmark (test/bench/instances.sh runs the others and
// the ratios): the main job's data-parallel training through addons::Trainer at --replicas R,
// one step per run on random data made once, timed in this process, or in every instance of an
// `mpirun -np N` that spreads the R replicas over the N processes (CompileOptions::distributed:
// each feeds its own replicas' rows of the same global batches). A timing is one fit over
// --steps global batches after a warm-up fit that builds the program (trainer_timing.hpp).
// Instance 0 prints images/s (the median of --reps timings, each after a barrier so that the
// instances start together), the fraction of the SGEMM peak, and what this instance sent and
// received per step: the gradients' all-reduce, and a share of the weights' gathering at the
// end of every fit, where the Trainer reads them back to the host (collective under mpirun).
//
//     build/test/bench/instances --replicas 2
//     mpirun -np 2 build/test/bench/instances --replicas 2
#include "flags.hpp"
#include "mnist_bench_data.hpp"
#include "sgemm_peak.hpp"
#include "trainer_timing.hpp"

#include "pxl/dist.hpp"

#include <cstdio>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
  std::int64_t replicas = 2, batch = 32, steps = 200;
  unsigned workers = 1;
  int reps = 5;
  bench::Flags flags("MNIST data-parallel training on pxl's emulator, in one process or several "
                     "instances under mpirun");
  flags.option("--replicas", replicas, "Replicas in all (a multiple of the instances)", 1)
      .option("--batch", batch, "Images per replica and step", 1)
      .option("--steps", steps, "Steps per timing (one run each)", 1)
      .option("--workers", workers, "Emulator worker threads per process")
      .option("--reps", reps, "Timings (the median is printed)", 1);
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;

  const bool distributed = pxl::dist::is_distributed();
  const bool prints = pxl::dist::instance_index() == 0;
  try {
    if (distributed)
      pxl::dist::configure({.num_total_replicas = replicas});
    // Every instance measures the peak (they share the machine alike); instance 0 prints it.
    const double peak = pxl::bench::sgemm_peak_gflops();
    mnist::bench::NetTrainer trainer(
        {.replicas = replicas, .workers = workers, .distributed = distributed}, replicas * batch);
    const auto dataset = mnist::bench::random_dataset(steps, replicas * batch);
    std::vector<double> rates;
    const pxl::dist::Traffic before = pxl::dist::traffic();
    for (int rep = 0; rep < reps; ++rep) {
      pxl::dist::barrier();
      rates.push_back(trainer.fit(dataset).micro_batches_per_second() *
                      static_cast<double>(replicas * batch));
    }
    const pxl::dist::Traffic after = pxl::dist::traffic();
    if (prints) {
      const double rate = mnist::bench::median(rates);
      const double total_steps = static_cast<double>(steps) * reps;
      const auto processes = static_cast<unsigned>(pxl::dist::num_instances());
      const unsigned process_workers = trainer.trainer().training_session().num_workers();
      std::printf(
          "%lld process(es) x %lld replica(s), %u worker(s) each, batch %lld per replica: %.0f "
          "images/s (%.1f%% of %u x the SGEMM peak of %.1f GFLOP/s); per step this instance "
          "sent %.1f messages, %.0f bytes and received %.0f bytes%s\n",
          static_cast<long long>(processes),
          static_cast<long long>(replicas / static_cast<std::int64_t>(processes)), process_workers,
          static_cast<long long>(batch), rate,
          pxl::bench::percent_of_peak(rate * mnist::bench::mlp_flops_per_image(), peak,
                                      processes * process_workers),
          processes * process_workers, peak,
          static_cast<double>(after.messages_sent - before.messages_sent) / total_steps,
          static_cast<double>(after.bytes_sent - before.bytes_sent) / total_steps,
          static_cast<double>(after.bytes_received - before.bytes_received) / total_steps,
          distributed ? " (with a share of each fit's gathering of the weights)" : "");
      std::printf("images/s: %.0f\n", rate);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "instances: %s\n", e.what());
    if (distributed)
      pxl::dist::abort(1);
    return 1;
  }
  return 0;
}
