// Reduction kernels: sum, mean, max, min, prod, the norms and log-sums over any set of axes;
// argmax, argmin and the running sum cumsum along one axis; topk, median, histogram and LAMB's
// sum of squares.
// Each output element is reduced by one worker in a fixed order, so results do not depend on
// the number of workers.
#include "../compile_context.hpp"
#include "common.hpp"
#include "half_blocks.hpp"
#include "vector_math.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

namespace pxl::emu::detail {

namespace {

/// Where output element o starts in the input (`kept`) and which offsets from there it
/// reduces over (`reduced`).
struct ReducePlan {
  StridedMap<1> kept, reduced;
  std::int64_t n_out = 0, n_reduced = 0;
};

ReducePlan plan_reduce(const Shape& in, const std::vector<std::int64_t>& axes) {
  const Shape strides = strides_of(in);
  Shape kept_dims, kept_strides, red_dims, red_strides;
  for (std::size_t d = 0; d < in.size(); ++d) {
    const bool reduced =
        std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(d)) != axes.end();
    (reduced ? red_dims : kept_dims).push_back(in[d]);
    (reduced ? red_strides : kept_strides).push_back(strides[d]);
  }
  ReducePlan p;
  p.kept = make_strided_map<1>(kept_dims, {kept_strides});
  p.reduced = make_strided_map<1>(red_dims, {red_strides});
  p.n_out = nelms(kept_dims);
  p.n_reduced = nelms(red_dims);
  return p;
}

/// Outputs folded side by side when consecutive outputs are adjacent in the input.
constexpr std::int64_t reduce_block = 256;
/// Elements of T in a cache line.
template <typename T>
constexpr std::int64_t line_elements = 64 / static_cast<std::int64_t>(sizeof(T));
/// How many rows ahead a fold of rows over a block of outputs prefetches: each row's block is
/// a short run in its own page, which the hardware prefetchers do not follow.
constexpr std::int64_t prefetch_rows = 16;

// One clone per instruction set (see PXL_VECTOR_CLONES) of the two float32 sum loops: only
// conversions and adds, in the order written, so every clone gives the same bits.

/// acc[j] += double(row[j]) for j < n: one row folded into a block of sums.
PXL_VECTOR_CLONES void fold_row_f32(const float* row, double* acc, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j)
    acc[j] += static_cast<double>(row[j]);
}

/// The sum of a contiguous run in double, in sum_in_lanes' order.
PXL_VECTOR_CLONES double sum_run_f32(const float* x, std::int64_t n) {
  return sum_in_lanes(n, [x](std::int64_t k) { return static_cast<double>(x[k]); });
}

/// Writes finish(acc[i]) to y[i], i < n: through a float block and pxl::convert when the
/// output is half and finish gives float.
template <typename Out, typename Acc, typename Finish>
void finish_outputs(const Acc* acc, Out* y, std::int64_t n, Finish finish) {
  if constexpr (std::is_same_v<Out, half> &&
                std::is_same_v<std::invoke_result_t<Finish, Acc>, float>) {
    float f[half_block];
    for (std::int64_t i = 0; i < n; ++i)
      f[i] = finish(acc[i]);
    convert(f, y, static_cast<std::size_t>(n));
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      y[i] = static_cast<Out>(finish(acc[i]));
  }
}

