// Neural-network kernels: softmax and log-softmax, layer normalisation, dropout and the
// negative log-likelihood loss.
#include "common.hpp"
#include "norm_rows.hpp"
#include "prefetch.hpp"
#include "vector_math.hpp"

#include "core/random.hpp"

#include <cmath>
#include <limits>
#include <type_traits>

namespace pxl::emu::detail {

// Softmax and log-softmax along one axis, max-subtracted for numerical stability.

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

/// Softmax (or log-softmax) of a contiguous float32 row, as one instruction-set clone so that
/// every pass vectorises: m the largest element; y[j] = exp(x[j] - m), the difference in float
/// (as std::exp(x[j] - m) takes it) and its exponential in double by exp_bounded, clamped at
/// -700 where the float result is 0 anyway (a masked -inf score; NaN stays NaN); their sum in
/// double over four partial sums; then y[j]·(1/sum), or x[j] - (m + log(sum)) for the log.
PXL_VECTOR_CLONES void softmax_row(const float* x, float* y, std::int64_t n, bool log) {
  // The largest element in eight lanes (a NaN is never taken, as by std::max(m, x)); where
  // the lanes meet does not matter, the largest is the same value (a zero's sign aside,
  // which changes no result below).
  constexpr std::int64_t lanes = 8;
  float lane_max[lanes];
  for (float& l : lane_max)
    l = -std::numeric_limits<float>::infinity();
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::int64_t k = 0; k < lanes; ++k)
      lane_max[k] = x[i + k] > lane_max[k] ? x[i + k] : lane_max[k];
  for (; i < n; ++i)
    lane_max[0] = x[i] > lane_max[0] ? x[i] : lane_max[0];
  float m = lane_max[0];
  for (std::int64_t k = 1; k < lanes; ++k)
    m = lane_max[k] > m ? lane_max[k] : m;
  for (std::int64_t j = 0; j < n; ++j)
    y[j] = static_cast<float>(exp_clamped(static_cast<double>(x[j] - m)));
  const double sum = sum_in_lanes(n, [y](std::int64_t j) { return static_cast<double>(y[j]); });
  if (log) {
    const double shift = static_cast<double>(m) + std::log(sum);
    for (std::int64_t k = 0; k < n; ++k)
      y[k] = static_cast<float>(static_cast<double>(x[k]) - shift);
  } else {
    const double inverse = 1.0 / sum;
    for (std::int64_t k = 0; k < n; ++k)
      y[k] = static_cast<float>(static_cast<double>(y[k]) * inverse);
  }
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
        if constexpr (std::is_same_v<T, float>) {
          if (s == 1) { // the last axis
            prefetch_row_ahead(x, r, end, p.n);
            softmax_row(xr, yr, p.n, Log);
            continue;
          }
        }
        float m = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < p.n; ++j)
          m = std::max(m, static_cast<float>(xr[j * s]));
        A sum = 0;
        if constexpr (!Log && std::is_same_v<T, float>) {
          // exp once per element: kept in y (exactly, as a float) for the division.
          for (std::int64_t j = 0; j < p.n; ++j) {
            const float e = std::exp(xr[j * s] - m);
            yr[j * s] = e;
            sum += static_cast<A>(e);
          }
          for (std::int64_t j = 0; j < p.n; ++j)
            yr[j * s] = static_cast<T>(static_cast<A>(yr[j * s]) / sum);
          continue;
        }
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

/// Softmax's gradient along a contiguous float32 row, as one instruction-set clone:
/// dx[j] = y[j]·(g[j] − s), s = Σ g·y in double (sum_in_lanes' order), rounded once.
PXL_VECTOR_CLONES void softmax_grad_row(const float* y, const float* g, float* dx, std::int64_t n) {
  const double s = sum_in_lanes(
      n, [y, g](std::int64_t j) { return static_cast<double>(g[j]) * static_cast<double>(y[j]); });
  for (std::int64_t j = 0; j < n; ++j)
    dx[j] = static_cast<float>(static_cast<double>(y[j]) * (static_cast<double>(g[j]) - s));
}

} // namespace

StepFn compile_Softmax(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return softmax_like<false>(op, buffers);
}

StepFn compile_LogSoftmax(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return softmax_like<true>(op, buffers);
}

StepFn compile_SoftmaxGrad(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto p = plan_rows(op.input(0).shape(), op.attrs_as<AxisAttrs>().axis);
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = accum_t<T>;
    const T* y = typed<const T>(buffers.inputs[0]);
    const T* g = typed<const T>(buffers.inputs[1]);
    T* dx = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(p.rows, w, nw);
      for (std::int64_t r = begin; r < end; ++r) {
        const std::int64_t at = p.start(r), st = p.inner;
        if constexpr (std::is_same_v<T, float>) {
          if (st == 1) { // the last axis
            prefetch_row_ahead(y, r, end, p.n);
            prefetch_row_ahead(g, r, end, p.n);
            softmax_grad_row(y + at, g + at, dx + at, p.n);
            continue;
          }
        }
        A sum = 0;
        for (std::int64_t j = 0; j < p.n; ++j)
          sum += static_cast<A>(g[at + j * st]) * static_cast<A>(y[at + j * st]);
        for (std::int64_t j = 0; j < p.n; ++j) {
          const std::int64_t k = at + j * st;
          dx[k] = static_cast<T>(static_cast<A>(y[k]) * (static_cast<A>(g[k]) - sum));
        }
      }
    };
  };
  return dispatch_float(op, op.input(0).dtype(), build);
}

