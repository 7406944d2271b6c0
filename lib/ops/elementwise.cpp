#include "pxl/ops/elementwise.hpp"
#include "ir/op_builder.hpp"
#include "pxl/ir/graph.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace pxl::ops {

using detail::add_op1;

namespace {
Tensor unary_float(OpKind kind, const Tensor& t) {
  detail::check_float(op_type_name(kind), t);
  return add_op1(kind, {t}, t.spec());
}

/// A bool tensor classifying each element of a float tensor.
Tensor float_class(OpKind kind, const Tensor& t) {
  detail::check_float(op_type_name(kind), t);
  return add_op1(kind, {t}, TensorSpec{t.shape(), bool_});
}

Tensor unary_signed(OpKind kind, const Tensor& t) {
  if (!is_floating_point(t.dtype()) && t.dtype() != int32)
    throw DTypeError(std::string(op_type_name(kind)) +
                     ": expected a float32, float16 or int32 tensor, got " + to_string(t));
  return add_op1(kind, {t}, t.spec());
}

/// IncrementMod and its in-place form: (t + increment) % modulus.
Tensor counter_update(OpKind kind, const Tensor& t, double increment, double modulus) {
  const std::string op(op_type_name(kind));
  if (!is_floating_point(t.dtype()) && t.dtype() != int32)
    throw DTypeError(op + ": expected a float32, float16 or int32 tensor, got " + to_string(t));
  if (modulus == 0 || std::isnan(modulus))
    throw ValueError(op + ": the modulus of " + to_string(t) + " must be a nonzero number, got " +
                     std::to_string(modulus));
  if (t.dtype() == int32)
    for (const auto& [what, v] : {std::pair{"increment", increment}, {"modulus", modulus}})
      if (!(v == std::trunc(v) && v >= std::numeric_limits<std::int32_t>::min() &&
            v <= std::numeric_limits<std::int32_t>::max()))
        throw ValueError(op + ": the " + what + " of int32 tensor " + to_string(t) +
                         " must be a whole number in int32's range, got " + std::to_string(v));
  return add_op1(kind, {t}, t.spec(), ScalarAttrs{increment, modulus});
}

Tensor binary(OpKind kind, const Tensor& a, const Tensor& b, DType out_dtype) {
  const auto op = op_type_name(kind);
  detail::check_same_dtype(op, a, b);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  return add_op1(kind, {a, b}, TensorSpec{std::move(shape), out_dtype});
}

Tensor binary_arith(OpKind kind, const Tensor& a, const Tensor& b) {
  if (a.dtype() == bool_)
    throw DTypeError(std::string(op_type_name(kind)) + ": arithmetic on bool tensor " +
                     to_string(a) + "; use logical ops or cast first");
  return binary(kind, a, b, a.dtype());
}

/// An order comparison: bool tensors have no order.
Tensor ordering(OpKind kind, const Tensor& a, const Tensor& b) {
  if (a.dtype() == bool_)
    throw DTypeError(std::string(op_type_name(kind)) + ": cannot order bool tensor " +
                     to_string(a));
  return binary(kind, a, b, bool_);
}

/// A gradient in one pass, `kind`(t, grad): t (the forward op's input or output) and grad of
/// one float dtype and shape.
Tensor one_pass_grad(OpKind kind, const Tensor& t, const Tensor& grad) {
  const std::string_view op = op_type_name(kind);
  detail::check_float(op, t);
  detail::check_same_dtype(op, t, grad);
  if (t.shape() != grad.shape())
    throw ShapeError(std::string(op) + ": the gradient " + to_string(grad) +
                     " must have the shape of the input " + to_string(t));
  return add_op1(kind, {t, grad}, t.spec());
}

Tensor binary_logical(OpKind kind, const Tensor& a, const Tensor& b) {
  detail::check_dtype(op_type_name(kind), a, bool_, "the left operand");
  detail::check_dtype(op_type_name(kind), b, bool_, "the right operand");
  return binary(kind, a, b, bool_);
}
} // namespace