/// A run of `len` float16 outputs whose reduced elements start `stride` apart at `x`, in float
/// blocks. Contiguous outputs (a reduction over leading axes: a bias gradient) fold whole rows
/// into a block of accumulators; other outputs widen their reduced runs block by block. Every
/// output folds its elements in the order the generic loop does, so results are bitwise its.
template <typename Out, typename Acc, typename Combine, typename Finish>
void reduce_half_run(const ReducePlan& p, const half* x, std::int64_t stride, Out* y,
                     std::int64_t len, Acc init, Combine combine, Finish finish) {
  Acc acc[half_block];
  float block[half_block];
  if (stride == 1) {
    for (std::int64_t j = 0; j < len; j += half_block) {
      const std::int64_t m = std::min(half_block, len - j);
      std::fill_n(acc, m, init);
      p.reduced.for_runs(
          0, p.n_reduced,
          [&](const auto& roff, const auto& rinner, std::int64_t, std::int64_t rlen) {
            for (std::int64_t k = 0; k < rlen; ++k) {
              convert(x + j + roff[0] + k * rinner[0], block, static_cast<std::size_t>(m));
              for (std::int64_t i = 0; i < m; ++i)
                acc[i] = combine(acc[i], block[i]);
            }
          });
      finish_outputs(acc, y + j, m, finish);
    }
    return;
  }
  for (std::int64_t j = 0; j < len; j += half_block) {
    const std::int64_t m = std::min(half_block, len - j);
    for (std::int64_t i = 0; i < m; ++i) {
      const half* base = x + (j + i) * stride;
      Acc a = init;
      p.reduced.for_runs(
          0, p.n_reduced,
          [&](const auto& roff, const auto& rinner, std::int64_t, std::int64_t rlen) {
            for (std::int64_t k = 0; k < rlen; k += half_block) {
              const std::int64_t r = std::min(half_block, rlen - k);
              widen(base + roff[0] + k * rinner[0], rinner[0], block, r);
              for (std::int64_t q = 0; q < r; ++q)
                a = combine(a, block[q]);
            }
          });
      acc[i] = a;
    }
    finish_outputs(acc, y + j, m, finish);
  }
}

/// y[o] = finish(fold(combine, init, x[o's reduced elements])), each output folding its
/// elements in the same order however the work is split. With `Lanes` (float sums in double),
/// a contiguous run of an output's elements is summed in four lanes (sum_in_lanes).
template <typename T, typename Out, bool Lanes = false, typename Acc, typename Combine,
          typename Finish>
StepFn reduce_step(const ReducePlan& p, const OpBuffers& buffers, Acc init, Combine combine,
                   Finish finish) {
  const T* x = typed<const T>(buffers.inputs[0]);
  Out* y = typed<Out>(buffers.outputs[0]);
  if constexpr (std::is_same_v<T, half>)
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(p.n_out, w, nw);
      p.kept.for_runs(
          begin, end, [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
            reduce_half_run(p, x + off[0], inner[0], y + pos, len, init, combine, finish);
          });
    };
  else
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(p.n_out, w, nw);
      p.kept.for_runs(
          begin, end, [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
            if (inner[0] == 1 && len > 1) {
              // A run of outputs contiguous in the input (the last axis kept, as when
              // a gradient is summed over its broadcast leading axes): fold a block of
              // them together, reading each reduced row contiguously once, rather than
              // walking the input at a large stride once per output.
              for (std::int64_t j0 = 0; j0 < len; j0 += reduce_block) {
                const std::int64_t n = std::min(reduce_block, len - j0);
                std::array<Acc, reduce_block> acc;
                std::fill_n(acc.begin(), n, init);
                const T* base = x + off[0] + j0;
                p.reduced.for_runs(
                    0, p.n_reduced,
                    [&](const auto& roff, const auto& rinner, std::int64_t, std::int64_t rlen) {
                      for (std::int64_t k = 0; k < rlen; ++k) {
                        const T* r = base + roff[0] + k * rinner[0];
                        if (k + prefetch_rows < rlen)
                          for (std::int64_t j = 0; j < n; j += line_elements<T>)
                            __builtin_prefetch(r + prefetch_rows * rinner[0] + j);
                        if constexpr (Lanes && std::is_same_v<T, float>)
                          fold_row_f32(r, acc.data(), n);
                        else
                          for (std::int64_t j = 0; j < n; ++j)
                            acc[static_cast<std::size_t>(j)] =
                                combine(acc[static_cast<std::size_t>(j)], compute_t<T>(r[j]));
                      }
                    });
                for (std::int64_t j = 0; j < n; ++j)
                  y[pos + j0 + j] = static_cast<Out>(finish(acc[static_cast<std::size_t>(j)]));
              }
              return;
            }
            for (std::int64_t j = 0; j < len; ++j) {
              const T* base = x + off[0] + j * inner[0];
              Acc acc = init;
              p.reduced.for_runs(
                  0, p.n_reduced,
                  [&](const auto& roff, const auto& rinner, std::int64_t, std::int64_t rlen) {
                    const T* r = base + roff[0];
                    if constexpr (Lanes) {
                      static_assert(std::is_same_v<Acc, double>);
                      if (rinner[0] == 1) { // a sum over the last axes, say
                        if constexpr (std::is_same_v<T, float>)
                          acc = acc + sum_run_f32(r, rlen);
                        else
                          acc = acc + sum_in_lanes(rlen, [r](std::int64_t k) {
                                  return static_cast<double>(r[k]);
                                });
                        return;
                      }
                    }
                    for (std::int64_t k = 0; k < rlen; ++k)
                      acc = combine(acc, compute_t<T>(r[k * rinner[0]]));
                  });
              y[pos + j] = static_cast<Out>(finish(acc));
            }
          });
    };
}

