// Element-wise kernels: unary math, logic and copies, and the one-pass gradients of gelu and
// tanh (elementwise_binary.cpp has the binary ops and where, convert.cpp the casts).
#include "common.hpp"
#include "half_blocks.hpp"
#include "prefetch.hpp"
#include "vector_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace pxl::emu::detail {

// Element-wise unary kernels: math, logic and copies.

namespace {

/// y[i] = f(x[i]) over the worker's share, computing in compute_t<In> (half to half in float
/// blocks).
template <typename In, typename Out, typename F>
StepFn map_step(const OpBuffers& buffers, std::int64_t n, F f) {
  const In* x = typed<const In>(buffers.inputs[0]);
  Out* y = typed<Out>(buffers.outputs[0]);
  if constexpr (std::is_same_v<In, half> && std::is_same_v<Out, half>)
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      map_half(x + b, y + b, e - b, f);
    };
  else
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      for (std::int64_t i = b; i < e; ++i)
        y[i] = static_cast<Out>(f(static_cast<compute_t<In>>(x[i])));
    };
}

/// A float32/float16 op computing `f` in float.
template <typename F>
StepFn float_unary(const KernelOp& op, const OpBuffers& buffers, F f) {
  const auto& spec = op.input(0).spec();
  return dispatch_float(op, spec.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    return map_step<T, T>(buffers, spec.nelms(), f);
  });
}

/// Also int32; `fi` works on int32 with wrap-around (two's complement) instead of overflow.
template <typename F, typename G>
StepFn signed_unary(const KernelOp& op, const OpBuffers& buffers, F f, G fi) {
  const auto& spec = op.input(0).spec();
  if (spec.dtype == int32)
    return map_step<std::int32_t, std::int32_t>(buffers, spec.nelms(), fi);
  return float_unary(op, buffers, f);
}

std::int32_t wrap_negate(std::int32_t x) {
  return static_cast<std::int32_t>(0u - static_cast<std::uint32_t>(x));
}

/// tanh in double, branch-free: (1 - e) / (1 + e) with e = exp(-2|x|), which cannot overflow
/// (beyond |x| = 350 the quotient is 1 in double anyway, hence the clamp). Below |x| = 1e-3,
/// where 1 - e would cancel, the series x - x^3/3 + 2x^5/15 is exact to far beyond float.
/// NaN stays NaN, ±inf gives ±1, -0 stays -0.
inline float tanh_bounded(float x) {
  const double xd = x;
  const double ax = std::fabs(xd);
  const double t = -2.0 * ax;
  const double e = exp_clamped(t);
  const double big = std::copysign((1.0 - e) / (1.0 + e), xd);
  const double x2 = xd * xd;
  const double small = xd * (1.0 - x2 * (1.0 / 3.0 - x2 * (2.0 / 15.0)));
  return static_cast<float>(select(ax < 1e-3, small, big));
}

// One clone per instruction set; see PXL_VECTOR_CLONES. exp in double, rounded to float once.
PXL_VECTOR_CLONES void exp_f32(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(exp_clamped(static_cast<double>(x[i])));
}

PXL_VECTOR_CLONES void tanh_f32(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = tanh_bounded(x[i]);
}

/// A float32/float16 op whose float loop `f(x, y, n)` (an instruction-set clone) runs over
/// the worker's share, or over its float16 share widened block by block: float16 results are
/// the float32 kernel's rounded to half.
StepFn float_blocks(const KernelOp& op, const OpBuffers& buffers,
                    void (*f)(const float*, float*, std::int64_t)) {
  const auto& spec = op.input(0).spec();
  const std::int64_t n = spec.nelms();
  switch (spec.dtype) {
  case float32: {
    const float* x = typed<const float>(buffers.inputs[0]);
    float* y = typed<float>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      for_prefetched_blocks(
          b, e, [&](std::int64_t j, std::int64_t k) { f(x + j, y + j, k - j); }, x,
          static_cast<const float*>(y));
    };
  }
  case float16: {
    const half* x = typed<const half>(buffers.inputs[0]);
    half* y = typed<half>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      map_half_blocks(x + b, y + b, e - b, f);
    };
  }
  default:
    unsupported_dtype(op, spec.dtype);
  }
}

} // namespace

StepFn compile_Negate(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return signed_unary(
      op, buffers, [](float x) { return -x; }, wrap_negate);
}

StepFn compile_Abs(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return signed_unary(
      op, buffers, [](float x) { return std::fabs(x); },
      [](std::int32_t x) { return x < 0 ? wrap_negate(x) : x; });
}

StepFn compile_Exp(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_blocks(op, buffers, exp_f32);
}

StepFn compile_Log(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return std::log(x); });
}

StepFn compile_Sqrt(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return std::sqrt(x); });
}

StepFn compile_Tanh(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_blocks(op, buffers, tanh_f32);
}

StepFn compile_Sigmoid(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
}

StepFn compile_Relu(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return relu_value(x); });
}

