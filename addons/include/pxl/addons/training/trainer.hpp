// pxl::addons::Trainer: Keras's compile / fit / evaluate / predict for a Module, over device
// loops on the emulator.
#pragma once

#include "pxl/addons/data/pipeline.hpp"
#include "pxl/addons/module/graph_with_named_args.hpp"
#include "pxl/addons/module/variable_factory.hpp"
#include "pxl/addons/optimizers/adam.hpp"
#include "pxl/addons/optimizers/rmsprop.hpp"
#include "pxl/addons/optimizers/sgd.hpp"
#include "pxl/core/host_tensor.hpp"
#include "pxl/emu/estimate.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/session.hpp"
#include "pxl/transforms/pipeline.hpp"

#include <cstdint>
#include <cstdio>
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
  /// Mean cross-entropy of the output [b, classes] against int32 labels [b] (Keras's
  /// `SparseCategoricalCrossentropy(from_logits)`, from_logits from CompileOptions: the
  /// output is probabilities by default, as in Keras; see
  /// addons::ops::sparse_categorical_crossentropy).
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
/// program, so LearningRateScheduler can change it between epochs (unless
/// CompileOptions::constant_learning_rate).
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
  /// Whether the model's output is logits, for sparse_categorical_crossentropy (Keras's
  /// `from_logits`, false by default as in Keras: probabilities). Without it, a model ending in
  /// a softmax (`Dense(10, Activation::softmax)`) is trained on the softmax's input, exactly and
  /// stably, and any other output is taken for probabilities and clipped to [1e-7, 1 − 1e-7] as
  /// Keras does. With it, a model ending in a softmax is a ValueError at build (or the first
  /// fit, evaluate): a second softmax in the loss would train poorly and silently. Set it for a
  /// model whose last layer has no activation (`Dense(10)`).
  bool from_logits = false;
  /// "accuracy" ("acc", "sparse_categorical_accuracy": the fraction of rows whose output's
  /// argmax is the label), reported as "accuracy"; the loss is always reported.
  std::vector<std::string> metrics;
  /// Batches per `session.run` (Keras's steps_per_execution): a device loop of
  /// steps_per_execution / gradient_accumulation optimizer steps, so a multiple of
  /// gradient_accumulation (ValueError otherwise), as Keras with IPUs requires.
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
  /// With `pipeline`: how its stages share time. `sequential` runs each micro-batch through
  /// every stage before the next: for stages that share one IPU as recomputation checkpoints
  /// (a device mapping of zeros, as Graphcore's ResNet-50 runs), it stashes one micro-batch
  /// and needs no more micro-batches than one. ValueError other than grouped without
  /// `pipeline`.
  transforms::PipelineSchedule pipeline_schedule = transforms::PipelineSchedule::grouped;
  /// With `pipeline`: keep only each stage's inputs and recompute the rest of its activations
  /// in the backward pass (PipelineOptions::recompute; TF's RecomputeThenBackpropagate, the
  /// pipelined models' recomputation Graphcore's applications use): less stashed memory for
  /// about a third more work, training bitwise the same. ValueError without `pipeline`: a
  /// single forward pass recomputed whole inside its gradient call costs a forward pass and
  /// lowers no peak (addons::recompute_graph does that for graphs called layer by layer).
  bool recompute = false;
  /// The model's weights and activations: float32, or float16 as mixed precision (float
  /// inputs cast to float16 on the device, the model's output cast to float32 for the loss and
  /// the metrics, the loss gradient scaled by `loss_scaling` and cast to float16 for the
  /// backward pass, and the update dividing the scaling out: folded into SGD's learning rate
  /// when SGD has no weight decay, else from the gradients first). DTypeError for another.
  DType dtype = float32;
  /// The float16 loss gradient's scale, against underflow in the backward pass (positive);
  /// float32 ignores it.
  double loss_scaling = 128.0;
  /// With dtype float16: round the weights' updates stochastically, seeded by `seed`
  /// (SessionOptions::stochastic_rounding, the IPU's stochastic rounding): an update below a
  /// weight's spacing moves it as float32 would on average instead of being lost. ValueError
  /// with float32, which has no float16 update to round.
  bool stochastic_rounding = false;
  /// The partials type and available memory proportion of the model's matmuls that do not
  /// set their own (Ir::set_matmul_defaults, PopART's `partialsTypeMatMuls`; the published
  /// IPU configurations train float16 with float16 partials). float16 partials need dtype
  /// float16 (ValueError otherwise): each run of 16 products is then added into a float16
  /// accumulator (docs/semantics.md, "Matmul partials").
  MatMulAttrs matmul_defaults{};
  /// Keep the optimizer's state in Streaming Memory (remote buffers), loaded and stored around
  /// each update, instead of on the IPU: training is bitwise the same, on-chip memory smaller.
  /// ValueError for an optimizer without state (SGD without momentum).
  bool offload_optimizer_state = false;
  /// Shard the optimizer's state over the replicas (each keeps 1/replicas of it; replicated
  /// tensor sharding): training is bitwise the same. ValueError for an optimizer without state
  /// or a single replica.
  bool shard_optimizer_state = false;
  /// Build the optimizer's learning rate into the training program as a constant rather than
  /// read it from a variable: w −= lr·u is then rounded once, not twice, and training is
  /// bitwise that of a hand-written program with the same constant (the main job's, say);
  /// set_learning_rate (and so LearningRateScheduler) throws ValueError.
  bool constant_learning_rate = false;
  /// Emulator worker threads (0: one per core, as everywhere in pxl).
  unsigned workers = 0;
  /// Estimate the training program's device time (SessionOptions::profile): read it from
  /// training_session().profile().
  bool profile = false;
  /// Under mpirun, spread the replicas over the instances (SessionOptions::distributed, with
  /// pxl::dist configured for `replicas` in all): each process runs and feeds its own replicas
  /// from the same global batches, and training is bitwise that of one process.
  bool distributed = false;
  /// Seeds the variables' initialisers.
  std::uint64_t seed = 0;
  /// Where the sessions write Poplar's autoReport (every report, docs/report.md): the training
  /// program into DIR/train, the evaluation program into DIR/test and the prediction program
  /// into DIR/predict. Empty: none (POPLAR_ENGINE_OPTIONS still applies to every session).
  std::string report_directory;
};

