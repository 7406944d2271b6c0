// Reference kernels of the element-wise ops: each output element from its (broadcast) operands,
// computed in double and rounded to the output dtype.
//
// Conventions the emulator must match:
// - int32 arithmetic wraps around (two's complement); Div on integers truncates toward zero
//   (C++ `/`), an integer division by zero yields 0 and INT32_MIN / -1 wraps to INT32_MIN.
// - Maximum and Relu propagate NaN.
// - Fmod on integers is C++'s `%` (the sign of the dividend); x % 0 yields 0.
// - Pow is std::pow (NaN where it is NaN, e.g. a negative base with a fractional exponent).
// - Cast is pxl::convert_element: nearest for float targets, toward zero and saturating for
//   float → integer (NaN → 0), modulo 2^bits for integer → integer, `x != 0` for bool.
#include "ref_util.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

namespace pxl::testing {

namespace {

template <typename F>
void unary(std::span<const HostTensor* const> inputs, std::span<HostTensor* const> outputs, F f) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  for (std::int64_t i = 0; i < y.nelms(); ++i)
    ref::store(y, i, f(ref::load(x, i)));
}

/// Output element i = f(operand values broadcast to i's multi-index), for any operand count.
template <typename F>
void broadcast_nary(std::span<const HostTensor* const> inputs, std::span<HostTensor* const> outputs,
                    F f) {
  HostTensor& y = *outputs[0];
  std::vector<double> args(inputs.size());
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const Shape index = ref::unravel(i, y.shape());
    for (std::size_t k = 0; k < inputs.size(); ++k)
      args[k] = ref::load(*inputs[k], ref::broadcast_source(index, inputs[k]->shape()));
    ref::store(y, i, f(args));
  }
}

template <typename F>
void binary(std::span<const HostTensor* const> inputs, std::span<HostTensor* const> outputs, F f) {
  broadcast_nary(inputs, outputs, [&](const std::vector<double>& a) { return f(a[0], a[1]); });
}

void copy(std::span<const HostTensor* const> inputs, std::span<HostTensor* const> outputs) {
  const auto src = inputs[0]->bytes();
  std::memcpy(outputs[0]->bytes().data(), src.data(), src.size());
}

double relu(double x) { return std::isnan(x) ? x : (x > 0.0 ? x : 0.0); }

double gelu_tanh(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }

/// gelu_tanh's derivative as written: 0.5(1 + t) + 0.5x(1 - t²)u'.
double gelu_tanh_derivative(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  const double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

} // namespace

