// Cross-entropy losses on logits: the loss alone (differentiable) and fused with its gradient.
#pragma once

#include "pxl/core/dtype.hpp"
#include "pxl/core/error.hpp"
#include "pxl/core/shape.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/tensor.hpp"
#include "pxl/ops/nn.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

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

} // namespace cross_entropy_detail

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

} // namespace pxl::addons::ops
