// pxl::addons::Trainer: Keras's compile / fit / evaluate / predict for a Module, over device
// loops on the emulator.
#pragma once

#include "pxl/addons/data/pipeline.hpp"
#include "pxl/addons/graph_with_named_args.hpp"
#include "pxl/addons/optimizers/adam.hpp"
#include "pxl/addons/optimizers/rmsprop.hpp"
#include "pxl/addons/optimizers/sgd.hpp"
#include "pxl/addons/variable_factory.hpp"
#include "pxl/core/host_tensor.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace pxl::addons {

/// What a model is fitted to: a loss of its output and the labels, with its gradient.
enum class TrainingLoss {
  /// Mean cross-entropy of logits [b, classes] against int32 labels [b] (Keras's
  /// `SparseCategoricalCrossentropy(from_logits=True)`).
  sparse_categorical_crossentropy,
  /// Mean of (output − label)² over every element; labels shaped and typed as the output.
  mean_squared_error,
};

/// Values reported to callbacks and kept in the History: "loss", "accuracy", and with
/// validation data "val_loss", "val_accuracy"; "lr" at epoch ends.
using Logs = std::map<std::string, double>;

/// Keras's callbacks. `on_batch_end` sees each micro-batch's loss (and accuracy when asked
/// for) as the device stores it, on the Session's outfeed thread while the run goes on (Keras
/// with IPUs' asynchronous callbacks: keep it quick, and do not call the Trainer from it);
/// `on_epoch_end` sees the epoch's means on the calling thread, and stops training after that
/// epoch by returning true (EarlyStopping). What a callback throws ends `fit` with it.
class Callback {
public:
  virtual ~Callback() = default;
  virtual void on_batch_end(std::int64_t /*batch*/, const Logs& /*logs*/) {}
  /// Return true to stop training.
  virtual bool on_epoch_end(int /*epoch*/, const Logs& /*logs*/) { return false; }
};

/// Per-epoch values, as Keras's History: `history.at("loss")[e]`.
struct History {
  std::map<std::string, std::vector<double>> history;
  int epochs() const {
    return history.empty() ? 0 : static_cast<int>(history.begin()->second.size());
  }
};

/// The optimizer and its hyper-parameters; its learning rate is a variable of the training
/// program, so LearningRateScheduler can change it between epochs.
using TrainerOptimizer =
    std::variant<optimizers::SGDOptions, optimizers::AdamOptions, optimizers::RMSpropOptions>;

/// `Trainer::compile`'s settings (an aggregate, Keras's `compile` arguments and the IPU
/// configuration):
///
///     trainer.compile({.optimizer = optimizers::AdamOptions{.lr = 1e-3},
///                      .metrics = {"accuracy"}, .steps_per_execution = 50});
struct CompileOptions {
  TrainerOptimizer optimizer = optimizers::SGDOptions{};
  TrainingLoss loss = TrainingLoss::sparse_categorical_crossentropy;
  /// "accuracy" ("acc", "sparse_categorical_accuracy": the fraction of rows whose output's
  /// argmax is the label), reported as "accuracy"; the loss is always reported.
  std::vector<std::string> metrics;
  /// Optimizer steps per `session.run`: a device loop.
  std::int64_t steps_per_execution = 1;
  /// Micro-batches per optimizer step, their mean gradient applied (Keras on IPUs'
  /// gradient_accumulation_steps_per_replica).
  std::int64_t gradient_accumulation = 1;
  /// Data-parallel replicas: each micro-batch of the data is split among them, the gradients
  /// averaged (batch sizes must divide by it).
  std::int64_t replicas = 1;
  /// With a model built in pipeline stages (PipelineStages, Sequential's stage assignment):
  /// pipeline each optimizer step's micro-batches (transforms::pipeline, grouped).
  bool pipeline = false;
  /// Emulator worker threads (0: one per core).
  unsigned workers = 1;
  /// Seeds the variables' initialisers.
  std::uint64_t seed = 0;
};

/// `Trainer::fit`'s settings.
struct FitOptions {
  int epochs = 1;
  /// Examples per micro-batch (over all replicas).
  std::int64_t batch_size = 32;
  /// Visit the examples in a new order every epoch (addons::data::shuffled_indices, seeded
  /// by CompileOptions::seed). Left-over examples that do not fill a run are dropped, as Keras
  /// on IPUs drops the remainder for fixed shapes.
  bool shuffle = true;
  /// (x, y) evaluated at the end of every epoch: "val_loss", "val_accuracy".
  std::optional<std::pair<HostTensor, HostTensor>> validation_data;
  std::vector<std::shared_ptr<Callback>> callbacks;
};

