// The normalisations: validate operands and build the op; the numerics live in the kernels.
#include "pxl/ops/norm.hpp"
#include "ir/op_builder.hpp"

#include <string>

namespace pxl::ops {

namespace {

/// `t` float, (N, C, spatial...) with 0 to 3 spatial axes; epsilon >= 0.
void check_input(const std::string& op, const Tensor& t, double epsilon) {
  detail::check_float(op, t);
  if (t.rank() < 2 || t.rank() > 5)
    throw ShapeError(op +
                     ": the input must be (N, C, spatial...) with 0 to 3 spatial axes (rank "
                     "2 to 5), got " +
                     to_string(t));
  if (!(epsilon >= 0.0))
    throw ValueError(op + ": epsilon must be >= 0, got " + std::to_string(epsilon));
}

/// `p`, the operand named `what`, of `t`'s dtype and shape (C).
void check_per_channel(const std::string& op, const Tensor& t, const Tensor& p, const char* what) {
  if (p.dtype() != t.dtype())
    throw DTypeError(op + ": " + what + " must have the input's dtype " +
                     std::string(name(t.dtype())) + ", got " + to_string(p) + " for the input " +
                     to_string(t) + "; use ops::cast to convert one");
  const Shape expected{t.shape()[1]};
  if (p.shape() != expected)
    throw ShapeError(op + ": " + what + " must have shape " + to_string(expected) +
                     " (the channels of the input " + to_string(t) + "), got " + to_string(p));
}

void check_gradient(const std::string& op, const Tensor& t, const Tensor& grad) {
  detail::check_same_dtype(op, t, grad);
  if (grad.shape() != t.shape())
    throw ShapeError(op + ": the gradient " + to_string(grad) +
                     " must have the shape of the input " + to_string(t));
}

void check_groups(const std::string& op, const Tensor& t, std::int64_t num_groups) {
  const std::int64_t channels = t.shape()[1];
  if (num_groups < 1 || channels % num_groups != 0)
    throw ShapeError(op + ": num_groups must be at least 1 and divide the input's " +
                     std::to_string(channels) + " channels, got num_groups " +
                     std::to_string(num_groups) + " for the input " + to_string(t));
}

TensorSpec per_channel_spec(const Tensor& t) { return {Shape{t.shape()[1]}, t.dtype()}; }

} // namespace

Tensor batch_norm_inference(const Tensor& t, const Tensor& scale, const Tensor& bias,
                            const Tensor& mean, const Tensor& var, double epsilon) {
  const std::string op = "BatchNormInference";
  check_input(op, t, epsilon);
  check_per_channel(op, t, scale, "scale");
  check_per_channel(op, t, bias, "bias");
  check_per_channel(op, t, mean, "mean");
  check_per_channel(op, t, var, "var");
  return detail::add_op1(OpKind::BatchNormInference, {t, scale, bias, mean, var}, t.spec(),
                         NormAttrs{.epsilon = epsilon, .global_stats = true});
}

BatchNormTrainingResult batch_norm_training(const Tensor& t, const Tensor& scale,
                                            const Tensor& bias, double epsilon) {
  const std::string op = "BatchNormTraining";
  check_input(op, t, epsilon);
  check_per_channel(op, t, scale, "scale");
  check_per_channel(op, t, bias, "bias");
  const Tensor in[] = {t, scale, bias};
  const auto outs = detail::add_op(OpKind::BatchNormTraining, in,
                                   {t.spec(), per_channel_spec(t), per_channel_spec(t)},
                                   NormAttrs{.epsilon = epsilon});
  return {outs[0], outs[1], outs[2]};
}

BatchNormGradResult batch_norm_grad(const Tensor& t, const Tensor& scale, const Tensor& mean,
                                    const Tensor& var, const Tensor& grad, double epsilon,
                                    bool global_stats) {
  const std::string op = "BatchNormGrad";
  check_input(op, t, epsilon);
  check_per_channel(op, t, scale, "scale");
  check_per_channel(op, t, mean, "mean");
  check_per_channel(op, t, var, "var");
  check_gradient(op, t, grad);
  const Tensor in[] = {t, scale, mean, var, grad};
  const auto outs = detail::add_op(OpKind::BatchNormGrad, in,
                                   {t.spec(), per_channel_spec(t), per_channel_spec(t)},
                                   NormAttrs{.epsilon = epsilon, .global_stats = global_stats});
  return {outs[0], outs[1], outs[2]};
}

Tensor group_norm(const Tensor& t, const Tensor& weight, const Tensor& bias,
                  std::int64_t num_groups, double eps) {
  const std::string op = "GroupNormalization";
  check_input(op, t, eps);
  check_per_channel(op, t, weight, "weight");
  check_per_channel(op, t, bias, "bias");
  check_groups(op, t, num_groups);
  return detail::add_op1(OpKind::GroupNorm, {t, weight, bias}, t.spec(),
                         NormAttrs{.epsilon = eps, .num_groups = num_groups});
}

std::pair<Tensor, Tensor> group_norm_grad(const Tensor& t, const Tensor& weight, const Tensor& grad,
                                          std::int64_t num_groups, double eps) {
  const std::string op = "GroupNormalizationGrad";
  check_input(op, t, eps);
  check_per_channel(op, t, weight, "weight");
  check_groups(op, t, num_groups);
  check_gradient(op, t, grad);
  const Tensor in[] = {t, weight, grad};
  const auto outs = detail::add_op(OpKind::GroupNormGrad, in, {t.spec(), t.spec()},
                                   NormAttrs{.epsilon = eps, .num_groups = num_groups});
  return {outs[0], outs[1]};
}

} // namespace pxl::ops
