#include "pxl/addons/trainer.hpp"

#include "pxl/addons/accumulation.hpp"
#include "pxl/addons/checkpoint.hpp"
#include "pxl/addons/data/batch_fan_out.hpp"
#include "pxl/addons/data_parallel.hpp"
#include "pxl/addons/metrics.hpp"
#include "pxl/addons/ops/cross_entropy.hpp"
#include "pxl/addons/optimizers/apply.hpp"
#include "pxl/addons/progress.hpp"
#include "pxl/core/error.hpp"
#include "pxl/dist.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/ops/collectives.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/host_io.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/session.hpp"
#include "pxl/transforms/pipeline.hpp"

#include <cstring>
#include <exception>

namespace pxl::addons {

namespace {

constexpr std::string_view accuracy_metric = "accuracy";
constexpr std::string_view lr_key = "trainer.lr";
constexpr std::string_view optimizer_key = "trainer.optimizer";

/// Rows [first, first + count) of `t` (its first axis) as [count, ...].
HostTensor row_range(const HostTensor& t, std::int64_t first, std::int64_t count) {
  Shape shape = t.shape();
  const std::size_t row = t.bytes().size() / static_cast<std::size_t>(shape[0]);
  shape[0] = count;
  HostTensor rows(shape, t.dtype());
  std::memcpy(rows.bytes().data(), t.bytes().data() + static_cast<std::size_t>(first) * row,
              rows.bytes().size());
  return rows;
}

TensorSpec example_spec(const HostTensor& t, std::int64_t batch) {
  Shape shape = t.shape();
  shape[0] = batch;
  return {shape, t.dtype()};
}

void check_examples(std::string_view fn, const HostTensor& x, const HostTensor& y) {
  if (x.rank() == 0 || y.rank() == 0 || x.shape()[0] != y.shape()[0])
    throw ShapeError(std::string(fn) +
                     ": x and y need one example per row of their first axis "
                     "and as many of each, got x " +
                     to_string(x.shape()) + " and y " + to_string(y.shape()));
}

/// The loss and its gradient with respect to the output, times `scale` (loss scaling).
std::pair<Tensor, Tensor> loss_with_grad(TrainingLoss loss, const Tensor& out, const Tensor& y,
                                         double scale = 1.0) {
  if (loss == TrainingLoss::sparse_categorical_crossentropy)
    return ops::cross_entropy_with_grad(out, y, scale);
  const Tensor diff = out - y;
  const auto n = static_cast<double>(out.nelms());
  return {pxl::ops::mean(diff * diff), diff * (2.0 * scale / n)};
}

/// The model's input as it computes: a float input cast to the model's dtype on the device.
Tensor model_input(const HostToDeviceStream& stream, DType dtype) {
  const Tensor x = pxl::ops::host_load(stream);
  return is_floating_point(x.dtype()) && x.dtype() != dtype ? pxl::ops::cast(x, dtype) : x;
}

/// The model's output as the loss and the metrics see it: float32.
Tensor loss_input(const Tensor& out) {
  return is_floating_point(out.dtype()) && out.dtype() != float32 ? pxl::ops::cast(out, float32)
                                                                  : out;
}

/// The spec the model is traced for: a float input in the model's dtype.
TensorSpec model_spec(TensorSpec x, DType dtype) {
  if (is_floating_point(x.dtype))
    x.dtype = dtype;
  return x;
}

/// Whether the optimizer keeps state (Adam's moments, RMSprop's mean square, SGD's momentum).
bool has_state(const TrainerOptimizer& o) {
  const auto* sgd = std::get_if<optimizers::SGDOptions>(&o);
  return sgd == nullptr || sgd->momentum != 0.0;
}

/// Whether the loss scaling divides out of SGD's learning rate (linear in the gradient)
/// rather than out of the gradients.
bool scaling_folds_into_lr(const TrainerOptimizer& o) {
  const auto* sgd = std::get_if<optimizers::SGDOptions>(&o);
  return sgd != nullptr && sgd->weight_decay == 0.0;
}

double initial_lr(const TrainerOptimizer& o) {
  return std::visit([](const auto& opts) { return opts.lr.value(); }, o);
}

} // namespace

namespace trainer_detail {
/// Where the training program's outfeed goes during a fit: the consumer thread calls the
/// batch-end callbacks as each micro-batch's loss (and accuracy) arrives, while the device
/// goes on (Keras with IPUs' asynchronous callbacks), and sums the epoch's values. The
/// calling thread reads the sums once a run has returned, by which time every element has
/// been delivered.
struct BatchLog {
  std::vector<std::shared_ptr<Callback>> callbacks;
  bool with_accuracy = false;
  std::int64_t replicas = 1;
  std::int64_t element = 0;  ///< elements received: one per micro-batch and replica
  std::int64_t batch = 0;    ///< micro-batches since the fit began
  std::int64_t in_epoch = 0; ///< micro-batches since the epoch began
  double loss_sum = 0, accuracy_sum = 0;
  std::optional<Progress> progress; ///< FitOptions::progress
  std::exception_ptr error;         ///< what a callback threw; rethrown after the run

