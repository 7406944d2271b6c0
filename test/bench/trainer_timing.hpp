// How the MNIST benchmarks time training: the main job's Net trained through addons::Trainer as
// the main job compiles it, one timing being one fit over a data set of N batches after a
// warm-up fit that builds the program. Steps/s are micro-batches trained per second of the fit.
#pragma once

#include "mnist_bench_data.hpp"
#include "model.hpp"

#include "pxl/addons/training/trainer.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace mnist::bench {

/// The main job's SGD learning rate, which the LibTorch reference trains with too.
inline constexpr double learning_rate = 0.05;

/// What one fit did.
struct FitTiming {
  std::int64_t micro_batches = 0; ///< counted as their losses came back from the device
  double seconds = 0;             ///< the fit's wall time
  double mean_loss = 0;

  double micro_batches_per_second() const { return static_cast<double>(micro_batches) / seconds; }
};

/// The Net's Trainer, compiled and warmed up, timed one fit at a time.
class NetTrainer {
public:
  /// Compiles the Net over `stages` IPUs (pipelined when more than one) with the main job's
  /// optimizer, SGD at `learning_rate` built in as a constant (samples/mnist/main.cpp), and the
  /// rest of `options` (its optimizer is replaced); then builds the training program for
  /// micro-batches of `global_batch` images with a first fit of whole runs, at least three
  /// micro-batches, on random data.
  NetTrainer(pxl::addons::CompileOptions options, std::int64_t global_batch,
             std::int64_t stages = 1)
      : global_batch_(global_batch), per_run_(options.steps_per_execution),
        trainer_(compiled(std::move(options), stages)) {
    fit(random_dataset((3 + per_run_ - 1) / per_run_ * per_run_, global_batch));
  }

  /// Trains one epoch of `dataset` and times it. Throws when the fit trains fewer micro-batches
  /// than the data set holds (its batches must fill whole runs) or when they are not of the
  /// program's batch (the fit would build another program, and time that too).
  FitTiming fit(const pxl::addons::data::TensorDataset& dataset) {
    const std::int64_t batch = dataset.element_spec().features.shape.at(0);
    if (batch != global_batch_)
      throw std::invalid_argument("NetTrainer::fit: batches of " + std::to_string(batch) +
                                  " images, but the program is built for " +
                                  std::to_string(global_batch_));
    auto counter = std::make_shared<Counter>();
    const auto t0 = std::chrono::steady_clock::now();
    const pxl::addons::History history = trainer_.fit(dataset, {.callbacks = {counter}});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::int64_t trained = counter->micro_batches;
    if (trained != dataset.batches_per_epoch())
      throw std::runtime_error("NetTrainer::fit: trained " + std::to_string(trained) + " of the " +
                               std::to_string(dataset.batches_per_epoch()) +
                               " micro-batches; runs of " + std::to_string(per_run_) +
                               " must divide them");
    return {trained, seconds, history.history.at("loss").at(0)};
  }

  pxl::addons::Trainer& trainer() { return trainer_; }

private:
  /// Counts the micro-batches whose losses come back: in a device loop on the outfeed's
  /// thread, every one of them before the fit returns.
  struct Counter : pxl::addons::Callback {
    std::atomic<std::int64_t> micro_batches = 0;
    void on_batch_end(std::int64_t, const pxl::addons::Logs&) override { ++micro_batches; }
  };

  static pxl::addons::Trainer compiled(pxl::addons::CompileOptions options, std::int64_t stages) {
    options.optimizer = pxl::addons::optimizers::SGDOptions{.lr = learning_rate};
    options.constant_learning_rate = true;
    options.pipeline = stages > 1;
    Net net;
    net.stages = stages;
    pxl::addons::Trainer trainer(net);
    trainer.compile(std::move(options));
    return trainer;
  }

  std::int64_t global_batch_, per_run_;
  pxl::addons::Trainer trainer_;
};

} // namespace mnist::bench