/// A Module trained as a Keras model:
///
///     addons::Trainer trainer(Sequential{Flatten{}, Dense(128, Activation::relu), Dense(10)});
///     trainer.compile({.metrics = {"accuracy"}, .steps_per_execution = 50});
///     History h = trainer.fit(x_train, y_train, {.epochs = 2, .batch_size = 32});
///     Logs test = trainer.evaluate(x_test, y_test);
///
/// The first fit builds the training Ir for the batch's shape (a device loop of
/// steps_per_execution optimizer steps of gradient_accumulation micro-batches each, fed
/// through host streams, each micro-batch's loss and accuracy stored back) and its Session;
/// evaluate and predict build theirs the same way, and the weights pass between the Sessions
/// by name, so all see the latest.
class Trainer {
  /// Traces the model for a batch's spec.
  using Trace =
      std::function<std::pair<NamedVariableFactories, GraphWithNamedArgs>(const TensorSpec&)>;
  Trainer(std::in_place_t, Trace trace);

public:
  /// Keeps `model` (a Module) to trace once the input shape is known.
  template <typename M>
  explicit Trainer(M model)
      : Trainer(std::in_place,
                Trace([model](const TensorSpec& x) mutable { return model.create_graph(x); })) {}
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;
  ~Trainer();

  /// Sets the training configuration; ValueError for counts below 1, an unknown metric, a
  /// batch that does not split over the replicas. Drops programs built before.
  void compile(CompileOptions options);
  /// Trains on `x` [N, ...] and `y` [N, ...] (examples along the first axis). Each run takes
  /// steps_per_execution × gradient_accumulation micro-batches of batch_size; an epoch is as
  /// many whole runs as the data fills. Returns the per-epoch means.
  History fit(const HostTensor& x, const HostTensor& y, const FitOptions& options);
  /// Trains on a batched dataset (`.batch(size)` with drop_remainder; shuffled, if it is,
  /// afresh every epoch): its batch size replaces options.batch_size and options.shuffle is
  /// not used. Each run takes the epoch's next steps_per_execution × gradient_accumulation
  /// batches; the batches that do not fill a run are left out.
  History fit(const data::TensorDataset& dataset, FitOptions options);
  /// The mean loss (and accuracy) over `x`, `y` in batches of `batch_size` (the remainder
  /// dropped).
  Logs evaluate(const HostTensor& x, const HostTensor& y, std::int64_t batch_size = 32);
  /// The model's outputs for `x` in batches of `batch_size` (the remainder dropped): [n, ...].
  HostTensor predict(const HostTensor& x, std::int64_t batch_size = 32);

  /// The current learning rate (what LearningRateScheduler changes).
  double learning_rate() const;
  void set_learning_rate(double lr);
  /// The model's weights by name, from the device.
  std::map<std::string, HostTensor> weights();
  /// Saves the weights to a safetensors file.
  void save_weights(const std::filesystem::path& path);

  class Programs;

private:
  /// The inputs of epoch e's run r: [steps_per_execution × gradient_accumulation × batch, ...]
  /// examples and labels.
  using RunData = std::function<std::pair<HostTensor, HostTensor>(int epoch, std::int64_t run)>;
  /// Trains `runs` runs per epoch of micro-batches shaped `x_batch`, `y_batch` (global).
  History fit_runs(const TensorSpec& x_batch, const TensorSpec& y_batch, std::int64_t runs,
                   const RunData& run_data, const FitOptions& options);
  Trace trace_;
  std::unique_ptr<Programs> programs_;
};

/// Saves the weights at the end of every epoch (Keras's ModelCheckpoint): `path` with
/// "{epoch}" replaced by the epoch number (from 1).
class ModelCheckpoint : public Callback {
public:
  ModelCheckpoint(Trainer& trainer, std::string path)
      : trainer_(&trainer), path_(std::move(path)) {}
  bool on_epoch_end(int epoch, const Logs& logs) override;

private:
  Trainer* trainer_;
  std::string path_;
};

/// Stops training when `monitor` has not improved (fallen by more than `min_delta`) for
/// `patience` epochs (Keras's EarlyStopping). ValueError at the first epoch end when the logs
/// lack `monitor`.
class EarlyStopping : public Callback {
public:
  explicit EarlyStopping(std::string monitor = "val_loss", int patience = 0, double min_delta = 0.0)
      : monitor_(std::move(monitor)), patience_(patience), min_delta_(min_delta) {}
  bool on_epoch_end(int epoch, const Logs& logs) override;
  /// The epoch (from 0) training stopped after, if it did.
  std::optional<int> stopped_epoch() const { return stopped_; }

private:
  std::string monitor_;
  int patience_;
  double min_delta_;
  double best_ = 0;
  int waited_ = 0;
  bool seen_ = false;
  std::optional<int> stopped_;
};

/// Sets the learning rate before every epoch from `schedule(epoch, current)` (Keras's
/// LearningRateScheduler); the training program reads it from a variable, so nothing is
/// recompiled.
class LearningRateScheduler : public Callback {
public:
  LearningRateScheduler(Trainer& trainer, std::function<double(int epoch, double lr)> schedule)
      : trainer_(&trainer), schedule_(std::move(schedule)) {}
  bool on_epoch_end(int epoch, const Logs& logs) override;

private:
  Trainer* trainer_;
  std::function<double(int, double)> schedule_;
};

} // namespace pxl::addons