  /// Receives the outfeed's next element: one per micro-batch and replica.
  void operator()(const HostTensor& values) {
    // Replicas store the same all-reduced values, step-major: take replica 0's.
    if (element++ % replicas == 0)
      record(values.data<float>());
  }

  /// One micro-batch's loss (and accuracy).
  void record(std::span<const float> v) {
    loss_sum += v[0];
    if (with_accuracy)
      accuracy_sum += v[1];
    if (!callbacks.empty() && !error) {
      Logs logs{{"loss", v[0]}};
      if (with_accuracy)
        logs.emplace(std::string(accuracy_metric), v[1]);
      try {
        for (const auto& c : callbacks)
          c->on_batch_end(batch, logs);
      } catch (...) {
        error = std::current_exception();
      }
    }
    ++batch;
    if (progress)
      progress->update(++in_epoch, v[0]);
  }
};

/// One compiled program: its Ir, Session and the streams and tensors it is driven by.
struct Program {
  Ir ir;
  std::optional<Session> session;
  std::optional<Session::Attachment> attached;
  HostToDeviceStream x, y;
  DeviceToHostStream out, loss, accuracy;
  NamedTensors variables;
  std::optional<Tensor> lr; ///< the learning rate's variable (training, unless constant)
  std::optional<transforms::PipelinedGraph> pipeline; ///< what pipelining made (training)
  TensorSpec x_spec;
  std::shared_ptr<BatchLog> log = std::make_shared<BatchLog>(); ///< training only
};
} // namespace trainer_detail

/// The Sessions a Trainer builds, and the weights they share by name.
class Trainer::Programs {
public:
  using Program = trainer_detail::Program;
  using BatchLog = trainer_detail::BatchLog;

  CompileOptions options;
  std::optional<Program> train, evaluate, predict;
  /// The weights as the last program that changed them left them (by name), once one has.
  std::optional<std::map<std::string, HostTensor>> weights;
  double lr = 0;

  explicit Programs(CompileOptions o) : options(std::move(o)), lr(initial_lr(options.optimizer)) {}

