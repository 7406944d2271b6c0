// Neural-network ops: validate operands and build the op; the numerics live in the kernels.
#include "pxl/ops/nn.hpp"
#include "ir/op_builder.hpp"

namespace pxl::ops {

namespace {

Tensor along_axis(OpKind kind, const Tensor& t, std::int64_t axis) {
  const auto op = op_type_name(kind);
  detail::check_float(op, t);
  const auto a = normalize_axis(axis, t.rank(), op);
  return detail::add_op1(kind, {t}, t.spec(), AxisAttrs{a, false});
}

/// probs [..., C] float and labels int32 of shape probs.shape[:-1].
void check_nll_operands(std::string_view op, const Tensor& probs, const Tensor& labels) {
  detail::check_float(op, probs);
  detail::check_dtype(op, labels, int32, "the labels");
  if (probs.rank() < 1)
    throw ShapeError(std::string(op) + ": probs must have a class axis (rank >= 1), got " +
                     to_string(probs));
  Shape expected = probs.shape();
  expected.pop_back();
  if (labels.shape() != expected)
    throw ShapeError(std::string(op) + ": labels must have shape " + to_string(expected) +
                     " (probs' shape without its class axis), got labels " + to_string(labels) +
                     " for probs " + to_string(probs));
}

/// A float `t` of rank >= 1, `weight` of its dtype shaped like its last axis, eps >= 0.
void check_layer_norm_operands(std::string_view op, const Tensor& t, const Tensor& weight,
                               double eps) {
  detail::check_float(op, t);
  detail::check_same_dtype(op, t, weight);
  if (t.rank() < 1)
    throw ShapeError(std::string(op) +
                     ": expected a tensor of rank >= 1 to normalise over its last axis, got " +
                     to_string(t));
  const Shape expected{t.shape().back()};
  if (weight.shape() != expected)
    throw ShapeError(std::string(op) + ": weight must have shape " + to_string(expected) +
                     " (the last axis of " + to_string(t) + "), got " + to_string(weight));
  if (!(eps >= 0.0))
    throw ValueError(std::string(op) + ": eps must be >= 0, got " + std::to_string(eps));
}

Shape loss_shape(Reduction r, const Tensor& labels) {
  return r == Reduction::none ? labels.shape() : Shape{};
}

} // namespace

Tensor softmax(const Tensor& t, std::int64_t axis) { return along_axis(OpKind::Softmax, t, axis); }
Tensor log_softmax(const Tensor& t, std::int64_t axis) {
  return along_axis(OpKind::LogSoftmax, t, axis);
}

Tensor layer_norm(const Tensor& t, const Tensor& weight, const Tensor& bias, double eps) {
  check_layer_norm_operands("LayerNorm", t, weight, eps);
  detail::check_same_dtype("LayerNorm", t, bias);
  if (bias.shape() != weight.shape())
    throw ShapeError("LayerNorm: bias must have shape " + to_string(weight.shape()) +
                     " (the last axis of " + to_string(t) + "), got " + to_string(bias));
  return detail::add_op1(OpKind::LayerNorm, {t, weight, bias}, t.spec(), ScalarAttrs{eps, 0.0});
}

Tensor softmax_grad(const Tensor& probs, const Tensor& grad, std::int64_t axis) {
  detail::check_float("SoftmaxGrad", probs);
  detail::check_same_dtype("SoftmaxGrad", probs, grad);
  if (grad.shape() != probs.shape())
    throw ShapeError("SoftmaxGrad: the gradient " + to_string(grad) +
                     " must have the shape of the probabilities " + to_string(probs));
  const auto a = normalize_axis(axis, probs.rank(), "SoftmaxGrad");
  return detail::add_op1(OpKind::SoftmaxGrad, {probs, grad}, probs.spec(), AxisAttrs{a, false});
}

std::pair<Tensor, Tensor> layer_norm_grad(const Tensor& t, const Tensor& weight, const Tensor& grad,
                                          double eps) {
  check_layer_norm_operands("LayerNormGrad", t, weight, eps);
  detail::check_same_dtype("LayerNormGrad", t, grad);
  if (grad.shape() != t.shape())
    throw ShapeError("LayerNormGrad: the gradient " + to_string(grad) +
                     " must have the shape of the input " + to_string(t));
  const Tensor in[] = {t, weight, grad};
  auto outs =
      detail::add_op(OpKind::LayerNormGrad, in, {t.spec(), t.spec()}, ScalarAttrs{eps, 0.0});
  return {outs[0], outs[1]};
}

namespace {
/// Dropout's operands: a float tensor, a uint32[2] seed and a probability in [0, 1).
void check_dropout(std::string_view op, const Tensor& t, const Tensor& seed, double p,
                   std::string_view p_name) {
  detail::check_float(op, t);
  detail::check_dtype(op, seed, uint32, "the seed");
  if (seed.shape() != Shape{2})
    throw ShapeError(std::string(op) + ": the seed must have shape (2,), got " + to_string(seed));
  if (!(p >= 0.0 && p < 1.0))
    throw ValueError(std::string(op) + ": the drop probability " + std::string(p_name) +
                     " must satisfy 0 <= " + std::string(p_name) + " < 1, got " +
                     std::to_string(p));
}
} // namespace

Tensor dropout(const Tensor& t, const Tensor& seed, double p) {
  check_dropout("Dropout", t, seed, p, "p");
  return detail::add_op1(OpKind::Dropout, {t, seed}, t.spec(), ScalarAttrs{p, 0.0});
}

Tensor shaped_dropout(const Tensor& t, const Tensor& seed_tensor, Shape shape, double ratio) {
  check_dropout("ShapedDropout", t, seed_tensor, ratio, "ratio");
  bool fits = shape.size() <= t.shape().size();
  for (std::size_t d = 0; fits && d < shape.size(); ++d) {
    const std::int64_t e = shape[shape.size() - 1 - d];
    fits = e == 1 || e == t.shape()[t.shape().size() - 1 - d];
  }
  if (!fits)
    throw ShapeError("ShapedDropout: the mask shape " + to_string(shape) +
                     " does not broadcast to " + to_string(t));
  return detail::add_op1(OpKind::ShapedDropout, {t, seed_tensor}, t.spec(),
                         ShapedDropoutAttrs{ratio, std::move(shape)});
}

Tensor nll_loss(const Tensor& probs, const Tensor& labels, std::optional<std::int32_t> ignore_index,
                Reduction reduction, bool log_prob) {
  check_nll_operands("Nll", probs, labels);
  return detail::add_op1(OpKind::NllLoss, {probs, labels},
                         TensorSpec{loss_shape(reduction, labels), probs.dtype()},
                         NllAttrs{reduction, ignore_index, log_prob, 1.0});
}

std::pair<Tensor, Tensor> nll_loss_with_softmax_grad(const Tensor& probs, const Tensor& labels,
                                                     double loss_grad,
                                                     std::optional<std::int32_t> ignore_index,
                                                     Reduction reduction) {
  check_nll_operands("NllWithSoftmaxGrad", probs, labels);
  if (reduction == Reduction::none)
    throw ValueError("NllWithSoftmaxGrad: reduction none is not supported (the gradient needs "
                     "one loss); use Reduction::mean or Reduction::sum, or ops::nll_loss");
  const Tensor in[] = {probs, labels};
  auto outs = detail::add_op(OpKind::NllLossWithSoftmaxGrad, in,
                             {TensorSpec{Shape{}, probs.dtype()}, probs.spec()},
                             NllAttrs{reduction, ignore_index, false, loss_grad});
  return {outs[0], outs[1]};
}

} // namespace pxl::ops
