// In-place updates, scaled adds, the Adam, LAMB and AdaMax updaters and variable update: output 0
// is input 0 for the in-place kinds.
#include "../compile_context.hpp"
#include "common.hpp"
#include "half_blocks.hpp"
#include "scaled_add.hpp"
#include "stochastic_rounding.hpp"
#include "vector_math.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace pxl::emu::detail {

namespace {

/// Calls `f(type_c<X>, type_c<Y>)` for the float dtypes of `x` and `y` (which may differ: a
/// float16 gradient may update a float32 accumulator).
template <typename F>
StepFn float_pair(const KernelOp& op, DType x, DType y, F f) {
  return dispatch_float(
      op, x, [&](auto tx) { return dispatch_float(op, y, [&](auto ty) { return f(tx, ty); }); });
}

/// Element 0 of a float32 or float16 buffer, as a double: a scalar operand read as the op runs.
double scalar_at(const std::byte* p, DType d) {
  return d == float32 ? static_cast<double>(*typed<const float>(p))
                      : static_cast<double>(*typed<const half>(p));
}

/// out = a·x + b·y (b·y² when `square`) with y broadcast to the output's shape, the scalars
/// {a, b} given by `coeffs()` when the step runs (from scalar operands, or constants). The
/// scalars are doubles and the arithmetic is too, so each element is the exactly rounded value
/// of the formula: rounded to nearest, or stochastically for a float16 output when the
/// session asks for it (ctx.stochastic_rounding).
template <typename Coeffs>
StepFn scaled_add_step_with(const CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers,
                            Coeffs coeffs, bool square) {
  const auto& out = op.output(0).spec();
  const auto map = make_broadcast_map<2>(out.shape, {op.input(0).shape(), op.input(1).shape()});
  const std::int64_t n = out.nelms();
  return float_pair(op, op.input(0).dtype(), op.input(1).dtype(), [&](auto tx, auto ty) -> StepFn {
    using X = typename decltype(tx)::type;
    using Y = typename decltype(ty)::type;
    const X* x = typed<const X>(buffers.inputs[0]);
    const Y* y = typed<const Y>(buffers.inputs[1]);
    X* z = typed<X>(buffers.outputs[0]);
    if constexpr (std::is_same_v<X, half>) {
      if (ctx.stochastic_rounding) {
        auto sr = std::make_shared<StochasticRounding>(StochasticRounding{
            *ctx.stochastic_rounding, op.id().value, std::vector<std::uint64_t>(ctx.num_workers)});
        return [=](unsigned w, unsigned nw) {
          const std::uint32_t word = sr->start(w);
          const std::pair<double, double> ab = coeffs();
          const auto [begin, end] = worker_range(n, w, nw);
          map.for_runs(
              begin, end,
              [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
                if constexpr (std::is_same_v<Y, half>) {
                  if (inner[0] == 1 && inner[1] == 1) {
                    scaled_add_half_stochastic(x + off[0], y + off[1], z + pos, len, ab.first,
                                               ab.second, square, word, pos);
                    return;
                  }
                }
                for (std::int64_t j = 0; j < len; ++j) {
                  const double d =
                      ab.first * static_cast<double>(x[off[0] + j * inner[0]]) +
                      second_term(ab.second, static_cast<double>(y[off[1] + j * inner[1]]), square);
                  const auto index = static_cast<std::uint32_t>(pos + j);
                  z[pos + j] =
                      round_half_stochastic(static_cast<float>(d), element_bits(word, index));
                }
              });
        };
      }
    }
    return [=](unsigned w, unsigned nw) {
      const std::pair<double, double> ab = coeffs();
      const double a = ab.first, b = ab.second;
      const auto [begin, end] = worker_range(n, w, nw);
      map.for_runs(
          begin, end, [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
            const X* px = x + off[0];
            const Y* py = y + off[1];
            X* pz = z + pos;
            if constexpr (std::is_same_v<X, float> && std::is_same_v<Y, float>) {
              if (inner[0] == 1 && inner[1] == 1 && (pz == px || !square)) {
                if (square)
                  scaled_add_square_f32_inplace(pz, py, len, a, b);
                else if (pz == px)
                  scaled_add_f32_inplace(pz, py, len, a, b);
                else
                  scaled_add_f32(px, py, pz, len, a, b);
                return;
              }
            } else if constexpr (std::is_same_v<X, half> && std::is_same_v<Y, half>) {
              if (inner[0] == 1 && inner[1] == 1) {
                scaled_add_half(px, py, pz, len, a, b, square);
                return;
              }
            }
            if (inner[0] == 1 && inner[1] == 1) {
              for (std::int64_t j = 0; j < len; ++j)
                pz[j] = static_cast<X>(a * static_cast<double>(px[j]) +
                                       second_term(b, static_cast<double>(py[j]), square));
            } else {
              for (std::int64_t j = 0; j < len; ++j)
                pz[j] =
                    static_cast<X>(a * static_cast<double>(px[j * inner[0]]) +
                                   second_term(b, static_cast<double>(py[j * inner[1]]), square));
            }
          });
    };
  });
}

/// scaled_add_step_with constant scalars.
StepFn scaled_add_step(const CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers,
                       double a, double b, bool square = false) {
  return scaled_add_step_with(
      ctx, op, buffers,
      [a, b] {
        return std::pair{a, b};
      },
      square);
}

} // namespace

