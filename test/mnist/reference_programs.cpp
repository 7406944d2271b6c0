#include "reference_programs.hpp"

#include "model.hpp"

#include "pxl/addons/data/batches.hpp"
#include "pxl/addons/ops/cross_entropy.hpp"
#include "pxl/addons/optimizers/adam.hpp"
#include "pxl/addons/optimizers/apply.hpp"
#include "pxl/addons/training/accumulation.hpp"
#include "pxl/addons/training/data_parallel.hpp"
#include "pxl/core/error.hpp"
#include "pxl/dist.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/scope.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/ops/collectives.hpp"
#include "pxl/ops/host_io.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/var_updates.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace mnist {

using pxl::Tensor;
using pxl::addons::NamedTensors;

pxl::SessionOptions session_options(unsigned workers, bool profile = false,
                                    bool distributed = false) {
  return {.workers = workers, .profile = profile, .distributed = distributed};
}

namespace {

/// Batches each infeed producer prepares ahead of the device. A batch takes microseconds to
/// prepare against about half a millisecond for a step, so a few would do; eight let the
/// session wake each producer once per four steps (once half its queue is free) rather than
/// after every step.
constexpr std::int64_t infeed_depth = 8;

/// The Net's forward and gradient graphs are expanded at their call sites: an outlined call
/// would copy every weight into the graph and back on every step.
constexpr pxl::ops::CallOptions inlined{.inline_graph = true};

/// The images as the Net takes them: cast on the device when it runs in float16.
Tensor net_input(const pxl::HostToDeviceStream& images, pxl::DType dtype) {
  auto x = pxl::ops::host_load(images, "x");
  return dtype == pxl::float32 ? x : pxl::ops::cast(x, dtype);
}

/// The loss gradient's scale: loss scaling for float16, none for float32.
double loss_scale(const TrainingOptions& options) {
  return options.dtype == pxl::float32 ? 1.0 : options.loss_scaling;
}

/// Traces one micro-batch into the current graph: loads images and labels, runs the forward
/// and gradient graphs with `weights`, stores the loss (with replicas, the global batch's:
/// every replica stores the mean of theirs, so a process that holds some of the replicas
/// reports what one holding all would), and returns the weights' gradients by name (this
/// replica's: the mean over its rows, times loss_scale). The loss and its gradient are
/// computed in float32 whatever the Net's dtype.
NamedTensors trace_gradients(const pxl::addons::GraphWithNamedArgs& fwd,
                             const pxl::addons::GraphWithNamedArgs& bwd,
                             const NamedTensors& weights, const pxl::HostToDeviceStream& images,
                             const pxl::HostToDeviceStream& labels,
                             const pxl::DeviceToHostStream& loss_stream,
                             const TrainingOptions& options) {
  auto x = net_input(images, options.dtype);
  auto fwd_info = fwd.bind(weights).call_with_info({x}, {}, {}, inlined);
  auto logits = fwd_info.outputs()[0];
  // The labels, the loss and its gradient where the logits are: the last pipeline stage's IPU.
  auto on_last = pxl::ipu(logits.ipu());
  auto y = pxl::ops::host_load(labels, "y");
  if (options.dtype != pxl::float32)
    logits = pxl::ops::cast(logits, pxl::float32);
  auto [loss, dlogits] = pxl::addons::ops::cross_entropy_with_grad(logits, y, loss_scale(options));
  if (options.dtype != pxl::float32)
    dlogits = pxl::ops::cast(dlogits, options.dtype);
  auto bwd_info =
      bwd.call_with_info({dlogits}, {}, bwd.grad_graph_info().inputs_dict(fwd_info), inlined);
  pxl::ops::host_store(loss_stream, options.replicas > 1
                                        ? pxl::ops::collectives::replicated_all_reduce(
                                              loss, pxl::CollectiveOperator::mean)
                                        : loss);
  return bwd.grads(bwd_info);
}

/// Where the device loop's by-ref state holds the optimizer's.
constexpr std::string_view optimizer_key = "optimizer";

pxl::addons::optimizers::Adam adam(const TrainingOptions& options) {
  return pxl::addons::optimizers::Adam({.lr = options.learning_rate});
}

/// Adam on gradients that carry the loss scaling `scale` (divided out first: Adam's steps
/// do not depend on the gradients' scale, but its eps does), with `state` under
/// "<weight>.<state>" (on chip, or remote).
void adam_update(const NamedTensors& weights, const NamedTensors& grads, const NamedTensors& state,
                 const TrainingOptions& options, double scale) {
  const NamedTensors unscaled =
      scale == 1.0 ? grads : grads.map([scale](const Tensor& g) { return g * (1.0 / scale); });
  pxl::addons::optimizers::apply_with_state(adam(options), weights, unscaled, state,
                                            {.shard_state = options.shard_optimizer_state});
}

/// SGD on the gradients averaged across replicas (with one replica, the gradients as they
/// are: no op is added, so the update still folds into the gradient's matmul); `scale` is
/// the loss scaling the gradients carry.
void sgd_update(const NamedTensors& weights, const NamedTensors& grads, double learning_rate,
                double scale) {
  const NamedTensors averaged = pxl::addons::average_across_replicas(grads);
  for (const auto& [name, w] : weights.to_dict())
    pxl::ops::scaled_add_(w, averaged.at(name), {.b = -learning_rate / scale});
}

/// The update of `weights` from their gradients (this replica's), averaged across replicas
/// first; `state` is the optimizer's (see TrainingProgram::optimizer_state).
void update(const NamedTensors& weights, const NamedTensors& grads, const NamedTensors& state,
            const TrainingOptions& options) {
  if (options.optimizer == Optimizer::sgd) {
    sgd_update(weights, grads, options.learning_rate, loss_scale(options));
    return;
  }
  adam_update(weights, pxl::addons::average_across_replicas(grads), state, options,
              loss_scale(options));
}

} // namespace

