// In-place updates (each returns a tensor aliasing its first argument, which it modifies),
// scaled adds and Adam's updater term.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <cstdint>
#include <optional>

namespace pxl::ops {

/// a += b (b broadcast to a's shape).
Tensor add_(const Tensor& a, const Tensor& b);
/// a -= b (b broadcast to a's shape).
Tensor sub_(const Tensor& a, const Tensor& b);
/// a *= b (b broadcast to a's shape).
Tensor mul_(const Tensor& a, const Tensor& b);
/// The coefficients of `a·x + b·y`, named at every call so that neither can be mistaken for
/// the other: `scaled_add_(w, grad, {.a = 1, .b = -lr})`, or `{.b = -lr}` since a defaults
/// to 1. (PopXL's `scaled_add_(w, g, b=-lr)`; a bare trailing number does not compile.)
struct ScaledAddFactors {
  double a = 1.0; ///< the factor of x
  double b = 1.0; ///< the factor of y
};

/// a·x + b·y, a new tensor (x and y of one float dtype; y broadcast to x's shape).
Tensor scaled_add(const Tensor& x, const Tensor& y, ScaledAddFactors f = {});
/// x = a·x + b·y in place: the SGD step is `scaled_add_(w, grad, {.b = -lr})`.
Tensor scaled_add_(const Tensor& x, const Tensor& y, ScaledAddFactors f = {});

/// 0.1's positional factors, for one release: `scaled_add(x, y, a, b)` is
/// `scaled_add(x, y, {.a = a, .b = b})`. Both factors are required, so that
/// `scaled_add_(w, g, -lr)` (PopXL's b written as a) still does not compile.
[[deprecated("use scaled_add(x, y, {.a = a, .b = b})")]] inline Tensor
scaled_add(const Tensor& x, const Tensor& y, double a, double b) {
  return scaled_add(x, y, ScaledAddFactors{.a = a, .b = b});
}
/// 0.1's positional factors, for one release: `scaled_add_(x, y, a, b)` is
/// `scaled_add_(x, y, {.a = a, .b = b})`.
[[deprecated("use scaled_add_(x, y, {.a = a, .b = b})")]] inline Tensor
scaled_add_(const Tensor& x, const Tensor& y, double a, double b) {
  return scaled_add_(x, y, ScaledAddFactors{.a = a, .b = b});
}

} // namespace pxl::ops

