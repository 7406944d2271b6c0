// Fashion-MNIST training throughput of the main job's Net through addons::Trainer on the
// emulator, one step per run: steps/s at batch 8, 32 and 128 on random data (made once, in
// order) and on real data (normalised once and shuffled every epoch, as the main job feeds
// it), and — when LibTorch is installed — the same model and recipe in LibTorch (its faster of
// 1 and N threads), with the ratio. Then, at batch 8, a device loop of 100 steps per run, which
// the Trainer feeds through the Session's infeeds from producer threads, against 1 step per
// run, which it feeds each batch as arrays: on random data in order (what a run and the feed
// cost) and on real data shuffled (the host gathering each batch between runs, against the
// producers gathering them while the device trains). The Trainer feeds a device loop only
// through its infeeds, so arrays stacked for a whole loop beforehand are no longer compared. A
// timing is one fit over a data set of N batches after a warm-up fit that builds the program
// (trainer_timing.hpp). Prints medians of `--reps` timings; asserts nothing.
//
//     build/test/bench/mnist_train [--workers N] [--reps 3]
#include "flags.hpp"
#include "mnist_bench_data.hpp"
#include "mnist_reference.hpp"
#include "sgemm_peak.hpp"
#include "trainer_timing.hpp"

#include "pxl/addons/data/batches.hpp"
#include "pxl/addons/data/fashion_mnist.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace data = pxl::addons::data;
using mnist::bench::median;
using mnist::bench::mlp_flops_per_image;
using mnist::bench::NetTrainer;

std::int64_t steps_for(std::int64_t batch) { return std::max<std::int64_t>(20, 3200 / batch); }

/// The first `batches` × `batch` images of `train`, normalised and flattened once as the main
/// job does, in batches of `batch` shuffled with `seed` afresh every epoch.
data::TensorDataset real_dataset(const data::Dataset& train, std::int64_t batches,
                                 std::int64_t batch, std::uint64_t seed) {
  const std::int64_t n = batches * batch;
  if (train.size() < n)
    throw std::invalid_argument("mnist_train: " + std::to_string(n) + " images wanted, " +
                                std::to_string(train.size()) + " loaded");
  const data::Batch all =
      *data::batches(train, {.batch_size = n, .shuffle = false, .flatten = true}).begin();
  return data::TensorDataset::from_tensor_slices(all.images, all.labels)
      .shuffle(n, seed)
      .batch(batch);
}

/// Median over `reps` fits of `dataset` of the micro-batches trained per second.
double steps_per_second(NetTrainer& trainer, const data::TensorDataset& dataset, int reps) {
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r)
    rates.push_back(trainer.fit(dataset).micro_batches_per_second());
  return median(rates);
}

} // namespace

