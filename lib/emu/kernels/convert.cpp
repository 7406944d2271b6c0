// The conversion kernels: Cast (convert_element's rules), and the float8 conversions
// (ops::pow2scale_cast_to_fp8 and _from_fp8), each element converted by pxl's float8
// arithmetic (pxl/core/float8.hpp) and scaled by 2^log2_scale read from the op's int32 scalar
// input as the step runs. A scale outside PopXL's [-32, 32) is recorded as the run's error,
// nothing is written, and the run stops after the step (RunErrors).
#include "../compile_context.hpp"
#include "../run_errors.hpp"
#include "common.hpp"

#include "pxl/core/float8.hpp"
#include "pxl/core/half.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace pxl::emu::detail {

namespace {
/// float ↔ half casts through pxl::convert: the same rounding as convert_element.
template <typename From, typename To>
StepFn convert_step(const OpBuffers& buffers, std::int64_t n) {
  const From* x = typed<const From>(buffers.inputs[0]);
  To* y = typed<To>(buffers.outputs[0]);
  return [=](unsigned w, unsigned nw) {
    const auto [b, e] = worker_range(n, w, nw);
    if (e > b)
      convert(x + b, y + b, static_cast<std::size_t>(e - b));
  };
}

/// Every other cast goes through a wide type, in chunks on the stack: integers and bool are
/// exact in int64, floats in double, and convert_element gives the same result from the wide
/// value as from the narrow one (integers wrap by value, floats saturate and round by value).
/// So each dtype is loaded once and stored once: 9 + 2·9 small functions, where the pairs of
/// the 9 device dtypes would instantiate 81 loops.
template <typename From>
using wide_t = std::conditional_t<is_float_v<From>, double, std::int64_t>;
template <typename W>
using LoadWide = void (*)(const std::byte*, std::int64_t, std::int64_t, W*);
template <typename W>
using StoreNarrow = void (*)(const W*, std::int64_t, std::int64_t, std::byte*);

template <typename From, typename W>
void load_wide(const std::byte* x, std::int64_t begin, std::int64_t n, W* out) {
  const From* p = typed<const From>(x) + begin;
  for (std::int64_t j = 0; j < n; ++j)
    out[j] = static_cast<W>(static_cast<compute_t<From>>(p[j]));
}
template <typename To, typename W>
void store_narrow(const W* in, std::int64_t begin, std::int64_t n, std::byte* y) {
  To* p = typed<To>(y) + begin;
  for (std::int64_t j = 0; j < n; ++j)
    p[j] = convert_element<To>(in[j]);
}
template <typename W>
StoreNarrow<W> store_narrow_fn(DType to) {
  StoreNarrow<W> f = nullptr;
  visit_device_dtype(to, [&](auto t) {
    using To = typename decltype(t)::type;
    if constexpr (!is_float8_v<To>) // ops::cast refuses float8
      f = &store_narrow<To, W>;
    return StepFn{};
  });
  return f;
}
template <typename W>
StepFn wide_cast_step(LoadWide<W> load, StoreNarrow<W> store, const std::byte* x, std::byte* y,
                      std::int64_t n) {
  return [=](unsigned w, unsigned nw) {
    constexpr std::int64_t chunk = 256;
    W wide[chunk];
    const auto [b, e] = worker_range(n, w, nw);
    for (std::int64_t i = b; i < e; i += chunk) {
      const std::int64_t len = std::min(chunk, e - i);
      load(x, i, len, wide);
      store(wide, i, len, y);
    }
  };
}
} // namespace

// Cast converts as pxl::convert_element defines: float → integer truncates and saturates (NaN
// → 0, ±inf → the extremes), which C++'s own conversion leaves undefined.
StepFn compile_Cast(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& in = op.input(0).spec();
  const DType to = op.output(0).dtype();
  if (in.dtype == to)
    return copy_step(buffers.outputs[0], buffers.inputs[0], in.nelms(), size_of(to));
  if (in.dtype == float32 && to == float16)
    return convert_step<float, half>(buffers, in.nelms());
  if (in.dtype == float16 && to == float32)
    return convert_step<half, float>(buffers, in.nelms());
  if (is_float8(in.dtype) || is_float8(to))
    unsupported_dtype(op, is_float8(to) ? to : in.dtype); // ops::cast refuses float8
  return visit_device_dtype(in.dtype, [&](auto from_t) -> StepFn {
    using From = typename decltype(from_t)::type;
    if constexpr (is_float8_v<From>) {
      return {};
    } else {
      using W = wide_t<From>;
      return wide_cast_step<W>(&load_wide<From, W>, store_narrow_fn<W>(to), buffers.inputs[0],
                               buffers.outputs[0], in.nelms());
    }
  });
}

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
