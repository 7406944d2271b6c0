// In-place updates and scaled_add: validation and output-spec inference. Output 0 of an in-place
// op aliases input 0, so it carries input 0's spec.
#include "pxl/ops/var_updates.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"

namespace pxl::ops {

using detail::add_op1;
using detail::describe;

namespace {
/// float32/float16 always; int32 too where the update is exact in integers.
void check_target_dtype(std::string_view op, const Tensor& t, bool allow_int32) {
  if (is_floating_point(t.dtype()) || (allow_int32 && t.dtype() == int32))
    return;
  throw DTypeError(std::string(op) + ": cannot update " + describe(t) + " in place; expected " +
                   (allow_int32 ? "float32, float16 or int32" : "float32 or float16"));
}

/// `x` must broadcast to exactly `t`'s shape: an in-place op cannot grow its target.
void check_broadcasts_to(std::string_view op, const Tensor& t, const Tensor& x) {
  if (broadcast_shapes(t.shape(), x.shape(), op) != t.shape())
    throw ShapeError(std::string(op) + ": " + describe(x) + " must broadcast to the shape of " +
                     describe(t) + ", which is updated in place; the broadcast result is " +
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
    throw ShapeError("CopyVarUpdate: " + describe(x) + " must have the same shape as " +
                     describe(t) + ", which it overwrites");
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

} // namespace pxl::ops::var_updates