namespace {
/// t = f(t, x) on int32 with x broadcast to t's shape; f wraps around (computed in uint32).
template <typename F>
StepFn int32_update(const KernelOp& op, const OpBuffers& buffers, F f) {
  const auto map =
      make_broadcast_map<2>(op.output(0).shape(), {op.input(0).shape(), op.input(1).shape()});
  const std::int64_t n = op.output(0).nelms();
  std::int32_t* a = typed<std::int32_t>(buffers.outputs[0]);
  const std::int32_t* b = typed<const std::int32_t>(buffers.inputs[1]);
  return [=](unsigned w, unsigned nw) {
    const auto [begin, end] = worker_range(n, w, nw);
    map.for_runs(
        begin, end, [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
          for (std::int64_t j = 0; j < len; ++j)
            a[pos + j] =
                static_cast<std::int32_t>(f(static_cast<std::uint32_t>(a[off[0] + j * inner[0]]),
                                            static_cast<std::uint32_t>(b[off[1] + j * inner[1]])));
        });
  };
}
} // namespace

StepFn compile_AddInplace(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  if (op.input(0).dtype() != int32)
    return scaled_add_step(ctx, op, buffers, 1.0, 1.0);
  return int32_update(op, buffers, [](std::uint32_t a, std::uint32_t b) { return a + b; });
}

StepFn compile_SubInplace(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  if (op.input(0).dtype() != int32)
    return scaled_add_step(ctx, op, buffers, 1.0, -1.0);
  return int32_update(op, buffers, [](std::uint32_t a, std::uint32_t b) { return a - b; });
}

StepFn compile_MulInplace(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  if (op.input(0).dtype() == int32)
    return int32_update(op, buffers, [](std::uint32_t a, std::uint32_t b) { return a * b; });
  const auto map =
      make_broadcast_map<2>(op.output(0).shape(), {op.input(0).shape(), op.input(1).shape()});
  const std::int64_t n = op.output(0).nelms();
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    T* a = typed<T>(buffers.outputs[0]);
    const T* b = typed<const T>(buffers.inputs[1]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      map.for_runs(begin, end,
                   [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
                     for (std::int64_t j = 0; j < len; ++j)
                       a[pos + j] = static_cast<T>(static_cast<double>(a[off[0] + j * inner[0]]) *
                                                   static_cast<double>(b[off[1] + j * inner[1]]));
                   });
    };
  });
}

StepFn compile_ScaledAdd(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const auto& s = op.attrs_as<ScalarAttrs>();
  return scaled_add_step(ctx, op, buffers, s.a, s.b);
}

StepFn compile_ScaledAddInplace(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_ScaledAdd(ctx, op, buffers);
}

StepFn compile_Accumulate(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return scaled_add_step(ctx, op, buffers, 1.0, op.attrs_as<ScalarAttrs>().a);
}

StepFn compile_CopyVarUpdate(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& spec = op.output(0).spec();
  return copy_step(buffers.outputs[0], buffers.inputs[1], spec.nelms(), size_of(spec.dtype));
}

StepFn compile_AccumulatorScale(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const double f = op.attrs_as<ScalarAttrs>().a;
  const auto& spec = op.output(0).spec();
  const std::int64_t n = spec.nelms();
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    T* x = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      for (std::int64_t i = begin; i < end; ++i)
        x[i] = static_cast<T>(f * static_cast<double>(x[i]));
    };
  };
  return dispatch_float(op, spec.dtype, build);
}

StepFn compile_AccumulatorZero(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& spec = op.output(0).spec();
  return zero_step(buffers.outputs[0], spec.nelms(), size_of(spec.dtype));
}

StepFn compile_AccumulateMovingAverage(CompileContext& ctx, const KernelOp& op,
                                       const OpBuffers& buffers) {
  const double f = op.attrs_as<ScalarAttrs>().a;
  return scaled_add_step(ctx, op, buffers, f, 1.0 - f);
}

