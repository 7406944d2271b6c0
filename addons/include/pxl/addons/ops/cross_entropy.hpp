// Cross-entropy losses: on logits, alone (differentiable) and fused with their gradient, and
// Keras's sparse_categorical_crossentropy with from_logits.
#pragma once

#include "pxl/core/dtype.hpp"
#include "pxl/core/error.hpp"
#include "pxl/core/shape.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/op.hpp"
#include "pxl/ir/tensor.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/nn.hpp"
#include "pxl/ops/reduce.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pxl::addons::ops {

namespace cross_entropy_detail {

/// Checks the operands both losses share: float logits [..., C] with C >= 1 and int32 labels
/// shaped like the logits without their class axis.
inline void check_operands(std::string_view fn, const Tensor& logits, const Tensor& labels) {
  const std::string f(fn);
  if (!is_floating_point(logits.dtype()))
    throw DTypeError(f + ": logits must be float32 or float16, got " + to_string(logits));
  if (logits.rank() < 1 || logits.shape().back() < 1)
    throw ShapeError(f + ": logits must have a class axis of size >= 1 as their last axis " +
                     "(shape [N, C] or [..., C]), got " + to_string(logits));
  if (labels.dtype() != int32)
    throw DTypeError(f + ": labels must be int32 class indices, got " + to_string(labels) +
                     "; cast them with pxl::ops::cast(labels, pxl::int32)");
  Shape expected = logits.shape();
  expected.pop_back();
  if (labels.shape() != expected)
    throw ShapeError(f + ": labels must have shape " + to_string(expected) +
                     " (the logits' shape without the class axis), got labels " +
                     to_string(labels) + " for logits " + to_string(logits));
}

/// The input of the Softmax over the last axis that produced `t`, if one did (Keras looks
/// for the same op to recover the logits of a softmax output).
inline std::optional<Tensor> softmax_logits(const Tensor& t) {
  const std::optional<Op> op = t.producer();
  if (!op || op->kind() != OpKind::Softmax)
    return std::nullopt;
  const std::int64_t axis = op->attrs<OpKind::Softmax>().axis;
  if (axis != -1 && axis != t.rank() - 1)
    return std::nullopt;
  return op->input(0);
}

/// ValueError for a softmax output passed as logits.
[[noreturn]] inline void softmax_as_logits(std::string_view fn, const Tensor& y_pred) {
  throw ValueError(std::string(fn) + ": from_logits is true, but the predictions " +
                   to_string(y_pred) + " are the output of " + y_pred.producer()->debug_name() +
                   ", probabilities rather than logits (a second softmax would flatten them and "
                   "train poorly); pass from_logits = false, and the loss reads the softmax's "
                   "input (the logits) as Keras does, or drop the softmax from the model");
}

} // namespace cross_entropy_detail

/// Keras's fuzz factor (`keras.backend.epsilon()`): probabilities are clipped to
/// [keras_epsilon, 1 − keras_epsilon] before their logarithm.
inline constexpr double keras_epsilon = 1e-7;

/// The cross-entropy loss of `logits` ([..., C], float32 or float16, unnormalised) for class
/// indices `labels` (int32, shaped `logits.shape[:-1]`): -log softmax(logits)[label] per
/// sample, averaged over the samples whose label is not `ignore_index` (Reduction::mean; 0 when
/// every sample is ignored), summed (Reduction::sum) or left per sample (Reduction::none, 0 for
/// ignored samples). A label outside [0, C) contributes like an ignored one. Built from
/// log_softmax and nll_loss on log-probabilities, so autodiff differentiates it and large
/// logits do not overflow. Throws DTypeError/ShapeError naming the operands on bad input.
///
///     Tensor loss = pxl::addons::ops::cross_entropy(logits, labels);
inline Tensor cross_entropy(const Tensor& logits, const Tensor& labels,
                            std::optional<std::int32_t> ignore_index = std::nullopt,
                            Reduction reduction = Reduction::mean) {
  cross_entropy_detail::check_operands("cross_entropy", logits, labels);
  return pxl::ops::nll_loss(pxl::ops::log_softmax(logits, -1), labels, ignore_index, reduction,
                            /*log_prob=*/true);
}

