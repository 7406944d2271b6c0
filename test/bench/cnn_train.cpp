// Training throughput of the main job's CNN (mnist::Cnn: two blocks of a 3×3 convolution, batch
// norm, ReLU and 2×2 max pool, then dense 128 and 10) through addons::Trainer with the main
// job's recipe (Adam at 1e-3, one step per run) on the emulator, at batch 8, 32 and 128 on 1 and
// 2 workers: median steps/s of `--reps` timings on random data (made once, in order), images/s,
// and the fraction of the workers' SGEMM peak that the model's training flops reach
// (cnn_reference.hpp); when LibTorch is installed, the same model and recipe in LibTorch on as
// many threads, its timings interleaved with pxl's, and the ratio pxl / LibTorch. A timing is
// one fit over a data set of N batches after a warm-up fit that builds the program
// (trainer_timing.hpp). Prints figures; asserts nothing.
//
// `--accuracy` instead trains the recipe in LibTorch on Fashion-MNIST (batch 32, normalised as
// the main job normalises it, shuffled every epoch) for 3 epochs with `--seeds` seeds and prints
// the test accuracy after each epoch, to set beside `mnist --model cnn`'s.
//
//     build/test/bench/cnn_train [--reps 5]
//     build/test/bench/cnn_train --accuracy [--seeds 3]
#include "cnn_reference.hpp"
#include "flags.hpp"
#include "mnist_bench_data.hpp"
#include "sgemm_peak.hpp"
#include "trainer_timing.hpp"

#include "pxl/addons/data/batches.hpp"
#include "pxl/addons/data/fashion_mnist.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

namespace {

namespace data = pxl::addons::data;
using mnist::bench::median;

/// `batch` as the images and labels of the reference.
bench::LabelledImages labelled(const data::Batch& batch) {
  return {batch.images.data<float>(), batch.labels.data<std::int32_t>()};
}

/// The images of `d` normalised and flattened as the main job feeds them, in file order.
data::Batch as_arrays(const data::Dataset& d) {
  return *data::batches(d, {.batch_size = d.size(), .shuffle = false, .flatten = true}).begin();
}

/// `--accuracy`: the recipe's test accuracy in LibTorch after each of 3 epochs, per seed, and
/// the medians over the seeds after 1 and 3 epochs.
int print_libtorch_accuracy(int seeds, int threads) {
  constexpr std::int64_t batch = 32;
  constexpr int epochs = 3;
  const auto train = data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train);
  const auto test = data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::test);
  const data::Batch train_arrays = as_arrays(train), test_arrays = as_arrays(test);
  std::printf("The main job's CNN in LibTorch: Adam lr %g, batch %lld, %d thread(s); "
              "Fashion-MNIST, %lld training and %lld test images\n",
              mnist::bench::cnn_learning_rate, static_cast<long long>(batch), threads,
              static_cast<long long>(train.size()), static_cast<long long>(test.size()));
  std::vector<double> first, last;
  for (int seed = 1; seed <= seeds; ++seed) {
    const auto accuracy = bench::libtorch_cnn_accuracy(
        labelled(train_arrays), labelled(test_arrays), batch, epochs,
        mnist::bench::cnn_learning_rate, static_cast<std::uint64_t>(seed), threads);
    if (!accuracy) {
      std::fprintf(stderr, "cnn_train --accuracy: this build has no LibTorch (install "
                           "libtorch-dev and reconfigure)\n");
      return 1;
    }
    std::printf("seed %d: test accuracy", seed);
    for (std::size_t e = 0; e < accuracy->size(); ++e)
      std::printf("%s after epoch %zu %.2f%%", e > 0 ? "," : "", e + 1, 100.0 * (*accuracy)[e]);
    std::printf("\n");
    first.push_back(accuracy->front());
    last.push_back(accuracy->back());
  }
  std::printf("median over %d seed(s): %.2f%% after 1 epoch, %.2f%% after %d\n", seeds,
              100.0 * median(first), 100.0 * median(last), epochs);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  int reps = 5;
  bool accuracy = false;
  int seeds = 3;
  bench::Flags flags("Training throughput of the main job's CNN on pxl's emulator, against "
                     "LibTorch when it is installed");
  flags.option("--reps", reps, "Timings per figure (the median is printed)", 1)
      .flag("--accuracy", accuracy,
            "Instead: the recipe's Fashion-MNIST test accuracy in LibTorch after 1 to 3 epochs")
      .option("--seeds", seeds, "With --accuracy: training runs, one per seed", 1);
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;
  if (accuracy)
    return print_libtorch_accuracy(
        seeds, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));

  const double peak = pxl::bench::print_sgemm_peak();
  std::printf("The main job's CNN trained by addons::Trainer, Adam lr %g, one step per run, random "
              "data; %.1f MFLOP per image (convolutions and dense layers); median of %d\n",
              mnist::bench::cnn_learning_rate, bench::cnn_flops_per_image() * 1e-6, reps);
  std::printf("%-6s %-8s %10s %10s %7s %14s %10s\n", "batch", "workers", "steps/s", "images/s",
              "%peak", "LibTorch st/s", "pxl/torch");

  // pxl / LibTorch on 2 workers, by batch: what the goal is stated in.
  std::map<std::int64_t, double> ratios;
  for (const std::int64_t batch : {8, 32, 128}) {
    const std::int64_t steps = 6400 / batch;
    const data::Batch examples = mnist::bench::random_examples(steps * batch);
    const auto dataset =
        data::TensorDataset::from_tensor_slices(examples.images, examples.labels).batch(batch);
    for (const unsigned workers : {1u, 2u}) {
      mnist::bench::NetTrainer trainer({.workers = workers}, batch, 1, mnist::bench::Model::cnn);
      std::vector<double> rates, torch_rates;
      for (int r = 0; r < reps; ++r) {
        rates.push_back(trainer.fit(dataset).micro_batches_per_second());
        if (const auto torch_rate = bench::libtorch_cnn_steps_per_second(
                batch, steps, labelled(examples), mnist::bench::cnn_learning_rate,
                static_cast<int>(workers)))
          torch_rates.push_back(*torch_rate);
      }
      const double rate = median(rates), images = rate * static_cast<double>(batch);
      std::printf(
          "%-6lld %-8u %10.1f %10.0f %6.1f%%", static_cast<long long>(batch), workers, rate, images,
          pxl::bench::percent_of_peak(images * bench::cnn_flops_per_image(), peak, workers));
      if (torch_rates.empty()) {
        std::printf(" %14s %10s\n", "-", "-");
        continue;
      }
      const double torch_rate = median(torch_rates);
      std::printf(" %14.1f %10.2f\n", torch_rate, rate / torch_rate);
      if (workers == 2)
        ratios[batch] = rate / torch_rate;
    }
  }
  if (!ratios.empty())
    std::printf("\nGoal on 2 workers, >= 1.5x LibTorch at batch 8 and >= 1.0x at batch 128: "
                "%.2fx and %.2fx, %s\n",
                ratios.at(8), ratios.at(128),
                ratios.at(8) >= 1.5 && ratios.at(128) >= 1.0 ? "met" : "not met");
  return 0;
}
