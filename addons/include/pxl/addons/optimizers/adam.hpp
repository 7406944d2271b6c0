// pxl::addons::optimizers::Adam and AdamW: adaptive moment estimation, L2 or decoupled decay.
#pragma once

#include "pxl/addons/optimizers/learning_rate.hpp"
#include "pxl/addons/optimizers/optimizer_step.hpp"

#include <optional>

namespace pxl::addons::optimizers {

/// Adam's hyper-parameters (compile-time constants of the step graph, except a tensor learning
/// rate), PyTorch's defaults.
struct AdamOptions {
  /// A constant, or a float32 scalar tensor read at run time (see LearningRate).
  LearningRate lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  /// Added to sqrt(v̂) (outside the square root, as PyTorch and PopXL do).
  double eps = 1e-8;
  /// Adam: an L2 penalty added to the gradient.
  double weight_decay = 0.0;
  /// Divide the moments by 1 − β^t.
  bool bias_correction = true;
  /// dtype of the `first_order` state; the variable's dtype when unset (PopXL defaults it
  /// to float16 to save memory; set it so to match).
  std::optional<DType> first_order_dtype;
};

/// AdamW's hyper-parameters: Adam's, with PyTorch's AdamW default weight decay.
struct AdamWOptions {
  LearningRate lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// Decoupled: w -= lr·weight_decay·w, independent of the gradient.
  double weight_decay = 1e-2;
  bool bias_correction = true;
  std::optional<DType> first_order_dtype;
};

// impl: what the templates here call out of line. Exported, since the templates are
// instantiated in users' code, but not API (`detail` namespaces are private to the binary).
namespace impl {
/// The step both classes build: `decoupled` selects AdamW's weight decay.
void adam_step(const Tensor& var, const Tensor& grad, const AdamOptions& o, bool decoupled,
               std::string_view who);
/// ValueError for lr < 0, betas outside [0, 1), eps ≤ 0, weight_decay < 0, or a non-floating
/// first_order_dtype (DTypeError); the lr tensor's errors as check_learning_rate.
void check_adam_options(const AdamOptions& o, std::string_view who);
} // namespace impl

/// One Adam step for one variable, as PyTorch's `torch.optim.Adam`:
///
///     g' = g + weight_decay·w
///     m  = β1·m + (1 − β1)·g'          v = β2·v + (1 − β2)·g'²         t += 1
///     m̂  = m / (1 − β1^t)              v̂ = v / (1 − β2^t)   (bias correction; else m̂ = m, v̂ = v)
///     w -= lr · m̂ / (sqrt(v̂) + eps)
///
/// State (by-ref variable inputs, zero initialised): `first_order` (m, shaped like the
/// variable, of `first_order_dtype`), `second_order` (v, float32), `step` (t, a float32
/// scalar counting steps). Built from PopXL's fused updates (ops::var_updates:
/// accumulate_moving_average_, accumulate_moving_average_square_, adam_updater), then
/// w −= lr·u: the moments are rounded once to their dtypes, the update is computed in float32
/// and rounded to the variable's dtype. A tensor lr (read at run time) gives the constant lr's
/// result to rounding: w −= lr·u is then two roundings instead of one (see SGD).
class Adam : public OptimizerStep<Adam> {
public:
  explicit Adam(AdamOptions options = {});
  void build(const Tensor& var, const Tensor& grad);
  AdamOptions options;
};

/// One AdamW step (`torch.optim.AdamW`): Adam without the L2 term, and the decoupled decay
/// w *= 1 − lr·weight_decay, applied as PopXL does: the updater adds weight_decay·w (the old
/// weight), so that w −= lr·(u + weight_decay·w) is one update. Same state as Adam.
class AdamW : public OptimizerStep<AdamW> {
public:
  explicit AdamW(AdamWOptions options = {});
  void build(const Tensor& var, const Tensor& grad);
  AdamWOptions options;
};

} // namespace pxl::addons::optimizers
