// pxl::addons::Trainer: compile, fit, evaluate and predict, and the weights its programs
// share. The programs themselves are built in training_program.cpp and forward_program.cpp,
// and fed in feeding.cpp.
#include "pxl/addons/training/trainer.hpp"

#include "programs.hpp"

#include "pxl/addons/training/checkpoint.hpp"
#include "pxl/addons/training/metrics.hpp"
#include "pxl/core/error.hpp"

#include <cstring>
#include <exception>

namespace pxl::addons {

namespace {

using trainer_detail::accuracy_metric;

void check_examples(std::string_view fn, const HostTensor& x, const HostTensor& y) {
  if (x.rank() == 0 || y.rank() == 0 || x.shape()[0] != y.shape()[0])
    throw ShapeError(std::string(fn) +
                     ": x and y need one example per row of their first axis "
                     "and as many of each, got x " +
                     to_string(x.shape()) + " and y " + to_string(y.shape()));
  if (x.shape()[0] == 0)
    throw ShapeError(std::string(fn) + ": x and y have no examples (their first axis is 0)");
}

double initial_lr(const TrainerOptimizer& o) {
  return std::visit([](const auto& opts) { return opts.lr.value(); }, o);
}

/// DTypeError unless the dataset's labels are what `loss` takes.
void check_labels(TrainingLoss loss, const TensorSpec& labels) {
  if (loss == TrainingLoss::sparse_categorical_crossentropy && labels.dtype != int32)
    throw DTypeError("Trainer: sparse_categorical_crossentropy takes int32 class indices as "
                     "labels; the dataset's labels are " +
                     to_string(labels) + ": convert them (HostTensor::astype(int32))");
  if (loss == TrainingLoss::mean_squared_error && !is_floating_point(labels.dtype))
    throw DTypeError("Trainer: mean_squared_error takes float labels shaped as the model's "
                     "output; the dataset's labels are " +
                     to_string(labels) + ": convert them (HostTensor::astype(float32))");
}

/// `spec` with `rows` examples along its first axis.
TensorSpec with_rows(TensorSpec spec, std::int64_t rows) {
  spec.shape[0] = rows;
  return spec;
}

} // namespace

Trainer::Programs::Programs(CompileOptions o)
    : options(std::move(o)), lr(initial_lr(options.optimizer)) {}

void Trainer::Programs::load_weights(Program& p) {
  if (!weights)
    return;
  for (const auto& [key, t] : p.variables.items())
    p.session->write_variable_data(t, weights->at(key));
}

void Trainer::Programs::save_weights(Program& p) {
  std::map<std::string, HostTensor> w;
  for (const auto& [key, t] : p.variables.items())
    w.emplace(key, p.session->get_tensor_data(t));
  weights = std::move(w);
}

void Trainer::Programs::sync_from_training() {
  if (train)
    save_weights(*train);
}

std::vector<Trainer::Programs::Program*>
Trainer::Programs::forward_programs(const trainer_detail::TraceModel& trace,
                                    const std::vector<TensorSpec>& xs,
                                    const std::optional<TensorSpec>& labels) {
  const bool evaluation = labels.has_value();
  // Drop this kind's programs for other batches: a Session each, and weights to keep in step.
  std::erase_if(forward, [&](const auto& entry) {
    return entry.first.first == evaluation && std::ranges::none_of(xs, [&](const TensorSpec& x) {
             return x.shape == entry.first.second;
           });
  });
  sync_from_training();
  std::vector<Program*> programs;
  for (const TensorSpec& x : xs) {
    const auto key = std::pair(evaluation, x.shape);
    auto it = forward.find(key);
    if (it == forward.end()) {
      it = forward.try_emplace(key).first;
      std::optional<TensorSpec> y;
      if (labels)
        y = with_rows(*labels, x.shape[0]);
      trainer_detail::build_forward_program(it->second, options, trace, x, y);
    }
    load_weights(it->second);
    programs.push_back(&it->second);
  }
  return programs;
}

Trainer::Trainer(std::in_place_t, Trace trace) : trace_(std::move(trace)) {}
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;
Trainer::~Trainer() = default;

void Trainer::compile(CompileOptions options) {
  trainer_detail::check_compile_options(options);
  std::optional<std::map<std::string, HostTensor>> kept;
  if (programs_) {
    programs_->sync_from_training();
    kept = programs_->weights;
  }
  programs_ = std::make_unique<Programs>(std::move(options));
  programs_->weights = std::move(kept);
}

History Trainer::fit(const HostTensor& x, const HostTensor& y, const FitOptions& fit_options) {
  if (!programs_)
    throw ValueError("Trainer::fit: call compile first");
  check_examples("Trainer::fit", x, y);
  if (fit_options.batch_size < 1)
    throw ValueError("Trainer::fit: batch_size must be at least 1, got " +
                     std::to_string(fit_options.batch_size));
  auto dataset = data::TensorDataset::from_tensor_slices(x, y);
  if (fit_options.shuffle)
    dataset = dataset.shuffle(dataset.size(), programs_->options.seed);
  return fit(dataset.batch(fit_options.batch_size), fit_options);
}

History Trainer::fit(const data::TensorDataset& dataset, FitOptions fit_options) {
  if (!programs_)
    throw ValueError("Trainer::fit: call compile first");
  if (fit_options.epochs < 0)
    throw ValueError("Trainer::fit: epochs must be at least 0, got " +
                     std::to_string(fit_options.epochs));
  const auto& settings = dataset.settings();
  if (!settings.batch_size || !settings.drop_remainder)
    throw ValueError("Trainer::fit: the dataset must be batched with drop_remainder (the "
                     "device program has fixed shapes): call .batch(size) on it");
  const std::int64_t per_run = programs_->options.steps_per_execution;
  const std::int64_t per_pass = dataset.batches_per_epoch();
  const std::string batches = std::to_string(dataset.size()) + " examples in batches of " +
                              std::to_string(*settings.batch_size) + " make " +
                              std::to_string(per_pass) + " batches per pass";
  std::int64_t runs = 0, passes_per_epoch = 0;
  if (const auto& steps = fit_options.steps_per_epoch) {
    // Keras's steps_per_epoch: epochs of that many batches from one stream over the passes.
    if (*steps < 1 || *steps % per_run != 0)
      throw ValueError("Trainer::fit: steps_per_epoch counts batches and an epoch ends on a "
                       "whole run: it must be a positive multiple of steps_per_execution " +
                       std::to_string(per_run) + ", got " + std::to_string(*steps));
    const std::int64_t available = dataset.cardinality();
    if (available >= 0 && available < *steps * fit_options.epochs)
      throw ValueError("Trainer::fit: " + std::to_string(fit_options.epochs) + " epochs of " +
                       std::to_string(*steps) + " steps need " +
                       std::to_string(*steps * fit_options.epochs) + " batches, but the dataset " +
                       "yields " + std::to_string(available) + " (" + batches + ", " +
                       std::to_string(settings.repeat_count) + " pass(es)): call .repeat() on it");
    runs = *steps / per_run;
  } else {
    // An epoch is one iteration of the dataset: every pass its repeat count makes.
    if (settings.repeat_count < 0)
      throw ValueError("Trainer::fit: the dataset repeats forever, so an epoch would never end: "
                       "give FitOptions::steps_per_epoch");
    passes_per_epoch = settings.repeat_count;
    runs = per_pass * passes_per_epoch / per_run;
    if (runs == 0 && fit_options.epochs > 0)
      throw ValueError("Trainer::fit: " + batches + ", " + std::to_string(passes_per_epoch) +
                       " pass(es) per epoch, which do not fill one run of " +
                       std::to_string(per_run) + " batches (steps_per_execution)");
  }
  fit_options.batch_size = *settings.batch_size;
  return fit_runs(dataset, runs, passes_per_epoch, fit_options);
}

namespace {

/// One replica's rows of a global batch: (features, labels). ValueError for a batch that does
/// not split over the replicas.
std::pair<TensorSpec, TensorSpec> replica_batch(const CompileOptions& o,
                                                const data::LabelledBatchSpec& batch) {
  const std::int64_t b = batch.features.shape.empty() ? 0 : batch.features.shape[0];
  if (b < 1 || b % o.replicas != 0 || batch.labels.shape.empty() || batch.labels.shape[0] != b)
    throw ValueError("Trainer: a batch must have a positive multiple of the " +
                     std::to_string(o.replicas) +
                     " replica(s) as its examples, as many features as labels, got features " +
                     to_string(batch.features) + " and labels " + to_string(batch.labels));
  return {with_rows(batch.features, b / o.replicas), with_rows(batch.labels, b / o.replicas)};
}

/// Builds the training program into `p`; the model's refusal of non-float features as a
/// DTypeError naming them.
void build_training(trainer_detail::Program& p, const CompileOptions& o,
                    const trainer_detail::TraceModel& trace, const data::LabelledBatchSpec& batch,
                    const TensorSpec& x, const TensorSpec& y, double lr, bool open_session) {
  try {
    trainer_detail::build_training_program(p, o, trace, x, y, lr, open_session);
  } catch (const Error& e) {
    // Float features are cast to the model's dtype on the device; others reach the model as
    // they are, and its first op names what it needed, in its own words.
    if (!is_floating_point(x.dtype))
      throw DTypeError("Trainer: the model cannot take the dataset's features " +
                       to_string(batch.features) +
                       ": float features (float32 or float16) are cast to the model's dtype, "
                       "others reach it as they are, and the model refused them: " +
                       e.what());
    throw;
  }
}

} // namespace

void Trainer::build(const data::LabelledBatchSpec& batch) {
  if (!programs_)
    throw ValueError("Trainer::build: call compile first");
  Programs& ps = *programs_;
  const CompileOptions& o = ps.options;
  // Each replica's stream takes its rows of the global batch.
  const auto [x, y] = replica_batch(o, batch);
  if (ps.train && ps.train->x_spec == x)
    return;
  check_labels(o.loss, batch.labels);
  ps.sync_from_training();
  ps.train.reset();
  try {
    build_training(ps.train.emplace(), o, trace_, batch, x, y, ps.lr, true);
  } catch (const Error&) {
    ps.train.reset();
    throw;
  }
  ps.load_weights(*ps.train);
}

emu::IrEstimate Trainer::estimate(const data::LabelledBatchSpec& batch, const emu::Target& target) {
  if (!programs_)
    throw ValueError("Trainer::estimate: call compile first");
  Programs& ps = *programs_;
  const CompileOptions& o = ps.options;
  const auto [x, y] = replica_batch(o, batch);
  check_labels(o.loss, batch.labels);
  trainer_detail::Program p;
  build_training(p, o, trace_, batch, x, y, ps.lr, false);
  return emu::estimate(p.ir, target);
}

History Trainer::fit_runs(const data::TensorDataset& dataset, std::int64_t runs,
                          std::int64_t passes_per_epoch, const FitOptions& fit_options) {
  build(dataset.element_spec());
  Programs& ps = *programs_;
  const CompileOptions& o = ps.options;
  const std::int64_t b = fit_options.batch_size;
  const std::int64_t per_run = o.steps_per_execution;
  const bool with_accuracy = !o.metrics.empty();
  Programs::Program& p = *ps.train;
  auto cursor =
      std::make_shared<trainer_detail::BatchCursor>(dataset, runs * per_run, passes_per_epoch);
  // One batch per run: it goes in as arrays and its logs come back with the run, on this
  // thread; a device loop is fed through the infeeds while it runs.
  const bool one_step = per_run == 1;
  const data::LocalReplicas local = trainer_detail::local_replicas(o);
  if (runs > 0 && !one_step)
    trainer_detail::bind_infeed(p, cursor, dataset.element_spec(),
                                dataset.settings().prefetch_depth, per_run, local);
  trainer_detail::BatchLog& log = *p.log;
  log.callbacks = fit_options.callbacks;
  log.batch = 0;
  log.error = nullptr;
  std::optional<data::TensorDataset> validation;
  if (fit_options.validation_data) {
    const auto& [vx, vy] = *fit_options.validation_data;
    check_examples("Trainer::fit's validation_data", vx, vy);
    validation = data::TensorDataset::from_tensor_slices(vx, vy).batch(b, false);
  }
  History history;
  for (int epoch = 0; epoch < fit_options.epochs; ++epoch) {
    log.loss_sum = 0;
    log.accuracy_sum = 0;
    log.in_epoch = 0;
    if (fit_options.progress)
      log.progress.emplace("epoch " + std::to_string(epoch + 1) + "/" +
                               std::to_string(fit_options.epochs),
                           runs * per_run, fit_options.progress);
    for (std::int64_t r = 0; r < runs; ++r) {
      if (one_step) {
        trainer_detail::run_one_step(p, cursor->next(), local, fit_options.observer);
      } else {
        p.session->run({}, fit_options.observer);
      }
      if (log.error)
        std::rethrow_exception(std::exchange(log.error, nullptr));
    }
    log.progress.reset();
    const auto n = static_cast<double>(runs * per_run);
    Logs logs{{"loss", log.loss_sum / n}};
    if (with_accuracy)
      logs.emplace(std::string(accuracy_metric), log.accuracy_sum / n);
    if (validation) {
      for (const auto& [key, value] : evaluate(*validation))
        logs.emplace("val_" + key, value);
    }
    logs.emplace("lr", ps.lr);
    for (const auto& [key, value] : logs)
      history.history[key].push_back(value);
    bool stop = false;
    for (const auto& c : fit_options.callbacks)
      stop = c->on_epoch_end(epoch, logs) || stop;
    if (stop)
      break;
  }
  ps.save_weights(p);
  return history;
}

Logs Trainer::evaluate(const HostTensor& x, const HostTensor& y, std::int64_t batch_size) {
  if (!programs_)
    throw ValueError("Trainer::evaluate: call compile first");
  check_examples("Trainer::evaluate", x, y);
  if (batch_size < 1)
    throw ValueError("Trainer::evaluate: batch_size must be at least 1, got " +
                     std::to_string(batch_size));
  return evaluate(data::TensorDataset::from_tensor_slices(x, y).batch(batch_size, false));
}

Logs Trainer::evaluate(const data::TensorDataset& dataset) {
  if (!programs_)
    throw ValueError("Trainer::evaluate: call compile first");
  const auto& settings = dataset.settings();
  if (!settings.batch_size || dataset.batches_per_epoch() == 0)
    throw ValueError("Trainer::evaluate: the dataset must be batched (the device program has "
                     "fixed shapes) and hold at least one batch, got " +
                     std::to_string(dataset.batches_per_epoch()) + " batches of " +
                     std::to_string(settings.batch_size.value_or(1)) + " from " +
                     std::to_string(dataset.size()) + " examples");
  Programs& ps = *programs_;
  // The batches' program, and without drop_remainder the last, shorter batch's.
  const data::LabelledBatchSpec spec = dataset.element_spec();
  std::vector<TensorSpec> xs{spec.features};
  const std::int64_t remainder =
      settings.drop_remainder ? 0 : dataset.size() % *settings.batch_size;
  if (remainder > 0)
    xs.push_back(with_rows(spec.features, remainder));
  const std::vector<Programs::Program*> programs = ps.forward_programs(trace_, xs, spec.labels);
  // Each batch's mean weighted by its examples: the means over every example evaluated.
  double loss = 0, acc = 0;
  std::int64_t examples = 0;
  for (const data::LabelledBatch& b : dataset.epoch(0)) {
    const std::int64_t rows = b.features.shape()[0];
    Programs::Program& p = *programs[rows == spec.features.shape[0] ? 0 : 1];
    const auto out = p.session->run({{p.x, b.features}, {p.y, b.labels}});
    loss += static_cast<double>(out.at(p.loss).data<float>()[0]) * static_cast<double>(rows);
    if (!ps.options.metrics.empty())
      acc += static_cast<double>(out.at(p.accuracy).data<float>()[0]) * static_cast<double>(rows);
    examples += rows;
  }
  Logs logs{{"loss", loss / static_cast<double>(examples)}};
  if (!ps.options.metrics.empty())
    logs.emplace(std::string(accuracy_metric), acc / static_cast<double>(examples));
  return logs;
}

HostTensor Trainer::predict(const HostTensor& x, std::int64_t batch_size) {
  if (!programs_)
    throw ValueError("Trainer::predict: call compile first");
  if (x.rank() == 0 || x.shape()[0] == 0 || batch_size < 1)
    throw ValueError("Trainer::predict: x needs at least one example along its first axis and "
                     "batch_size must be at least 1, got " +
                     std::to_string(batch_size) + " for x " + to_string(x.shape()));
  Programs& ps = *programs_;
  const std::int64_t n = x.shape()[0];
  const std::int64_t batch = std::min(batch_size, n);
  const TensorSpec spec{x.shape(), x.dtype()};
  std::vector<TensorSpec> xs{with_rows(spec, batch)};
  if (n % batch != 0)
    xs.push_back(with_rows(spec, n % batch));
  const std::vector<Programs::Program*> programs = ps.forward_programs(trace_, xs, std::nullopt);
  std::optional<HostTensor> all;
  std::size_t row_bytes = 0;
  for (std::int64_t first = 0; first < n; first += batch) {
    const std::int64_t rows = std::min(batch, n - first);
    Programs::Program& p = *programs[rows == batch ? 0 : 1];
    const HostTensor out =
        p.session->run({{p.x, trainer_detail::row_range(x, first, rows)}}).at(p.out);
    if (!all) {
      Shape shape = out.shape();
      shape[0] = n;
      all.emplace(shape, out.dtype());
      row_bytes = out.bytes().size() / static_cast<std::size_t>(rows);
    }
    std::memcpy(all->bytes().data() + static_cast<std::size_t>(first) * row_bytes,
                out.bytes().data(), out.bytes().size());
  }
  return std::move(*all);
}

std::vector<FeedStats> Trainer::feed_stats() const {
  if (!programs_ || !programs_->train)
    return {};
  return programs_->train->session->feed_stats();
}

double Trainer::learning_rate() const {
  if (!programs_)
    throw ValueError("Trainer::learning_rate: call compile first");
  return programs_->lr;
}

void Trainer::set_learning_rate(double lr) {
  if (!programs_)
    throw ValueError("Trainer::set_learning_rate: call compile first");
  if (!(lr >= 0))
    throw ValueError("Trainer::set_learning_rate: the learning rate must be at least 0, got " +
                     std::to_string(lr));
  if (programs_->options.constant_learning_rate)
    throw ValueError("Trainer::set_learning_rate: compiled with constant_learning_rate, the "
                     "training program has the learning rate built in; compile without it to "
                     "change the rate between epochs");
  programs_->lr = lr;
  if (programs_->train)
    programs_->train->session->write_variable_data(*programs_->train->lr,
                                                   HostTensor::scalar(static_cast<float>(lr)));
}

std::map<std::string, HostTensor> Trainer::weights() {
  if (!programs_)
    throw ValueError("Trainer::weights: call compile first");
  programs_->sync_from_training();
  if (!programs_->weights)
    throw ValueError("Trainer::weights: the model has no weights yet; fit, evaluate or predict "
                     "builds it");
  return *programs_->weights;
}

void Trainer::save_weights(const std::filesystem::path& path,
                           const std::map<std::string, std::string>& metadata) {
  if (!programs_ || !programs_->train)
    throw ValueError("Trainer::save_weights: nothing trained yet; call build or fit first");
  save_checkpoint(*programs_->train->session, programs_->train->variables, path, metadata);
}

void Trainer::load_weights(const std::filesystem::path& path) {
  if (!programs_ || !programs_->train)
    throw ValueError("Trainer::load_weights: no training program yet; call build or fit first");
  load_checkpoint(*programs_->train->session, programs_->train->variables, path);
  programs_->save_weights(*programs_->train);
}

Session& Trainer::training_session() {
  if (!programs_ || !programs_->train)
    throw ValueError("Trainer::training_session: no training program yet; call build or fit "
                     "first");
  return *programs_->train->session;
}

const transforms::PipelinedGraph* Trainer::pipelined() const {
  if (!programs_ || !programs_->train || !programs_->train->pipeline)
    return nullptr;
  return &*programs_->train->pipeline;
}

} // namespace pxl::addons