// Layer normalisation over the last axis, with an elementwise scale and shift (the float32
// rows' arithmetic in kernels/norm_rows.cpp).
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
        if constexpr (std::is_same_v<T, float>) {
          prefetch_row_ahead(x, r, end, d);
          layer_norm_row(xr, weight, bias, yr, d, eps);
          continue;
        }
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

StepFn compile_LayerNormGrad(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const Shape& shape = op.input(0).shape();
  const std::int64_t d = shape.back();
  const std::int64_t rows = d == 0 ? 0 : op.input(0).nelms() / d;
  const double eps = op.attrs_as<ScalarAttrs>().a;
  const auto build = [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = accum_t<T>; // as in LayerNorm: the statistics of the forward pass
    const T* x = typed<const T>(buffers.inputs[0]);
    const T* weight = typed<const T>(buffers.inputs[1]);
    const T* g = typed<const T>(buffers.inputs[2]);
    T* dx = typed<T>(buffers.outputs[0]);
    T* gx = typed<T>(buffers.outputs[1]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(rows, w, nw);
      for (std::int64_t r = begin; r < end; ++r) {
        const std::int64_t at = r * d;
        if constexpr (std::is_same_v<T, float>) {
          prefetch_row_ahead(x, r, end, d);
          prefetch_row_ahead(g, r, end, d);
          layer_norm_grad_row(x + at, weight, g + at, dx + at, gx + at, d, eps);
          continue;
        }
        A mean = 0, var = 0, a = 0, b = 0;
        for (std::int64_t j = 0; j < d; ++j)
          mean += static_cast<A>(x[at + j]);
        mean /= static_cast<A>(d);
        for (std::int64_t j = 0; j < d; ++j) {
          const A c = static_cast<A>(x[at + j]) - mean;
          var += c * c;
        }
        var /= static_cast<A>(d);
        const A inv_std = A{1} / std::sqrt(var + static_cast<A>(eps));
        for (std::int64_t j = 0; j < d; ++j) {
          const A gw = static_cast<A>(g[at + j]) * static_cast<A>(weight[j]);
          a += gw;
          b += gw * (static_cast<A>(x[at + j]) - mean) * inv_std;
        }
        a /= static_cast<A>(d);
        b /= static_cast<A>(d);
        for (std::int64_t j = 0; j < d; ++j) {
          const A xhat = (static_cast<A>(x[at + j]) - mean) * inv_std;
          const A gw = static_cast<A>(g[at + j]) * static_cast<A>(weight[j]);
          dx[at + j] = static_cast<T>(inv_std * (gw - a - xhat * b));
          gx[at + j] = static_cast<T>(static_cast<A>(g[at + j]) * xhat);
        }
      }
    };
  };
  return dispatch_float(op, op.input(0).dtype(), build);
}

// Negative log-likelihood loss, alone and fused with the gradient of softmax + nll.

namespace {

/// probs viewed as [samples, classes]; labels as [samples].
struct NllPlan {
  std::int64_t samples = 0, classes = 0;
  NllAttrs attrs;
  /// Whether a sample with `label` is left out of the mean's divisor: only ignored ones are.
  bool ignored(std::int32_t label) const {
    return attrs.ignore_index && label == *attrs.ignore_index;
  }
  /// Whether it adds to the loss and has a gradient: not ignored, and a class in
  /// [0, classes). As in PopART, a label out of that range adds nothing but still counts in
  /// the divisor (the gradient rule of nll_loss divides the same way).
  bool contributes(std::int32_t label) const {
    return !ignored(label) && label >= 0 && label < classes;
  }
  /// The mean's divisor: the samples not ignored.
  std::int64_t divisor(const std::int32_t* labels) const {
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < samples; ++i)
      count += ignored(labels[i]) ? 0 : 1;
    return count;
  }
};

NllPlan plan_nll(const KernelOp& op) {
  NllPlan p;
  p.attrs = op.attrs_as<NllAttrs>();
  const Shape& shape = op.input(0).shape();
  p.classes = shape.empty() ? 1 : shape.back();
  p.samples = op.input(1).nelms();
  return p;
}

/// -log p(label) of one sample, in the accumulator type.
template <typename T, typename A = accum_t<T>>
A sample_loss(const NllPlan& p, const T* probs, std::int64_t i, std::int32_t label) {
  const A v = static_cast<A>(probs[i * p.classes + label]);
  return p.attrs.log_prob ? -v : -std::log(v);
}

