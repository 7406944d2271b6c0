// pxl::addons::optimizers::SGD: stochastic gradient descent with momentum and weight decay.
#pragma once

#include "pxl/addons/optimizers/learning_rate.hpp"
#include "pxl/addons/optimizers/optimizer_step.hpp"

namespace pxl::addons::optimizers {

/// SGD's hyper-parameters (compile-time constants of the step graph, except a tensor
/// learning rate), PyTorch's defaults except the learning rate, which PyTorch requires.
struct SGDOptions {
  /// A constant, or a float32 scalar tensor read at run time (see LearningRate).
  LearningRate lr = 1e-2;
  /// μ; 0 disables momentum (and its state).
  double momentum = 0.0;
  /// L2 penalty added to the gradient.
  double weight_decay = 0.0;
  /// Nesterov momentum (needs momentum > 0).
  bool nesterov = false;
};

/// One SGD step for one variable, as PyTorch's `torch.optim.SGD` (without dampening):
///
///     g' = g + weight_decay·w
///     v  = μ·v + g'                      (momentum only; v starts at 0)
///     w -= lr · (nesterov ? g' + μ·v : v)   (plain SGD: w -= lr·g')
///
/// With momentum ≠ 0 the state is one by-ref variable input, `momentum`, shaped and typed
/// like the variable, zero initialised. Everything is computed in the variable's dtype. A
/// constant lr is folded into one scaled add (w + (−lr)·step, rounded once); a tensor lr
/// computes (−lr)·step in float32, cast to the variable's dtype, then adds it (rounded twice,
/// so the two agree to rounding, not bitwise; the emulator folds either form into the
/// gradient's matmul when the step is one, in float32). The momentum buffer holds no lr
/// (PyTorch's), so a changed lr acts on the very next step.
class SGD : public OptimizerStep<SGD> {
public:
  /// ValueError for a negative lr, momentum or weight_decay, or nesterov without momentum;
  /// DTypeError / ShapeError for an lr tensor that is not a float32 scalar.
  explicit SGD(SGDOptions options = {});

  /// Updates `var` in place from `grad` (see OptimizerStep). Errors as check_step_operands.
  void build(const Tensor& var, const Tensor& grad);

  SGDOptions options;
};

} // namespace pxl::addons::optimizers