std::vector<std::int64_t> reduce_axes(const KernelOp& op) {
  return op.attrs_as<ReduceAttrs>().axes;
}

template <bool Mean>
StepFn sum_like(const KernelOp& op, const OpBuffers& buffers) {
  const auto p = plan_reduce(op.input(0).shape(), reduce_axes(op));
  const auto count = static_cast<double>(p.n_reduced);
  const DType d = op.input(0).dtype();
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = accum_t<T>;
    const auto add = [](A acc, compute_t<T> v) { return acc + static_cast<A>(v); };
    if constexpr (std::is_same_v<T, std::int32_t>) {
      // Sums wrap around like int32 arithmetic; an int32 mean truncates toward zero.
      const auto n = p.n_reduced;
      // Modulo 2^64, so even 2^32 terms cannot overflow; the low 32 bits are the int32 sum.
      const auto add64 = [](std::int64_t acc, std::int32_t v) {
        return static_cast<std::int64_t>(static_cast<std::uint64_t>(acc) +
                                         static_cast<std::uint64_t>(std::int64_t{v}));
      };
      return reduce_step<T, T>(p, buffers, std::int64_t{0}, add64, [n](std::int64_t s) {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(Mean ? (n ? s / n : 0) : s));
      });
    } else {
      return reduce_step<T, T, true>(p, buffers, A{0}, add, [count](A s) {
        return Mean ? static_cast<A>(static_cast<double>(s) / count) : s;
      });
    }
  };
  return dispatch_numeric(op, d, build);
}

/// Max (`Greater` true) or min; NaN propagates. An output folding no element keeps `init`:
/// -inf/+inf for floats, INT32_MIN/INT32_MAX for int32 (see ops::max).
template <bool Greater>
StepFn extremum(const KernelOp& op, const OpBuffers& buffers) {
  const auto p = plan_reduce(op.input(0).shape(), reduce_axes(op));
  const DType d = op.input(0).dtype();
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using C = compute_t<T>;
    const C init = Greater ? (is_float_v<T> ? -std::numeric_limits<C>::infinity()
                                            : std::numeric_limits<C>::lowest())
                           : (is_float_v<T> ? std::numeric_limits<C>::infinity()
                                            : std::numeric_limits<C>::max());
    const auto pick = [](C acc, C v) {
      if (acc != acc)
        return acc;
      return (v != v || (Greater ? v > acc : v < acc)) ? v : acc;
    };
    return reduce_step<T, T>(p, buffers, init, pick, [](C v) { return v; });
  };
  return dispatch_numeric(op, d, build);
}

} // namespace

StepFn compile_ReduceSum(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return sum_like<false>(op, buffers);
}

StepFn compile_ReduceMean(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return sum_like<true>(op, buffers);
}

namespace {
/// A float32/float16 fold in accum_t<T> (double for float32, float for float16): each output
/// is finish(combine(... combine(init, x0) ..., xn)), its elements in a fixed order.
template <typename Combine, typename Finish>
StepFn float_fold(const KernelOp& op, const OpBuffers& buffers, double init, Combine combine,
                  Finish finish) {
  const auto p = plan_reduce(op.input(0).shape(), reduce_axes(op));
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = accum_t<T>;
    return reduce_step<T, T>(
        p, buffers, static_cast<A>(init),
        [combine](A acc, compute_t<T> v) {
          return static_cast<A>(combine(acc, static_cast<A>(v)));
        },
        [finish](A acc) { return static_cast<A>(finish(acc)); });
  });
}
} // namespace