StepFn compile_GeluErf(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // 1 + erf(z) == erfc(-z), avoiding cancellation for negative x; double because erfc(z)
  // amplifies the rounding of z by ~2z², which float would make visible in the tail. (Gelu, the
  // tanh form, is below.)
  return float_unary(op, buffers, [](float x) {
    const double xd = x;
    return static_cast<float>(0.5 * xd * std::erfc(-0.7071067811865476 * xd));
  });
}

namespace {
/// (x + increment) % modulus: fmod in float for floats, exact in 64 bits for int32 (the op
/// checked that both are whole int32 values there). In place the output is the input buffer,
/// each element read before it is written.
StepFn counter_step(const KernelOp& op, const OpBuffers& buffers) {
  const auto& s = op.attrs_as<ScalarAttrs>();
  const auto& spec = op.input(0).spec();
  if (spec.dtype == int32) {
    const auto inc = static_cast<std::int64_t>(s.a), mod = static_cast<std::int64_t>(s.b);
    return map_step<std::int32_t, std::int32_t>(buffers, spec.nelms(), [inc, mod](std::int32_t x) {
      return static_cast<std::int32_t>((x + inc) % mod);
    });
  }
  const auto inc = static_cast<float>(s.a), mod = static_cast<float>(s.b);
  return float_unary(op, buffers, [inc, mod](float x) { return std::fmod(x + inc, mod); });
}
} // namespace

StepFn compile_IncrementMod(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return counter_step(op, buffers);
}

StepFn compile_IncrementModInplace(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return counter_step(op, buffers);
}

StepFn compile_LogicalNot(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return map_step<bool, bool>(buffers, op.input(0).nelms(), [](bool x) { return !x; });
}

namespace {
/// A bool per element of a float32/float16 tensor: `is(x)`, x in float.
template <typename F>
StepFn classify(const KernelOp& op, const OpBuffers& buffers, F is) {
  const auto& spec = op.input(0).spec();
  return dispatch_float(op, spec.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    return map_step<T, bool>(buffers, spec.nelms(), is);
  });
}
} // namespace

StepFn compile_IsNan(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return classify(op, buffers, [](float x) { return x != x; });
}

StepFn compile_IsInf(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return classify(op, buffers, [](float x) { return std::isinf(x); });
}

StepFn compile_IsFinite(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return classify(op, buffers, [](float x) { return std::isfinite(x); });
}

StepFn compile_Floor(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return std::floor(x); });
}

StepFn compile_Ceil(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return std::ceil(x); });
}

StepFn compile_Log2(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return std::log2(x); });
}

StepFn compile_Swish(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // x / (1 + e^-x) in double (no overflow of e^-x for a float x but at -inf), rounded once; at
  // -inf its limit, -0, where the formula gives -inf / inf = NaN.
  return float_unary(op, buffers, [](float x) {
    const double xd = x;
    return x == -std::numeric_limits<float>::infinity()
               ? -0.0f
               : static_cast<float>(xd / (1.0 + std::exp(-xd)));
  });
}

StepFn compile_Identity(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& spec = op.input(0).spec();
  return copy_step(buffers.outputs[0], buffers.inputs[0], spec.nelms(), size_of(spec.dtype));
}

StepFn compile_Detach(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_Identity(ctx, op, buffers);
}

// erf, sin and cos in double, rounded once: every float result is the nearest to the exact
// value, as the reference's.
StepFn compile_Erf(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers,
                     [](float x) { return static_cast<float>(std::erf(static_cast<double>(x))); });
}

StepFn compile_Sin(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers,
                     [](float x) { return static_cast<float>(std::sin(static_cast<double>(x))); });
}

StepFn compile_Cos(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers,
                     [](float x) { return static_cast<float>(std::cos(static_cast<double>(x))); });
}

StepFn compile_Sign(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // NaN stays NaN; ±0 gives 0.
  return signed_unary(
      op, buffers, [](float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x * 0.0f); },
      [](std::int32_t x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); });
}

StepFn compile_Clip(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // The bounds rounded to float once; NaN stays NaN (neither comparison holds).
  const auto& s = op.attrs_as<ScalarAttrs>();
  const auto lo = static_cast<float>(s.a), hi = static_cast<float>(s.b);
  return float_unary(op, buffers, [lo, hi](float x) { return x < lo ? lo : (x > hi ? hi : x); });
}

// Element-wise binary kernels with NumPy broadcasting, and where.

// Gelu (tanh form) as a loop the compiler vectorises: a branch-free exp in double instead of
// one libm call per element.

