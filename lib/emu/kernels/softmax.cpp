// Softmax and log-softmax along one axis, max-subtracted for numerical stability.
#include "common.hpp"

#include <cmath>
#include <limits>

namespace pxl::emu::detail {

namespace {

/// The input viewed as [outer, n, inner] around the op's axis: a "row" is one (outer, inner)
/// pair, the n elements it normalises over are `inner` apart.
struct RowPlan {
  std::int64_t rows = 0, n = 0, inner = 0;
  std::int64_t start(std::int64_t row) const { return (row / inner) * n * inner + row % inner; }
};

RowPlan plan_rows(const Shape& shape, std::int64_t axis) {
  RowPlan p;
  p.n = shape[static_cast<std::size_t>(axis)];
  p.inner = nelms(std::span(shape).subspan(static_cast<std::size_t>(axis) + 1));
  p.rows = p.n == 0 ? 0 : nelms(shape) / p.n;
  if (p.inner == 0)
    p.rows = 0;
  return p;
}

template <bool Log>
StepFn softmax_like(const KernelOp& op, const OpBuffers& buffers) {
  const auto p = plan_rows(op.input(0).shape(), op.attrs_as<AxisAttrs>().axis);
  const DType d = op.input(0).dtype();
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = accum_t<T>;
    const T* x = typed<const T>(buffers.inputs[0]);
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(p.rows, w, nw);
      for (std::int64_t r = begin; r < end; ++r) {
        const T* xr = x + p.start(r);
        T* yr = y + p.start(r);
        const std::int64_t s = p.inner;
        float m = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < p.n; ++j)
          m = std::max(m, static_cast<float>(xr[j * s]));
        A sum = 0;
        for (std::int64_t j = 0; j < p.n; ++j)
          sum += static_cast<A>(std::exp(static_cast<float>(xr[j * s]) - m));
        if constexpr (Log) {
          const A shift = static_cast<A>(m) + std::log(sum);
          for (std::int64_t j = 0; j < p.n; ++j)
            yr[j * s] = static_cast<T>(static_cast<A>(static_cast<float>(xr[j * s])) - shift);
        } else {
          for (std::int64_t j = 0; j < p.n; ++j)
            yr[j * s] =
                static_cast<T>(static_cast<A>(std::exp(static_cast<float>(xr[j * s]) - m)) / sum);
        }
      }
    };
  };
  return dispatch_float(op, d, build);
}

} // namespace

StepFn compile_Softmax(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return softmax_like<false>(op, buffers);
}

StepFn compile_LogSoftmax(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return softmax_like<true>(op, buffers);
}

} // namespace pxl::emu::detail