StepFn compile_ReduceProd(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  if (op.input(0).dtype() == int32) {
    // Wraps around like int32 arithmetic: the product modulo 2^32.
    const auto p = plan_reduce(op.input(0).shape(), reduce_axes(op));
    return reduce_step<std::int32_t, std::int32_t>(
        p, buffers, std::uint32_t{1},
        [](std::uint32_t a, std::int32_t v) { return a * static_cast<std::uint32_t>(v); },
        [](std::uint32_t a) { return static_cast<std::int32_t>(a); });
  }
  return float_fold(
      op, buffers, 1.0, [](auto a, auto v) { return a * v; }, [](auto a) { return a; });
}

StepFn compile_ReduceL1(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_fold(
      op, buffers, 0.0, [](auto a, auto v) { return a + std::abs(v); }, [](auto a) { return a; });
}

StepFn compile_ReduceL2(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_fold(
      op, buffers, 0.0, [](auto a, auto v) { return a + v * v; },
      [](auto a) { return std::sqrt(a); });
}

StepFn compile_ReduceSumSquare(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_fold(
      op, buffers, 0.0, [](auto a, auto v) { return a + v * v; }, [](auto a) { return a; });
}

StepFn compile_ReduceLogSum(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return float_fold(
      op, buffers, 0.0, [](auto a, auto v) { return a + v; }, [](auto a) { return std::log(a); });
}

StepFn compile_ReduceLogSumExp(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // One pass: the largest element m so far is factored out of the sum s of exp(x - m), so no
  // exp overflows; a larger element rescales s. NaN sticks, +inf stays +inf, -inf adds nothing.
  const auto p = plan_reduce(op.input(0).shape(), reduce_axes(op));
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = accum_t<T>;
    struct Acc {
      A m, s;
    };
    constexpr A inf = std::numeric_limits<A>::infinity();
    const auto combine = [](Acc a, compute_t<T> v) {
      const A x = v;
      if (x != x || a.m != a.m)
        return Acc{x != x ? x : a.m, 1};
      if (x == -inf || a.m == inf)
        return a;
      if (x > a.m)
        return Acc{x, a.s * std::exp(a.m - x) + 1};
      return Acc{a.m, a.s + std::exp(x - a.m)};
    };
    return reduce_step<T, T>(p, buffers, Acc{-inf, 0}, combine, [](Acc a) {
      return a.m == -inf || a.m == inf ? a.m : a.m + std::log(a.s);
    });
  });
}

StepFn compile_ReduceMax(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return extremum<true>(op, buffers);
}

StepFn compile_ReduceMin(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return extremum<false>(op, buffers);
}

namespace {
/// The index of the first maximum (Max) or minimum along the op's axis; a NaN counts as the
/// extremum, as in NumPy.
template <bool Max>
StepFn arg_extremum(const KernelOp& op, const OpBuffers& buffers) {
  const auto axis = op.attrs_as<AxisAttrs>().axis;
  const auto p = plan_reduce(op.input(0).shape(), {axis});
  // The accumulator is (best value, its index, running index).
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using C = compute_t<T>;
    struct Acc {
      C best;
      std::int32_t at, next;
    };
    const C worst =
        Max ? (is_float_v<T> ? -std::numeric_limits<C>::infinity()
                             : std::numeric_limits<C>::lowest())
            : (is_float_v<T> ? std::numeric_limits<C>::infinity() : std::numeric_limits<C>::max());
    const Acc init{worst, 0, 0};
    const auto pick = [](Acc a, C v) {
      const bool take = a.best == a.best && (v != v || (Max ? v > a.best : v < a.best));
      return Acc{take ? v : a.best, take ? a.next : a.at, a.next + 1};
    };
    return reduce_step<T, std::int32_t>(p, buffers, init, pick, [](Acc a) { return a.at; });
  };
  return dispatch_numeric(op, op.input(0).dtype(), build);
}
} // namespace