namespace {

/// 1/(1 + e^t) from q = e^-|t| and r = 1/(1 + q), |t| clamped to 700: r is taken in float
/// (a double division costs three times as much, and 1 + q lies in [1, 2], so r is within
/// 2^-23 relative), the rest in double. NaN stays NaN.
inline double logistic(double t) {
  const double a = std::fabs(t);
  const double q = exp_bounded(-select(a > 700.0, 700.0, a));
  const double r = static_cast<double>(1.0f / static_cast<float>(1.0 + q));
  return select(t > 0.0, q * r, r);
}

/// gelu(x) = 0.5x(1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi)(x + 0.044715x^3): the
/// second form has no cancellation for negative x. u is formed in double because exp(-2u)
/// amplifies its rounding error by |2u|, which float would turn into a visible relative error
/// in the tail. Beyond -2u = 700 the result rounds to a signed zero in float either way, and
/// is x·0 (so NaN at x = -inf, as x / (1 + exp(-2u)) gives).
inline float gelu_tanh(float x) {
  const double xd = x;
  const double u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd);
  const double t = -2.0 * u;
  return static_cast<float>(xd * select(t > 700.0, 0.0, logistic(t)));
}

// Tested on odd lengths for 1-4 workers: results do not depend on where a worker's range
// starts, and stay within 1e-6 of the double reference.
PXL_VECTOR_CLONES void gelu_f32(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = gelu_tanh(x[i]);
}

/// g·gelu'(x) = g·(s + 2x·u'·e·s²) with e = exp(-2u), s = 1/(1 + e), u as in gelu_tanh: the
/// derivative 0.5(1 + t) + 0.5x(1 - t²)u' of the tanh form, t = tanh(u), rewritten so that
/// neither term cancels (1 + t = 2s, 1 - t² = 4e·s²). In double, rounded once: the two terms
/// cancel where gelu' crosses zero (x near -0.75), so s is not taken through logistic's float
/// reciprocal. Beyond |u| = 350 the second term is below 1e-290 and is dropped, so that
/// x = ±inf gives the limits g and 0 rather than inf·0; NaN stays NaN.
inline float gelu_grad_tanh(float x, float g) {
  constexpr double k = 0.7978845608028654, c = 0.044715;
  const double xd = x, x2 = xd * xd;
  const double u = k * (xd + c * x2 * xd);
  const double du = k * (1.0 + 3.0 * c * x2);
  const double e = exp_clamped(-2.0 * u);
  const double s = 1.0 / (1.0 + e);
  const double tail = select(std::fabs(u) < 350.0, 2.0 * xd * du * e * s * s, 0.0);
  return static_cast<float>(static_cast<double>(g) * (s + tail));
}

PXL_VECTOR_CLONES void gelu_grad_f32(const float* x, const float* g, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = gelu_grad_tanh(x[i], g[i]);
}

/// g·(1 - y²) as g·(1 - y)(1 + y) in double, rounded once: no cancellation as |y| nears 1,
/// where 1 - y² in float would keep few of its bits.
PXL_VECTOR_CLONES void tanh_grad_f32(const float* y, const float* g, float* r, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double yd = y[i];
    r[i] = static_cast<float>(static_cast<double>(g[i]) * ((1.0 - yd) * (1.0 + yd)));
  }
}

/// A gradient in one pass, out = f(t, grad) element by element, t and grad of one float dtype
/// and shape: `f32` on float32 runs; float16 runs it on blocks widened to float, its results
/// rounded to half.
StepFn one_pass_grad(const KernelOp& op, const OpBuffers& buffers,
                     void (*f32)(const float*, const float*, float*, std::int64_t)) {
  const auto& spec = op.input(0).spec();
  const std::int64_t n = spec.nelms();
  switch (spec.dtype) {
  case float32: {
    const float* t = typed<const float>(buffers.inputs[0]);
    const float* g = typed<const float>(buffers.inputs[1]);
    float* y = typed<float>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      for_prefetched_blocks(
          b, e, [&](std::int64_t j, std::int64_t k) { f32(t + j, g + j, y + j, k - j); }, t, g);
    };
  }
  case float16: {
    const half* t = typed<const half>(buffers.inputs[0]);
    const half* g = typed<const half>(buffers.inputs[1]);
    half* y = typed<half>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      float ft[half_block], fg[half_block], fy[half_block];
      for (std::int64_t j = b; j < e; j += half_block) {
        const std::int64_t m = std::min(half_block, e - j);
        widen(t + j, 1, ft, m);
        widen(g + j, 1, fg, m);
        f32(ft, fg, fy, m);
        narrow(fy, y + j, 1, m);
      }
    };
  }
  default:
    unsupported_dtype(op, spec.dtype);
  }
}

} // namespace

StepFn compile_Gelu(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_blocks(op, buffers, gelu_f32);
}

StepFn compile_GeluGrad(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return one_pass_grad(op, buffers, gelu_grad_f32);
}

StepFn compile_TanhGrad(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return one_pass_grad(op, buffers, tanh_grad_f32);
}

// The in-place forms run their op's kernel on the aliased buffer: each element is read before
// it is written, by the worker that writes it. A view is held as a copy.
PXL_KERNEL_AS(ReluInplace, Relu)
PXL_KERNEL_AS(GeluInplace, Gelu)
PXL_KERNEL_AS(GeluErfInplace, GeluErf)
PXL_KERNEL_AS(ExpInplace, Exp)
PXL_KERNEL_AS(SwishInplace, Swish)
PXL_KERNEL_AS(DetachInplace, Identity)

} // namespace pxl::emu::detail