int main(int argc, char** argv) {
  unsigned workers = 0;
  int reps = 3;
  bench::Flags flags("Fashion-MNIST training throughput on pxl's emulator");
  flags.option("--workers", workers, "Emulator worker threads (0: one per core)")
      .option("--reps", reps, "Timings per figure (the median is printed)", 1);
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;

  constexpr std::int64_t loop = 100, loop_batch = 8, loop_steps = 5 * loop;
  // Enough images for every timing: steps_for(b) batches of b, and the device loop's steps.
  const auto train = data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train,
                                              loop_steps * loop_batch);
  const unsigned threads =
      workers == 0 ? std::max(1u, std::thread::hardware_concurrency()) : workers;
  const double peak = pxl::bench::print_sgemm_peak();
  std::printf("MNIST Net trained by addons::Trainer, SGD lr %g, one step per run, %u emulator "
              "worker(s); median of %d\n",
              mnist::bench::learning_rate, threads, reps);
  std::printf("%-6s %-7s %12s %12s %7s %14s %10s\n", "batch", "data", "steps/s", "images/s",
              "%peak", "LibTorch st/s", "pxl/torch");

  for (std::int64_t batch : {8, 32, 128}) {
    NetTrainer trainer({.workers = workers}, batch);
    const std::int64_t steps = steps_for(batch);
    const data::Batch fake = mnist::bench::random_examples(steps * batch);
    const double random_rate = steps_per_second(
        trainer, data::TensorDataset::from_tensor_slices(fake.images, fake.labels).batch(batch),
        reps);
    const double real_rate = steps_per_second(trainer, real_dataset(train, steps, batch, 1), reps);

    double torch_rate = 0;
    if (bench::have_libtorch()) {
      // LibTorch's best of one thread and as many threads as the emulator has: its
      // OpenMP threads slow it down badly on a shared two-core machine.
      for (int t : {1, static_cast<int>(threads)}) {
        std::vector<double> rates;
        for (int r = 0; r < reps; ++r)
          rates.push_back(bench::libtorch_steps_per_second(batch, steps, fake.images.data<float>(),
                                                           fake.labels.data<std::int32_t>(),
                                                           mnist::bench::learning_rate, t));
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

  std::printf("\nbatch %lld: a device loop of %lld steps per run fed by the infeed against one "
              "step per run fed as arrays, %lld steps per timing\n",
              static_cast<long long>(loop_batch), static_cast<long long>(loop),
              static_cast<long long>(loop_steps));
  NetTrainer one({.workers = workers}, loop_batch);
  NetTrainer fed({.steps_per_execution = loop, .workers = workers}, loop_batch);

  // What a run and the feed cost: batches made beforehand and read in order, so that neither
  // side spends its time preparing data.
  const auto in_order = mnist::bench::random_dataset(loop_steps, loop_batch);
  std::vector<double> one_rates, fed_rates;
  for (int r = 0; r < reps; ++r) {
    one_rates.push_back(one.fit(in_order).micro_batches_per_second());
    fed_rates.push_back(fed.fit(in_order).micro_batches_per_second());
  }
  std::printf("  random data in order (per-run overhead against the feed's): 1: %.1f steps/s; "
              "%lld: %.1f steps/s; ratio %.2f\n",
              median(one_rates), static_cast<long long>(loop), median(fed_rates),
              median(fed_rates) / median(one_rates));

  // What the main job sees: real data gathered in a fresh shuffled order. One step per run: the
  // host gathers a batch, then the device trains on it, one after the other. A device loop fed
  // by the infeed: the producer threads gather the batches while the device trains, and each
  // loss comes back through the outfeed.
  const auto shuffled = real_dataset(train, loop_steps, loop_batch, 3);
  mnist::bench::FitTiming serial, looped;
  std::vector<double> serial_rates, looped_rates, looped_waits;
  std::size_t depth = 0;
  for (int r = 0; r < reps; ++r) {
    serial = one.fit(shuffled);
    serial_rates.push_back(serial.micro_batches_per_second());
    looped = fed.fit(shuffled);
    looped_rates.push_back(looped.micro_batches_per_second());
    // The infeeds' figures since this fit began.
    std::chrono::nanoseconds wait{0};
    for (const auto& s : fed.trainer().feed_stats())
      if (s.host_to_device) {
        wait += s.device_wait;
        depth = s.depth;
      }
    looped_waits.push_back(std::chrono::duration<double, std::milli>(wait).count());
  }
  const double serial_rate = median(serial_rates), looped_rate = median(looped_rates);
  std::printf("  real data shuffled, as the main job trains:\n");
  std::printf("    1 step per run, the host gathers each batch then runs:   %.1f steps/s "
              "(mean loss %.3f)\n",
              serial_rate, serial.mean_loss);
  std::printf("    %lld steps per run fed by the infeed (depth %zu):          %.1f steps/s "
              "(mean loss %.3f); the device waited %.2f ms for the host\n",
              static_cast<long long>(loop), depth, looped_rate, looped.mean_loss,
              median(looped_waits));
  std::printf("    ratio %.2f\n", looped_rate / serial_rate);
  return 0;
}