StepFn compile_AccumulateMovingAverageSquare(CompileContext& ctx, const KernelOp& op,
                                             const OpBuffers& buffers) {
  const double f = op.attrs_as<ScalarAttrs>().a;
  return scaled_add_step(ctx, op, buffers, f, 1.0 - f, /*square=*/true);
}

StepFn compile_AccumulateSquare(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return scaled_add_step(ctx, op, buffers, 1.0, op.attrs_as<ScalarAttrs>().a, /*square=*/true);
}

StepFn compile_AccumulateMean(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  if (op.num_inputs() == 2) {
    const double s = op.attrs_as<ScalarAttrs>().a;
    return scaled_add_step(ctx, op, buffers, s / (s + 1.0), 1.0 / (s + 1.0));
  }
  const std::byte* step = buffers.inputs[2];
  const DType dtype = op.input(2).dtype();
  return scaled_add_step_with(
      ctx, op, buffers,
      [step, dtype] {
        const double s = scalar_at(step, dtype);
        return std::pair{s / (s + 1.0), 1.0 / (s + 1.0)};
      },
      false);
}

StepFn compile_AdamVarUpdate(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const auto& attrs = op.attrs_as<ScalarAttrs>();
  const double lr = attrs.a, max_norm = attrs.b;
  const std::byte *r1 = buffers.inputs[2], *r2 = buffers.inputs[3];
  const DType d1 = op.input(2).dtype(), d2 = op.input(3).dtype();
  return scaled_add_step_with(
      ctx, op, buffers,
      [=] {
        const double sq1 = scalar_at(r1, d1), sq2 = scalar_at(r2, d2);
        // LAMB's trust ratio, 1 where either norm is 0 (PopART's AdamVarUpdate).
        const double ratio =
            sq1 == 0.0 || sq2 == 0.0 ? 1.0 : std::min(std::sqrt(sq1), max_norm) / std::sqrt(sq2);
        return std::pair{1.0, -lr * ratio};
      },
      false);
}

StepFn compile_SparseAccumulate(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // t as [outer, n, inner] and x as [outer, k, inner]: each element of t sums, in double and
  // in index order, the elements of x whose index selects its slice, then adds f times that.
  const auto& attrs = op.attrs<OpKind::SparseAccumulate>();
  const AroundAxis lines = around_axis(op.input(0).shape(), static_cast<std::size_t>(attrs.axis));
  const std::int64_t outer = lines.outer, n = lines.n, inner = lines.inner;
  const std::int64_t k = op.input(2).nelms();
  const double f = attrs.factor;
  const std::int32_t* indices = typed<const std::int32_t>(buffers.inputs[2]);
  return dispatch_float(op, op.input(0).dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    T* t = typed<T>(buffers.outputs[0]);
    const T* x = typed<const T>(buffers.inputs[1]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(outer * n * inner, w, nw);
      for (std::int64_t e = begin; e < end; ++e) {
        const std::int64_t o = e / (n * inner), j = (e / inner) % n, i = e % inner;
        double sum = 0.0;
        bool selected = false;
        for (std::int64_t q = 0; q < k; ++q)
          if (indices[q] == j) {
            sum += static_cast<double>(x[(o * k + q) * inner + i]);
            selected = true;
          }
        if (selected)
          t[e] = static_cast<T>(static_cast<double>(t[e]) + f * sum);
      }
    };
  });
}

namespace {

// u = (m·s1) / (sqrt(v·s2) + eps) in float, each operation rounded once (no contraction, and
// sqrt and division are exact to rounding in every clone). With a weight decay the sum
// q + wd·w is formed in double from the float quotient, then rounded once.
PXL_VECTOR_CLONES void adam_updater_f32(const float* m, const float* v, float* u, std::int64_t n,
                                        float s1, float s2, float eps) {
  for (std::int64_t j = 0; j < n; ++j)
    u[j] = (m[j] * s1) / (std::sqrt(v[j] * s2) + eps);
}
PXL_VECTOR_CLONES void adam_updater_decay_f32(const float* m, const float* v, const float* w,
                                              float* u, std::int64_t n, float s1, float s2,
                                              float eps, double wd) {
  for (std::int64_t j = 0; j < n; ++j) {
    const float q = (m[j] * s1) / (std::sqrt(v[j] * s2) + eps);
    u[j] = static_cast<float>(static_cast<double>(q) + wd * static_cast<double>(w[j]));
  }
}

// AdaMax's u = (m·s1) / (v + eps): v is a running maximum, neither rooted nor corrected.
PXL_VECTOR_CLONES void adamax_updater_f32(const float* m, const float* v, float* u, std::int64_t n,
                                          float s1, float eps) {
  for (std::int64_t j = 0; j < n; ++j)
    u[j] = (m[j] * s1) / (v[j] + eps);
}
PXL_VECTOR_CLONES void adamax_updater_decay_f32(const float* m, const float* v, const float* w,
                                                float* u, std::int64_t n, float s1, float eps,
                                                double wd) {
  for (std::int64_t j = 0; j < n; ++j) {
    const float q = (m[j] * s1) / (v[j] + eps);
    u[j] = static_cast<float>(static_cast<double>(q) + wd * static_cast<double>(w[j]));
  }
}

/// Elements [j, j + n) of a float32 or float16 buffer as floats: the buffer itself, or
/// widened into `scratch`.
const float* floats_at(const std::byte* p, DType d, std::int64_t j, std::int64_t n,
                       float* scratch) {
  if (d == float32)
    return typed<const float>(p) + j;
  convert(typed<const half>(p) + j, scratch, static_cast<std::size_t>(n));
  return scratch;
}

/// adam_updater's and adamax_updater's work over a range of elements, bound to their buffers:
/// m, v, the time step and the weight in any mix of float32 and float16, the updater in the
/// weight's dtype or m's.
struct AdamUpdaterKernel {
  const std::byte *m, *v, *t = nullptr, *w = nullptr;
  DType m_dtype, v_dtype, t_dtype = float32, w_dtype = float32;
  std::byte* u;
  DType u_dtype;
  AdamUpdaterAttrs attrs;
  bool adamax;

