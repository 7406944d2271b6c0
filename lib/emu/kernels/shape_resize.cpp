// interpolate (Resize) and its gradient: per axis, each output index reads one input index
// (nearest) or blends two (linear), with the source coordinate computed in float32 as PopART.
#include "common.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace pxl::emu::detail {

namespace {

using CoordMode = ResizeCoordinateTransformationMode;

/// Output index i's coordinate in the input along an axis of input extent n and scale s.
float source_coordinate(std::int64_t index, CoordMode mode, float s, std::int64_t n) {
  const auto i = static_cast<float>(index);
  const float scaled = static_cast<float>(n) * s;
  switch (mode) {
  case CoordMode::half_pixel:
    return (i + 0.5f) / s - 0.5f;
  case CoordMode::pytorch_half_pixel:
    return scaled > 1.0f ? (i + 0.5f) / s - 0.5f : 0.0f;
  case CoordMode::align_corners:
    return scaled == 1.0f ? 0.0f : i * static_cast<float>(n - 1) / (scaled - 1.0f);
  case CoordMode::asymmetric:
  case CoordMode::tf_crop_and_resize:
    break;
  }
  return i / s;
}

std::int64_t clamp_index(float x, std::int64_t n) {
  if (!(x > 0.0f))
    return 0;
  return x >= static_cast<float>(n - 1) ? n - 1 : static_cast<std::int64_t>(x);
}

/// The input index `nearest` reads for output index i along an axis.
std::int64_t nearest_source(std::int64_t i, const ResizeAttrs& a, std::size_t d, std::int64_t n) {
  const float s = a.scales[d];
  const float whole = std::round(s);
  const bool rounds = a.nearest_mode == ResizeNearestMode::round_prefer_floor ||
                      a.nearest_mode == ResizeNearestMode::round_prefer_ceil;
  if (whole >= 1.0f && std::fabs(whole - s) <= 1e-5f && rounds &&
      a.coordinate_transformation_mode == CoordMode::half_pixel)
    return i / static_cast<std::int64_t>(whole);
  const float x = source_coordinate(i, a.coordinate_transformation_mode, s, n);
  float r = std::floor(x);
  switch (a.nearest_mode) {
  case ResizeNearestMode::round_prefer_floor:
    r = x - std::floor(x) <= 0.5f ? std::floor(x) : std::ceil(x);
    break;
  case ResizeNearestMode::round_prefer_ceil:
    r = std::round(x);
    break;
  case ResizeNearestMode::floor:
    break;
  case ResizeNearestMode::ceil:
    r = std::ceil(x);
    break;
  }
  return clamp_index(r, n);
}

/// Per axis of the input `in` and output `out`: the one or two input indices each output
/// index reads, and the weight of the second (0 for nearest and for axes of scale 1).
struct AxisTaps {
  std::vector<std::int64_t> lo, hi;
  std::vector<float> weight;
};

std::vector<AxisTaps> axis_taps(const ResizeAttrs& a, const Shape& in, const Shape& out) {
  std::vector<AxisTaps> taps(in.size());
  for (std::size_t d = 0; d < in.size(); ++d) {
    AxisTaps& t = taps[d];
    for (std::int64_t i = 0; i < out[d]; ++i) {
      std::int64_t lo = i, hi = i;
      float w = 0.0f;
      if (a.scales[d] != 1.0f && a.mode == ResizeMode::nearest) {
        lo = hi = nearest_source(i, a, d, in[d]);
      } else if (a.scales[d] != 1.0f) {
        const float x = source_coordinate(i, a.coordinate_transformation_mode, a.scales[d], in[d]);
        lo = clamp_index(std::floor(x), in[d]);
        hi = clamp_index(std::ceil(x), in[d]);
        const float xp = std::max(x, 0.0f);
        w = xp - std::floor(xp);
      }
      t.lo.push_back(lo);
      t.hi.push_back(hi);
      t.weight.push_back(w);
    }
  }
  return taps;
}

std::vector<std::int64_t> row_strides(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

} // namespace

namespace {

/// A resize step's geometry: the forward input's and output's shapes and strides, the taps of
/// each axis and, for the gradient, per input index the output indices that read it (CSR).
struct ResizePlan {
  Shape in, out;
  std::vector<std::int64_t> in_st, out_st;
  std::vector<AxisTaps> taps;
  std::vector<std::vector<std::int64_t>> first, readers;
  bool linear = false;
};

ResizePlan resize_plan(const ResizeAttrs& a, const Shape& in, const Shape& out, bool backward) {
  ResizePlan p{in,
               out,
               row_strides(in),
               row_strides(out),
               axis_taps(a, in, out),
               {},
               {},
               a.mode == ResizeMode::linear};
  if (!backward)
    return p;
  p.first.resize(in.size());
  p.readers.resize(in.size());
  for (std::size_t d = 0; d < in.size(); ++d) {
    auto& first = p.first[d];
    const auto& lo = p.taps[d].lo;
    first.assign(static_cast<std::size_t>(in[d]) + 1, 0);
    for (const std::int64_t j : lo)
      ++first[static_cast<std::size_t>(j) + 1];
    for (std::size_t j = 0; j < static_cast<std::size_t>(in[d]); ++j)
      first[j + 1] += first[j];
    std::vector<std::int64_t> next(first.begin(), first.end() - 1);
    p.readers[d].resize(lo.size());
    for (std::size_t i = 0; i < lo.size(); ++i)
      p.readers[d][static_cast<std::size_t>(next[static_cast<std::size_t>(lo[i])]++)] =
          static_cast<std::int64_t>(i);
  }
  return p;
}

/// Output element i of the forward pass: nearest reads its one tap; linear sums its 2^rank
/// corners (corner c takes, on axis d, the second tap when bit rank - 1 - d of c is set).
template <typename T>
accum_t<T> resize_forward_at(const ResizePlan& p, const T* x, std::int64_t i) {
  using A = accum_t<T>;
  const std::size_t rank = p.out.size();
  const auto load = [&](std::int64_t from) {
    return static_cast<A>(static_cast<compute_t<T>>(x[from]));
  };
  if (!p.linear) {
    std::int64_t from = 0;
    for (std::size_t d = 0; d < rank; ++d)
      from += p.taps[d].lo[static_cast<std::size_t>((i / p.out_st[d]) % p.out[d])] * p.in_st[d];
    return load(from);
  }
  A sum = 0;
  const std::int64_t corners = std::int64_t{1} << rank;
  for (std::int64_t c = 0; c < corners; ++c) {
    A weight = 1;
    std::int64_t from = 0;
    for (std::size_t d = 0; d < rank && weight != A(0); ++d) {
      const auto k = static_cast<std::size_t>((i / p.out_st[d]) % p.out[d]);
      const bool high = ((c >> (rank - 1 - d)) & 1) != 0;
      const A wd = static_cast<A>(p.taps[d].weight[k]);
      weight *= high ? wd : A(1) - wd;
      from += (high ? p.taps[d].hi[k] : p.taps[d].lo[k]) * p.in_st[d];
    }
    if (weight != A(0))
      sum += weight * load(from);
  }
  return sum;
}

/// Input element j of nearest's gradient: the gradients of the outputs that read it, in
/// row-major order (their product walked as a mixed-radix count, last axis fastest).
template <typename T>
accum_t<T> resize_backward_at(const ResizePlan& p, const T* g, std::int64_t j) {
  using A = accum_t<T>;
  const std::size_t rank = p.in.size();
  std::int64_t count = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    const auto k = static_cast<std::size_t>((j / p.in_st[d]) % p.in[d]);
    count *= p.first[d][k + 1] - p.first[d][k];
  }
  A sum = 0;
  for (std::int64_t c = 0; c < count; ++c) {
    std::int64_t rest = c, from = 0;
    for (std::size_t d = rank; d-- > 0;) {
      const auto k = static_cast<std::size_t>((j / p.in_st[d]) % p.in[d]);
      const std::int64_t m = p.first[d][k + 1] - p.first[d][k];
      from += p.readers[d][static_cast<std::size_t>(p.first[d][k] + rest % m)] * p.out_st[d];
      rest /= m;
    }
    sum += static_cast<A>(static_cast<compute_t<T>>(g[from]));
  }
  return sum;
}

/// The step of either pass, split by output element.
StepFn resize_step(const KernelOp& op, const OpBuffers& buffers, const Shape& in, const Shape& out,
                   bool backward) {
  const ResizePlan plan = resize_plan(op.attrs_as<ResizeAttrs>(), in, out, backward);
  const std::int64_t n = op.output(0).nelms();
  return dispatch_float(op, op.output(0).dtype(), [&](auto type) -> StepFn {
    using T = typename decltype(type)::type;
    const T* x = typed<const T>(buffers.inputs[0]);
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [b, e] = worker_range(n, w, nw);
      for (std::int64_t i = b; i < e; ++i)
        y[i] = static_cast<T>(backward ? resize_backward_at(plan, x, i)
                                       : resize_forward_at(plan, x, i));
    };
  });
}

} // namespace

StepFn compile_Resize(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return resize_step(op, buffers, op.input(0).shape(), op.output(0).shape(), false);
}

// The adjoint of nearest as a gather over the input's elements.
StepFn compile_ResizeGrad(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return resize_step(op, buffers, op.output(0).shape(), op.input(0).shape(), true);
}

} // namespace pxl::emu::detail
