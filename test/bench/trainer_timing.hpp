// How the MNIST benchmarks time training: the main job's Net (or its CNN) trained through
// addons::Trainer as the main job compiles it, one timing being one fit over a data set of N
// batches after a warm-up fit that builds the program. Steps/s are micro-batches trained per
// second of the fit. Defined in trainer_timing.cpp, compiled once for every benchmark (the
// Trainer's templates for the models are instantiated there).
#pragma once

#include "mnist_bench_data.hpp"

#include "pxl/addons/training/trainer.hpp"

#include <atomic>
#include <cstdint>

namespace mnist::bench {

/// The main job's SGD learning rate, which the LibTorch reference trains with too.
inline constexpr double learning_rate = 0.05;
/// The main job's Adam learning rate for the CNN (`mnist --model cnn`), which the LibTorch
/// reference trains with too.
inline constexpr double cnn_learning_rate = 0.001;

/// Which of the main job's models a NetTrainer trains, each with the main job's recipe.
enum class Model {
  net, ///< mnist::Net, SGD at `learning_rate`
  cnn, ///< mnist::Cnn, Adam at `cnn_learning_rate`
};

/// What one fit did.
struct FitTiming {
  std::int64_t micro_batches = 0; ///< counted as their losses came back from the device
  double seconds = 0;             ///< the fit's wall time
  double mean_loss = 0;

  double micro_batches_per_second() const { return static_cast<double>(micro_batches) / seconds; }
};

/// The Net's (or the CNN's) Trainer, compiled and warmed up, timed one fit at a time.
class NetTrainer {
public:
  /// Compiles `model` over `stages` IPUs (pipelined when more than one) with the main job's
  /// optimizer for it (samples/mnist/main.cpp), its learning rate built in as a constant, and
  /// the rest of `options` (its optimizer is replaced); then builds the training program for
  /// micro-batches of `global_batch` images with a first fit of whole runs, at least three
  /// micro-batches, on random data.
  NetTrainer(pxl::addons::CompileOptions options, std::int64_t global_batch,
             std::int64_t stages = 1, Model model = Model::net);

  /// Trains one epoch of `dataset` and times it. Throws when the fit trains fewer micro-batches
  /// than the data set holds (its batches must fill whole runs) or when they are not of the
  /// program's batch (the fit would build another program, and time that too).
  FitTiming fit(const pxl::addons::data::TensorDataset& dataset);

  pxl::addons::Trainer& trainer() { return trainer_; }

private:
  /// Counts the micro-batches whose losses come back: in a device loop on the outfeed's
  /// thread, every one of them before the fit returns.
  struct Counter : pxl::addons::Callback {
    std::atomic<std::int64_t> micro_batches = 0;
    void on_batch_end(std::int64_t, const pxl::addons::Logs&) override { ++micro_batches; }
  };

  static pxl::addons::Trainer compiled(pxl::addons::CompileOptions options, std::int64_t stages,
                                       Model model);

  std::int64_t global_batch_, per_run_;
  pxl::addons::Trainer trainer_;
};

} // namespace mnist::bench
