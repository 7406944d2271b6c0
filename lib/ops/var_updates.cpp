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

Tensor inplace_binary(OpKind kind, const Tensor& t, const Tensor& x, bool allow_int32,
                      OpAttrs attrs) {
  const auto op = op_type_name(kind);
  check_target_dtype(op, t, allow_int32);
  detail::check_same_dtype(op, t, x);
  check_broadcasts_to(op, t, x);
  return add_op1(kind, {t, x}, t.spec(), std::move(attrs));
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

Tensor copy_var_update_(const Tensor& t, const Tensor& x) {
  check_target_dtype("CopyVarUpdate", t, true);
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

Tensor adam_updater(const Tensor& m, const Tensor& v, const AdamUpdaterOptions& o) {
  constexpr std::string_view op = "AdamUpdater";
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
  AdamUpdaterAttrs attrs{.weight_decay = o.weight_decay, .epsilon = o.epsilon};
  std::vector<Tensor> inputs{m, v};
  if (o.weight_decay != 0.0 && !o.weight.valid()) {
    std::ostringstream os;
    os << op << ": a weight decay (" << o.weight_decay
       << ") needs the weight: pass it as `.weight`";
    throw ValueError(os.str());
  }
  if (o.time_step.valid()) {
    if (!o.beta1 || !o.beta2)
      throw ValueError(std::string(op) + ": bias correction (a time_step) needs both beta1 and " +
                       "beta2, got " +
                       (o.beta1   ? "beta1 only"
                        : o.beta2 ? "beta2 only"
                                  : "neither"));
    if (!is_floating_point(o.time_step.dtype()))
      fail_dtype("the time step", o.time_step);
    if (o.time_step.nelms() != 1)
      throw ShapeError(std::string(op) + ": the time step must be a scalar, got " +
                       to_string(o.time_step));
    attrs.bias_correction = true;
    attrs.beta1 = *o.beta1;
    attrs.beta2 = *o.beta2;
  }
  TensorSpec out{m.shape(), m.dtype()};
  if (o.weight.valid()) {
    check_like_m("the weight", o.weight);
    attrs.weight = true;
    out.dtype = o.weight.dtype();
  }
  // PopXL's adam_updater increments the step in place before reading it (PopART's
  // AdamUpdaterOp modifies it): here that is an accumulate_ ahead of the op, which then reads
  // the new value.
  if (attrs.bias_correction)
    inputs.push_back(accumulate_(o.time_step, constant(1.0, o.time_step.dtype())));
  if (attrs.weight)
    inputs.push_back(o.weight);
  return add_op1(OpKind::AdamUpdater, inputs, std::move(out), attrs);
}

} // namespace pxl::ops::var_updates