PXL_REF_KERNEL(Negate) {
  unary(inputs, outputs, [](double x) { return -x; });
}
PXL_REF_KERNEL(Abs) {
  unary(inputs, outputs, [](double x) { return std::fabs(x); });
}
PXL_REF_KERNEL(Exp) {
  unary(inputs, outputs, [](double x) { return std::exp(x); });
}
PXL_REF_KERNEL(Log) {
  unary(inputs, outputs, [](double x) { return std::log(x); });
}
PXL_REF_KERNEL(Sqrt) {
  unary(inputs, outputs, [](double x) { return std::sqrt(x); });
}
PXL_REF_KERNEL(Tanh) {
  unary(inputs, outputs, [](double x) { return std::tanh(x); });
}
PXL_REF_KERNEL(Sigmoid) {
  unary(inputs, outputs, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}
PXL_REF_KERNEL(Relu) { unary(inputs, outputs, relu); }
PXL_REF_KERNEL(Gelu) { unary(inputs, outputs, gelu_tanh); }
PXL_REF_KERNEL(GeluErf) { unary(inputs, outputs, gelu_erf); }
PXL_REF_KERNEL(GeluGrad) {
  binary(inputs, outputs, [](double x, double g) { return g * gelu_tanh_derivative(x); });
}
PXL_REF_KERNEL(TanhGrad) {
  binary(inputs, outputs, [](double y, double g) { return g * (1.0 - y * y); });
}
PXL_REF_KERNEL(Erf) {
  unary(inputs, outputs, [](double x) { return std::erf(x); });
}
PXL_REF_KERNEL(Sin) {
  unary(inputs, outputs, [](double x) { return std::sin(x); });
}
PXL_REF_KERNEL(Cos) {
  unary(inputs, outputs, [](double x) { return std::cos(x); });
}
PXL_REF_KERNEL(Sign) {
  unary(inputs, outputs, [](double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x * 0.0); });
}
// The bounds in the tensor's dtype, as the kernel has them.
PXL_REF_KERNEL(Clip) {
  const auto& s = op.attrs<OpKind::Clip>();
  const double lo = ref::round_to(inputs[0]->dtype(), s.a);
  const double hi = ref::round_to(inputs[0]->dtype(), s.b);
  unary(inputs, outputs, [lo, hi](double x) { return x < lo ? lo : (x > hi ? hi : x); });
}
PXL_REF_KERNEL(LogicalNot) {
  unary(inputs, outputs, [](double x) { return x == 0.0 ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(IsNan) {
  unary(inputs, outputs, [](double x) { return std::isnan(x) ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(IsInf) {
  unary(inputs, outputs, [](double x) { return std::isinf(x) ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(IsFinite) {
  unary(inputs, outputs, [](double x) { return std::isfinite(x) ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(Floor) {
  unary(inputs, outputs, [](double x) { return std::floor(x); });
}
PXL_REF_KERNEL(Ceil) {
  unary(inputs, outputs, [](double x) { return std::ceil(x); });
}
PXL_REF_KERNEL(Log2) {
  unary(inputs, outputs, [](double x) { return std::log2(x); });
}
// Swish at -inf is its limit, -0.
PXL_REF_KERNEL(Swish) {
  unary(inputs, outputs,
        [](double x) { return std::isinf(x) && x < 0 ? -0.0 : x / (1.0 + std::exp(-x)); });
}
// (x + increment) % modulus: int32 exactly (whole numbers, as the op requires); floats with
// the increment and modulus as floats and the sum rounded to float before the (exact)
// remainder, as the kernel computes.
PXL_REF_KERNEL(IncrementMod) {
  const auto& s = op.attrs_as<ScalarAttrs>();
  if (inputs[0]->dtype() == int32) {
    const auto inc = static_cast<std::int64_t>(s.a), mod = static_cast<std::int64_t>(s.b);
    unary(inputs, outputs, [&](double x) {
      return static_cast<double>((static_cast<std::int64_t>(x) + inc) % mod);
    });
    return;
  }
  const double inc = static_cast<float>(s.a), mod = static_cast<float>(s.b);
  unary(inputs, outputs,
        [&](double x) { return std::fmod(static_cast<double>(static_cast<float>(x + inc)), mod); });
}
PXL_REF_KERNEL(IncrementModInplace) { ref_IncrementMod(ev, op, inputs, outputs); }
// Cast from the source value as a double: every float32/float16 value is exact there, and
// convert_element's bounds (2^31, 2^32, ...) are the same numbers in double as in float.
PXL_REF_KERNEL(Cast) {
  const HostTensor& x = *inputs[0];
  HostTensor& y = *outputs[0];
  visit_dtype(y.dtype(), [&](auto type) {
    using T = typename decltype(type)::type;
    const bool from_int = is_integral(x.dtype());
    for (std::int64_t i = 0; i < y.nelms(); ++i) {
      const double v = ref::load(x, i);
      // Integer → integer wraps: do it in int64, where every int32/uint32/uint8 value fits.
      y.data<T>()[static_cast<std::size_t>(i)] =
          from_int && std::is_integral_v<T> && !std::is_same_v<T, bool>
              ? static_cast<T>(static_cast<std::int64_t>(v))
              : convert_element<T>(v);
    }
  });
}
// The float8 conversions from their definition: the value times 2^log2_scale, rounded once.
namespace test_ref_float8 {
int log2_scale_of(const Op& op, const HostTensor& t) {
  const std::int32_t s = t.data<std::int32_t>()[0];
  if (s < min_float8_log2_scale || s > max_float8_log2_scale)
    throw ValueError(op.debug_name() + ": log2_scale is " + std::to_string(s) +
                     ", outside [-32, 32)");
  return s;
}
} // namespace test_ref_float8
PXL_REF_KERNEL(Pow2ScaleThenCast) {
  const int s = test_ref_float8::log2_scale_of(op, *inputs[1]);
  HostTensor& y = *outputs[0];
  const Float8Format f = float8_format(y.dtype());
  for (std::int64_t i = 0; i < y.nelms(); ++i)
    reinterpret_cast<std::uint8_t*>(y.bytes().data())[i] =
        float8_from_double(ref::load(*inputs[0], i), f, s);
}
PXL_REF_KERNEL(CastThenPow2Scale) {
  const int s = test_ref_float8::log2_scale_of(op, *inputs[1]);
  const HostTensor& x = *inputs[0];
  const Float8Format f = float8_format(x.dtype());
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(x.bytes().data());
  for (std::int64_t i = 0; i < x.nelms(); ++i)
    ref::store(*outputs[0], i, float8_to_double(bytes[i], f, s));
}
PXL_REF_KERNEL(Identity) { copy(inputs, outputs); }
PXL_REF_KERNEL(Detach) { copy(inputs, outputs); }

PXL_REF_KERNEL(Add) {
  binary(inputs, outputs, [](double a, double b) { return a + b; });
}
PXL_REF_KERNEL(Sub) {
  binary(inputs, outputs, [](double a, double b) { return a - b; });
}
PXL_REF_KERNEL(Mul) {
  if (is_floating_point(outputs[0]->dtype())) {
    binary(inputs, outputs, [](double a, double b) { return a * b; });
    return;
  }
  // An int32 product needs up to 62 bits, more than a double holds exactly: multiply in int64
  // and wrap here (the wrapped value is exact as a double).
  binary(inputs, outputs, [](double a, double b) {
    const auto p = static_cast<std::int64_t>(a) * static_cast<std::int64_t>(b);
    return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(p)));
  });
}
PXL_REF_KERNEL(Div) {
  if (is_floating_point(outputs[0]->dtype())) {
    binary(inputs, outputs, [](double a, double b) { return a / b; });
    return;
  }
  binary(inputs, outputs, [](double a, double b) {
    const auto ia = static_cast<std::int64_t>(a), ib = static_cast<std::int64_t>(b);
    return ib == 0 ? 0.0 : static_cast<double>(ia / ib);
  });
}
PXL_REF_KERNEL(Pow) {
  binary(inputs, outputs, [](double a, double b) { return std::pow(a, b); });
}
PXL_REF_KERNEL(Fmod) {
  if (is_floating_point(outputs[0]->dtype())) {
    binary(inputs, outputs, [](double a, double b) { return std::fmod(a, b); });
    return;
  }
  binary(inputs, outputs, [](double a, double b) {
    const auto ia = static_cast<std::int64_t>(a), ib = static_cast<std::int64_t>(b);
    return ib == 0 ? 0.0 : static_cast<double>(ia % ib);
  });
}
PXL_REF_KERNEL(Maximum) {
  binary(inputs, outputs, [](double a, double b) {
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<double>::quiet_NaN();
    return a > b ? a : b;
  });
}
PXL_REF_KERNEL(Minimum) {
  binary(inputs, outputs, [](double a, double b) {
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<double>::quiet_NaN();
    return a < b ? a : b;
  });
}
PXL_REF_KERNEL(NotEqual) {
  binary(inputs, outputs, [](double a, double b) { return a != b ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(GreaterEqual) {
  binary(inputs, outputs, [](double a, double b) { return a >= b ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(Less) {
  binary(inputs, outputs, [](double a, double b) { return a < b ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(LessEqual) {
  binary(inputs, outputs, [](double a, double b) { return a <= b ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(Equal) {
  binary(inputs, outputs, [](double a, double b) { return a == b ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(Greater) {
  binary(inputs, outputs, [](double a, double b) { return a > b ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(LogicalAnd) {
  binary(inputs, outputs, [](double a, double b) { return a != 0.0 && b != 0.0 ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(LogicalOr) {
  binary(inputs, outputs, [](double a, double b) { return a != 0.0 || b != 0.0 ? 1.0 : 0.0; });
}
PXL_REF_KERNEL(Where) {
  broadcast_nary(inputs, outputs,
                 [](const std::vector<double>& a) { return a[0] != 0.0 ? a[1] : a[2]; });
}

// In place: the evaluator hands the input's value as the output, so each reads then writes it.
PXL_REF_KERNEL(ReluInplace) { ref_Relu(ev, op, inputs, outputs); }
PXL_REF_KERNEL(GeluInplace) { ref_Gelu(ev, op, inputs, outputs); }
PXL_REF_KERNEL(GeluErfInplace) { ref_GeluErf(ev, op, inputs, outputs); }
PXL_REF_KERNEL(ExpInplace) { ref_Exp(ev, op, inputs, outputs); }
PXL_REF_KERNEL(SwishInplace) { ref_Swish(ev, op, inputs, outputs); }
PXL_REF_KERNEL(DetachInplace) { ref_Detach(ev, op, inputs, outputs); }

} // namespace pxl::testing
