// Kernels of the float8 conversions (ops::pow2scale_cast_to_fp8 and _from_fp8): each element
// converted by pxl's float8 arithmetic (pxl/core/float8.hpp), scaled by 2^log2_scale read from
// the op's int32 scalar input as the step runs. A scale outside PopXL's [-32, 32) is recorded
// as the run's error, nothing is written, and the run stops after the step (RunErrors).
#include "../compile_context.hpp"
#include "../run_errors.hpp"
#include "common.hpp"

#include "pxl/core/float8.hpp"
#include "pxl/core/half.hpp"

#include <array>
#include <cmath>
#include <string>

namespace pxl::emu::detail {

namespace {

/// The step's scale, or none (recorded as the run's error by worker 0) when out of range.
struct Log2ScaleReader {
  const std::int32_t* log2_scale;
  RunErrors* errors;
  std::string op;

  bool read(unsigned worker, int& scale) const {
    scale = *log2_scale;
    if (scale >= min_float8_log2_scale && scale <= max_float8_log2_scale)
      return true;
    if (worker == 0 && errors)
      errors->record(op + ": log2_scale is " + std::to_string(scale) +
                     ", outside [-32, 32); nothing was converted");
    return false;
  }
};

Log2ScaleReader log2_scale_reader(const CompileContext& ctx, const KernelOp& op,
                                  const OpBuffers& buffers) {
  return {typed<const std::int32_t>(buffers.inputs[1]), ctx.errors, op.debug_name()};
}

template <typename From>
StepFn to_fp8_step(Log2ScaleReader scale, const From* x, std::uint8_t* y, std::int64_t n,
                   Float8Format f) {
  return [=](unsigned w, unsigned nw) {
    int s = 0;
    if (!scale.read(w, s))
      return;
    const auto [b, e] = worker_range(n, w, nw);
    for (std::int64_t i = b; i < e; ++i)
      y[i] = float8_from_double(static_cast<double>(static_cast<float>(x[i])), f, s);
  };
}

template <typename To>
StepFn from_fp8_step(Log2ScaleReader scale, const std::uint8_t* x, To* y, std::int64_t n,
                     Float8Format f) {
  const float* values = float8_values(f);
  return [=](unsigned w, unsigned nw) {
    int s = 0;
    if (!scale.read(w, s))
      return;
    // Every byte's result for this scale: exact in float (a float8 times 2^[-32, 32)), and
    // rounded once for half.
    std::array<To, 256> table;
    for (std::size_t v = 0; v < table.size(); ++v)
      table[v] = To(std::ldexp(values[v], s));
    const auto [b, e] = worker_range(n, w, nw);
    for (std::int64_t i = b; i < e; ++i)
      y[i] = table[x[i]];
  };
}

} // namespace

StepFn compile_Pow2ScaleThenCast(CompileContext& ctx, const KernelOp& op,
                                 const OpBuffers& buffers) {
  const KernelTensor in = op.input(0);
  const Float8Format f = float8_format(op.output(0).dtype());
  auto* y = typed<std::uint8_t>(buffers.outputs[0]);
  return dispatch_float(op, in.dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    return to_fp8_step(log2_scale_reader(ctx, op, buffers), typed<const T>(buffers.inputs[0]), y,
                       in.nelms(), f);
  });
}

StepFn compile_CastThenPow2Scale(CompileContext& ctx, const KernelOp& op,
                                 const OpBuffers& buffers) {
  const KernelTensor in = op.input(0);
  const Float8Format f = float8_format(in.dtype());
  const auto* x = typed<const std::uint8_t>(buffers.inputs[0]);
  return dispatch_float(op, op.output(0).dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    return from_fp8_step(log2_scale_reader(ctx, op, buffers), x, typed<T>(buffers.outputs[0]),
                         in.nelms(), f);
  });
}

} // namespace pxl::emu::detail
