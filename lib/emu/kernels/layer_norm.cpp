// Layer normalisation over the last axis, with an elementwise scale and shift.
#include "common.hpp"

#include <cmath>

namespace pxl::emu::detail {

StepFn compile_LayerNorm(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const Shape& shape = op.input(0).shape();
  const std::int64_t d = shape.empty() ? 1 : shape.back();
  const std::int64_t rows = d == 0 ? 0 : op.input(0).nelms() / d;
  const double eps = op.attrs_as<ScalarAttrs>().a;
  const DType dtype = op.input(0).dtype();
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    // Statistics and the normalisation itself use the accumulator type: x - mean cancels
    // when x is close to the mean, and the result should keep the precision of a direct
    // evaluation.
    using A = accum_t<T>;
    const T* x = typed<const T>(buffers.inputs[0]);
    const T* weight = typed<const T>(buffers.inputs[1]);
    const T* bias = typed<const T>(buffers.inputs[2]);
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(rows, w, nw);
      for (std::int64_t r = begin; r < end; ++r) {
        const T* xr = x + r * d;
        T* yr = y + r * d;
        A mean = 0;
        for (std::int64_t j = 0; j < d; ++j)
          mean += static_cast<A>(xr[j]);
        mean /= static_cast<A>(d);
        A var = 0;
        for (std::int64_t j = 0; j < d; ++j) {
          const A c = static_cast<A>(xr[j]) - mean;
          var += c * c;
        }
        var /= static_cast<A>(d);
        const A inv_std = A{1} / std::sqrt(var + static_cast<A>(eps));
        for (std::int64_t j = 0; j < d; ++j)
          yr[j] =
              static_cast<T>((static_cast<A>(xr[j]) - mean) * inv_std * static_cast<A>(weight[j]) +
                             static_cast<A>(bias[j]));
      }
    };
  };
  return dispatch_float(op, dtype, build);
}

} // namespace pxl::emu::detail
