// The Trainer's training program: streams, the model's forward and backward, the optimizer
// state, one micro-batch, one optimizer step, and the device loop around them.
#include "programs.hpp"

#include "model_io.hpp"

#include "pxl/addons/module/training_mode.hpp"
#include "pxl/addons/optimizers/apply.hpp"
#include "pxl/addons/training/accumulation.hpp"
#include "pxl/addons/training/data_parallel.hpp"
#include "pxl/addons/training/metrics.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/ops/collectives.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/host_io.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/transforms/pipeline.hpp"

namespace pxl::addons::trainer_detail {

namespace {

constexpr std::string_view lr_key = "trainer.lr";
constexpr std::string_view optimizer_key = "trainer.optimizer";

/// Whether the loss scaling divides out of SGD's learning rate (linear in the gradient)
/// rather than out of the gradients.
bool scaling_folds_into_lr(const TrainerOptimizer& o) {
  const auto* sgd = std::get_if<optimizers::SGDOptions>(&o);
  return sgd != nullptr && sgd->weight_decay == 0.0;
}

/// Calls `fn` with the optimizer of `options`, reading its learning rate from `lr` when given
/// (else the options' constant divided by `lr_divisor`).
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

/// Traces one training program into `p`'s Ir, in the main graph's scope. Each step below is a
/// method; they share the traced model and the state's layout.
class TrainingGraph {
public:
  TrainingGraph(Program& p, const CompileOptions& o, const TraceModel& trace, double lr)
      : p_(p), o_(o), traced_(trace_training(trace, model_spec(p.x_spec, o.dtype))),
        fwd_(traced_.second), trainable_(traced_.first.trainable().keys_flat()),
        softmax_output_(softmax_output(o, fwd_)),
        bwd_(fwd_.autodiff({.grads_provided = std::vector<Tensor>{fwd_.graph().outputs().back()},
                            .grads_required = fwd_.args().filter_keys(trainable_).tensors()})),
        scale_(o.dtype == float32 ? 1.0 : o.loss_scaling),
        fold_scale_(scale_ != 1.0 && scaling_folds_into_lr(o.optimizer)),
        accumulation_{.steps = o.gradient_accumulation} {
    init_state(lr);
  }

  /// The device program: one batch per run traced in the main graph itself (a loop of one
  /// would copy every weight into its body and back on each run), else a device loop of
  /// steps_per_execution / gradient_accumulation optimizer steps.
  void trace_runs() {
    if (o_.steps_per_execution == 1) {
      optimizer_step(state_);
      return;
    }
    Graph train_step = p_.ir.create_empty_graph("train_step");
    {
      auto in_step = train_step.scope();
      optimizer_step(named_graph_inputs(state_));
    }
    pxl::ops::repeat(train_step, o_.steps_per_execution / o_.gradient_accumulation,
                     state_.values_flat());
  }

private:
  /// The model traced in its training form (batch statistics, state updates, dropout).
  static std::pair<NamedVariableFactories, GraphWithNamedArgs>
  trace_training(const TraceModel& trace, const TensorSpec& x) {
    const TrainingMode training(true);
    return trace(x);
  }

  /// Whether the loss reads the logits of a Softmax output (loss_logits): they become the
  /// forward graph's second output, and the backward pass starts from their gradient.
  static bool softmax_output(const CompileOptions& o, const GraphWithNamedArgs& fwd) {
    const std::optional<Tensor> logits = loss_logits(o, fwd.graph().outputs().at(0));
    if (logits) {
      auto in_fwd = fwd.graph().scope();
      graph_output(*logits);
    }
    return logits.has_value();
  }

