// Fashion-MNIST training throughput on the emulator: steps/s at batch 8, 32 and 128 on random
// and on real data, a device loop of 100 steps against 1 step per run, and — when LibTorch is
// installed — the same model and recipe in LibTorch (its faster of 1 and N threads), with the
// ratio. Prints medians of
// `--reps` timings; asserts nothing.
//
//     build/test/bench/mnist_train [--workers N] [--reps 3]
#include "device_loop_feed.hpp"
#include "mnist_reference.hpp"
#include "programs.hpp"

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
using Clock = std::chrono::steady_clock;

double median(std::vector<double> xs) {
  std::ranges::sort(xs);
  return xs[xs.size() / 2];
}

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

/// `count` batches of normalised-looking random images and random labels.
std::vector<data::Batch> random_batches(std::int64_t batch, int count) {
  std::mt19937 gen(1);
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, 9);
  std::vector<data::Batch> out;
  for (int i = 0; i < count; ++i) {
    data::Batch b{pxl::HostTensor({batch, mnist::image_size}, pxl::float32),
                  pxl::HostTensor({batch}, pxl::int32)};
    for (auto& x : b.images.data<float>())
      x = pixel(gen);
    for (auto& y : b.labels.data<std::int32_t>())
      y = label(gen);
    out.push_back(std::move(b));
  }
  return out;
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
  std::printf("MNIST Net training, SGD lr 0.05, %u emulator worker(s); median of %d\n", threads,
              reps);
  std::printf("%-6s %-7s %12s %12s %14s %10s\n", "batch", "data", "steps/s", "images/s",
              "LibTorch st/s", "pxl/torch");

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
      std::printf("%-6lld %-7s %12.1f %12.0f", static_cast<long long>(batch), name, rate,
                  rate * static_cast<double>(batch));
      if (torch_rate > 0)
        std::printf(" %14.1f %10.2f\n", torch_rate, rate / torch_rate);
      else
        std::printf(" %14s %10s\n", "-", "-");
    }
  }

  // A device loop: 100 steps per session.run against one step per run, same batches.
  constexpr std::int64_t loop = 100, batch = 8;
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
  std::printf("\nbatch 8, steps per execution 1: %.1f steps/s; 100: %.1f steps/s; ratio %.2f\n",
              one_rate, hundred_rate, hundred_rate / one_rate);
  return 0;
}