TrainingProgram::TrainingProgram(const TrainingOptions& options) : options_(options) {
  if (options.batch_size < 1 || options.steps_per_execution < 1 ||
      options.gradient_accumulation < 1 || options.replicas < 1)
    throw pxl::ValueError("mnist TrainingOptions: batch_size, steps_per_execution, "
                          "gradient_accumulation and replicas must be at least 1, got " +
                          std::to_string(options.batch_size) + ", " +
                          std::to_string(options.steps_per_execution) + ", " +
                          std::to_string(options.gradient_accumulation) + " and " +
                          std::to_string(options.replicas));
  if (options.offload_optimizer_state && options.optimizer == Optimizer::sgd)
    throw pxl::ValueError("mnist TrainingOptions: offload_optimizer_state needs an optimizer with "
                          "state to offload; SGD has none (use Adam)");
  if (options.shard_optimizer_state && options.optimizer == Optimizer::sgd)
    throw pxl::ValueError("mnist TrainingOptions: shard_optimizer_state needs an optimizer with "
                          "state to shard; SGD has none (use Adam)");
  if (options.shard_optimizer_state && options.replicas < 2)
    throw pxl::ValueError("mnist TrainingOptions: shard_optimizer_state needs at least 2 "
                          "replicas to shard over, got " +
                          std::to_string(options.replicas));
  if (options.dtype != pxl::float32 && options.dtype != pxl::float16)
    throw pxl::DTypeError("mnist TrainingOptions: dtype must be float32 or float16, got " +
                          std::string(pxl::name(options.dtype)));
  if (!(options.loss_scaling > 0))
    throw pxl::ValueError("mnist TrainingOptions: loss_scaling must be positive, got " +
                          std::to_string(options.loss_scaling));
  if (options.pipeline_stages < 1 || options.pipeline_stages > Net::layers)
    throw pxl::ValueError("mnist TrainingOptions: pipeline_stages must be 1 to " +
                          std::to_string(Net::layers) + " (the Net's layers), got " +
                          std::to_string(options.pipeline_stages));
  if (options.pipeline_stages > 1 &&
      options.gradient_accumulation < min_pipeline_micro_batches(options.pipeline_stages))
    throw pxl::ValueError("mnist TrainingOptions: a pipeline of " +
                          std::to_string(options.pipeline_stages) +
                          " stages needs gradient_accumulation of at least " +
                          std::to_string(min_pipeline_micro_batches(options.pipeline_stages)) +
                          " micro-batches, got " + std::to_string(options.gradient_accumulation));
  const std::int64_t b = options.batch_size;
  ir_.set_replication_factor(options.replicas);
  {
    auto in_main = ir_.main_graph().scope();
    images_ = pxl::h2d_stream({b, image_size}, pxl::float32, "images");
    labels_ = pxl::h2d_stream({b}, pxl::int32, "labels");
    loss_ = pxl::d2h_stream({}, pxl::float32, "loss");

    Net net;
    net.stages = options.pipeline_stages;
    auto [factories, fwd] = net.create_graph(pxl::TensorSpec{{b, image_size}, options.dtype});
    // Gradients of the weights only: the image's gradient would be wasted work.
    auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
    variables_ = factories.init("", options.seed);
    if (options.optimizer == Optimizer::adam) {
      const auto state_factories = pxl::addons::optimizers::state_factories(
          adam(options), variables_, {.shard_state = options.shard_optimizer_state});
      optimizer_state_ = options.offload_optimizer_state
                             ? state_factories.init_remote(std::string(optimizer_key))
                             : state_factories.init(std::string(optimizer_key));
    }

    // The device state: the weights, plus one accumulator per weight when accumulating, and
    // the optimizer's state unless it is in Streaming Memory (reached from any graph). With
    // several steps per run, the step graph takes all of it by reference, so that its updates
    // land in the main graph's variables, and `repeat` runs it steps_per_execution times.
    NamedTensors state = variables_;
    const bool state_on_chip =
        !options.offload_optimizer_state && options.optimizer != Optimizer::sgd;
    if (state_on_chip)
      state.insert(optimizer_key, optimizer_state_);
    // The optimizer state as a graph sees it: `s`'s when passed in, else the remote variables.
    auto optimizer_state_in = [&](const NamedTensors& s) {
      return state_on_chip ? s.sub(optimizer_key) : optimizer_state_;
    };
    const pxl::addons::GradientAccumulation accumulation{.steps = options.gradient_accumulation};
    if (accumulation.steps > 1)
      state.update(pxl::addons::accumulator_factories(factories, accumulation).init());

    if (options.steps_per_execution == 1 && accumulation.steps == 1) {
      // One step per run: the tutorial's form, traced in the main graph itself (a loop of
      // one would copy every weight into the loop body and back on each run).
      update(variables_, trace_gradients(fwd, bwd, variables_, *images_, *labels_, *loss_, options),
             optimizer_state_, options);
    } else {
      pxl::Graph step = ir_.create_empty_graph("train_step");
      if (accumulation.steps == 1) {
        auto in_step = step.scope();
        auto s = pxl::addons::named_graph_inputs(state);
        auto weights = s.filter_keys(variables_.keys_flat());
        update(weights, trace_gradients(fwd, bwd, weights, *images_, *labels_, *loss_, options),
               optimizer_state_in(s), options);
      } else {
        // N micro-batches accumulate the mean gradient, then one update with it: the same
        // step as one batch of N·b. Replicas average the accumulated gradient, once per
        // update.
        pxl::Graph micro = ir_.create_empty_graph("micro_step");
        {
          auto in_micro = micro.scope();
          auto s = pxl::addons::named_graph_inputs(state);
          auto weights = s.filter_keys(variables_.keys_flat());
          pxl::addons::accumulate_gradients(
              s, trace_gradients(fwd, bwd, weights, *images_, *labels_, *loss_, options),
              accumulation);
        }
        auto in_step = step.scope();
        auto s = pxl::addons::named_graph_inputs(state);
        if (options.pipeline_stages > 1) {
          // The micro-batches of an update go through the Net's stages concurrently.
          pipeline_ = pxl::transforms::pipeline(micro, {.steps = accumulation.steps});
          pxl::ops::call(pipeline_->graph, s.values_flat());
        } else {
          pxl::ops::repeat(micro, accumulation.steps, s.values_flat());
        }
        const NamedTensors opt_state = optimizer_state_in(s);
        pxl::addons::apply_accumulated(
            s.filter_keys(variables_.keys_flat()), s,
            pxl::addons::averaged_across_replicas([&](const std::string& name, const Tensor& w,
                                                      const Tensor& g) {
              if (options.optimizer == Optimizer::sgd) {
                pxl::ops::scaled_add_(w, g, {.b = -options.learning_rate / loss_scale(options)});
                return;
              }
              NamedTensors own_state;
              own_state.insert(name, opt_state.sub(name));
              adam_update(NamedTensors{{name, w}}, NamedTensors{{name, g}}, own_state, options,
                          loss_scale(options));
            }));
      }
      pxl::ops::repeat(step, options.steps_per_execution, state.values_flat());
    }
  }
  ir_.set_num_host_transfers(options.steps_per_execution * options.gradient_accumulation);
  session_.emplace(ir_, "ipu_model",
                   session_options(options.workers, options.profile, options.distributed));
  attachment_.emplace(session_->attach());
}

