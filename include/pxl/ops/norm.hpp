// Normalisation over channels: batch norm (inference and training forms) and group norm.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <cstdint>
#include <utility>

namespace pxl::ops {

/// PopXL `batch_norm_inference`: `t` is (N, C, spatial...) with 0 to 3 spatial axes; `scale`,
/// `bias`, `mean` and `var` are (C). Per channel c,
/// y = (t − mean[c]) / sqrt(var[c] + epsilon) · scale[c] + bias[c], with the statistics as given
/// (the running ones of training). float32 or float16, every operand alike; float16 computes in
/// float32 and rounds once. PopXL's `momentum` is not an argument: inference never uses it.
Tensor batch_norm_inference(const Tensor& t, const Tensor& scale, const Tensor& bias,
                            const Tensor& mean, const Tensor& var, double epsilon = 1e-5);

/// What `batch_norm_training` returns: the normalised output (t's shape) and the batch's
/// statistics per channel, (C) each.
struct BatchNormTrainingResult {
  Tensor output;
  Tensor mean; ///< the mean over N and the spatial axes
  Tensor var;  ///< the biased (population) variance over the same: Σ (t − mean)² / M
};

/// Batch normalisation in training mode (ONNX BatchNormalization with training_mode, whose
/// statistics are the batch's): operands as `batch_norm_inference` without the statistics,
/// which are computed over N and the spatial axes, M = N · spatial elements per channel, and
/// returned. The output normalises with the biased variance. The returned variance is the
/// biased one too, as ONNX defines its running variance (PyTorch instead keeps the unbiased
/// Σ (t − mean)² / (M − 1) in its running statistics; multiply by M / (M − 1) for that).
/// A caller keeps running statistics with ONNX's momentum (PopXL's default 0.9):
///
///     running_mean = momentum · running_mean + (1 − momentum) · result.mean
///     running_var  = momentum · running_var  + (1 − momentum) · result.var
///
/// (in place: `var_updates::accumulate_moving_average_(running_mean, result.mean, momentum)`)
/// and evaluates with `batch_norm_inference(t, scale, bias, running_mean, running_var)`.
/// Differentiable in all three operands, through the batch statistics, and with gradients
/// flowing into `mean` and `var` too.
BatchNormTrainingResult batch_norm_training(const Tensor& t, const Tensor& scale,
                                            const Tensor& bias, double epsilon = 1e-5);

/// What `batch_norm_grad` returns: the gradients of batch norm's input, scale and bias.
struct BatchNormGradResult {
  Tensor t, scale, bias;
};

/// The gradients of batch norm given `grad`, the gradient of its output. With `global_stats`,
/// `mean` and `var` are constants (batch_norm_inference's gradient); without, they are the
/// batch statistics `batch_norm_training` returned, and d t includes their dependence on `t`.
/// What autodiff emits for both forms.
BatchNormGradResult batch_norm_grad(const Tensor& t, const Tensor& scale, const Tensor& mean,
                                    const Tensor& var, const Tensor& grad, double epsilon,
                                    bool global_stats);

/// PopXL `group_norm`: `t` is (N, C, spatial...) with 0 to 3 spatial axes, its C channels in
/// `num_groups` consecutive groups (num_groups divides C). Each (image, group) is normalised
/// by its own mean and biased variance over its channels and spatial positions, then
/// y = x̂ · weight[c] + bias[c], with `weight` and `bias` (C). Returns the output only, as
/// PopXL does. float32 or float16 alike; float16 computes in float32 and rounds once.
Tensor group_norm(const Tensor& t, const Tensor& weight, const Tensor& bias,
                  std::int64_t num_groups, double eps = 1e-5);

/// group_norm's gradient in one pass, as autodiff emits it: {d t, grad · x̂}; summing the
/// second over N and the spatial axes gives the weight's gradient (as `layer_norm_grad`).
std::pair<Tensor, Tensor> group_norm_grad(const Tensor& t, const Tensor& weight, const Tensor& grad,
                                          std::int64_t num_groups, double eps = 1e-5);

} // namespace pxl::ops
