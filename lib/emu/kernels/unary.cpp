// Element-wise unary kernels: math, logic, cast and copies.
#include "common.hpp"
#include "vector_math.hpp"

#include <cmath>

namespace pxl::emu::detail {

namespace {

/// y[i] = f(x[i]) over the worker's share, computing in compute_t<In>.
template <typename In, typename Out, typename F>
StepFn map_step(const OpBuffers& buffers, std::int64_t n, F f) {
  const In* x = typed<const In>(buffers.inputs[0]);
  Out* y = typed<Out>(buffers.outputs[0]);
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
  switch (spec.dtype) {
  case float32:
    return map_step<float, float>(buffers, spec.nelms(), f);
  case float16:
    return map_step<half, half>(buffers, spec.nelms(), f);
  default:
    unsupported_dtype(op, spec.dtype);
  }
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
  const double e = exp_bounded(std::max(-2.0 * ax, -700.0));
  const double big = std::copysign((1.0 - e) / (1.0 + e), xd);
  const double x2 = xd * xd;
  const double small = xd * (1.0 - x2 * (1.0 / 3.0 - x2 * (2.0 / 15.0)));
  return static_cast<float>(ax < 1e-3 ? small : big);
}

// One clone per instruction set; see PXL_VECTOR_CLONES.
PXL_VECTOR_CLONES void tanh_f32(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = tanh_bounded(x[i]);
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
  return float_unary(op, buffers, [](float x) { return std::exp(x); });
}

StepFn compile_Log(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return std::log(x); });
}

StepFn compile_Sqrt(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return std::sqrt(x); });
}

StepFn compile_Tanh(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  if (op.input(0).dtype() == float32) {
    const float* x = typed<const float>(buffers.inputs[0]);
    float* y = typed<float>(buffers.outputs[0]);
    const std::int64_t n = op.input(0).nelms();
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      tanh_f32(x + b, y + b, e - b);
    };
  }
  return float_unary(op, buffers, [](float x) { return tanh_bounded(x); });
}

StepFn compile_Sigmoid(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_unary(op, buffers, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
}

StepFn compile_Relu(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // NaN propagates; -0 becomes +0.
  return float_unary(op, buffers, [](float x) { return x != x ? x : (x > 0.0f ? x : 0.0f); });
}

StepFn compile_GeluErf(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // 1 + erf(z) == erfc(-z), avoiding cancellation for negative x; double because erfc(z)
  // amplifies the rounding of z by ~2z², which float would make visible in the tail. (Gelu, the
  // tanh form, lives in gelu.cpp.)
  return float_unary(op, buffers, [](float x) {
    const double xd = x;
    return static_cast<float>(0.5 * xd * std::erfc(-0.7071067811865476 * xd));
  });
}

StepFn compile_LogicalNot(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return map_step<bool, bool>(buffers, op.input(0).nelms(), [](bool x) { return !x; });
}

StepFn compile_IsNan(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& spec = op.input(0).spec();
  const auto is_nan = [](float x) { return x != x; };
  switch (spec.dtype) {
  case float32:
    return map_step<float, bool>(buffers, spec.nelms(), is_nan);
  case float16:
    return map_step<half, bool>(buffers, spec.nelms(), is_nan);
  default:
    unsupported_dtype(op, spec.dtype);
  }
}

// Cast converts as pxl::convert_element defines: float → integer truncates and saturates (NaN
// → 0, ±inf → the extremes), which C++'s own conversion leaves undefined.
StepFn compile_Cast(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& in = op.input(0).spec();
  const DType to = op.output(0).dtype();
  if (in.dtype == to)
    return copy_step(buffers.outputs[0], buffers.inputs[0], in.nelms(), size_of(to));
  return visit_dtype(in.dtype, [&](auto from_t) {
    using From = typename decltype(from_t)::type;
    return visit_dtype(to, [&](auto to_t) {
      using To = typename decltype(to_t)::type;
      const From* x = typed<const From>(buffers.inputs[0]);
      To* y = typed<To>(buffers.outputs[0]);
      const std::int64_t n = in.nelms();
      return StepFn([=](unsigned w, unsigned nw) {
        const auto [b, e] = worker_range(n, w, nw);
        for (std::int64_t i = b; i < e; ++i)
          y[i] = convert_element<To>(x[i]);
      });
    });
  });
}

StepFn compile_Identity(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& spec = op.input(0).spec();
  return copy_step(buffers.outputs[0], buffers.inputs[0], spec.nelms(), size_of(spec.dtype));
}

StepFn compile_Detach(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_Identity(ctx, op, buffers);
}

} // namespace pxl::emu::detail