/// Writes the loss output: per sample (split by sample) or its sum or mean (one worker, as
/// a reduction is never split).
template <typename T>
void write_loss(const NllPlan& p, const T* probs, const std::int32_t* labels, T* loss, unsigned w,
                unsigned nw) {
  using A = accum_t<T>;
  if (p.attrs.reduction == Reduction::none) {
    const auto [begin, end] = worker_range(p.samples, w, nw);
    for (std::int64_t i = begin; i < end; ++i)
      loss[i] =
          p.contributes(labels[i]) ? static_cast<T>(sample_loss<T>(p, probs, i, labels[i])) : T(0);
    return;
  }
  if (w != 0)
    return;
  A total = 0;
  for (std::int64_t i = 0; i < p.samples; ++i)
    if (p.contributes(labels[i]))
      total += sample_loss<T>(p, probs, i, labels[i]);
  const std::int64_t count = p.divisor(labels);
  // The mean over no counted sample is 0 rather than 0/0.
  if (p.attrs.reduction == Reduction::mean && count > 0)
    total /= static_cast<A>(count);
  loss[0] = static_cast<T>(total);
}

} // namespace

StepFn compile_NllLoss(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const NllPlan p = plan_nll(op);
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    const T* probs = typed<const T>(buffers.inputs[0]);
    const std::int32_t* labels = typed<const std::int32_t>(buffers.inputs[1]);
    T* loss = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) { write_loss(p, probs, labels, loss, w, nw); };
  });
}

StepFn compile_NllLossWithSoftmaxGrad(CompileContext&, const KernelOp& op,
                                      const OpBuffers& buffers) {
  const NllPlan p = plan_nll(op);
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = accum_t<T>;
    const T* probs = typed<const T>(buffers.inputs[0]);
    const std::int32_t* labels = typed<const std::int32_t>(buffers.inputs[1]);
    T* loss = typed<T>(buffers.outputs[0]);
    T* dlogits = typed<T>(buffers.outputs[1]);
    return [=](unsigned w, unsigned nw) {
      write_loss(p, probs, labels, loss, w, nw);
      // Every worker needs the mean's divisor; counting the labels again is cheaper than a
      // barrier.
      A scale = static_cast<A>(p.attrs.loss_grad);
      if (const std::int64_t count = p.divisor(labels);
          p.attrs.reduction == Reduction::mean && count > 0)
        scale /= static_cast<A>(count);
      const auto [begin, end] = worker_range(p.samples, w, nw);
      for (std::int64_t i = begin; i < end; ++i) {
        const T* pr = probs + i * p.classes;
        T* dr = dlogits + i * p.classes;
        const std::int32_t label = labels[i];
        if (!p.contributes(label)) {
          for (std::int64_t c = 0; c < p.classes; ++c)
            dr[c] = T(0);
          continue;
        }
        for (std::int64_t c = 0; c < p.classes; ++c) {
          A prob = static_cast<A>(pr[c]);
          if (p.attrs.log_prob)
            prob = std::exp(prob);
          dr[c] = static_cast<T>((prob - (c == label ? A{1} : A{0})) * scale);
        }
      }
    };
  });
}

namespace {
// Dropout keeps an element when the uniform draw (a pure function of the uint32[2] seed and
// an index, as the random kernels) is at least p: drawn for the element of `mask`, whose
// shape broadcasts to the output, that the element broadcasts from.
StepFn dropout_step(const KernelOp& op, const OpBuffers& buffers, double ratio, const Shape& mask) {
  // Compared in double, as the rule is stated: float(p) would flip ~1 in 2^24 decisions.
  const double p = ratio;
  const float scale = ratio < 1.0 ? static_cast<float>(1.0 / (1.0 - ratio)) : 0.0f;
  const auto map = make_broadcast_map<1>(op.output(0).shape(), {mask});
  const std::int64_t n = op.output(0).nelms();
  const std::uint32_t* seed = typed<const std::uint32_t>(buffers.inputs[1]);
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    const T* x = typed<const T>(buffers.inputs[0]);
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const std::uint32_t s0 = seed[0], s1 = seed[1];
      const auto [begin, end] = worker_range(n, w, nw);
      map.for_runs(
          begin, end, [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t run) {
            for (std::int64_t r = 0; r < run; ++r) {
              const auto m = static_cast<std::uint64_t>(off[0] + r * inner[0]);
              const bool keep = pxl::detail::random_uniform01(s0, s1, m) >= p;
              y[pos + r] = keep ? static_cast<T>(static_cast<float>(x[pos + r]) * scale) : T(0);
            }
          });
    };
  });
}
} // namespace

StepFn compile_Dropout(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return dropout_step(op, buffers, op.attrs<OpKind::Dropout>().a, op.output(0).shape());
}

StepFn compile_ShapedDropout(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs<OpKind::ShapedDropout>();
  return dropout_step(op, buffers, a.ratio, a.shape);
}

} // namespace pxl::emu::detail