StepFn compile_ArgMax(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return arg_extremum<true>(op, buffers);
}

StepFn compile_ArgMin(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return arg_extremum<false>(op, buffers);
}

StepFn compile_CumSum(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // The input as [outer, n, inner]: each of the outer·inner lines is scanned by one worker, in
  // order, so the result does not depend on the number of workers.
  const AroundAxis lines =
      around_axis(op.input(0).shape(), static_cast<std::size_t>(op.attrs_as<AxisAttrs>().axis));
  const std::int64_t outer = lines.outer, n = lines.n, inner = lines.inner;
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    // int32 wraps: sum in uint32.
    using A = std::conditional_t<std::is_same_v<T, std::int32_t>, std::uint32_t, accum_t<T>>;
    const T* x = typed<const T>(buffers.inputs[0]);
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(outer * inner, w, nw);
      for (std::int64_t line = begin; line < end; ++line) {
        const std::int64_t start = (line / inner) * n * inner + line % inner;
        A acc{};
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t at = start + k * inner;
          acc += static_cast<A>(static_cast<compute_t<T>>(x[at]));
          y[at] = static_cast<T>(acc);
        }
      }
    };
  };
  return dispatch_numeric(op, op.input(0).dtype(), build);
}

namespace {
/// An element of a line being ranked, and its index along the line.
template <typename C>
struct Ranked {
  C value;
  std::int32_t index;
};

/// topk's and median's ranking: by value (largest first or smallest first), NaN above every
/// number (a NumPy sort's order), ties by index. A total order, so what a selection picks
/// does not depend on how the work is split.
template <typename C>
auto rank_order(bool largest) {
  return [largest](const Ranked<C>& p, const Ranked<C>& q) {
    const bool p_nan = p.value != p.value, q_nan = q.value != q.value;
    if (p_nan != q_nan)
      return largest ? p_nan : q_nan;
    if (!p_nan && p.value != q.value)
      return largest ? p.value > q.value : p.value < q.value;
    return p.index < q.index;
  };
}

/// One line of `n` ranked elements per worker, allocated at bind time.
template <typename C>
auto ranking_scratch(unsigned workers, std::int64_t n) {
  return std::make_shared<std::vector<std::vector<Ranked<C>>>>(
      workers, std::vector<Ranked<C>>(static_cast<std::size_t>(n)));
}
} // namespace

StepFn compile_TopK(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  // Each line along the axis is ranked by one worker, in that worker's scratch (sized here, at
  // bind time). The ranking is a total order (ties by index), so the split does not matter.
  const auto& attrs = op.attrs<OpKind::TopK>();
  const AroundAxis lines = around_axis(op.input(0).shape(), static_cast<std::size_t>(attrs.axis));
  const std::int64_t outer = lines.outer, n = lines.n, inner = lines.inner;
  const std::int64_t k = attrs.k;
  const bool largest = attrs.largest;
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using C = compute_t<T>;
    const auto before = rank_order<C>(largest);
    auto scratch = ranking_scratch<C>(ctx.num_workers, n);
    const T* x = typed<const T>(buffers.inputs[0]);
    T* values = typed<T>(buffers.outputs[0]);
    std::int32_t* indices = typed<std::int32_t>(buffers.outputs[1]);
    return [=](unsigned w, unsigned nw) {
      PXL_ASSERT(w < scratch->size());
      auto& line = (*scratch)[w];
      const auto [begin, end] = worker_range(outer * inner, w, nw);
      for (std::int64_t l = begin; l < end; ++l) {
        const std::int64_t in = (l / inner) * n * inner + l % inner;
        const std::int64_t out = (l / inner) * k * inner + l % inner;
        for (std::int64_t j = 0; j < n; ++j)
          line[static_cast<std::size_t>(j)] = {static_cast<C>(x[in + j * inner]),
                                               static_cast<std::int32_t>(j)};
        std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
        for (std::int64_t j = 0; j < k; ++j) {
          values[out + j * inner] = static_cast<T>(line[static_cast<std::size_t>(j)].value);
          indices[out + j * inner] = line[static_cast<std::size_t>(j)].index;
        }
      }
    };
  };
  return dispatch_numeric(op, op.input(0).dtype(), build);
}

