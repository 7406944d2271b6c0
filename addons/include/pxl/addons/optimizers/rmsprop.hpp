// pxl::addons::optimizers::RMSprop: Keras's RMSprop (or TensorFlow's raw ApplyRMSProp kernel),
// with momentum and the centered form.
#pragma once

#include "pxl/addons/optimizers/learning_rate.hpp"
#include "pxl/addons/optimizers/optimizer_step.hpp"

namespace pxl::addons::optimizers {

/// Which RMSprop update `RMSprop` computes; they differ only without momentum, in where eps
/// goes.
enum class RMSpropUpdate {
  /// Keras's `tf.keras.optimizers.RMSprop` (Keras 2, the TensorFlow 2 Keras that Keras with
  /// IPUs uses): without momentum, w −= lr·g / (sqrt(ms) + eps), eps outside the square root;
  /// with momentum, Keras calls TensorFlow's kernel, as `tf_apply_rms_prop`.
  keras,
  /// TensorFlow's raw kernels `ApplyRMSProp` / `ApplyCenteredRMSProp` in every case:
  /// w −= lr·g / sqrt(ms + eps), eps inside the square root (also Keras 3's update, and pxl's
  /// RMSprop before 0.2).
  tf_apply_rms_prop,
};

/// RMSprop's hyper-parameters (compile-time constants of the step graph, except a tensor
/// learning rate), TensorFlow's (Keras') defaults.
struct RMSpropOptions {
  /// A constant, or a float32 scalar tensor read at run time (see LearningRate).
  LearningRate lr = 1e-3;
  /// ρ, the discount of the moving averages (TensorFlow's `rho`, `decay` in tf.compat.v1).
  double rho = 0.9;
  /// μ; 0 disables momentum (and its state).
  double momentum = 0.0;
  /// Keeps the division finite: added to sqrt(ms) (Keras without momentum, as PyTorch) or to
  /// ms inside the square root (TensorFlow's kernel); see `update`.
  double eps = 1e-7;
  /// Normalise by the estimated variance ms − mg² rather than by the mean square ms.
  bool centered = false;
  /// Keras's update (the default) or TensorFlow's raw kernel.
  RMSpropUpdate update = RMSpropUpdate::keras;
};

/// One RMSprop step for one variable, as Keras's `tf.keras.optimizers.RMSprop` computes it
/// (RMSpropUpdate::keras), or as TensorFlow's `ApplyRMSProp` / `ApplyCenteredRMSProp` kernels
/// (RMSpropUpdate::tf_apply_rms_prop):
///
///     ms  = ρ·ms + (1 − ρ)·g²
///     mg  = ρ·mg + (1 − ρ)·g                    (centered only)
///     v   = ms − mg²                             (centered; else ms)
///     mom = μ·mom + lr·g / sqrt(v + eps);  w -= mom   (momentum > 0, both updates)
///     w  -= lr·g / (sqrt(v) + eps)               (momentum = 0, keras)
///     w  -= lr·g / sqrt(v + eps)                 (momentum = 0, tf_apply_rms_prop)
///
/// Keras without momentum matches PyTorch's `torch.optim.RMSprop` (eps outside the root);
/// with momentum Keras runs TensorFlow's kernel, whose momentum buffer holds the learning
/// rate (PyTorch keeps it outside: mom = μ·mom + g/d, w -= lr·mom), so a changed lr takes
/// effect gradually. The state starts at zero.
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