  AdamUpdaterKernel(const KernelOp& op, const OpBuffers& buffers)
      : m(buffers.inputs[0]), v(buffers.inputs[1]), m_dtype(op.input(0).dtype()),
        v_dtype(op.input(1).dtype()), u(buffers.outputs[0]), u_dtype(op.output(0).dtype()),
        attrs(op.attrs_as<AdamUpdaterAttrs>()), adamax(op.kind() == OpKind::AdamaxUpdater) {
    for (std::size_t k = 0; k < op.num_inputs(); ++k)
      if (!is_floating_point(op.input(k).dtype()))
        unsupported_dtype(op, op.input(k).dtype());
    if (attrs.bias_correction) {
      t = buffers.inputs[2];
      t_dtype = op.input(2).dtype();
    }
    if (attrs.weight && attrs.weight_decay != 0.0) { // else the weight only sets u's dtype
      w = buffers.inputs.back();
      w_dtype = op.input(op.num_inputs() - 1).dtype();
    }
  }

  /// Computes u[begin, end). The bias corrections are read from the time step as it runs.
  void run(std::int64_t begin, std::int64_t end) const {
    float s1 = 1.0f, s2 = 1.0f;
    if (t) {
      const double step = scalar_at(t, t_dtype);
      s1 = static_cast<float>(1.0 / (1.0 - std::pow(attrs.beta1, step)));
      if (!adamax)
        s2 = static_cast<float>(1.0 / (1.0 - std::pow(attrs.beta2, step)));
    }
    const auto eps = static_cast<float>(attrs.epsilon);
    const bool all_f32 = m_dtype == float32 && v_dtype == float32 && u_dtype == float32 &&
                         (!w || w_dtype == float32);
    const std::int64_t block = all_f32 ? end - begin : half_block;
    float fm[half_block], fv[half_block], fw[half_block], fu[half_block];
    for (std::int64_t j = begin; j < end; j += block) {
      const std::int64_t n = std::min(block, end - j);
      const float* pm = floats_at(m, m_dtype, j, n, fm);
      const float* pv = floats_at(v, v_dtype, j, n, fv);
      float* pu = u_dtype == float32 ? typed<float>(u) + j : fu;
      if (w && adamax)
        adamax_updater_decay_f32(pm, pv, floats_at(w, w_dtype, j, n, fw), pu, n, s1, eps,
                                 attrs.weight_decay);
      else if (w)
        adam_updater_decay_f32(pm, pv, floats_at(w, w_dtype, j, n, fw), pu, n, s1, s2, eps,
                               attrs.weight_decay);
      else if (adamax)
        adamax_updater_f32(pm, pv, pu, n, s1, eps);
      else
        adam_updater_f32(pm, pv, pu, n, s1, s2, eps);
      if (u_dtype == float16)
        convert(fu, typed<half>(u) + j, static_cast<std::size_t>(n));
    }
  }
};

} // namespace

StepFn compile_AdamUpdater(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const AdamUpdaterKernel kernel(op, buffers);
  const std::int64_t n = op.output(0).nelms();
  return [=](unsigned w, unsigned nw) {
    const auto [begin, end] = worker_range(n, w, nw);
    kernel.run(begin, end);
  };
}

StepFn compile_AdamaxUpdater(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_AdamUpdater(ctx, op, buffers);
}

} // namespace pxl::emu::detail