/// `Trainer::fit`'s settings.
struct FitOptions {
  int epochs = 1;
  /// Batches per epoch (Keras's steps_per_epoch), a multiple of steps_per_execution; the
  /// epochs take them from one stream over the dataset's passes, going on where the last
  /// epoch stopped, so the dataset must yield epochs × steps_per_epoch batches (`.repeat()`).
  /// None: an epoch is one iteration of the dataset.
  std::optional<std::int64_t> steps_per_epoch;
  /// Examples per micro-batch (over all replicas).
  std::int64_t batch_size = 32;
  /// Visit the examples in a new order every epoch (addons::data::shuffled_indices, seeded
  /// by CompileOptions::seed). Left-over examples that do not fill a run are dropped, as Keras
  /// on IPUs drops the remainder for fixed shapes.
  bool shuffle = true;
  /// Where to show each epoch's progress bar (addons::Progress, the main job's), redrawn as
  /// the micro-batches' losses come back (Keras's verbose=1): `stdout`, say; none when null.
  std::FILE* progress = nullptr;
  /// (x, y) evaluated at the end of every epoch, every example (the remainder of the batch size
  /// too): "val_loss", "val_accuracy".
  std::optional<std::pair<HostTensor, HostTensor>> validation_data;
  std::vector<std::shared_ptr<Callback>> callbacks;
  /// Sees every step of every training run (Session::run's observer: host timings per step,
  /// for a profile of where the time goes); it must outlive the fit. None: not observed.
  emu::StepObserver* observer = nullptr;
};

