#include "pxl/addons/trainer.hpp"

#include "pxl/addons/accumulation.hpp"
#include "pxl/addons/checkpoint.hpp"
#include "pxl/addons/data/shuffle.hpp"
#include "pxl/addons/data_parallel.hpp"
#include "pxl/addons/metrics.hpp"
#include "pxl/addons/ops/cross_entropy.hpp"
#include "pxl/addons/optimizers/apply.hpp"
#include "pxl/core/error.hpp"
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

#include <algorithm>
#include <cstring>
#include <exception>
#include <numeric>

namespace pxl::addons {

namespace {

constexpr std::string_view accuracy_metric = "accuracy";
constexpr std::string_view lr_key = "trainer.lr";
constexpr std::string_view optimizer_key = "trainer.optimizer";

/// The examples `rows` of `t` (first axis), in that order, as [rows.size(), ...].
HostTensor gather_rows(const HostTensor& t, std::span<const std::int64_t> rows) {
  Shape shape = t.shape();
  const auto n = static_cast<std::size_t>(shape[0]);
  const std::size_t row_bytes = n == 0 ? 0 : t.bytes().size() / n;
  shape[0] = static_cast<std::int64_t>(rows.size());
  HostTensor out(shape, t.dtype());
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::memcpy(out.bytes().data() + i * row_bytes,
                t.bytes().data() + static_cast<std::size_t>(rows[i]) * row_bytes, row_bytes);
  return out;
}

/// `parts` (of one spec) joined along their first axis.
HostTensor concatenated(const std::vector<HostTensor>& parts) {
  Shape shape = parts.front().shape();
  shape[0] *= static_cast<std::int64_t>(parts.size());
  HostTensor all(shape, parts.front().dtype());
  std::size_t at = 0;
  for (const HostTensor& part : parts) {
    std::memcpy(all.bytes().data() + at, part.bytes().data(), part.bytes().size());
    at += part.bytes().size();
  }
  return all;
}

/// `t` [transfers · replicas · b, ...] as a stream array [transfers, replicas, b, ...], the
/// leading dims of 1 dropped (the Session's layout).
HostTensor stream_array(const HostTensor& t, std::int64_t transfers, std::int64_t replicas) {
  Shape shape = t.shape();
  shape[0] /= transfers * replicas;
  if (replicas > 1)
    shape.insert(shape.begin(), replicas);
  if (transfers > 1)
    shape.insert(shape.begin(), transfers);
  return t.reshaped(shape);
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

/// The loss and its gradient with respect to the output.
std::pair<Tensor, Tensor> loss_with_grad(TrainingLoss loss, const Tensor& out, const Tensor& y) {
  if (loss == TrainingLoss::sparse_categorical_crossentropy)
    return ops::cross_entropy_with_grad(out, y);
  const Tensor diff = out - y;
  const auto n = static_cast<double>(out.nelms());
  return {pxl::ops::mean(diff * diff), diff * (2.0 / n)};
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
  std::int64_t element = 0; ///< elements received: one per micro-batch and replica
  std::int64_t batch = 0;   ///< micro-batches since the fit began
  double loss_sum = 0, accuracy_sum = 0;
  std::exception_ptr error; ///< what a callback threw; rethrown after the run

  void operator()(const HostTensor& values) {
    // Replicas store the same all-reduced values, step-major: take replica 0's.
    if (element++ % replicas != 0)
      return;
    const auto v = values.data<float>();
    Logs logs{{"loss", v[0]}};
    loss_sum += v[0];
    if (with_accuracy) {
      logs.emplace(std::string(accuracy_metric), v[1]);
      accuracy_sum += v[1];
    }
    if (!error) {
      try {
        for (const auto& c : callbacks)
          c->on_batch_end(batch, logs);
      } catch (...) {
        error = std::current_exception();
      }
    }
    ++batch;
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
  Tensor lr;
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

/// The optimizer of `options` reading its learning rate from `lr`.
template <typename Fn>
void with_optimizer(const TrainerOptimizer& options, const Tensor& lr, Fn&& fn) {
  std::visit(
      [&](auto opts) {
        opts.lr = lr;
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

} // namespace

History Trainer::fit(const HostTensor& x, const HostTensor& y, const FitOptions& fit_options) {
  if (!programs_)
    throw ValueError("Trainer::fit: call compile first");
  check_examples("Trainer::fit", x, y);
  const CompileOptions& o = programs_->options;
  const std::int64_t b = fit_options.batch_size;
  const std::int64_t per_run = o.steps_per_execution * o.gradient_accumulation;
  if (b < 1)
    throw ValueError("Trainer::fit: batch_size must be at least 1, got " + std::to_string(b));
  const std::int64_t runs = x.shape()[0] / (per_run * b);
  if (runs == 0 && fit_options.epochs > 0)
    throw ValueError("Trainer::fit: " + std::to_string(x.shape()[0]) +
                     " examples do not fill one run of " + std::to_string(per_run) +
                     " micro-batches of " + std::to_string(b));
  // Each epoch's order, drawn at its first run.
  std::vector<std::int64_t> order;
  auto run_data = [&](int epoch, std::int64_t r) {
    if (r == 0) {
      if (fit_options.shuffle) {
        order = data::shuffled_indices(x.shape()[0], o.seed, static_cast<std::uint64_t>(epoch));
      } else {
        order.resize(static_cast<std::size_t>(x.shape()[0]));
        std::iota(order.begin(), order.end(), std::int64_t{0});
      }
    }
    const std::span<const std::int64_t> rows(order.data() + r * per_run * b,
                                             static_cast<std::size_t>(per_run * b));
    return std::pair(gather_rows(x, rows), gather_rows(y, rows));
  };
  return fit_runs(example_spec(x, b), example_spec(y, b), runs, run_data, fit_options);
}

History Trainer::fit(const data::TensorDataset& dataset, FitOptions fit_options) {
  if (!programs_)
    throw ValueError("Trainer::fit: call compile first");
  const auto& settings = dataset.settings();
  if (!settings.batch_size || !settings.drop_remainder)
    throw ValueError("Trainer::fit: the dataset must be batched with drop_remainder (the "
                     "device program has fixed shapes): call .batch(size) on it");
  const std::int64_t per_run =
      programs_->options.steps_per_execution * programs_->options.gradient_accumulation;
  const std::int64_t runs = dataset.batches_per_epoch() / per_run;
  if (runs == 0 && fit_options.epochs > 0)
    throw ValueError("Trainer::fit: the dataset's " + std::to_string(dataset.batches_per_epoch()) +
                     " batches per epoch do not fill one run of " + std::to_string(per_run) +
                     " micro-batches");
  fit_options.batch_size = *settings.batch_size;
  const data::LabelledBatchSpec spec = dataset.element_spec();
  // Each epoch's batches, read as its runs go.
  std::optional<data::TensorDatasetView> view;
  std::optional<ranges::iterator_t<data::TensorDatasetView>> at;
  auto run_data = [&](int epoch, std::int64_t r) {
    if (r == 0) {
      view.emplace(dataset.epoch(static_cast<std::uint64_t>(epoch)));
      at.emplace(view->begin());
    }
    std::vector<HostTensor> xs, ys;
    for (std::int64_t k = 0; k < per_run; ++k, ++*at) {
      xs.push_back((**at).features);
      ys.push_back((**at).labels);
    }
    return std::pair(concatenated(xs), concatenated(ys));
  };
  return fit_runs(spec.features, spec.labels, runs, run_data, fit_options);
}

History Trainer::fit_runs(const TensorSpec& x_batch, const TensorSpec& y_batch, std::int64_t runs,
                          const RunData& run_data, const FitOptions& fit_options) {
  Programs& ps = *programs_;
  const CompileOptions& o = ps.options;
  const std::int64_t b = fit_options.batch_size;
  if (b % o.replicas != 0)
    throw ValueError("Trainer::fit: batch_size must be a positive multiple of the " +
                     std::to_string(o.replicas) + " replica(s), got " + std::to_string(b));
  if (fit_options.epochs < 0)
    throw ValueError("Trainer::fit: epochs must be at least 0, got " +
                     std::to_string(fit_options.epochs));
  const std::int64_t per_run = o.steps_per_execution * o.gradient_accumulation;
  const std::int64_t b_rep = b / o.replicas;
  const bool with_accuracy = !o.metrics.empty();
  auto per_replica = [&](TensorSpec spec) {
    spec.shape[0] = b_rep;
    return spec;
  };

  if (!ps.train || ps.train->x_spec != per_replica(x_batch)) {
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
      auto traced = trace_(p.x_spec);
      const NamedVariableFactories& facts = traced.first;
      const GraphWithNamedArgs& fwd = traced.second;
      auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
      p.variables = facts.init("", o.seed);
      p.lr = variable(HostTensor::scalar(static_cast<float>(ps.lr)), "lr");
      NamedTensors state = p.variables;
      state.insert(std::string(lr_key), p.lr);
      NamedTensors opt_state;
      with_optimizer(o.optimizer, p.lr, [&](auto opt) {
        opt_state = optimizers::state_factories(opt, p.variables).init(std::string(optimizer_key));
      });
      if (!opt_state.empty())
        state.insert(std::string(optimizer_key), opt_state);
      const GradientAccumulation accumulation{.steps = o.gradient_accumulation};
      if (accumulation.steps > 1)
        state.update(accumulator_factories(facts, accumulation).init());

      // One micro-batch: forward, loss, backward; the loss (and accuracy) stored.
      auto micro_batch = [&](const NamedTensors& s) {
        const pxl::ops::CallOptions inlined{.inline_graph = true};
        const NamedTensors w = s.filter_keys(p.variables.keys_flat());
        auto fwd_info = fwd.bind(w).call_with_info({pxl::ops::host_load(p.x)}, {}, {}, inlined);
        const Tensor out = fwd_info.outputs()[0];
        auto on_last = ipu(out.ipu());
        const Tensor labels = pxl::ops::host_load(p.y);
        auto [loss, dout] = loss_with_grad(o.loss, out, labels);
        Tensor values = loss.reshape({1});
        if (with_accuracy)
          values =
              pxl::ops::concat({values, sparse_categorical_accuracy(out, labels).reshape({1})});
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
        if (s.contains(std::string(optimizer_key)) &&
            s.sub(std::string(optimizer_key)).contains(key))
          own.insert(key, s.sub(std::string(optimizer_key)).sub(key));
        // The learning rate where the variable is: each IPU steps its own variables.
        Tensor lr = s.at(std::string(lr_key));
        if (lr.ipu() != w.ipu())
          lr = pxl::ops::ipu_copy(lr, w.ipu());
        with_optimizer(o.optimizer, lr, [&](auto opt) {
          optimizers::apply_with_state(opt, NamedTensors{{key, w}}, NamedTensors{{key, g}}, own);
        });
      };

      Graph train_step = p.ir.create_empty_graph("train_step");
      {
        auto in_step = train_step.scope();
        const NamedTensors s = named_graph_inputs(state);
        const NamedTensors w = s.filter_keys(p.variables.keys_flat());
        if (accumulation.steps == 1) {
          const NamedTensors grads = average_across_replicas(micro_batch(s));
          for (const auto& [key, var] : w.items()) {
            auto on = ipu(var.ipu());
            step(s, key, var, grads.at(key));
          }
        } else {
          Graph micro = p.ir.create_empty_graph("micro_batch");
          {
            auto in_micro = micro.scope();
            const NamedTensors ms = named_graph_inputs(state);
            accumulate_gradients(ms, micro_batch(ms), accumulation);
          }
          if (o.pipeline)
            pxl::ops::call(transforms::pipeline(micro, {.steps = accumulation.steps}).graph,
                           s.values_flat());
          else
            pxl::ops::repeat(micro, accumulation.steps, s.values_flat());
          apply_accumulated(
              w, s,
              averaged_across_replicas([&](const std::string& key, const Tensor& var,
                                           const Tensor& g) { step(s, key, var, g); }));
        }
      }
      pxl::ops::repeat(train_step, o.steps_per_execution, state.values_flat());
    }
    p.ir.set_num_host_transfers(per_run);
    p.session.emplace(p.ir, "ipu_model", SessionOptions{.workers = o.workers});
    p.attached.emplace(p.session->attach());
    ps.load_weights(p);
    p.session->write_variable_data(p.lr, HostTensor::scalar(static_cast<float>(ps.lr)));
    p.log->with_accuracy = with_accuracy;
    p.log->replicas = o.replicas;
    p.session->set_d2h_callback(p.loss,
                                [log = p.log](const HostTensor& values) { (*log)(values); });
  }

  Programs::Program& p = *ps.train;
  Programs::BatchLog& log = *p.log;
  log.callbacks = fit_options.callbacks;
  log.batch = 0;
  log.error = nullptr;
  History history;
  for (int epoch = 0; epoch < fit_options.epochs; ++epoch) {
    log.loss_sum = 0;
    log.accuracy_sum = 0;
    for (std::int64_t r = 0; r < runs; ++r) {
      const auto [xs, ys] = run_data(epoch, r);
      p.session->run({{p.x, stream_array(xs, per_run, o.replicas)},
                      {p.y, stream_array(ys, per_run, o.replicas)}});
      if (log.error)
        std::rethrow_exception(std::exchange(log.error, nullptr));
    }
    const auto n = static_cast<double>(runs * per_run);
    Logs logs{{"loss", log.loss_sum / n}};
    if (with_accuracy)
      logs.emplace(std::string(accuracy_metric), log.accuracy_sum / n);
    if (fit_options.validation_data) {
      ps.save_weights(p);
      const Logs val =
          evaluate(fit_options.validation_data->first, fit_options.validation_data->second, b);
      for (const auto& [key, value] : val)
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
    auto [facts, fwd] = trace(x_spec);
    p.variables = facts.init("", o.seed);
    const Tensor out =
        fwd.bind(p.variables).call({pxl::ops::host_load(p.x)}, {}, {}, {.inline_graph = true})[0];
    auto on_last = ipu(out.ipu());
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
  Programs& ps = *programs_;
  if (ps.train)
    ps.save_weights(*ps.train);
  if (!ps.evaluate || ps.evaluate->x_spec != example_spec(x, batch_size)) {
    ps.evaluate.reset();
    build_forward(ps, ps.evaluate.emplace(), trace_, example_spec(x, batch_size),
                  example_spec(y, batch_size));
  }
  Programs::Program& p = *ps.evaluate;
  ps.load_weights(p);
  const std::int64_t batches = x.shape()[0] / batch_size;
  double loss = 0, acc = 0;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(batch_size));
  for (std::int64_t k = 0; k < batches; ++k) {
    std::iota(rows.begin(), rows.end(), k * batch_size);
    const auto out = p.session->run({{p.x, gather_rows(x, rows)}, {p.y, gather_rows(y, rows)}});
    loss += out.at(p.loss).data<float>()[0];
    if (!ps.options.metrics.empty())
      acc += out.at(p.accuracy).data<float>()[0];
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
  std::vector<HostTensor> parts;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(batch_size));
  for (std::int64_t k = 0; k < batches; ++k) {
    std::iota(rows.begin(), rows.end(), k * batch_size);
    parts.push_back(p.session->run({{p.x, gather_rows(x, rows)}}).at(p.out));
  }
  HostTensor all = concatenated(parts);
  return all;
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
  programs_->lr = lr;
  if (programs_->train)
    programs_->train->session->write_variable_data(programs_->train->lr,
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

void Trainer::save_weights(const std::filesystem::path& path) {
  if (!programs_ || !programs_->train)
    throw ValueError("Trainer::save_weights: nothing trained yet; call fit first");
  save_checkpoint(*programs_->train->session, programs_->train->variables, path);
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