StepFn compile_ReduceMedian(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  // Each output's elements are ranked by one worker in its scratch (sized here, at bind time),
  // in a total order (value, then index), so the element at the median's rank is one and the
  // same however the work is split.
  const ReducePlan p = plan_reduce(op.input(0).shape(), op.attrs<OpKind::ReduceMedian>().axes);
  const std::int64_t n = p.n_reduced, rank = (n - 1) / 2;
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using C = compute_t<T>;
    const auto before = rank_order<C>(false); // ascending
    auto scratch = ranking_scratch<C>(ctx.num_workers, n);
    const T* x = typed<const T>(buffers.inputs[0]);
    T* values = typed<T>(buffers.outputs[0]);
    std::int32_t* indices = typed<std::int32_t>(buffers.outputs[1]);
    return [=](unsigned w, unsigned nw) {
      PXL_ASSERT(w < scratch->size());
      auto& line = (*scratch)[w];
      const auto [begin, end] = worker_range(p.n_out, w, nw);
      p.kept.for_runs(begin, end,
                      [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
                        for (std::int64_t j = 0; j < len; ++j) {
                          const T* base = x + off[0] + j * inner[0];
                          p.reduced.for_runs(0, n,
                                             [&](const auto& roff, const auto& rinner,
                                                 std::int64_t at, std::int64_t rlen) {
                                               for (std::int64_t k = 0; k < rlen; ++k)
                                                 line[static_cast<std::size_t>(at + k)] = {
                                                     static_cast<C>(base[roff[0] + k * rinner[0]]),
                                                     static_cast<std::int32_t>(at + k)};
                                             });
                          std::nth_element(line.begin(), line.begin() + rank, line.end(), before);
                          const auto& m = line[static_cast<std::size_t>(rank)];
                          values[pos + j] = static_cast<T>(m.value);
                          indices[pos + j] = m.index;
                        }
                      });
    };
  };
  return dispatch_numeric(op, op.input(0).dtype(), build);
}

StepFn compile_Histogram(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // Each bin is counted by one worker over the whole input; an element is in the bin whose
  // lower level it is not below and whose upper level it is below (NaN is below none: last).
  const auto& attrs = op.attrs<OpKind::Histogram>();
  const std::int64_t n = op.input(0).nelms();
  const auto bins = static_cast<std::int64_t>(attrs.levels.size()) + 1;
  const bool absolute = attrs.absolute_of_input;
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using C = compute_t<T>;
    std::vector<C> levels; // rounded to the input's dtype, as PopART's constant of them
    for (const double l : attrs.levels)
      levels.push_back(static_cast<C>(static_cast<T>(l)));
    const T* x = typed<const T>(buffers.inputs[0]);
    std::uint32_t* counts = typed<std::uint32_t>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(bins, w, nw);
      for (std::int64_t b = begin; b < end; ++b) {
        const bool first = b == 0, last = b == bins - 1;
        const C lo = first ? C{} : levels[static_cast<std::size_t>(b - 1)];
        const C hi = last ? C{} : levels[static_cast<std::size_t>(b)];
        std::uint32_t count = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          C v = static_cast<C>(x[i]);
          if (absolute)
            v = std::abs(v);
          count += static_cast<std::uint32_t>((first || !(v < lo)) && (last || v < hi));
        }
        counts[b] = count;
      }
    };
  });
}

StepFn compile_LambSquare(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // One output: the first worker sums every square in double, in order.
  const std::int64_t n = op.input(0).nelms();
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    const T* x = typed<const T>(buffers.inputs[0]);
    float* y = typed<float>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(1, w, nw);
      if (begin == end)
        return;
      double sum = 0.0;
      for (std::int64_t i = 0; i < n; ++i) {
        const auto v = static_cast<double>(x[i]);
        sum += v * v;
      }
      *y = static_cast<float>(sum);
    };
  });
}

} // namespace pxl::emu::detail