pxl::addons::data::LocalReplicas TrainingProgram::local_replicas() const {
  if (options_.distributed)
    return {options_.replicas, pxl::dist::replica_offset(), pxl::dist::num_local_replicas()};
  return {options_.replicas, 0, options_.replicas};
}

std::optional<pxl::HostTensor>
TrainingProgram::per_replica(const pxl::HostTensor& array,
                             const pxl::HostToDeviceStream& stream) const {
  const std::int64_t n = options_.replicas, m = micro_batches_per_run();
  if (n == 1)
    return std::nullopt;
  const pxl::Shape& element = stream.spec().shape;
  pxl::Shape global = element, split = element;
  global.at(0) *= n;
  split.insert(split.begin(), n);
  if (m > 1) {
    global.insert(global.begin(), m);
    split.insert(split.begin(), m);
  }
  if (array.shape() != global)
    return std::nullopt;
  const auto local = local_replicas();
  if (local.count == n)
    return array.reshaped(split);
  // This process's replicas of each micro-batch: [m, local, batch, ...], without a replica
  // dim of 1 (as the session's arrays drop it).
  const auto replica_dim = split.begin() + (m > 1 ? 1 : 0);
  if (local.count == 1)
    split.erase(replica_dim);
  else
    *replica_dim = local.count;
  pxl::HostTensor mine(split, array.dtype());
  const std::size_t part = array.nbytes() / static_cast<std::size_t>(m * n);
  const std::size_t taken = part * static_cast<std::size_t>(local.count);
  for (std::int64_t k = 0; k < m; ++k)
    std::memcpy(mine.bytes().data() + static_cast<std::size_t>(k) * taken,
                array.bytes().data() + static_cast<std::size_t>(k * n + local.first) * part, taken);
  return mine;
}