Tensor negate(const Tensor& t) { return unary_signed(OpKind::Negate, t); }
Tensor abs(const Tensor& t) { return unary_signed(OpKind::Abs, t); }
Tensor exp(const Tensor& t) { return unary_float(OpKind::Exp, t); }
Tensor log(const Tensor& t) { return unary_float(OpKind::Log, t); }
Tensor sqrt(const Tensor& t) { return unary_float(OpKind::Sqrt, t); }
Tensor tanh(const Tensor& t) { return unary_float(OpKind::Tanh, t); }
Tensor sigmoid(const Tensor& t) { return unary_float(OpKind::Sigmoid, t); }
Tensor relu(const Tensor& t) { return unary_float(OpKind::Relu, t); }
Tensor gelu(const Tensor& t) { return unary_float(OpKind::Gelu, t); }
Tensor geluerf(const Tensor& t) { return unary_float(OpKind::GeluErf, t); }
Tensor gelu_grad(const Tensor& x, const Tensor& grad) {
  return one_pass_grad(OpKind::GeluGrad, x, grad);
}
Tensor tanh_grad(const Tensor& y, const Tensor& grad) {
  return one_pass_grad(OpKind::TanhGrad, y, grad);
}
Tensor erf(const Tensor& t) { return unary_float(OpKind::Erf, t); }
Tensor sin(const Tensor& t) { return unary_float(OpKind::Sin, t); }
Tensor cos(const Tensor& t) { return unary_float(OpKind::Cos, t); }
Tensor sign(const Tensor& t) { return unary_signed(OpKind::Sign, t); }
Tensor clip(const Tensor& t, double min, double max) {
  detail::check_float("Clip", t);
  if (!(min <= max))
    throw ValueError("Clip: the lower bound " + std::to_string(min) +
                     " must not exceed the upper bound " + std::to_string(max) + " (clipping " +
                     to_string(t) + ")");
  return add_op1(OpKind::Clip, {t}, t.spec(), ScalarAttrs{min, max});
}
Tensor logical_not(const Tensor& t) {
  detail::check_dtype("Not", t, bool_, "the operand");
  return add_op1(OpKind::LogicalNot, {t}, t.spec());
}
Tensor isnan(const Tensor& t) { return float_class(OpKind::IsNan, t); }
Tensor isinf(const Tensor& t) { return float_class(OpKind::IsInf, t); }
Tensor isfinite(const Tensor& t) { return float_class(OpKind::IsFinite, t); }
Tensor floor(const Tensor& t) { return unary_float(OpKind::Floor, t); }
Tensor ceil(const Tensor& t) { return unary_float(OpKind::Ceil, t); }
Tensor log2(const Tensor& t) { return unary_float(OpKind::Log2, t); }
Tensor swish(const Tensor& t) { return unary_float(OpKind::Swish, t); }
Tensor relu_(const Tensor& t) { return unary_float(OpKind::ReluInplace, t); }
Tensor gelu_(const Tensor& t) { return unary_float(OpKind::GeluInplace, t); }
Tensor geluerf_(const Tensor& t) { return unary_float(OpKind::GeluErfInplace, t); }
Tensor exp_(const Tensor& t) { return unary_float(OpKind::ExpInplace, t); }
Tensor swish_(const Tensor& t) { return unary_float(OpKind::SwishInplace, t); }
Tensor clamp(const Tensor& t, double min, double max) { return clip(t, min, max); }
Tensor increment_mod(const Tensor& t, double increment, double modulus) {
  return counter_update(OpKind::IncrementMod, t, increment, modulus);
}
Tensor increment_mod_(const Tensor& t, double increment, double modulus) {
  return counter_update(OpKind::IncrementModInplace, t, increment, modulus);
}
Tensor cast(const Tensor& t, DType to) {
  if (is_float8(to) || is_float8(t.dtype()))
    throw DTypeError("Cast: cannot cast " + to_string(t) + " to " + std::string(name(to)) +
                     ": float8 converts only with a power-of-two scale, through "
                     "ops::pow2scale_cast_to_fp8 and ops::pow2scale_cast_from_fp8 (as in PopXL)");
  return add_op1(OpKind::Cast, {t}, TensorSpec{t.shape(), to}, CastAttrs{to});
}
Tensor pow2scale_cast_to_fp8(const Tensor& t, const Tensor& log2_scale, DType dtype) {
  constexpr std::string_view op = "Pow2ScaleThenCast";
  if (!is_float8(dtype))
    throw DTypeError(std::string(op) + ": dtype must be float8_143 or float8_152, got " +
                     std::string(name(dtype)));
  if (t.dtype() != float32 && t.dtype() != float16)
    throw DTypeError(std::string(op) + ": expected a float32 or float16 tensor, got " +
                     to_string(t));
  detail::check_log2_scale(op, log2_scale);
  return add_op1(OpKind::Pow2ScaleThenCast, {t, log2_scale}, TensorSpec{t.shape(), dtype},
                 CastAttrs{dtype});
}
Tensor pow2scale_cast_from_fp8(const Tensor& t, const Tensor& log2_scale, DType dtype) {
  constexpr std::string_view op = "CastThenPow2Scale";
  if (dtype != float32 && dtype != float16)
    throw DTypeError(std::string(op) + ": dtype must be float32 or float16, got " +
                     std::string(name(dtype)));
  detail::check_float8(op, t, "the input");
  detail::check_log2_scale(op, log2_scale);
  return add_op1(OpKind::CastThenPow2Scale, {t, log2_scale}, TensorSpec{t.shape(), dtype},
                 CastAttrs{dtype});
}
Tensor identity(const Tensor& t) { return add_op1(OpKind::Identity, {t}, t.spec()); }
Tensor rename(const Tensor& t, std::string_view output_name) {
  return add_op1(OpKind::Identity, {t}, t.spec(), NoAttrs{}, output_name);
}
Tensor detach(const Tensor& t) { return add_op1(OpKind::Detach, {t}, t.spec()); }
Tensor detach_(const Tensor& t) { return add_op1(OpKind::DetachInplace, {t}, t.spec()); }