/// The cross-entropy loss of `cross_entropy` (unscaled) together with its gradient with respect
/// to the logits, computed directly rather than by autodiff, as popxl.addons does:
/// `dlogits = (softmax(logits) - onehot(labels)) * loss_scaling / count` (without the division
/// for Reduction::sum), where `count` is the number of samples not ignored; rows of ignored
/// samples are zero. Computed in the logits' dtype (float16 logits give a float16 loss and
/// gradient, with float32 arithmetic inside each op); `loss_scaling` guards float16 gradients
/// against underflow. Reduction::none is rejected (ValueError): the gradient needs one loss.
///
///     auto [loss, dlogits] = pxl::addons::ops::cross_entropy_with_grad(logits, labels, 128.0);
inline std::pair<Tensor, Tensor>
cross_entropy_with_grad(const Tensor& logits, const Tensor& labels, double loss_scaling = 1.0,
                        std::optional<std::int32_t> ignore_index = std::nullopt,
                        Reduction reduction = Reduction::mean) {
  cross_entropy_detail::check_operands("cross_entropy_with_grad", logits, labels);
  if (reduction == Reduction::none)
    throw ValueError("cross_entropy_with_grad: Reduction::none is not supported (the gradient "
                     "is of one loss); use Reduction::mean or Reduction::sum, or cross_entropy "
                     "for per-sample losses");
  return pxl::ops::nll_loss_with_softmax_grad(pxl::ops::softmax(logits, -1), labels, loss_scaling,
                                              ignore_index, reduction);
}

/// Keras's `sparse_categorical_crossentropy(labels, y_pred, from_logits)` (argument order as
/// cross_entropy's), differentiable by autodiff. With `from_logits`, `y_pred` are logits and
/// this is cross_entropy. Without (Keras's default), `y_pred` are probabilities [..., C]: when
/// they are the output of a Softmax over the last axis, the loss is computed from that
/// softmax's input, the logits, which is exact and stable (a probability that underflowed to
/// 0 would otherwise cost -log ε); otherwise, as Keras does, from the probabilities clipped to
/// [ε, 1 − ε] (ε = keras_epsilon = 1e-7) and renormalised:
///
///     p = clip(y_pred, ε, 1 − ε);   loss = −log(p[label] / Σ_c p[c])
///
/// whose gradient is zero where y_pred was clipped. Reduced as cross_entropy. ValueError when
/// `from_logits` is true but `y_pred` is the output of a Softmax: where Keras warns, pxl
/// refuses, since a second softmax trains poorly without any other sign (no model wants it);
/// DTypeError/ShapeError as cross_entropy.
///
///     Tensor probs = pxl::ops::softmax(logits);
///     Tensor loss = pxl::addons::ops::sparse_categorical_crossentropy(probs, labels);
inline Tensor sparse_categorical_crossentropy(const Tensor& y_pred, const Tensor& labels,
                                              bool from_logits = false,
                                              Reduction reduction = Reduction::mean) {
  constexpr std::string_view fn = "sparse_categorical_crossentropy";
  cross_entropy_detail::check_operands(fn, y_pred, labels);
  const std::optional<Tensor> logits = cross_entropy_detail::softmax_logits(y_pred);
  if (from_logits && logits)
    cross_entropy_detail::softmax_as_logits(fn, y_pred);
  if (from_logits || logits)
    return cross_entropy(logits.value_or(y_pred), labels, std::nullopt, reduction);
  const Tensor clipped = pxl::ops::clip(y_pred, keras_epsilon, 1.0 - keras_epsilon);
  return cross_entropy(pxl::ops::log(clipped), labels, std::nullopt, reduction);
}

/// The loss of sparse_categorical_crossentropy on probabilities (not the output of a Softmax:
/// pass those logits to cross_entropy_with_grad) with its gradient with respect to `probs`,
/// times `loss_scaling`, in closed form: for p = clip(probs, ε, 1 − ε) and q = p / Σ_c p[c],
/// d loss / d probs = (q − onehot(label)) / p · loss_scaling / count where probs lies within
/// [ε, 1 − ε], else 0 (count: the samples; Reduction::mean). Errors as cross_entropy_with_grad.
inline std::pair<Tensor, Tensor>
sparse_categorical_crossentropy_with_grad(const Tensor& probs, const Tensor& labels,
                                          double loss_scaling = 1.0) {
  cross_entropy_detail::check_operands("sparse_categorical_crossentropy_with_grad", probs, labels);
  const Tensor p = pxl::ops::clip(probs, keras_epsilon, 1.0 - keras_epsilon);
  const Tensor q = p / pxl::ops::sum(p, std::vector<std::int64_t>{-1}, /*keepdims=*/true);
  // (q − onehot)·scale/count: the gradient with respect to log p (the logits of q).
  auto [loss, dlog] = pxl::ops::nll_loss_with_softmax_grad(q, labels, loss_scaling);
  const DType dtype = probs.dtype();
  const Tensor inside =
      pxl::ops::logical_and(pxl::ops::greater_equal(probs, pxl::constant(keras_epsilon, dtype)),
                            pxl::ops::less_equal(probs, pxl::constant(1.0 - keras_epsilon, dtype)));
  return {loss, pxl::ops::where(inside, dlog / p, pxl::constant(0.0, dtype))};
}

} // namespace pxl::addons::ops