namespace pxl::ops::var_updates {

/// t += f·x.
Tensor accumulate_(const Tensor& t, const Tensor& x, double f = 1.0);
/// t += f·x², PopXL's accumulate_square_ (as accumulate_: x of t's dtype, float32 or float16,
/// broadcast to t's shape; computed in double and rounded once). PopXL's Tensor-valued f is
/// not supported: f is a constant.
Tensor accumulate_square_(const Tensor& t, const Tensor& x, double f = 1.0);
/// t = step/(step + 1)·t + 1/(step + 1)·x, PopXL's accumulate_mean_: the running mean of the
/// values accumulated so far when `step` counts them (0 for the first). As accumulate_, with
/// `step` a constant here.
Tensor accumulate_mean_(const Tensor& t, const Tensor& x, double step);
/// As above with `step` read when the op runs: a float32 or float16 scalar tensor (as PopXL's
/// accumulate_mean_ makes of a float). The update has no gradient with respect to `step`.
/// Errors: DTypeError for a non-float step, ShapeError for a step that is not a scalar.
Tensor accumulate_mean_(const Tensor& t, const Tensor& x, const Tensor& step);
/// PopXL's sparse_accumulate_: adds f·x to the slices of t along `axis` that `indices` (int32,
/// any shape) select, x being shaped as gather(t, indices, axis) is (t[:axis] + indices +
/// t[axis+1:]); slices selected more than once get every update, in index order, summed in
/// double and added once. Indices outside [0, t's extent on axis) are skipped (as popops'
/// multiUpdateAdd). Its gradient: dt = g, dx = f·gather(g, indices, axis). PopXL's optional
/// `W` (a weight whose tile layout t is cloned from) has no meaning here and is not taken, nor
/// is a Tensor-valued f. Errors: DTypeError for a t that is not float32/float16, an x of
/// another dtype or indices that are not int32; ShapeError for a scalar t or an x of the wrong
/// shape; ValueError for an axis out of range.
Tensor sparse_accumulate_(const Tensor& t, const Tensor& x, const Tensor& indices,
                          std::int64_t axis = 0, double f = 1.0);
/// t = x, for tensors of one dtype (any device dtype) and shape.
Tensor copy_var_update_(const Tensor& t, const Tensor& x);
/// t *= f.
Tensor accumulator_scale_(const Tensor& t, double f);
/// t = 0.
Tensor accumulator_zero_(const Tensor& t);

/// t = f·t + (1 − f)·x: an exponential moving average, such as Adam's first moment
/// (`accumulate_moving_average_(m, grad, beta1)`). x of t's dtype (float32 or float16),
/// broadcast to t's shape; computed in double and rounded once, as scaled_add_.
Tensor accumulate_moving_average_(const Tensor& t, const Tensor& x, double f);
/// t = f·t + (1 − f)·x²: the moving average of squares, such as Adam's second moment
/// (`accumulate_moving_average_square_(v, grad, beta2)`). As accumulate_moving_average_.
Tensor accumulate_moving_average_square_(const Tensor& t, const Tensor& x, double f);

/// adam_updater's optional arguments, PopXL's keyword arguments:
/// `adam_updater(m, v, {.weight = w, .time_step = t, .weight_decay = 0.01, .beta1 = 0.9,
/// .beta2 = 0.999, .epsilon = 1e-8})`.
struct AdamUpdaterOptions {
  /// w, shaped like m: required for a weight decay. When given, the updater has its dtype.
  Tensor weight;
  /// t, a float scalar: enables bias correction (needs beta1 and beta2). adam_updater first
  /// increments it by 1 in place, then corrects with the new value.
  Tensor time_step;
  /// wd: adds wd·w to the updater (decoupled weight decay, as AdamW's once multiplied by lr).
  double weight_decay = 0.0;
  std::optional<double> beta1, beta2; ///< only used, and then both required, with time_step
  double epsilon = 1e-7;
};

/// The Adam updater term, a new tensor (PopXL's `adam_updater`):
///
///     t += 1                                    (with time_step, in place)
///     m̂ = m / (1 − β1^t)   v̂ = v / (1 − β2^t)   (with time_step; else m̂ = m, v̂ = v)
///     updater = m̂ / (sqrt(v̂) + epsilon) + weight_decay·w
///
/// so that Adam's step is `scaled_add_(w, adam_updater(...), {.b = -lr})`. m, v and w are
/// float32 or float16 of one shape (their dtypes may differ). Computed in float32 registers as
/// PyTorch's float32 Adam is, each operation rounded once (the decay term is added in double),
/// then rounded to the updater's dtype: the weight's when a weight is given, else m's. Not
/// differentiable. Errors: DTypeError for a non-float m, v, w or t; ShapeError for v or w not
/// shaped like m, or a t that is not a scalar; ValueError for a weight decay without a weight,
/// or a time step without both betas.
Tensor adam_updater(const Tensor& acc_first_order, const Tensor& acc_second_order,
                    const AdamUpdaterOptions& options = {});

/// LAMB's updater term, PopXL's `lamb_updater`: the same term as adam_updater, with the same
/// options and errors (PopART runs both as one AdamUpdater op; LAMB's trust ratio is applied
/// by adam_var_update).
Tensor lamb_updater(const Tensor& acc_first_order, const Tensor& acc_second_order,
                    const AdamUpdaterOptions& options = {});

/// adamax_updater's optional arguments, PopXL's keyword arguments (its defaults).
struct AdamaxUpdaterOptions {
  /// w, shaped like m: required for a weight decay. When given, the updater has its dtype.
  Tensor weight;
  /// t, a float scalar: required. adamax_updater increments it by 1 in place, then corrects
  /// with the new value.
  Tensor time_step;
  double weight_decay = 0.0; ///< adds wd·w to the updater
  double beta1 = 0.9;
  double epsilon = 1e-7;
};

/// The AdaMax updater term, a new tensor (PopXL's `adamax_updater`):
///
///     t += 1                       (in place)
///     m̂ = m / (1 − β1^t)
///     updater = m̂ / (u + epsilon) + weight_decay·w
///
/// where u (`acc_second_order`) is AdaMax's running maximum of |g|, not a second moment: no
/// square root, no correction. Computed and rounded as adam_updater. Not differentiable.
/// Errors: as adam_updater's, and ValueError for a missing time step.
Tensor adamax_updater(const Tensor& acc_first_order, const Tensor& acc_second_order,
                      const AdamaxUpdaterOptions& options);

/// PopXL's `adam_var_update`: the Adam or LAMB weight update in place,
///
///     ratio = 1                                 if r1 = 0 or r2 = 0
///           = min(sqrt(r1), max_weight_norm) / sqrt(r2)   otherwise
///     t -= learning_rate·ratio·x
///
/// with r1 and r2 the sums of squares (lamb_square) of the weight and of the updater x, read
/// when the op runs. t and x are float32 or float16 of one dtype (x broadcast to t's shape);
/// r1 and r2 float scalars. Computed in double, rounded once. Not differentiable. PopXL's
/// learning rate and max weight norm may also be tensors, or omitted, which leaves PopART a
/// non-constant value with no tensor to read, and PopART refuses a constant zero max weight
/// norm: here both are required constants. Errors: DTypeError and ShapeError for the
/// operands; ValueError for a max weight norm of 0.
Tensor adam_var_update(const Tensor& t, const Tensor& x, const Tensor& r1, const Tensor& r2,
                       double learning_rate, double max_weight_norm);

} // namespace pxl::ops::var_updates
