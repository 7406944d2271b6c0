// Index-driven data-movement kernels: take_along_axis, scatter and scatter_reduce, and the
// dynamic slice and update, whose offsets are read at run time.
#include "common.hpp"
#include "words.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace pxl::emu::detail {

namespace {
/// t's shape around `axis`: [outer, dim, inner], with `m` the indices' extent on the axis.
struct AxisLines {
  std::int64_t outer = 1, dim = 1, inner = 1, m = 1;
};
AxisLines axis_lines(const Shape& t, const Shape& indices, std::int64_t axis) {
  AxisLines l;
  const auto a = static_cast<std::size_t>(axis);
  for (std::size_t d = 0; d < a; ++d)
    l.outer *= t[d];
  for (std::size_t d = a + 1; d < t.size(); ++d)
    l.inner *= t[d];
  l.dim = t[a];
  l.m = indices[a];
  return l;
}

/// out = t, then along each line (every coordinate but the axis, one worker per line, in
/// order along the axis) `put(out element, update element)` at each in-range index.
template <typename T, typename Put>
StepFn scatter_step(const KernelOp& op, const OpBuffers& buffers, Put put) {
  const AxisLines l =
      axis_lines(op.input(0).shape(), op.input(1).shape(), op.attrs_as<AxisAttrs>().axis);
  const T* t = typed<const T>(buffers.inputs[0]);
  const std::int32_t* indices = typed<const std::int32_t>(buffers.inputs[1]);
  const T* updates = typed<const T>(buffers.inputs[2]);
  T* y = typed<T>(buffers.outputs[0]);
  return [=](unsigned w, unsigned nw) {
    const auto [begin, end] = worker_range(l.outer * l.inner, w, nw);
    for (std::int64_t line = begin; line < end; ++line) {
      const std::int64_t o = line / l.inner, i = line % l.inner;
      const std::int64_t t_start = o * l.dim * l.inner + i, u_start = o * l.m * l.inner + i;
      if (y != t)
        for (std::int64_t k = 0; k < l.dim; ++k)
          y[t_start + k * l.inner] = t[t_start + k * l.inner];
      for (std::int64_t j = 0; j < l.m; ++j) {
        const std::int64_t k = indices[u_start + j * l.inner];
        if (k >= 0 && k < l.dim)
          put(y[t_start + k * l.inner], updates[u_start + j * l.inner]);
      }
    }
  };
}
} // namespace

StepFn compile_TakeAlongAxis(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const AxisLines l =
      axis_lines(op.input(0).shape(), op.input(1).shape(), op.attrs_as<AxisAttrs>().axis);
  const std::int64_t n = op.output(0).nelms();
  return by_width(op.input(0).dtype(), [&](auto t) -> StepFn {
    using U = typename decltype(t)::type;
    const U* x = typed<const U>(buffers.inputs[0]);
    const std::int32_t* indices = typed<const std::int32_t>(buffers.inputs[1]);
    U* y = typed<U>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      for (std::int64_t p = begin; p < end; ++p) {
        const std::int64_t i = p % l.inner, o = p / (l.inner * l.m);
        const std::int64_t k = indices[p];
        y[p] = k >= 0 && k < l.dim ? x[(o * l.dim + k) * l.inner + i] : U{0};
      }
    };
  });
}

StepFn compile_Scatter(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return by_width(op.input(0).dtype(), [&](auto t) -> StepFn {
    using U = typename decltype(t)::type;
    return scatter_step<U>(op, buffers, [](U& y, U u) { y = u; });
  });
}

namespace {
/// The reduction's start and step in the kernel's arithmetic (A: accum_t for floats, and int32
/// sums in uint32, which wrap).
template <typename A>
A reduce_step(ScatterReduction r, A acc, A v) {
  switch (r) {
  case ScatterReduction::sum:
    if constexpr (std::is_same_v<A, std::int32_t>)
      return static_cast<A>(static_cast<std::uint32_t>(acc) + static_cast<std::uint32_t>(v));
    else
      return acc + v;
  case ScatterReduction::max:
    return v > acc ? v : acc;
  case ScatterReduction::min:
    return v < acc ? v : acc;
  case ScatterReduction::none:
    break;
  }
  return v;
}
} // namespace