std::vector<float> TrainingProgram::run(const pxl::HostTensor& images,
                                        const pxl::HostTensor& labels) {
  const auto split_images = per_replica(images, *images_);
  const auto split_labels = per_replica(labels, *labels_);
  auto out = session_->run({{*images_, split_images ? *split_images : images},
                            {*labels_, split_labels ? *split_labels : labels}});
  // [micro-batches, local replicas] losses, step-major, each the global batch's.
  const auto losses = out.at(*loss_).data<float>();
  const auto n = static_cast<std::size_t>(local_replicas().count);
  std::vector<float> per_micro_batch;
  for (std::size_t i = 0; i < losses.size(); i += n)
    per_micro_batch.push_back(losses[i]);
  return per_micro_batch;
}

void TrainingProgram::bind_feed(std::function<const pxl::addons::data::Batch*()> next,
                                LossCallback on_loss) {
  if (!on_loss)
    throw pxl::ValueError("mnist TrainingProgram::feed_from: the loss callback is empty; pass "
                          "one taking (index, loss)");
  const auto local = local_replicas();
  const std::int64_t replicas = local.count;
  auto global = [&local](pxl::TensorSpec spec) {
    spec.shape.at(0) *= local.total;
    return spec;
  };
  using pxl::addons::data::BatchFanOut;
  auto fan_out = std::make_shared<BatchFanOut>(
      [next = std::move(next)]() -> pxl::addons::data::BatchHalves {
        const pxl::addons::data::Batch* b = next();
        if (b == nullptr)
          return {};
        return {&b->images, &b->labels};
      },
      global(images_->spec()), global(labels_->spec()), infeed_depth* replicas,
      micro_batches_per_run(), local,
      pxl::addons::data::FanOutWording{.feeder = "mnist TrainingProgram::feed_from",
                                       .features = "images",
                                       .hint = " (batch with .batch_size = " +
                                               std::to_string(global(labels_->spec()).shape.at(0)) +
                                               ", .drop_remainder = true and .flatten = true)"});
  // Each step takes one element per local replica: the queues hold infeed_depth steps.
  const pxl::FeedOptions feed{.depth = infeed_depth * replicas};
  session_->set_h2d_callback(
      *images_, [fan_out](pxl::HostTensor& e) { fan_out->fill(BatchFanOut::features, e); }, feed);
  session_->set_h2d_callback(
      *labels_, [fan_out](pxl::HostTensor& e) { fan_out->fill(BatchFanOut::labels, e); }, feed);
  // Room for a whole run's losses: the device never waits for the callback within a run. The
  // replicas' losses of a step arrive one after the other (step-major), each the global
  // batch's: the first of each step is reported.
  session_->set_d2h_callback(*loss_,
                             [on_loss = std::move(on_loss), replicas, index = std::int64_t{0},
                              seen = std::int64_t{0}](const pxl::HostTensor& loss) mutable {
                               if (seen++ == 0)
                                 on_loss(index++, loss.data<float>()[0]);
                               if (seen == replicas)
                                 seen = 0;
                             },
                             {.depth = micro_batches_per_run() * replicas});
  fed_ = true;
}