  /// The variables, the learning rate's variable (unless constant), the optimizer's state
  /// (by-ref state of the loop on the IPU, or remote variables that any graph reaches) and the
  /// gradient accumulators: what each step reads and updates.
  void init_state(double lr) {
    p_.variables = traced_.first.init("", o_.seed);
    state_ = p_.variables;
    if (!o_.constant_learning_rate) {
      p_.lr = variable(HostTensor::scalar(static_cast<float>(lr)), "lr");
      state_.insert(std::string(lr_key), *p_.lr);
    }
    with_optimizer(o_.optimizer, p_.lr, [&](auto opt) {
      const auto factories = optimizers::state_factories(opt, p_.variables.filter_keys(trainable_),
                                                         {.shard_state = o_.shard_optimizer_state});
      optimizer_state_ = o_.offload_optimizer_state
                             ? factories.init_remote(std::string(optimizer_key))
                             : factories.init(std::string(optimizer_key));
    });
    if (!optimizer_state_.empty() && !o_.offload_optimizer_state)
      state_.insert(std::string(optimizer_key), optimizer_state_);
    if (accumulation_.steps > 1)
      state_.update(accumulator_factories(traced_.first.trainable(), accumulation_).init());
  }

  /// One micro-batch on the state `s`: forward, loss, backward; the loss (and accuracy)
  /// stored. Returns the gradients by variable name.
  NamedTensors micro_batch(const NamedTensors& s) {
    const pxl::ops::CallOptions inlined{.inline_graph = true};
    const NamedTensors w = s.filter_keys(p_.variables.keys_flat());
    auto fwd_info = fwd_.bind(w).call_with_info({model_input(p_.x, o_.dtype)}, {}, {}, inlined);
    const Tensor model_out = fwd_info.outputs()[0];
    auto on_last = ipu(model_out.ipu());
    const Tensor labels = pxl::ops::host_load(p_.y);
    const Tensor out = loss_input(model_out);
    // The output the backward pass starts from: the model's, or its softmax's logits.
    const Tensor grad_of = softmax_output_ ? fwd_info.outputs()[1] : model_out;
    auto [loss, dout] = loss_with_grad(o_, softmax_output_ ? loss_input(grad_of) : out, labels,
                                       scale_, softmax_output_);
    if (dout.dtype() != grad_of.dtype())
      dout = pxl::ops::cast(dout, grad_of.dtype());
    Tensor values = loss.reshape({1});
    if (!o_.metrics.empty())
      values = pxl::ops::concat({values, sparse_categorical_accuracy(out, labels).reshape({1})});
    if (o_.replicas > 1)
      values = pxl::ops::collectives::replicated_all_reduce(values, CollectiveOperator::mean);
    pxl::ops::host_store(p_.loss, values);
    auto bwd_info =
        bwd_.call_with_info({dout}, {}, bwd_.grad_graph_info().inputs_dict(fwd_info), inlined);
    return bwd_.grads(bwd_info);
  }

  /// The optimizer's update of variable `key` (`w`) by gradient `g`, its state under its name.
  void update_variable(const NamedTensors& s, const std::string& key, const Tensor& w,
                       const Tensor& g) {
    NamedTensors own;
    const NamedTensors& state_of =
        o_.offload_optimizer_state || !s.contains(std::string(optimizer_key))
            ? optimizer_state_
            : s.sub(std::string(optimizer_key));
    if (state_of.contains(key))
      own.insert(key, state_of.sub(key));
    // The learning rate where the variable is: each IPU steps its own variables.
    std::optional<Tensor> lr;
    if (!o_.constant_learning_rate) {
      lr = s.at(std::string(lr_key));
      if (lr->ipu() != w.ipu())
        lr = pxl::ops::ipu_copy(*lr, w.ipu());
    }
    // Loss scaling out: from SGD's learning rate, or from the gradient first.
    Tensor grad = g;
    if (scale_ != 1.0) {
      if (!fold_scale_)
        grad = g * (1.0 / scale_);
      else if (lr)
        lr = *lr * (1.0 / scale_);
    }
    with_optimizer(
        o_.optimizer, lr,
        [&](auto opt) {
          optimizers::apply_with_state(opt, NamedTensors{{key, w}}, NamedTensors{{key, grad}}, own,
                                       {.shard_state = o_.shard_optimizer_state});
        },
        fold_scale_ ? scale_ : 1.0);
  }