// By output element: each reads the data along its line in order and reduces the elements
// whose index names it, onto its initial value (input 2) or, without one, onto the first of
// them (0 if none does).
StepFn compile_ScatterReduce(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs<OpKind::ScatterReduce>();
  const AxisLines l = axis_lines(op.output(0).shape(), op.input(0).shape(), a.axis);
  const bool broadcast = op.input(1).nelms() != op.input(0).nelms();
  const bool initial = op.num_inputs() == 3;
  const std::int64_t n = op.output(0).nelms();
  const ScatterReduction r = a.reduction;
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = std::conditional_t<std::is_same_v<T, std::int32_t>, T, accum_t<T>>;
    const T* data = typed<const T>(buffers.inputs[0]);
    const std::int32_t* indices = typed<const std::int32_t>(buffers.inputs[1]);
    const T* init = initial ? typed<const T>(buffers.inputs[2]) : nullptr;
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      for (std::int64_t p = begin; p < end; ++p) {
        const std::int64_t i = p % l.inner, k = p / l.inner % l.dim, o = p / (l.inner * l.dim);
        const std::int64_t start = o * l.m * l.inner + i;
        bool any = init != nullptr;
        A acc = any ? static_cast<A>(init[p]) : A{0};
        for (std::int64_t j = 0; j < l.m; ++j) {
          const std::int64_t at = start + j * l.inner;
          if (indices[broadcast ? j : at] != k)
            continue;
          const A v = static_cast<A>(data[at]);
          acc = any ? reduce_step(r, acc, v) : v;
          any = true;
        }
        y[p] = static_cast<T>(acc);
      }
    };
  };
  return dispatch_numeric(op, op.input(0).dtype(), build);
}

namespace {
/// The dynamic ops' runtime offsets (int32, one per listed axis), each clamped to keep the
/// slice inside the tensor: per axis of `t`, 0 where no offset applies.
struct DynamicPlan {
  std::array<std::int64_t, max_map_rank> axis_of{}; ///< position in the index, or -1
  std::array<std::int64_t, max_map_rank> limit{};   ///< dim - size: the largest offset
};
DynamicPlan dynamic_plan(const KernelOp& op, const Shape& t) {
  const auto& a = op.attrs_as<DynamicAttrs>();
  DynamicPlan p;
  p.axis_of.fill(-1);
  for (std::size_t i = 0; i < a.axes.size(); ++i) {
    const auto d = static_cast<std::size_t>(a.axes[i]);
    p.axis_of[d] = static_cast<std::int64_t>(i);
    p.limit[d] = t[d] - a.sizes[i];
  }
  return p;
}
std::array<std::int64_t, max_map_rank> offsets(const DynamicPlan& p, std::size_t rank,
                                               const std::int32_t* index) {
  std::array<std::int64_t, max_map_rank> off{};
  for (std::size_t d = 0; d < rank; ++d)
    if (p.axis_of[d] >= 0)
      off[d] = std::clamp<std::int64_t>(index[p.axis_of[d]], 0, p.limit[d]);
  return off;
}
} // namespace

namespace {
/// DynamicSlice (`update` false) walks its output, reading t through the window; DynamicUpdate
/// walks t, reading the update (input 2) where the window covers an element and t elsewhere.
StepFn dynamic_step(const KernelOp& op, const OpBuffers& buffers, bool update) {
  const IndexWalk walk = make_walk(op, op.output(0).shape(), op.input(update ? 2 : 0).shape());
  const DynamicPlan plan = dynamic_plan(op, op.input(0).shape());
  const std::int64_t n = op.output(0).nelms();
  return by_width(op.input(0).dtype(), [&](auto t) -> StepFn {
    using U = typename decltype(t)::type;
    const U* x = typed<const U>(buffers.inputs[0]);
    const std::int32_t* index = typed<const std::int32_t>(buffers.inputs[1]);
    const U* u = update ? typed<const U>(buffers.inputs[2]) : nullptr;
    U* y = typed<U>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto off = offsets(plan, walk.rank, index);
      const auto [begin, end] = worker_range(n, w, nw);
      if (!update) {
        for_each_source(
            walk, begin, end, [&](std::size_t d, std::int64_t c) { return c + off[d]; },
            [&](std::int64_t i, std::int64_t from) { y[i] = x[from]; });
        return;
      }
      for_each_source(
          walk, begin, end,
          [&](std::size_t d, std::int64_t c) {
            const std::int64_t s = c - off[d];
            return s >= 0 && s < walk.in[d] ? s : -1;
          },
          [&](std::int64_t i, std::int64_t from) { y[i] = from >= 0 ? u[from] : x[i]; });
    };
  });
}
} // namespace

StepFn compile_DynamicSlice(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return dynamic_step(op, buffers, false);
}

StepFn compile_DynamicUpdate(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return dynamic_step(op, buffers, true);
}

// In place, output 0 is t's buffer: each element outside the window is copied onto itself.
PXL_KERNEL_AS(DynamicUpdateInplace, DynamicUpdate)

} // namespace pxl::emu::detail
