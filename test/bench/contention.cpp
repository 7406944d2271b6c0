// Workers under contention: training steps/s of the main job's Net through addons::Trainer (one
// step per run, random data made once) at batch 8, 32 and 128 on 1 and 2 emulator workers, on
// an idle machine and with one competing busy process (a forked child spinning on a core), with
// the ratios 2 workers / 1 worker; plus the emulator's measured SGEMM peak per worker and the
// fraction of it each figure reaches. A timing is one fit over a data set of N batches after a
// warm-up fit that builds the program (trainer_timing.hpp); the four cases' timings are
// interleaved, repetition by repetition, so that drift in the machine's load hits them alike.
// Prints medians of `--reps` timings; asserts nothing.
//
//     build/test/bench/contention [--reps 5]
#include "flags.hpp"
#include "mnist_bench_data.hpp"
#include "sgemm_peak.hpp"
#include "trainer_timing.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using mnist::bench::median;
using mnist::bench::mlp_flops_per_image;

/// A child process spinning on a core for as long as this lives: another tenant's busy job.
class BusyProcess {
public:
  BusyProcess() : pid_(fork()) {
    if (pid_ == 0)
      for (;;)
        asm volatile("" ::: "memory");
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;
  ~BusyProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

private:
  pid_t pid_;
};

} // namespace

int main(int argc, char** argv) {
  int reps = 5;
  bench::Flags flags("MNIST training on 1 and 2 emulator workers, idle and under contention");
  flags.option("--reps", reps, "Timings per figure (the median is printed)", 1);
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;

  const double peak = pxl::bench::print_sgemm_peak(2 * reps);
  std::printf("MNIST Net trained by addons::Trainer (SGD), one step per run, random data; median "
              "of %d; busy = one competing process spinning\n",
              reps);
  std::printf("%-6s %-5s %12s %12s %8s %9s %9s\n", "batch", "load", "1w steps/s", "2w steps/s",
              "2w/1w", "1w %peak", "2w %peak");

  for (const std::int64_t batch : {8, 32, 128}) {
    std::vector<std::unique_ptr<mnist::bench::NetTrainer>> trainers;
    for (const unsigned workers : {1u, 2u})
      trainers.push_back(std::make_unique<mnist::bench::NetTrainer>(
          pxl::addons::CompileOptions{.from_logits = true, .workers = workers}, batch));
    const auto dataset =
        mnist::bench::random_dataset(std::max<std::int64_t>(20, 1600 / batch), batch);
    // rates[load][workers - 1]
    std::vector<double> rates[2][2];
    for (int r = 0; r < reps; ++r)
      for (int load = 0; load < 2; ++load) {
        const auto busy = load ? std::make_unique<BusyProcess>() : nullptr;
        for (std::size_t w = 0; w < 2; ++w)
          rates[load][w].push_back(trainers[w]->fit(dataset).micro_batches_per_second());
      }
    for (int load = 0; load < 2; ++load) {
      const double one = median(rates[load][0]), two = median(rates[load][1]);
      const double flops = mlp_flops_per_image() * static_cast<double>(batch);
      std::printf("%-6lld %-5s %12.1f %12.1f %8.2f %8.1f%% %8.1f%%\n",
                  static_cast<long long>(batch), load ? "busy" : "idle", one, two, two / one,
                  pxl::bench::percent_of_peak(one * flops, peak, 1),
                  pxl::bench::percent_of_peak(two * flops, peak, 2));
    }
  }
}
