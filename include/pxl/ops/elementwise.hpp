// Element-wise ops: unary math, NumPy-broadcasting binary ops, comparisons, logic, cast.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <string_view>

namespace pxl::ops {

// Unary. Math ops need a floating-point tensor; negate and abs also take int32.
Tensor negate(const Tensor& t);
Tensor abs(const Tensor& t);
Tensor exp(const Tensor& t);
Tensor log(const Tensor& t);
Tensor sqrt(const Tensor& t);
Tensor tanh(const Tensor& t);
Tensor sigmoid(const Tensor& t);
Tensor relu(const Tensor& t);
/// Tanh approximation, as PopXL's gelu.
Tensor gelu(const Tensor& t);
/// Exact, with erf.
Tensor geluerf(const Tensor& t);
/// `grad` · gelu'(x) for the tanh form, in one pass: gelu's gradient as autodiff emits it
/// (PopXL's GeluGrad). `x` and `grad` are float32 or float16 tensors of one shape and dtype.
Tensor gelu_grad(const Tensor& x, const Tensor& grad);
/// `grad` · (1 - y²) in one pass, y = tanh(x): tanh's gradient as autodiff emits it (PopXL's
/// TanhGrad). `y` and `grad` are float32 or float16 tensors of one shape and dtype.
Tensor tanh_grad(const Tensor& y, const Tensor& grad);
/// The error function.
Tensor erf(const Tensor& t);
Tensor sin(const Tensor& t);
Tensor cos(const Tensor& t);
/// -1, 0 or 1 (float32, float16 or int32; NaN stays NaN). Its gradient is zero.
Tensor sign(const Tensor& t);
/// `t` limited to [min, max] (float32 or float16; NaN stays NaN), PopXL's clip. The gradient
/// passes where min <= t <= max, as PyTorch's clamp. ValueError when min > max.
Tensor clip(const Tensor& t, double min, double max);
Tensor logical_not(const Tensor& t);
/// bool tensor, true where `t` is NaN.
Tensor isnan(const Tensor& t);
/// bool tensor, true where `t` is +inf or -inf.
Tensor isinf(const Tensor& t);
/// bool tensor, true where `t` is neither infinite nor NaN.
Tensor isfinite(const Tensor& t);
/// Rounded toward -inf and +inf (float32 or float16; ±0, ±inf and NaN stay). Autodiff refuses
/// them, as PopXL does: their gradient is zero wherever it exists.
Tensor floor(const Tensor& t);
Tensor ceil(const Tensor& t);
/// Base-2 logarithm.
Tensor log2(const Tensor& t);
/// x · sigmoid(x) (PopXL's swish, PyTorch's SiLU); -0 at -inf, its limit.
Tensor swish(const Tensor& t);
/// relu, gelu, geluerf, exp and swish in place (PopXL's `relu_`, ...): `t` (float32 or float16)
/// is modified and the result aliases it, so every later reader of `t` sees the new values.
/// Not differentiable, as PopART's in-place ops: autodiff through one is a GraphError naming
/// it. A GraphError when `t` is a view (op_flags::View: `reshape_`, `slice_`, ...).
Tensor relu_(const Tensor& t);
Tensor gelu_(const Tensor& t);
Tensor geluerf_(const Tensor& t);
Tensor exp_(const Tensor& t);
Tensor swish_(const Tensor& t);
/// (t + increment) % modulus, the remainder with the sign of the sum (fmod, as `%`): PopXL's
/// counter update. float32, float16 (the sum and remainder in float, rounded once) or int32
/// (exact: the sum in 64 bits), where `increment` and `modulus` must be whole numbers in int32's
/// range. ValueError for a modulus of 0. Not differentiable, as in PopXL.
Tensor increment_mod(const Tensor& t, double increment, double modulus);
/// As increment_mod, in place: the output aliases `t`.
Tensor increment_mod_(const Tensor& t, double increment, double modulus);
/// PopXL's alias of clip.
Tensor clamp(const Tensor& t, double min, double max);
/// Converts every element by pxl::convert_element: floats round to nearest; float → integer
/// truncates toward zero and saturates (NaN → 0, +inf and too large → the maximum, -inf and
/// too small → the minimum; NumPy leaves these unspecified, Poplar saturates); integer →
/// integer wraps modulo 2^bits; → bool is x != 0.
/// float8 is refused either way (a DTypeError): it converts only with a scale, below.
Tensor cast(const Tensor& t, DType to);
/// PopXL `pow2scale_cast_to_fp8`: each element of `t` (float32 or float16) times
/// 2^log2_scale, rounded to `dtype` (float8_143 or float8_152) to nearest, ties to even. Beyond
/// the format's range (±240, ±57344) the result is NaN, the format's only NaN byte 0x80, as
/// `float8_from_double` with nan_on_overflow; a result that rounds to 0 is +0. `log2_scale` is
/// an int32 scalar tensor, read when the op runs: a value outside [-32, 32) stops the run with
/// an error (PopXL's `throwIfLog2ScaleTensorNotInRange`, on by default). Not differentiable.
Tensor pow2scale_cast_to_fp8(const Tensor& t, const Tensor& log2_scale, DType dtype);
/// PopXL `pow2scale_cast_from_fp8`: each element of `t` (float8_143 or float8_152) times
/// 2^log2_scale, as `dtype` (float32: exact; float16: rounded once to nearest); NaN stays NaN.
/// `log2_scale` as for pow2scale_cast_to_fp8. Not differentiable.
Tensor pow2scale_cast_from_fp8(const Tensor& t, const Tensor& log2_scale, DType dtype);
/// A copy; gradients flow through it.
Tensor identity(const Tensor& t);
/// PopXL's `rename`, its alias of `identity(t, output_name)`: a copy of `t` (gradients flow
/// through it) whose tensor is named `output_name` (with the name scope's prefix), or as
/// identity's when the name is empty.
Tensor rename(const Tensor& t, std::string_view output_name = "");
/// A copy that blocks gradients.
Tensor detach(const Tensor& t);
/// PopXL's `detach_`: `t` as a view that blocks gradients (op_flags::View: pxl holds it as a
/// copy, and refuses to write through it, or to read it after `t` is modified in place).
Tensor detach_(const Tensor& t);

// Binary, NumPy broadcasting, equal dtypes. A double operand becomes a constant of the
// tensor's dtype.
// int32 add, sub, mul and negate wrap around (two's complement), never overflow.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
/// a / b. Floats follow IEEE (x / 0 is ±inf, 0 / 0 NaN). int32 truncates toward zero (C++'s
/// `/`, Poplar's divide), with NumPy's values where C++ has none: x / 0 is 0 (NumPy's
/// floor_divide gives 0 with a warning) and INT32_MIN / -1 wraps to INT32_MIN.
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
/// The remainder of a / b with the sign of `a`, as C's fmod and NumPy's fmod (also `a % b`).
/// Floats: exact; x % 0 is NaN. int32: C++'s `%`, with NumPy's value where C++ has none:
/// x % 0 is 0 and INT32_MIN % -1 is 0. Its gradient is g for `a` and -trunc(a / b) · g for
/// `b` (PopXL has only the first).
Tensor fmod(const Tensor& a, const Tensor& b);
/// Element-wise larger and smaller (NaN propagates; at a tie the gradient goes to `a`).
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
/// Comparisons, with bool results. A NaN operand compares false except in not_equal.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
/// `condition ? a : b` element-wise, all three broadcast together; `condition` is bool.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

} // namespace pxl::ops