void TrainingProgram::run() {
  if (!fed_)
    throw pxl::StreamError("mnist TrainingProgram::run(): nothing feeds the images and labels "
                           "streams; call feed_from(batches, on_loss) first, or pass the arrays "
                           "to run(images, labels)");
  session_->run();
}

pxl::addons::NamedTensorData TrainingProgram::weights() {
  pxl::addons::NamedTensorData data;
  for (const auto& [name, var] : variables_.to_dict())
    data.insert(name, session_->get_tensor_data(var));
  return data;
}

TestProgram::TestProgram(std::int64_t batch_size, unsigned workers, pxl::DType dtype)
    : batch_size_(batch_size) {
  {
    auto in_main = ir_.main_graph().scope();
    images_ = pxl::h2d_stream({batch_size, image_size}, pxl::float32, "images");
    predictions_ = pxl::d2h_stream({batch_size}, pxl::int32, "predictions");
    auto x = net_input(*images_, dtype);
    auto [factories, fwd] = Net{}.create_graph(x);
    variables_ = factories.init();
    auto logits = fwd.bind(variables_).call({x}, {}, {}, inlined)[0];
    pxl::ops::host_store(*predictions_, pxl::ops::argmax(logits, 1));
  }
  session_.emplace(ir_, "ipu_model", session_options(workers));
  attachment_.emplace(session_->attach());
}

void TestProgram::copy_weights(const std::map<std::string, pxl::HostTensor>& weights) {
  std::map<Tensor, pxl::HostTensor> data;
  for (const auto& [name, t] : variables_.items())
    data.emplace(t, weights.at(name));
  session_->write_variables_data(data);
}

void TestProgram::copy_weights_from(TrainingProgram& training) {
  copy_weights(training.weights().to_dict());
}

double TestProgram::accuracy(const pxl::addons::data::Dataset& data) {
  namespace data_ns = pxl::addons::data;
  std::int64_t correct = 0, seen = 0;
  pxl::HostTensor padded({batch_size_, image_size}, pxl::float32);
  for (auto& batch : data_ns::batches(data, {.batch_size = batch_size_,
                                            .shuffle = false,
                                            .drop_remainder = false,
                                            .flatten = true})) {
    const std::int64_t rows = batch.labels.shape()[0];
    const pxl::HostTensor* images = &batch.images;
    if (rows < batch_size_) { // the last batch: pad with zeros, ignore the padding's results
      std::ranges::fill(padded.data<float>(), 0.0f);
      std::ranges::copy(batch.images.data<float>(), padded.data<float>().begin());
      images = &padded;
    }
    auto out = session_->run({{*images_, *images}});
    const auto predicted = out.at(*predictions_).data<std::int32_t>();
    const auto labels = batch.labels.data<std::int32_t>();
    for (std::int64_t i = 0; i < rows; ++i)
      correct += predicted[static_cast<std::size_t>(i)] == labels[static_cast<std::size_t>(i)];
    seen += rows;
  }
  return seen == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(seen);
}

} // namespace mnist
