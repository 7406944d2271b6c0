// Batch normalisation layers: one computation, PyTorch's and Keras's conventions around it.
//
// The training form is composed of core ops (means, a replicated all-reduce when synchronized,
// element-wise arithmetic), so autodiff differentiates it through the batch statistics, and
// a synchronized layer reduces over every replica's batch with the same ops.
#include "pxl/addons/layers/batch_norm.hpp"

#include "pxl/addons/module/training_mode.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/collectives.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/norm.hpp"
#include "pxl/ops/reduce.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/ops/var_updates.hpp"

#include <optional>
#include <sstream>
#include <string>

namespace pxl::addons {

namespace {

/// What the two layers differ in: names, conventions and their initialisers.
struct Normalisation {
  const char* layer;
  std::int64_t axis; ///< the features axis, already normalised
  double eps;
  double keep; ///< the running statistics' weight in their update
  bool bessel; ///< whether the running variance takes the unbiased batch variance
  bool synchronized;
  std::int64_t group_size; ///< replicas per group of a synchronized layer; 0: all
  std::optional<bool> training;
  std::optional<initializers::KerasInitializer> gamma, beta;
  initializers::KerasInitializer moving_mean, moving_variance;
};

/// The replica group size is a count of consecutive replicas, and groups synchronized layers.
void check_group_size(const char* layer, std::int64_t group_size, bool synchronized) {
  if (group_size < 0)
    throw ValueError(std::string(layer) + ": replica_group_size must be at least 0, got " +
                     std::to_string(group_size));
  if (group_size > 0 && !synchronized)
    throw ValueError(std::string(layer) + ": replica_group_size " + std::to_string(group_size) +
                     " groups the replicas whose statistics a synchronized layer shares; set "
                     "synchronized too");
}

void check_range(const char* layer, const char* what, double value, double low,
                 std::optional<double> high) {
  if (value >= low && (!high || value <= *high))
    return;
  std::ostringstream os;
  os << layer << ": " << what << " must be ";
  if (high)
    os << "in [" << low << ", " << *high << "]";
  else
    os << "at least " << low;
  os << ", got " << value;
  throw ValueError(os.str());
}

Tensor normalise(const Tensor& x, const Normalisation& n) {
  if (!is_floating_point(x.dtype()))
    throw DTypeError(std::string(n.layer) + ": expected a float32 or float16 input, got " +
                     std::string(pxl::name(x.dtype())));
  const std::optional<bool> mode = n.training ? n.training : training_mode();
  if (!mode)
    throw ValueError(std::string(n.layer) +
                     ": build it in its training or its inference form: pass `training`, or "
                     "trace it inside addons::TrainingMode(true) or TrainingMode(false) (Trainer "
                     "does)");
  const std::int64_t rank = x.rank();
  const std::int64_t channels = x.shape()[static_cast<std::size_t>(n.axis)];
  std::vector<std::int64_t> axes;
  Shape per_channel(static_cast<std::size_t>(rank), 1);
  per_channel[static_cast<std::size_t>(n.axis)] = channels;
  std::int64_t count = 1;
  for (std::int64_t a = 0; a < rank; ++a)
    if (a != n.axis) {
      axes.push_back(a);
      count *= x.shape()[static_cast<std::size_t>(a)];
    }

  // PyTorch's order: weight, bias, running_mean, running_var.
  // (C) in float32.
  auto parameter = [&](const char* name, const initializers::KerasInitializer& init) {
    const Tensor p = add_variable_input(name, init({channels}), x.dtype());
    return p.dtype() == float32 ? p : pxl::ops::cast(p, float32);
  };
  std::optional<Tensor> gamma, beta;
  if (n.gamma)
    gamma = parameter("weight", *n.gamma);
  if (n.beta)
    beta = parameter("bias", *n.beta);
  const Tensor running_mean =
      add_state_variable_input("running_mean", n.moving_mean({channels}), float32);
  const Tensor running_var =
      add_state_variable_input("running_var", n.moving_variance({channels}), float32);
  // The replicas whose batches the statistics span, and their group for the all-reduces.
  const Ir& ir = current_graph().ir();
  const std::int64_t replicas = ir.replication_factor();
  if (n.group_size > 0 && replicas % n.group_size != 0)
    throw ValueError(std::string(n.layer) + ": replica_group_size " + std::to_string(n.group_size) +
                     " must divide the " + std::to_string(replicas) + " replicas");
  const std::int64_t spanned = !n.synchronized ? 1 : n.group_size > 0 ? n.group_size : replicas;
  const std::optional<ReplicaGrouping> group =
      n.group_size > 0 ? std::optional(ir.replica_grouping(1, n.group_size)) : std::nullopt;
  if (*mode) {
    count *= spanned;
    if (n.bessel && count < 2)
      throw ValueError(std::string(n.layer) +
                       ": training needs more than 1 value per channel to estimate a "
                       "variance, got " +
                       std::to_string(count) + " (input shape " + pxl::to_string(x.shape()) + ")");
  }
  const double bessel =
      n.bessel && count > 1 ? static_cast<double>(count) / static_cast<double>(count - 1) : 1;
  auto update = [&](const Tensor& mean, const Tensor& var) {
    pxl::ops::var_updates::accumulate_moving_average_(
        running_mean, pxl::ops::reshape(pxl::ops::detach(mean), {channels}), n.keep);
    pxl::ops::var_updates::accumulate_moving_average_(
        running_var, pxl::ops::reshape(pxl::ops::detach(var * bessel), {channels}), n.keep);
  };

  // float32 over channels first: the fused ops (oneDNN's batch normalisation), unless the
  // statistics span several replicas.
  if (x.dtype() == float32 && n.axis == 1 && rank <= 5 && !(*mode && spanned > 1)) {
    const Tensor scale = gamma ? *gamma : constant(HostTensor::full({channels}, float32, 1.0));
    const Tensor shift = beta ? *beta : constant(HostTensor::full({channels}, float32, 0.0));
    if (!*mode)
      return pxl::ops::batch_norm_inference(x, scale, shift, running_mean, running_var, n.eps);
    const pxl::ops::BatchNormTrainingResult r =
        pxl::ops::batch_norm_training(x, scale, shift, n.eps);
    update(r.mean, r.var);
    return r.output;
  }

  const Tensor xf = x.dtype() == float32 ? x : pxl::ops::cast(x, float32);
  Tensor centered, var;
  if (*mode) {
    Tensor mean = pxl::ops::mean(xf, axes, true);
    if (n.synchronized)
      mean = pxl::ops::collectives::replicated_all_reduce(mean, CollectiveOperator::mean, group);
    centered = xf - mean;
    var = pxl::ops::mean(centered * centered, axes, true);
    if (n.synchronized)
      var = pxl::ops::collectives::replicated_all_reduce(var, CollectiveOperator::mean, group);
    update(mean, var);
  } else {
    centered = xf - pxl::ops::reshape(running_mean, per_channel);
    var = pxl::ops::reshape(running_var, per_channel);
  }
  Tensor y = centered / pxl::ops::sqrt(var + n.eps);
  if (gamma)
    y = y * pxl::ops::reshape(*gamma, per_channel);
  if (beta)
    y = y + pxl::ops::reshape(*beta, per_channel);
  return x.dtype() == float32 ? y : pxl::ops::cast(y, x.dtype());
}

} // namespace

BatchNorm2D::BatchNorm2D(BatchNorm2DOptions layer_options) : options(layer_options) {
  check_range("BatchNorm2D", "eps", options.eps, 0.0, std::nullopt);
  check_range("BatchNorm2D", "momentum", options.momentum, 0.0, 1.0);
  check_group_size("BatchNorm2D", options.replica_group_size, options.synchronized);
}

Tensor BatchNorm2D::build(const Tensor& x) {
  if (x.rank() != 4)
    throw ShapeError("BatchNorm2D: expected an input of rank 4 (N, C, H, W), got shape " +
                     pxl::to_string(x.shape()));
  return normalise(x, {.layer = "BatchNorm2D",
                       .axis = 1,
                       .eps = options.eps,
                       .keep = 1.0 - options.momentum,
                       .bessel = true,
                       .synchronized = options.synchronized,
                       .group_size = options.replica_group_size,
                       .training = options.training,
                       .gamma = options.affine ? std::optional(initializers::ones()) : std::nullopt,
                       .beta = options.affine ? std::optional(initializers::zeros()) : std::nullopt,
                       .moving_mean = initializers::zeros(),
                       .moving_variance = initializers::ones()});
}

BatchNormalization::BatchNormalization(BatchNormalizationOptions layer_options)
    : options(std::move(layer_options)) {
  check_range("BatchNormalization", "epsilon", options.epsilon, 0.0, std::nullopt);
  check_range("BatchNormalization", "momentum", options.momentum, 0.0, 1.0);
  check_group_size("BatchNormalization", options.replica_group_size, options.synchronized);
}

Tensor BatchNormalization::build(const Tensor& x) {
  if (x.rank() < 2)
    throw ShapeError("BatchNormalization: expected an input of rank >= 2 (batch, ..., features), "
                     "got shape " +
                     pxl::to_string(x.shape()));
  const std::int64_t axis = options.axis < 0 ? options.axis + x.rank() : options.axis;
  if (axis < 0 || axis >= x.rank())
    throw ShapeError("BatchNormalization: axis " + std::to_string(options.axis) +
                     " is out of range for an input of shape " + pxl::to_string(x.shape()));
  return normalise(
      x, {.layer = "BatchNormalization",
          .axis = axis,
          .eps = options.epsilon,
          .keep = options.momentum,
          .bessel = false,
          .synchronized = options.synchronized,
          .group_size = options.replica_group_size,
          .training = options.training,
          .gamma = options.scale ? std::optional(options.gamma_initializer) : std::nullopt,
          .beta = options.center ? std::optional(options.beta_initializer) : std::nullopt,
          .moving_mean = options.moving_mean_initializer,
          .moving_variance = options.moving_variance_initializer});
}

} // namespace pxl::addons
