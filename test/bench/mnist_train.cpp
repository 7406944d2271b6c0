// Fashion-MNIST training throughput on the emulator: steps/s at batch 8, 32 and 128 on random
// and on real data, and — when LibTorch is installed — the same model and recipe in LibTorch
// (its faster of 1 and N threads), with the ratio; then, at batch 8, a device loop of 100
// steps against 1 step per run, both on pre-stacked arrays (per-run overhead only) and on real
// data through the batching pipeline (the host preparing each batch between runs, against the
// infeed preparing them on its producer threads while the device loop runs). Prints medians of
// `--reps` timings; asserts nothing.
//
//     build/test/bench/mnist_train [--workers N] [--reps 3]
#include "device_loop_feed.hpp"
#include "mnist_bench_data.hpp"
#include "mnist_reference.hpp"
#include "programs.hpp"
#include "sgemm_peak.hpp"

#include "pxl/addons/data/batches.hpp"
#include "pxl/addons/data/fashion_mnist.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

namespace {

namespace data = pxl::addons::data;
using mnist::bench::median;
using mnist::bench::mlp_flops_per_image;
using mnist::bench::random_batches;
using Clock = std::chrono::steady_clock;

/// Median over `reps` of steps/s, each timing `steps` calls of `step(i)` after a warm-up.
template <typename Step>
double steps_per_second(int reps, std::int64_t steps, Step&& step) {
  for (std::int64_t i = 0; i < 3; ++i)
    step(i);
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    for (std::int64_t i = 0; i < steps; ++i)
      step(i);
    rates.push_back(static_cast<double>(steps) /
                    std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median(rates);
}

std::int64_t steps_for(std::int64_t batch) { return std::max<std::int64_t>(20, 3200 / batch); }

} // namespace

int main(int argc, char** argv) {
  unsigned workers = 0;
  int reps = 3;
  CLI::App app{"Fashion-MNIST training throughput on pxl's emulator"};
  app.add_option("--workers", workers, "Emulator worker threads (0: one per core)");
  app.add_option("--reps", reps, "Timings per figure (the median is printed)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const auto train =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train, 20000);
  const unsigned threads =
      workers == 0 ? std::max(1u, std::thread::hardware_concurrency()) : workers;
  const double peak = pxl::bench::print_sgemm_peak();
  std::printf("MNIST Net training, SGD lr 0.05, %u emulator worker(s); median of %d\n", threads,
              reps);
  std::printf("%-6s %-7s %12s %12s %7s %14s %10s\n", "batch", "data", "steps/s", "images/s",
              "%peak", "LibTorch st/s", "pxl/torch");

  for (std::int64_t batch : {8, 32, 128}) {
    mnist::TrainingProgram program({.batch_size = batch, .workers = workers});
    const std::int64_t steps = steps_for(batch);

    const auto fake = random_batches(batch, 16);
    const double random_rate = steps_per_second(reps, steps, [&](std::int64_t i) {
      const auto& b = fake[static_cast<std::size_t>(i) % fake.size()];
      program.run(b.images, b.labels);
    });

    // Real data through the batching pipeline (shuffle, normalise), as the trainer feeds it.
    auto view = data::batches(train, {.batch_size = batch, .seed = 1, .flatten = true});
    auto it = view.begin();
    const double real_rate = steps_per_second(reps, steps, [&](std::int64_t) {
      if (it == view.end())
        it = view.begin();
      program.run(it->images, it->labels);
      ++it;
    });

    double torch_rate = 0;
    if (bench::have_libtorch()) {
      std::vector<float> xs;
      std::vector<std::int32_t> ys;
      for (const auto& b : fake) {
        xs.insert(xs.end(), b.images.data<float>().begin(), b.images.data<float>().end());
        ys.insert(ys.end(), b.labels.data<std::int32_t>().begin(),
                  b.labels.data<std::int32_t>().end());
      }
      // LibTorch's best of one thread and as many threads as the emulator has: its
      // OpenMP threads slow it down badly on a shared two-core machine.
      for (int t : {1, static_cast<int>(threads)}) {
        std::vector<double> rates;
        for (int r = 0; r < reps; ++r)
          rates.push_back(bench::libtorch_steps_per_second(batch, steps, xs, ys, 0.05, t));
        torch_rate = std::max(torch_rate, median(rates));
      }
    }
    for (auto [name, rate] : {std::pair{"random", random_rate}, std::pair{"real", real_rate}}) {
      const double images = rate * static_cast<double>(batch);
      std::printf("%-6lld %-7s %12.1f %12.0f %6.1f%%", static_cast<long long>(batch), name, rate,
                  images,
                  pxl::bench::percent_of_peak(images * mlp_flops_per_image(), peak, threads));
      if (torch_rate > 0)
        std::printf(" %14.1f %10.2f\n", torch_rate, rate / torch_rate);
      else
        std::printf(" %14s %10s\n", "-", "-");
    }
  }

  constexpr std::int64_t loop = 100, batch = 8;
  std::printf("\nbatch 8: a device loop of %lld steps per session.run against one step per run\n",
              static_cast<long long>(loop));

  // Per-run overhead only: the same batches, stacked into arrays before the timing starts, so
  // that neither side prepares data while it is timed.
  mnist::DeviceLoopFeed feed(loop, batch);
  std::vector<data::Batch> singles;
  for (const auto& b : data::batches(train, {.batch_size = batch, .seed = 2, .flatten = true})) {
    singles.push_back({b.images, b.labels});
    if (feed.add(b))
      break;
  }
  mnist::TrainingProgram one({.batch_size = batch, .steps_per_execution = 1, .workers = workers});
  mnist::TrainingProgram hundred(
      {.batch_size = batch, .steps_per_execution = loop, .workers = workers});
  const double one_rate = steps_per_second(reps, 300, [&](std::int64_t i) {
    const auto& b = singles[static_cast<std::size_t>(i % loop)];
    one.run(b.images, b.labels);
  });
  const double hundred_rate = loop * steps_per_second(reps, 3, [&](std::int64_t) {
                                hundred.run(feed.images(), feed.labels());
                              });
  std::printf("  pre-stacked arrays (per-run overhead only): 1: %.1f steps/s; %lld: %.1f steps/s; "
              "ratio %.2f\n",
              one_rate, static_cast<long long>(loop), hundred_rate, hundred_rate / one_rate);

  // What a trainer sees: real data through the batching pipeline (shuffle, gather,
  // normalise), a fresh epoch per timing. One step per run: the host prepares a batch, then
  // the device trains on it, one after the other. A device loop fed by the infeed: the
  // producer threads prepare the batches while the device trains, and each loss comes back
  // through the per-step callback.
  constexpr std::int64_t timed_runs = 5, timed_steps = timed_runs * loop;
  const auto epoch_batches = [&](int rep) {
    return data::batches(train, {.batch_size = batch,
                                 .seed = 3,
                                 .epoch = static_cast<std::uint64_t>(rep),
                                 .flatten = true});
  };
  double serial_loss = 0, fed_loss = 0; // summed over each timing, as a progress bar would
  std::vector<double> serial_rates, fed_rates, fed_waits;
  std::size_t fed_depth = 0;
  mnist::TrainingProgram serial({.batch_size = batch, .workers = workers});
  mnist::TrainingProgram fed(
      {.batch_size = batch, .steps_per_execution = loop, .workers = workers});
  const auto host_wait = [&fed] {
    std::chrono::nanoseconds wait{0};
    for (const auto& s : fed.session().feed_stats())
      if (s.host_to_device)
        wait += s.device_wait;
    return wait;
  };
  for (int r = 0; r < reps; ++r) {
    auto view = epoch_batches(r);
    auto it = view.begin();
    for (int i = 0; i < 3; ++i, ++it) // warm-up
      serial.run(it->images, it->labels);
    serial_loss = 0;
    auto t0 = Clock::now();
    for (std::int64_t i = 0; i < timed_steps; ++i, ++it)
      serial_loss += serial.run(it->images, it->labels).at(0);
    serial_rates.push_back(static_cast<double>(timed_steps) /
                           std::chrono::duration<double>(Clock::now() - t0).count());

    fed.feed_from(epoch_batches(r), [&fed_loss](std::int64_t, float loss) { fed_loss += loss; });
    fed.run(); // warm-up
    fed_loss = 0;
    const auto wait0 = host_wait();
    t0 = Clock::now();
    for (std::int64_t i = 0; i < timed_runs; ++i)
      fed.run();
    fed_rates.push_back(static_cast<double>(timed_steps) /
                        std::chrono::duration<double>(Clock::now() - t0).count());
    fed_waits.push_back(std::chrono::duration<double, std::milli>(host_wait() - wait0).count());
    fed_depth = fed.session().feed_stats().front().depth;
  }
  const double serial_rate = median(serial_rates), fed_rate = median(fed_rates);
  std::printf("  real data through the batching pipeline, %lld steps per timing:\n",
              static_cast<long long>(timed_steps));
  std::printf("    1 step per run, the host prepares each batch then runs:  %.1f steps/s "
              "(mean loss %.3f)\n",
              serial_rate, serial_loss / static_cast<double>(timed_steps));
  std::printf("    %lld steps per run fed by the infeed (depth %zu):         %.1f steps/s "
              "(mean loss %.3f); the device waited %.2f ms for the host\n",
              static_cast<long long>(loop), fed_depth, fed_rate,
              fed_loss / static_cast<double>(timed_steps), median(fed_waits));
  std::printf("    ratio %.2f\n", fed_rate / serial_rate);
  return 0;
}