  /// One optimizer step on the state `s` (the main graph's variables, or a loop body's
  /// inputs): one micro-batch's gradients, or gradient_accumulation micro-batches accumulated
  /// (repeated, or pipelined), averaged across the replicas and applied.
  void optimizer_step(const NamedTensors& s) {
    const NamedTensors w = s.filter_keys(trainable_);
    if (accumulation_.steps == 1) {
      const NamedTensors grads = average_across_replicas(micro_batch(s));
      for (const auto& [key, var] : w.items()) {
        auto on = ipu(var.ipu());
        update_variable(s, key, var, grads.at(key));
      }
      return;
    }
    Graph micro = p_.ir.create_empty_graph("micro_batch");
    {
      auto in_micro = micro.scope();
      const NamedTensors ms = named_graph_inputs(state_);
      accumulate_gradients(ms, micro_batch(ms), accumulation_);
    }
    if (o_.pipeline) {
      p_.pipeline = transforms::pipeline(micro, {.steps = accumulation_.steps,
                                                 .schedule = o_.pipeline_schedule,
                                                 .recompute = o_.recompute});
      pxl::ops::call(p_.pipeline->graph, s.values_flat());
    } else {
      pxl::ops::repeat(micro, accumulation_.steps, s.values_flat());
    }
    apply_accumulated(
        w, s,
        averaged_across_replicas([&](const std::string& key, const Tensor& var, const Tensor& g) {
          update_variable(s, key, var, g);
        }));
  }

  Program& p_;
  const CompileOptions& o_;
  std::pair<NamedVariableFactories, GraphWithNamedArgs> traced_;
  const GraphWithNamedArgs& fwd_;
  /// The keys of the variables the optimizer updates; state variables (batch norm's running
  /// statistics) are bound to the model but updated only by it.
  std::vector<std::string> trainable_;
  bool softmax_output_; ///< the loss reads the logits of the model's softmax output
  GraphWithNamedArgs bwd_;
  double scale_;    ///< the loss scaling (1 in float32)
  bool fold_scale_; ///< whether it divides out of SGD's learning rate
  GradientAccumulation accumulation_;
  NamedTensors state_;           ///< what each step reads and updates, by name
  NamedTensors optimizer_state_; ///< on the IPU (also in state_), or remote variables
};

} // namespace

void build_training_program(Program& p, const CompileOptions& o, const TraceModel& trace,
                            const TensorSpec& x, const TensorSpec& y, double lr,
                            bool open_session) {
  p.x_spec = x;
  p.ir.set_replication_factor(o.replicas);
  p.ir.set_matmul_defaults(o.matmul_defaults);
  {
    auto in_main = p.ir.main_graph().scope();
    p.x = h2d_stream(x.shape, x.dtype, "x");
    p.y = h2d_stream(y.shape, y.dtype, "y");
    // Each micro-batch's loss, and accuracy: one element, so that one consumer sees both.
    p.loss = d2h_stream({o.metrics.empty() ? 1 : 2}, float32, "logs");
    TrainingGraph(p, o, trace, lr).trace_runs();
  }
  const std::int64_t per_run = o.steps_per_execution;
  p.ir.set_num_host_transfers(per_run);
  if (!open_session)
    return;
  p.session.emplace(p.ir, "ipu_model",
                    SessionOptions{.workers = o.workers,
                                   .profile = o.profile,
                                   .distributed = o.distributed,
                                   .engine_options = report_options(o, "train"),
                                   .stochastic_rounding = o.stochastic_rounding,
                                   .stochastic_rounding_seed = o.seed});
  p.attached.emplace(p.session->attach());
  p.log->with_accuracy = !o.metrics.empty();
  p.log->replicas = local_replicas(o).count;
  // With one step per run the logs come back as the run's output (nothing to overlap).
  if (per_run > 1)
    p.session->set_d2h_callback(p.loss,
                                [log = p.log](const HostTensor& values) { (*log)(values); });
}

} // namespace pxl::addons::trainer_detail
