// In-place updates, scaled_add and adam_updater: validation and output-spec inference. Output 0
// of an in-place op aliases input 0, so it carries input 0's spec.
#include "pxl/ops/var_updates.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"

#include <sstream>
#include <string>
#include <vector>

namespace pxl::ops {

using detail::add_op1;

namespace {
/// float32/float16 always; int32 too where the update is exact in integers.
void check_target_dtype(std::string_view op, const Tensor& t, bool allow_int32) {
  if (is_floating_point(t.dtype()) || (allow_int32 && t.dtype() == int32))
    return;
  throw DTypeError(std::string(op) + ": cannot update " + to_string(t) + " in place; expected " +
                   (allow_int32 ? "float32, float16 or int32" : "float32 or float16"));
}

/// `x` must broadcast to exactly `t`'s shape: an in-place op cannot grow its target.
void check_broadcasts_to(std::string_view op, const Tensor& t, const Tensor& x) {
  if (broadcast_shapes(t.shape(), x.shape(), op) != t.shape())
    throw ShapeError(std::string(op) + ": " + to_string(x) + " must broadcast to the shape of " +
                     to_string(t) + ", which is updated in place; the broadcast result is " +
                     to_string(broadcast_shapes(t.shape(), x.shape(), op)));
}

/// A float32 or float16 scalar read when the op runs (a step, a sum of squares).
void check_scalar(std::string_view op, std::string_view role, const Tensor& s) {
  if (!is_floating_point(s.dtype()))
    throw DTypeError(std::string(op) + ": " + std::string(role) +
                     " must be float32 or float16, got " + to_string(s));
  if (s.nelms() != 1)
    throw ShapeError(std::string(op) + ": " + std::string(role) + " must be a scalar, got " +
                     to_string(s));
}

/// t = f(t, x, scalars...) in place: x of t's dtype, broadcast to t's shape; `scalars` follow
/// as inputs 2, 3, ... (checked by the caller).
Tensor inplace_binary(OpKind kind, const Tensor& t, const Tensor& x, bool allow_int32,
                      OpAttrs attrs, std::vector<Tensor> scalars = {}) {
  const auto op = op_type_name(kind);
  check_target_dtype(op, t, allow_int32);
  detail::check_same_dtype(op, t, x);
  check_broadcasts_to(op, t, x);
  scalars.insert(scalars.begin(), {t, x});
  return add_op1(kind, scalars, t.spec(), std::move(attrs));
}
} // namespace

Tensor add_(const Tensor& a, const Tensor& b) {
  return inplace_binary(OpKind::AddInplace, a, b, true, NoAttrs{});
}

Tensor sub_(const Tensor& a, const Tensor& b) {
  return inplace_binary(OpKind::SubInplace, a, b, true, NoAttrs{});
}

Tensor mul_(const Tensor& a, const Tensor& b) {
  return inplace_binary(OpKind::MulInplace, a, b, true, NoAttrs{});
}

Tensor scaled_add(const Tensor& x, const Tensor& y, ScaledAddFactors f) {
  detail::check_float("ScaledAdd", x);
  detail::check_same_dtype("ScaledAdd", x, y);
  Shape shape = broadcast_shapes(x.shape(), y.shape(), "ScaledAdd");
  return add_op1(OpKind::ScaledAdd, {x, y}, TensorSpec{std::move(shape), x.dtype()},
                 ScalarAttrs{f.a, f.b});
}

Tensor scaled_add_(const Tensor& x, const Tensor& y, ScaledAddFactors f) {
  return inplace_binary(OpKind::ScaledAddInplace, x, y, false, ScalarAttrs{f.a, f.b});
}

} // namespace pxl::ops

