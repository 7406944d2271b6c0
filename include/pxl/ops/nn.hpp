// Neural-network ops: softmax family, layer norm, dropout, negative log-likelihood.
#pragma once

#include "pxl/ir/attrs.hpp"
#include "pxl/ir/tensor.hpp"

#include <optional>
#include <utility>

namespace pxl::ops {

Tensor softmax(const Tensor& t, std::int64_t axis = -1);
Tensor log_softmax(const Tensor& t, std::int64_t axis = -1);
/// Normalises over the last axis, then scales by `weight` and shifts by `bias` (both shaped
/// like the last axis).
Tensor layer_norm(const Tensor& t, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
/// Softmax's gradient in one pass (PopXL's SoftmaxGrad, as autodiff emits it): for `probs`
/// = softmax(x, axis) and the gradient `grad` of its output, the gradient of x,
/// probs·(grad − Σ_axis grad·probs). Float tensors of one shape and dtype.
Tensor softmax_grad(const Tensor& probs, const Tensor& grad, std::int64_t axis = -1);
/// layer_norm's gradient over its last axis in one pass, as autodiff emits it, for the
/// gradient `grad` of its output: (the gradient of t, grad·x̂), x̂ the normalised t; the sum of
/// grad·x̂ over the leading axes is the weight's gradient. Operands as layer_norm's, `grad`
/// shaped like `t`.
std::pair<Tensor, Tensor> layer_norm_grad(const Tensor& t, const Tensor& weight, const Tensor& grad,
                                          double eps = 1e-5);
/// Zeroes each element with probability `p` and scales the rest by 1/(1-p). The mask is a
/// function of `seed` (uint32[2]) and the element index only.
Tensor dropout(const Tensor& t, const Tensor& seed, double p);
/// PopXL's shaped_dropout: dropout with one mask of `shape`, broadcast to `t` (NumPy rules), so
/// that the elements it broadcasts over are kept or dropped together. Mask element m is kept
/// when the uniform draw of `seed_tensor` (uint32[2]) and m's row-major index is at least
/// `ratio` (as dropout draws: with `shape` t's shape it is dropout); kept elements are scaled
/// by 1/(1-ratio). 0 <= ratio < 1. Gradient: the same mask (and scale) applied to the output
/// gradient.
Tensor shaped_dropout(const Tensor& t, const Tensor& seed_tensor, Shape shape, double ratio);
/// Negative log-likelihood of `labels` (int32, shape `probs.shape[:-1]`) under `probs`
/// (probabilities, or log-probabilities when `log_prob`). Samples labelled `ignore_index`
/// add nothing and are left out of the mean; as in PopART, a label outside [0, classes)
/// adds nothing (no loss, no gradient) but still counts in the mean's divisor.
Tensor nll_loss(const Tensor& probs, const Tensor& labels,
                std::optional<std::int32_t> ignore_index = std::nullopt,
                Reduction reduction = Reduction::mean, bool log_prob = false);
/// The loss of `nll_loss` and its gradient with respect to the logits that `probs` (softmax
/// outputs) came from, scaled by `loss_grad`: (loss, dlogits).
std::pair<Tensor, Tensor>
nll_loss_with_softmax_grad(const Tensor& probs, const Tensor& labels, double loss_grad = 1.0,
                           std::optional<std::int32_t> ignore_index = std::nullopt,
                           Reduction reduction = Reduction::mean);

} // namespace pxl::ops