/// A Module trained as a Keras model:
///
///     addons::Trainer trainer(Sequential{Flatten{}, Dense(128, Activation::relu), Dense(10)});
///     trainer.compile({.metrics = {"accuracy"}, .steps_per_execution = 50});
///     History h = trainer.fit(x_train, y_train, {.epochs = 2, .batch_size = 32});
///     Logs test = trainer.evaluate(x_test, y_test);
///
/// The first fit builds the training Ir for the batch's shape (a device loop over
/// steps_per_execution micro-batches, an optimizer step every gradient_accumulation of them,
/// each micro-batch's loss and accuracy stored back through an outfeed) and its Session, whose
/// infeeds producer threads fill from the data ahead of the device, across runs and epochs;
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
  /// steps_per_execution batches of batch_size; an epoch is as many whole runs as the data
  /// fills (or FitOptions::steps_per_epoch batches). Returns the per-epoch means.
  History fit(const HostTensor& x, const HostTensor& y, const FitOptions& options);
  /// Trains on a batched dataset (`.batch(size)` with drop_remainder; shuffled, if it is,
  /// afresh every pass): its batch size replaces options.batch_size and options.shuffle is
  /// not used. Each run takes the next steps_per_execution batches. An epoch is one iteration
  /// of the dataset, every pass its `repeat(count)` makes, the batches that do not fill a run
  /// left out; or, with FitOptions::steps_per_epoch, that many batches from one stream over
  /// the passes (a dataset repeated forever needs it). The infeeds' producers prepare up to
  /// the dataset's prefetch depth of batches ahead of the device (8 without one).
  History fit(const data::TensorDataset& dataset, FitOptions options);
  /// The mean loss (and accuracy) over every example of `x`, `y`, run in batches of
  /// `batch_size` and a last, shorter batch for the remainder (as Keras's evaluate).
  Logs evaluate(const HostTensor& x, const HostTensor& y, std::int64_t batch_size = 32);
  /// The mean loss (and accuracy) over every example of one pass of a batched dataset (in its
  /// order, epoch 0's when shuffled), each batch's mean weighted by its examples: with
  /// drop_remainder false, the last, shorter batch too.
  Logs evaluate(const data::TensorDataset& dataset);
  /// The model's outputs for every example of `x` ([n, ...]), run in batches of `batch_size`
  /// and a last, shorter batch for the remainder (as Keras's predict).
  HostTensor predict(const HostTensor& x, std::int64_t batch_size = 32);

  /// The current learning rate (what LearningRateScheduler changes).
  double learning_rate() const;
  void set_learning_rate(double lr);
  /// The model's weights by name, from the device.
  std::map<std::string, HostTensor> weights();
  /// Saves the weights to a safetensors file, with `metadata` in its header (collective under
  /// mpirun: every instance calls it, instance 0 writes).
  void save_weights(const std::filesystem::path& path,
                    const std::map<std::string, std::string>& metadata = {});
  /// Loads the weights of a safetensors file (save_weights's) into the training program.
  /// ValueError before build or fit; the checkpoint's errors as load_checkpoint's.
  void load_weights(const std::filesystem::path& path);

  /// Builds the training program for micro-batches of `batch` (global: over all replicas)
  /// now, as the first fit on such batches would (Keras's build): to read its memory report
  /// or load weights before training. Nothing is rebuilt for the same spec. ValueError for a
  /// batch that does not split over the replicas.
  void build(const data::LabelledBatchSpec& batch);
  /// The training program for micro-batches of `batch`, as build would make it, estimated
  /// for `target` without a Session (emu::estimate: no device memory, no run): its memory
  /// report and its cycles per run of steps_per_execution batches. Keeps nothing; errors as
  /// build's.
  emu::IrEstimate estimate(const data::LabelledBatchSpec& batch, const emu::Target& target);
  /// The training program's Session (memory_report, profile, write_trace); ValueError before
  /// build or fit.
  Session& training_session();
  /// What pipelining made of the training program (CompileOptions::pipeline), else null.
  const transforms::PipelinedGraph* pipelined() const;

  class Programs;

  /// The training program's infeeds since the last fit began (Session::feed_stats): how many
  /// elements the device took and how long it waited for the dataset. Empty before a fit.
  std::vector<FeedStats> feed_stats() const;

private:
  /// Trains `runs` runs per epoch on the batches of `dataset`, fed through the infeeds.
  /// Trains `runs` runs per epoch on the batches of `dataset`: each epoch from its own
  /// `passes_per_epoch` passes, or from one stream over them all when 0.
  History fit_runs(const data::TensorDataset& dataset, std::int64_t runs,
                   std::int64_t passes_per_epoch, const FitOptions& options);
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