namespace pxl::ops::var_updates {

Tensor accumulate_(const Tensor& t, const Tensor& x, double f) {
  return inplace_binary(OpKind::Accumulate, t, x, false, ScalarAttrs{f, 0.0});
}

Tensor accumulate_square_(const Tensor& t, const Tensor& x, double f) {
  return inplace_binary(OpKind::AccumulateSquare, t, x, false, ScalarAttrs{f, 0.0});
}

Tensor accumulate_mean_(const Tensor& t, const Tensor& x, double step) {
  return inplace_binary(OpKind::AccumulateMean, t, x, false, ScalarAttrs{step, 0.0});
}

Tensor accumulate_mean_(const Tensor& t, const Tensor& x, const Tensor& step) {
  check_scalar("AccumulateMean", "the step", step);
  return inplace_binary(OpKind::AccumulateMean, t, x, false, ScalarAttrs{}, {step});
}

Tensor sparse_accumulate_(const Tensor& t, const Tensor& x, const Tensor& indices,
                          std::int64_t axis, double f) {
  constexpr std::string_view op = "SparseAccumulate";
  check_target_dtype(op, t, false);
  detail::check_same_dtype(op, t, x);
  detail::check_dtype(op, indices, int32, "indices");
  if (t.rank() == 0)
    throw ShapeError(std::string(op) + ": cannot select slices of the scalar " + to_string(t));
  const auto a = normalize_axis(axis, t.rank(), op);
  Shape want(t.shape().begin(), t.shape().begin() + a);
  want.insert(want.end(), indices.shape().begin(), indices.shape().end());
  want.insert(want.end(), t.shape().begin() + a + 1, t.shape().end());
  if (x.shape() != want)
    throw ShapeError(std::string(op) + ": the slices " + to_string(x) + " must have shape " +
                     to_string(want) + ", that of gathering " + to_string(indices) + " from " +
                     to_string(t) + " along axis " + std::to_string(a));
  return add_op1(OpKind::SparseAccumulate, {t, x, indices}, t.spec(),
                 SparseAccumulateAttrs{.axis = a, .factor = f});
}

Tensor copy_var_update_(const Tensor& t, const Tensor& x) {
  // A copy: every device dtype (op_flags::Moves).
  detail::check_same_dtype("CopyVarUpdate", t, x);
  if (t.shape() != x.shape())
    throw ShapeError("CopyVarUpdate: " + to_string(x) + " must have the same shape as " +
                     to_string(t) + ", which it overwrites");
  return add_op1(OpKind::CopyVarUpdate, {t, x}, t.spec());
}

Tensor accumulator_scale_(const Tensor& t, double f) {
  check_target_dtype("AccumulatorScale", t, false);
  return add_op1(OpKind::AccumulatorScale, {t}, t.spec(), ScalarAttrs{f, 0.0});
}

Tensor accumulator_zero_(const Tensor& t) {
  check_target_dtype("AccumulatorZero", t, false);
  return add_op1(OpKind::AccumulatorZero, {t}, t.spec());
}

Tensor accumulate_moving_average_(const Tensor& t, const Tensor& x, double f) {
  return inplace_binary(OpKind::AccumulateMovingAverage, t, x, false, ScalarAttrs{f, 0.0});
}

Tensor accumulate_moving_average_square_(const Tensor& t, const Tensor& x, double f) {
  return inplace_binary(OpKind::AccumulateMovingAverageSquare, t, x, false, ScalarAttrs{f, 0.0});
}

namespace {
/// The updater ops' shared checks and inputs: m, v, then the time step (incremented in place
/// first) when `attrs.bias_correction`, then the weight when given. `attrs` holds the scalars.
Tensor updater_op(OpKind kind, const Tensor& m, const Tensor& v, const Tensor& weight,
                  const Tensor& time_step, AdamUpdaterAttrs attrs) {
  const auto op = op_type_name(kind);
  const auto fail_dtype = [&](const char* role, const Tensor& t) {
    throw DTypeError(std::string(op) + ": " + role + " must be float32 or float16, got " +
                     to_string(t));
  };
  const auto check_like_m = [&](const char* role, const Tensor& t) {
    if (!is_floating_point(t.dtype()))
      fail_dtype(role, t);
    if (t.shape() != m.shape())
      throw ShapeError(std::string(op) + ": " + role + " " + to_string(t) +
                       " must have the shape of the first moment " + to_string(m));
  };
  if (!is_floating_point(m.dtype()))
    fail_dtype("the first moment", m);
  check_like_m("the second moment", v);
  std::vector<Tensor> inputs{m, v};
  if (attrs.weight_decay != 0.0 && !weight.valid()) {
    std::ostringstream os;
    os << op << ": a weight decay (" << attrs.weight_decay
       << ") needs the weight: pass it as `.weight`";
    throw ValueError(os.str());
  }
  if (attrs.bias_correction) {
    if (!is_floating_point(time_step.dtype()))
      fail_dtype("the time step", time_step);
    if (time_step.nelms() != 1)
      throw ShapeError(std::string(op) + ": the time step must be a scalar, got " +
                       to_string(time_step));
  }
  TensorSpec out{m.shape(), m.dtype()};
  if (weight.valid()) {
    check_like_m("the weight", weight);
    attrs.weight = true;
    out.dtype = weight.dtype();
  }
  // PopXL's updaters increment the step in place before reading it (PopART's AdamUpdaterOp
  // modifies it): here that is an accumulate_ ahead of the op, which then reads the new value.
  if (attrs.bias_correction)
    inputs.push_back(accumulate_(time_step, constant(1.0, time_step.dtype())));
  if (attrs.weight)
    inputs.push_back(weight);
  return add_op1(kind, inputs, std::move(out), attrs);
}

/// adam_updater's and lamb_updater's attributes: bias correction with a time step, which then
/// needs both betas.
AdamUpdaterAttrs adam_attrs(std::string_view op, const AdamUpdaterOptions& o) {
  AdamUpdaterAttrs attrs{.weight_decay = o.weight_decay, .epsilon = o.epsilon};
  if (o.time_step.valid()) {
    if (!o.beta1 || !o.beta2)
      throw ValueError(std::string(op) + ": bias correction (a time_step) needs both beta1 and " +
                       "beta2, got " +
                       (o.beta1   ? "beta1 only"
                        : o.beta2 ? "beta2 only"
                                  : "neither"));
    attrs.bias_correction = true;
    attrs.beta1 = *o.beta1;
    attrs.beta2 = *o.beta2;
  }
  return attrs;
}
} // namespace

Tensor adam_updater(const Tensor& m, const Tensor& v, const AdamUpdaterOptions& o) {
  return updater_op(OpKind::AdamUpdater, m, v, o.weight, o.time_step, adam_attrs("AdamUpdater", o));
}

Tensor lamb_updater(const Tensor& m, const Tensor& v, const AdamUpdaterOptions& o) {
  return updater_op(OpKind::AdamUpdater, m, v, o.weight, o.time_step, adam_attrs("AdamUpdater", o));
}

Tensor adamax_updater(const Tensor& m, const Tensor& v, const AdamaxUpdaterOptions& o) {
  if (!o.time_step.valid())
    throw ValueError("AdamaxUpdater: AdaMax needs the time step: pass it as `.time_step`");
  return updater_op(OpKind::AdamaxUpdater, m, v, o.weight, o.time_step,
                    AdamUpdaterAttrs{.weight_decay = o.weight_decay,
                                     .beta1 = o.beta1,
                                     .epsilon = o.epsilon,
                                     .bias_correction = true});
}

Tensor adam_var_update(const Tensor& t, const Tensor& x, const Tensor& r1, const Tensor& r2,
                       double learning_rate, double max_weight_norm) {
  constexpr std::string_view op = "AdamVarUpdate";
  check_scalar(op, "r1 (the weight's sum of squares)", r1);
  check_scalar(op, "r2 (the updater's sum of squares)", r2);
  if (max_weight_norm == 0.0)
    throw ValueError(std::string(op) + ": the max weight norm must not be 0 (PopART refuses a " +
                     "constant 0); pass infinity for no clipping");
  return inplace_binary(OpKind::AdamVarUpdate, t, x, false,
                        ScalarAttrs{learning_rate, max_weight_norm}, {r1, r2});
}

} // namespace pxl::ops::var_updates