Tensor add(const Tensor& a, const Tensor& b) { return binary_arith(OpKind::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_arith(OpKind::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_arith(OpKind::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_arith(OpKind::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) {
  detail::check_float("Pow", a);
  return binary(OpKind::Pow, a, b, a.dtype());
}
Tensor pow(const Tensor& a, double exponent) { return pow(a, constant(exponent, a.dtype())); }
Tensor fmod(const Tensor& a, const Tensor& b) { return binary_arith(OpKind::Fmod, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_arith(OpKind::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_arith(OpKind::Minimum, a, b); }
Tensor equal(const Tensor& a, const Tensor& b) { return binary(OpKind::Equal, a, b, bool_); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return binary(OpKind::NotEqual, a, b, bool_); }
Tensor greater(const Tensor& a, const Tensor& b) { return ordering(OpKind::Greater, a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) {
  return ordering(OpKind::GreaterEqual, a, b);
}
Tensor less(const Tensor& a, const Tensor& b) { return ordering(OpKind::Less, a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return ordering(OpKind::LessEqual, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary_logical(OpKind::LogicalAnd, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary_logical(OpKind::LogicalOr, a, b);
}
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  detail::check_dtype("Where", condition, bool_, "the condition");
  detail::check_same_dtype("Where", a, b);
  Shape shape =
      broadcast_shapes(broadcast_shapes(condition.shape(), a.shape(), "Where"), b.shape(), "Where");
  return add_op1(OpKind::Where, {condition, a, b}, TensorSpec{std::move(shape), a.dtype()});
}

} // namespace pxl::ops
