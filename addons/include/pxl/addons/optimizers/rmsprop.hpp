// pxl::addons::optimizers::RMSprop: TensorFlow's RMSprop, with momentum and the centered form.
#pragma once

#include "pxl/addons/optimizers/learning_rate.hpp"
#include "pxl/addons/optimizers/optimizer_step.hpp"

namespace pxl::addons::optimizers {

/// RMSprop's hyper-parameters (compile-time constants of the step graph, except a tensor
/// learning rate), TensorFlow's (Keras') defaults.
struct RMSpropOptions {
  /// A constant, or a float32 scalar tensor read at run time (see LearningRate).
  LearningRate lr = 1e-3;
  /// ρ, the discount of the moving averages (TensorFlow's `rho`, `decay` in tf.compat.v1).
  double rho = 0.9;
  /// μ; 0 disables momentum (and its state).
  double momentum = 0.0;
  /// Added to the mean square inside the square root (TensorFlow's convention; PyTorch adds
  /// it outside: sqrt(ms) + eps).
  double eps = 1e-7;
  /// Normalise by the estimated variance ms − mg² rather than by the mean square ms.
  bool centered = false;
};

/// One RMSprop step for one variable, as TensorFlow's `ApplyRMSProp` /
/// `ApplyCenteredRMSProp` kernels (what `tf.keras.optimizers.RMSprop` runs):
///
///     ms  = ρ·ms + (1 − ρ)·g²
///     mg  = ρ·mg + (1 − ρ)·g                    (centered only)
///     d   = sqrt(ms − mg² + eps)                 (centered; else sqrt(ms + eps))
///     mom = μ·mom + lr·g / d;   w -= mom         (momentum > 0)
///     w  -= lr·g / d                             (momentum = 0)
///
/// Where it differs from PyTorch's `torch.optim.RMSprop`: eps is inside the square root
/// (PyTorch: sqrt(·) + eps), and the momentum buffer holds the learning rate (PyTorch keeps
/// it outside: mom = μ·mom + g/d, w -= lr·mom), so with momentum a changed lr takes effect
/// gradually. (Keras 2's RMSprop without momentum added eps outside; TensorFlow's kernels,
/// Keras 3 and this step add it inside in every case.) The state starts at zero.
///
/// State (by-ref variable inputs, float32, shaped like the variable): `mean_square` (ms),
/// `mean_grad` (mg, centered only) and `momentum` (mom, momentum > 0 only). Everything is
/// computed in float32, the learning rate too (a constant lr is a float32 constant, so a
/// tensor lr of the same value gives bitwise the same step), and the update is cast to the
/// variable's dtype.
class RMSprop : public OptimizerStep<RMSprop> {
public:
  /// ValueError for lr < 0, rho outside [0, 1), momentum < 0 or eps ≤ 0; the lr tensor's
  /// errors as LearningRate's checks.
  explicit RMSprop(RMSpropOptions options = {});

  /// Updates `var` in place from `grad` (see OptimizerStep). Errors as check_step_operands.
  void build(const Tensor& var, const Tensor& grad);

  RMSpropOptions options;
};

} // namespace pxl::addons::optimizers