  /// Writes the shared weights into `p`'s session (a freshly built program starts from the
  /// seeded initialisers, the same in every program).
  void load_weights(Program& p) {
    if (!weights)
      return;
    for (const auto& [key, t] : p.variables.items())
      p.session->write_variable_data(t, weights->at(key));
  }
  void save_weights(Program& p) {
    std::map<std::string, HostTensor> w;
    for (const auto& [key, t] : p.variables.items())
      w.emplace(key, p.session->get_tensor_data(t));
    weights = std::move(w);
  }
};

Trainer::Trainer(std::in_place_t, Trace trace) : trace_(std::move(trace)) {}
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;
Trainer::~Trainer() = default;

void Trainer::compile(CompileOptions options) {
  if (options.steps_per_execution < 1 || options.gradient_accumulation < 1 || options.replicas < 1)
    throw ValueError("Trainer::compile: steps_per_execution, gradient_accumulation and replicas "
                     "must be at least 1, got " +
                     std::to_string(options.steps_per_execution) + ", " +
                     std::to_string(options.gradient_accumulation) + " and " +
                     std::to_string(options.replicas));
  for (const std::string& m : options.metrics)
    if (parse_metric(m) == Metric::mean_loss)
      throw ValueError("Trainer::compile: the loss is always reported; metrics are accuracy or "
                       "sparse_categorical_accuracy, got '" +
                       m + "'");
  if (options.dtype != float32 && options.dtype != float16)
    throw DTypeError("Trainer::compile: dtype must be float32 or float16, got " +
                     std::string(name(options.dtype)));
  if (!(options.loss_scaling > 0))
    throw ValueError("Trainer::compile: loss_scaling must be positive, got " +
                     std::to_string(options.loss_scaling));
  if ((options.offload_optimizer_state || options.shard_optimizer_state) &&
      !has_state(options.optimizer))
    throw ValueError("Trainer::compile: offloading or sharding the optimizer state needs an "
                     "optimizer with state; SGD without momentum has none");
  if (options.shard_optimizer_state && options.replicas < 2)
    throw ValueError("Trainer::compile: shard_optimizer_state needs at least 2 replicas to shard "
                     "over, got " +
                     std::to_string(options.replicas));
  if (options.pipeline && options.gradient_accumulation < 2)
    throw ValueError("Trainer::compile: pipelining runs the micro-batches of an optimizer step "
                     "through the stages; it needs gradient_accumulation of at least 2");
  std::optional<std::map<std::string, HostTensor>> kept;
  if (programs_) {
    if (programs_->train)
      programs_->save_weights(*programs_->train);
    kept = programs_->weights;
  }
  programs_ = std::make_unique<Programs>(std::move(options));
  programs_->weights = std::move(kept);
}

namespace {

/// The optimizer of `options`, reading its learning rate from `lr` when given (else the
/// options' constant divided by `lr_divisor`).
template <typename Fn>
void with_optimizer(const TrainerOptimizer& options, const std::optional<Tensor>& lr, Fn&& fn,
                    double lr_divisor = 1.0) {
  std::visit(
      [&](auto opts) {
        if (lr)
          opts.lr = *lr;
        else if (lr_divisor != 1.0)
          opts.lr = opts.lr.value() / lr_divisor;
        using Options = decltype(opts);
        if constexpr (std::is_same_v<Options, optimizers::SGDOptions>)
          fn(optimizers::SGD(opts));
        else if constexpr (std::is_same_v<Options, optimizers::AdamOptions>)
          fn(optimizers::Adam(opts));
        else
          fn(optimizers::RMSprop(opts));
      },
      options);
}

/// The replicas this process runs and feeds: all of them, or its own under mpirun.
data::LocalReplicas local_replicas(const CompileOptions& o) {
  if (o.distributed && dist::is_distributed())
    return {o.replicas, dist::replica_offset(), dist::num_local_replicas()};
  return {o.replicas, 0, o.replicas};
}

/// Batches a producer prepares ahead of the device when the dataset does not say (prefetch).
constexpr std::int64_t default_prefetch = 8;

/// Feeds `p`'s x and y streams from `dataset` through their infeeds: epoch 0's first
/// `batches_per_epoch` batches, then epoch 1's (reshuffled), and so on, each batch cut into the
/// replicas' rows (data::BatchFanOut). The producers run up to the dataset's prefetch depth
/// ahead of the device, across runs and epochs; binding again drops what they prepared.
void bind_infeed(trainer_detail::Program& p, const data::TensorDataset& dataset,
                 std::int64_t batches_per_epoch, std::int64_t batches_per_run,
                 data::LocalReplicas replicas) {
  // Where the feed stands in the data; touched under the fan-out's lock only.
  struct Cursor {
    data::TensorDataset dataset;
    std::int64_t batches_per_epoch;
    std::uint64_t epoch = 0;
    std::int64_t taken = 0; ///< batches of the epoch read
    std::optional<data::TensorDatasetView> view;
    std::optional<ranges::iterator_t<data::TensorDatasetView>> at;
  };
  auto cursor = std::make_shared<Cursor>(Cursor{dataset, batches_per_epoch});
  const std::int64_t prefetch =
      dataset.settings().prefetch_depth > 0 ? dataset.settings().prefetch_depth : default_prefetch;
  // A step takes an element of each stream per (local) replica.
  const std::int64_t depth = prefetch * replicas.count;
  const data::LabelledBatchSpec spec = dataset.element_spec();
  auto fan_out = std::make_shared<data::BatchFanOut>(
      [cursor]() -> data::BatchHalves {
        Cursor& c = *cursor;
        if (!c.view || c.taken == c.batches_per_epoch) {
          if (c.view)
            ++c.epoch;
          c.view.emplace(c.dataset.epoch(c.epoch));
          c.at.emplace(c.view->begin());
          c.taken = 0;
        } else {
          ++*c.at;
        }
        ++c.taken;
        const data::LabelledBatch& b = **c.at;
        return {&b.features, &b.labels};
      },
      spec.features, spec.labels, depth, batches_per_run, replicas,
      data::FanOutWording{.feeder = "Trainer::fit"});
  p.session->set_h2d_callback(
      p.x, [fan_out](HostTensor& e) { fan_out->fill(data::BatchFanOut::features, e); },
      {.depth = depth});
  p.session->set_h2d_callback(
      p.y, [fan_out](HostTensor& e) { fan_out->fill(data::BatchFanOut::labels, e); },
      {.depth = depth});
}

/// Runs one training step on `batch` (global): the local replicas' rows go in as stream arrays
/// ([replicas, b, ...] with several), and replica 0's logs go to the program's BatchLog.
void run_one_step(trainer_detail::Program& p, const data::LabelledBatch& batch,
                  data::LocalReplicas replicas) {
  // One replica in all takes the batch as it is (borrowed); else this process's replicas' rows.
  auto local_rows = [&](const HostTensor& t) -> InputArray {
    if (replicas.total == 1)
      return t;
    const std::int64_t b = t.shape()[0] / replicas.total;
    HostTensor rows = row_range(t, replicas.first * b, replicas.count * b);
    if (replicas.count == 1)
      return rows;
    Shape shape = t.shape();
    shape[0] = b;
    shape.insert(shape.begin(), replicas.count);
    return rows.reshaped(shape);
  };
  const StreamOutputs out =
      p.session->run({{p.x, local_rows(batch.features)}, {p.y, local_rows(batch.labels)}});
  const auto values = out.at(p.loss).data<float>();
  p.log->record(values.first(values.size() / static_cast<std::size_t>(replicas.count)));
}

} // namespace

History Trainer::fit(const HostTensor& x, const HostTensor& y, const FitOptions& fit_options) {
  if (!programs_)
    throw ValueError("Trainer::fit: call compile first");
  check_examples("Trainer::fit", x, y);
  if (fit_options.batch_size < 1)
    throw ValueError("Trainer::fit: batch_size must be at least 1, got " +
                     std::to_string(fit_options.batch_size));
  auto dataset = data::TensorDataset::from_tensor_slices(x, y);
  if (fit_options.shuffle)
    dataset = dataset.shuffle(programs_->options.seed);
  return fit(dataset.batch(fit_options.batch_size), fit_options);
}

History Trainer::fit(const data::TensorDataset& dataset, FitOptions fit_options) {
  if (!programs_)
    throw ValueError("Trainer::fit: call compile first");
  const auto& settings = dataset.settings();
  if (!settings.batch_size || !settings.drop_remainder)
    throw ValueError("Trainer::fit: the dataset must be batched with drop_remainder (the "
                     "device program has fixed shapes): call .batch(size) on it");
  const CompileOptions& o = programs_->options;
  const std::int64_t per_run = o.steps_per_execution * o.gradient_accumulation;
  const std::int64_t runs = dataset.batches_per_epoch() / per_run;
  if (runs == 0 && fit_options.epochs > 0)
    throw ValueError("Trainer::fit: " + std::to_string(dataset.size()) +
                     " examples in batches of " + std::to_string(*settings.batch_size) + " make " +
                     std::to_string(dataset.batches_per_epoch()) +
                     " batches per epoch, which do not fill one run of " + std::to_string(per_run) +
                     " micro-batches");
  fit_options.batch_size = *settings.batch_size;
  return fit_runs(dataset, runs, fit_options);
}

void Trainer::build(const data::LabelledBatchSpec& batch) {
  if (!programs_)
    throw ValueError("Trainer::build: call compile first");
  Programs& ps = *programs_;
  const TensorSpec& x_batch = batch.features;
  const TensorSpec& y_batch = batch.labels;
  const CompileOptions& o = ps.options;
  const std::int64_t b = x_batch.shape.empty() ? 0 : x_batch.shape[0];
  if (b < 1 || b % o.replicas != 0 || y_batch.shape.empty() || y_batch.shape[0] != b)
    throw ValueError("Trainer: a batch must have a positive multiple of the " +
                     std::to_string(o.replicas) +
                     " replica(s) as its examples, as many features as labels, got features " +
                     to_string(x_batch) + " and labels " + to_string(y_batch));
  const std::int64_t per_run = o.steps_per_execution * o.gradient_accumulation;
  const std::int64_t b_rep = b / o.replicas;
  const bool with_accuracy = !o.metrics.empty();
  auto per_replica = [&](TensorSpec spec) {
    spec.shape[0] = b_rep;
    return spec;
  };

  if (ps.train && ps.train->x_spec == per_replica(x_batch))
    return;
  if (ps.train)
    ps.save_weights(*ps.train);
  ps.train.reset();
  auto& p = ps.train.emplace();
  p.x_spec = per_replica(x_batch);
  p.ir.set_replication_factor(o.replicas);
  {
    auto in_main = p.ir.main_graph().scope();
    p.x = h2d_stream(p.x_spec.shape, p.x_spec.dtype, "x");
    p.y = h2d_stream(per_replica(y_batch).shape, y_batch.dtype, "y");
    // Each micro-batch's loss, and accuracy: one element, so that one consumer sees both.
    p.loss = d2h_stream({with_accuracy ? 2 : 1}, float32, "logs");
    // Not a structured binding: the lambdas below capture the graph (clang 14).
    auto traced = trace_(model_spec(p.x_spec, o.dtype));
    const NamedVariableFactories& facts = traced.first;
    const GraphWithNamedArgs& fwd = traced.second;
    auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
    p.variables = facts.init("", o.seed);
    NamedTensors state = p.variables;
    if (!o.constant_learning_rate) {
      p.lr = variable(HostTensor::scalar(static_cast<float>(ps.lr)), "lr");
      state.insert(std::string(lr_key), *p.lr);
    }
    // The optimizer's state: by-ref state of the loop on the IPU, or remote variables that
    // any graph reaches.
    NamedTensors opt_state;
    with_optimizer(o.optimizer, p.lr, [&](auto opt) {
      const auto factories =
          optimizers::state_factories(opt, p.variables, {.shard_state = o.shard_optimizer_state});
      opt_state = o.offload_optimizer_state ? factories.init_remote(std::string(optimizer_key))
                                            : factories.init(std::string(optimizer_key));
    });
    if (!opt_state.empty() && !o.offload_optimizer_state)
      state.insert(std::string(optimizer_key), opt_state);
    const double scale = o.dtype == float32 ? 1.0 : o.loss_scaling;
    const bool fold_scale = scale != 1.0 && scaling_folds_into_lr(o.optimizer);
    const GradientAccumulation accumulation{.steps = o.gradient_accumulation};
    if (accumulation.steps > 1)
      state.update(accumulator_factories(facts, accumulation).init());

    // One micro-batch: forward, loss, backward; the loss (and accuracy) stored.
    auto micro_batch = [&](const NamedTensors& s) {
      const pxl::ops::CallOptions inlined{.inline_graph = true};
      const NamedTensors w = s.filter_keys(p.variables.keys_flat());
      auto fwd_info = fwd.bind(w).call_with_info({model_input(p.x, o.dtype)}, {}, {}, inlined);
      const Tensor model_out = fwd_info.outputs()[0];
      auto on_last = ipu(model_out.ipu());
      const Tensor labels = pxl::ops::host_load(p.y);
      const Tensor out = loss_input(model_out);
      auto [loss, dout] = loss_with_grad(o.loss, out, labels, scale);
      if (dout.dtype() != model_out.dtype())
        dout = pxl::ops::cast(dout, model_out.dtype());
      Tensor values = loss.reshape({1});
      if (with_accuracy)
        values = pxl::ops::concat({values, sparse_categorical_accuracy(out, labels).reshape({1})});
      if (o.replicas > 1)
        values = pxl::ops::collectives::replicated_all_reduce(values, CollectiveOperator::mean);
      pxl::ops::host_store(p.loss, values);
      auto bwd_info =
          bwd.call_with_info({dout}, {}, bwd.grad_graph_info().inputs_dict(fwd_info), inlined);
      return bwd.grads(bwd_info);
    };
    // The optimizer step of one variable, its state under its name.
    auto step = [&](const NamedTensors& s, const std::string& key, const Tensor& w,
                    const Tensor& g) {
      NamedTensors own;
      const NamedTensors& state_of =
          o.offload_optimizer_state || !s.contains(std::string(optimizer_key))
              ? opt_state
              : s.sub(std::string(optimizer_key));
      if (state_of.contains(key))
        own.insert(key, state_of.sub(key));
      // The learning rate where the variable is: each IPU steps its own variables.
      std::optional<Tensor> lr;
      if (!o.constant_learning_rate) {
        lr = s.at(std::string(lr_key));
        if (lr->ipu() != w.ipu())
          lr = pxl::ops::ipu_copy(*lr, w.ipu());
      }
      // Loss scaling out: from SGD's learning rate, or from the gradient first.
      Tensor grad = g;
      if (scale != 1.0) {
        if (!fold_scale)
          grad = g * (1.0 / scale);
        else if (lr)
          lr = *lr * (1.0 / scale);
      }
      with_optimizer(
          o.optimizer, lr,
          [&](auto opt) {
            optimizers::apply_with_state(opt, NamedTensors{{key, w}}, NamedTensors{{key, grad}},
                                         own, {.shard_state = o.shard_optimizer_state});
          },
          fold_scale ? scale : 1.0);
    };

    // One optimizer step on the state `s`: the main graph's variables, or a loop body's
    // inputs.
    auto optimizer_step = [&](const NamedTensors& s) {
      const NamedTensors w = s.filter_keys(p.variables.keys_flat());
      if (accumulation.steps == 1) {
        const NamedTensors grads = average_across_replicas(micro_batch(s));
        for (const auto& [key, var] : w.items()) {
          auto on = ipu(var.ipu());
          step(s, key, var, grads.at(key));
        }
        return;
      }
      Graph micro = p.ir.create_empty_graph("micro_batch");
      {
        auto in_micro = micro.scope();
        const NamedTensors ms = named_graph_inputs(state);
        accumulate_gradients(ms, micro_batch(ms), accumulation);
      }
      if (o.pipeline) {
        p.pipeline = transforms::pipeline(micro, {.steps = accumulation.steps});
        pxl::ops::call(p.pipeline->graph, s.values_flat());
      } else {
        pxl::ops::repeat(micro, accumulation.steps, s.values_flat());
      }
      apply_accumulated(w, s,
                        averaged_across_replicas([&](const std::string& key, const Tensor& var,
                                                     const Tensor& g) { step(s, key, var, g); }));
    };
    if (per_run == 1) {
      // One step per run, traced in the main graph itself: a loop of one would copy every
      // weight into its body and back on each run.
      optimizer_step(state);
    } else {
      Graph train_step = p.ir.create_empty_graph("train_step");
      {
        auto in_step = train_step.scope();
        optimizer_step(named_graph_inputs(state));
      }
      pxl::ops::repeat(train_step, o.steps_per_execution, state.values_flat());
    }
  }
  p.ir.set_num_host_transfers(per_run);
  p.session.emplace(
      p.ir, "ipu_model",
      SessionOptions{.workers = o.workers, .profile = o.profile, .distributed = o.distributed});
  p.attached.emplace(p.session->attach());
  ps.load_weights(p);
  if (p.lr)
    p.session->write_variable_data(*p.lr, HostTensor::scalar(static_cast<float>(ps.lr)));
  p.log->with_accuracy = with_accuracy;
  p.log->replicas = local_replicas(o).count;
  // With one step per run the logs come back as the run's output (nothing to overlap).
  if (per_run > 1)
    p.session->set_d2h_callback(p.loss,
                                [log = p.log](const HostTensor& values) { (*log)(values); });
}

History Trainer::fit_runs(const data::TensorDataset& dataset, std::int64_t runs,
                          const FitOptions& fit_options) {
  if (fit_options.epochs < 0)
    throw ValueError("Trainer::fit: epochs must be at least 0, got " +
                     std::to_string(fit_options.epochs));
  build(dataset.element_spec());
  Programs& ps = *programs_;
  const CompileOptions& o = ps.options;
  const std::int64_t b = fit_options.batch_size;
  const std::int64_t per_run = o.steps_per_execution * o.gradient_accumulation;
  const bool with_accuracy = !o.metrics.empty();
  Programs::Program& p = *ps.train;
  // One step per run: each batch goes in as arrays and its logs come back with the run, on
  // this thread; a device loop is fed through the infeeds while it runs.
  const bool one_step = per_run == 1;
  const data::LocalReplicas local = local_replicas(o);
  if (runs > 0 && !one_step)
    bind_infeed(p, dataset, runs * per_run, per_run, local);
  std::optional<data::TensorDatasetView> view;
  std::optional<ranges::iterator_t<data::TensorDatasetView>> at;
  Programs::BatchLog& log = *p.log;
  log.callbacks = fit_options.callbacks;
  log.batch = 0;
  log.error = nullptr;
  std::optional<data::TensorDataset> validation;
  if (fit_options.validation_data) {
    const auto& [vx, vy] = *fit_options.validation_data;
    check_examples("Trainer::fit's validation_data", vx, vy);
    validation = data::TensorDataset::from_tensor_slices(vx, vy).batch(b);
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
    if (one_step) {
      view.emplace(dataset.epoch(static_cast<std::uint64_t>(epoch)));
      at.emplace(view->begin());
    }
    for (std::int64_t r = 0; r < runs; ++r) {
      if (one_step) {
        if (r > 0)
          ++*at;
        run_one_step(p, **at, local);
      } else {
        p.session->run();
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
      ps.save_weights(p);
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

namespace {

/// Builds a forward-only program (evaluation: loss and accuracy; prediction: the outputs).
template <typename Trace>
void build_forward(Trainer::Programs& ps, Trainer::Programs::Program& p, const Trace& trace,
                   const TensorSpec& x_spec, const std::optional<TensorSpec>& y_spec) {
  const CompileOptions& o = ps.options;
  p.x_spec = x_spec;
  {
    auto in_main = p.ir.main_graph().scope();
    p.x = h2d_stream(x_spec.shape, x_spec.dtype, "x");
    auto [facts, fwd] = trace(model_spec(x_spec, o.dtype));
    p.variables = facts.init("", o.seed);
    const Tensor model_out =
        fwd.bind(p.variables).call({model_input(p.x, o.dtype)}, {}, {}, {.inline_graph = true})[0];
    auto on_last = ipu(model_out.ipu());
    const Tensor out = loss_input(model_out);
    if (y_spec) {
      p.y = h2d_stream(y_spec->shape, y_spec->dtype, "y");
      const Tensor labels = pxl::ops::host_load(p.y);
      p.loss = d2h_stream({}, float32, "loss");
      pxl::ops::host_store(p.loss, loss_with_grad(o.loss, out, labels).first);
      if (!o.metrics.empty()) {
        p.accuracy = d2h_stream({}, float32, "accuracy");
        pxl::ops::host_store(p.accuracy, sparse_categorical_accuracy(out, labels));
      }
    } else {
      p.out = d2h_stream(out.shape(), out.dtype(), "out");
      pxl::ops::host_store(p.out, out);
    }
  }
  p.session.emplace(p.ir, "ipu_model", SessionOptions{.workers = o.workers});
  p.attached.emplace(p.session->attach());
}

} // namespace

Logs Trainer::evaluate(const HostTensor& x, const HostTensor& y, std::int64_t batch_size) {
  if (!programs_)
    throw ValueError("Trainer::evaluate: call compile first");
  check_examples("Trainer::evaluate", x, y);
  if (batch_size < 1 || x.shape()[0] < batch_size)
    throw ValueError("Trainer::evaluate: batch_size must be 1 to the " +
                     std::to_string(x.shape()[0]) + " examples, got " + std::to_string(batch_size));
  return evaluate(data::TensorDataset::from_tensor_slices(x, y).batch(batch_size));
}

Logs Trainer::evaluate(const data::TensorDataset& dataset) {
  if (!programs_)
    throw ValueError("Trainer::evaluate: call compile first");
  const auto& settings = dataset.settings();
  if (!settings.batch_size || !settings.drop_remainder || dataset.batches_per_epoch() == 0)
    throw ValueError("Trainer::evaluate: the dataset must be batched with drop_remainder (the "
                     "device program has fixed shapes) and fill at least one batch, got " +
                     std::to_string(dataset.batches_per_epoch()) + " batches of " +
                     std::to_string(settings.batch_size.value_or(1)) + " from " +
                     std::to_string(dataset.size()) + " examples");
  Programs& ps = *programs_;
  if (ps.train)
    ps.save_weights(*ps.train);
  const data::LabelledBatchSpec spec = dataset.element_spec();
  if (!ps.evaluate || ps.evaluate->x_spec != spec.features) {
    ps.evaluate.reset();
    build_forward(ps, ps.evaluate.emplace(), trace_, spec.features, spec.labels);
  }
  Programs::Program& p = *ps.evaluate;
  ps.load_weights(p);
  double loss = 0, acc = 0;
  std::int64_t batches = 0;
  for (const data::LabelledBatch& b : dataset.epoch(0)) {
    const auto out = p.session->run({{p.x, b.features}, {p.y, b.labels}});
    loss += out.at(p.loss).data<float>()[0];
    if (!ps.options.metrics.empty())
      acc += out.at(p.accuracy).data<float>()[0];
    ++batches;
  }
  Logs logs{{"loss", loss / static_cast<double>(batches)}};
  if (!ps.options.metrics.empty())
    logs.emplace(std::string(accuracy_metric), acc / static_cast<double>(batches));
  return logs;
}

HostTensor Trainer::predict(const HostTensor& x, std::int64_t batch_size) {
  if (!programs_)
    throw ValueError("Trainer::predict: call compile first");
  if (x.rank() == 0 || batch_size < 1 || x.shape()[0] < batch_size)
    throw ValueError("Trainer::predict: batch_size must be 1 to the examples along x's first "
                     "axis, got " +
                     std::to_string(batch_size) + " for x " + to_string(x.shape()));
  Programs& ps = *programs_;
  if (ps.train)
    ps.save_weights(*ps.train);
  if (!ps.predict || ps.predict->x_spec != example_spec(x, batch_size)) {
    ps.predict.reset();
    build_forward(ps, ps.predict.emplace(), trace_, example_spec(x, batch_size), std::nullopt);
  }
  Programs::Program& p = *ps.predict;
  ps.load_weights(p);
  const std::int64_t batches = x.shape()[0] / batch_size;
  Shape shape = p.out.shape();
  shape[0] = batches * batch_size;
  HostTensor all(shape, p.out.dtype());
  const std::size_t batch_bytes = all.bytes().size() / static_cast<std::size_t>(batches);
  for (std::int64_t k = 0; k < batches; ++k) {
    const HostTensor out =
        p.session->run({{p.x, row_range(x, k * batch_size, batch_size)}}).at(p.out);
    std::memcpy(all.bytes().data() + static_cast<std::size_t>(k) * batch_bytes, out.bytes().data(),
                batch_bytes);
  }
  return all;
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
  if (programs_->train)
    programs_->save_weights(*programs_->train);
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

bool ModelCheckpoint::on_epoch_end(int epoch, const Logs&) {
  std::string path = path_;
  if (const auto at = path.find("{epoch}"); at != std::string::npos)
    path.replace(at, 7, std::to_string(epoch + 1));
  trainer_->save_weights(path);
  return false;
}

bool EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  const auto it = logs.find(monitor_);
  if (it == logs.end()) {
    std::string known;
    for (const auto& [key, value] : logs)
      known += (known.empty() ? "" : ", ") + key;
    throw ValueError("EarlyStopping: monitored value '" + monitor_ +
                     "' is not among the epoch's logs (" + known + ")");
  }
  if (!seen_ || it->second < best_ - min_delta_) {
    best_ = it->second;
    seen_ = true;
    waited_ = 0;
    return false;
  }
  if (++waited_ > patience_) {
    stopped_ = epoch;
    return true;
  }
  return false;
}

bool LearningRateScheduler::on_epoch_end(int epoch, const Logs&) {
  trainer_->set_learning_rate(schedule_(epoch + 1, trainer_->learning_rate()));
  return false;
}

} // namespace pxl::addons
