// Shared building blocks of the compute kernels: typed buffer access, the float compute type
// of each element type, and strided index maps (broadcasting, transposes, slices).
#pragma once

#include "../kernel.hpp"

#include "pxl/core/error.hpp"
#include "pxl/core/shape.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace pxl::emu::detail {

template <typename T>
T* typed(std::byte* p) {
  return reinterpret_cast<T*>(p);
}
template <typename T>
const T* typed(const std::byte* p) {
  return reinterpret_cast<const T*>(p);
}

/// The type arithmetic on `T` is carried out in: half computes in float, as the IPU's AMP.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, half>, float, T>;

/// The accumulator of long sums of `T`: float for half (the IPU's float32 accumulation),
/// double for float32 so that sums track the exact value to within float rounding.
template <typename T>
using accum_t = std::conditional_t<std::is_same_v<T, half>, float,
                                   std::conditional_t<std::is_same_v<T, float>, double, T>>;

template <typename T>
inline constexpr bool is_float_v = std::is_same_v<T, float> || std::is_same_v<T, half>;

/// ReLU as the Relu kernel computes it: NaN kept, -0 made +0. The Conv and MatMul epilogues
/// (fuse_epilogues) use it too, so that a fused ReLU gives the Relu kernel's bits.
constexpr float relu_value(float x) { return x != x ? x : (x > 0.0f ? x : 0.0f); }

/// Thrown at bind time when an op reaches a kernel with a dtype it has no implementation for
/// (op construction should have rejected it).
[[noreturn]] inline void unsupported_dtype(const KernelOp& op, DType d) {
  throw DTypeError(op.debug_name() + ": the emulator has no kernel for dtype " +
                   std::string(name(d)));
}

/// Calls `build(type_c<T>)` with the C++ type of `d`, a device dtype: visit_dtype without the
/// 64-bit dtypes, which no tensor of the device holds (the builders refuse them), so kernels
/// that dispatch on every element type instantiate eleven types, not fourteen.
template <typename Build>
StepFn visit_device_dtype(DType d, Build build) {
  switch (d) {
  case DType::int64:
  case DType::uint64:
  case DType::float64:
    break;
  default:
    return visit_dtype(d, [&](auto t) -> StepFn {
      using T = typename decltype(t)::type;
      if constexpr (sizeof(T) == 8)
        return {};
      else
        return build(t);
    });
  }
  PXL_ASSERT(false);
  return {};
}

/// Calls `build(type_c<T>)` with the float element type of `d` (float or half).
template <typename Build>
StepFn dispatch_float(const KernelOp& op, DType d, Build build) {
  switch (d) {
  case float32:
    return build(boost::hana::type_c<float>);
  case float16:
    return build(boost::hana::type_c<half>);
  default:
    unsupported_dtype(op, d);
  }
}

/// As dispatch_float, and int32 too: the dtypes of the arithmetic kernels.
template <typename Build>
StepFn dispatch_numeric(const KernelOp& op, DType d, Build build) {
  if (d == int32)
    return build(boost::hana::type_c<std::int32_t>);
  return dispatch_float(op, d, build);
}

/// Copies bytes [begin, end) of `n` items of `elem` bytes each: the worker's share of a copy.
inline StepFn copy_step(std::byte* dst, const std::byte* src, std::int64_t n, std::size_t elem) {
  return [=](unsigned w, unsigned nw) {
    if (dst == src)
      return;
    const auto [b, e] = worker_range(n, w, nw);
    if (e > b)
      std::memcpy(dst + static_cast<std::size_t>(b) * elem,
                  src + static_cast<std::size_t>(b) * elem, static_cast<std::size_t>(e - b) * elem);
  };
}

/// Zeroes `n` elements of `elem` bytes at `dst` (every dtype's zero is all-zero bytes).
inline StepFn zero_step(std::byte* dst, std::int64_t n, std::size_t elem) {
  return [=](unsigned w, unsigned nw) {
    const auto [b, e] = worker_range(n, w, nw);
    if (e > b)
      std::memset(dst + static_cast<std::size_t>(b) * elem, 0,
                  static_cast<std::size_t>(e - b) * elem);
  };
}

/// A shape seen around `axis` as [outer, n, inner]: the product of the axes before it, its
/// extent and the product of the axes after it. Line l of the outer·inner lines along the axis
/// starts at (l / inner)·n·inner + l % inner and steps by inner.
struct AroundAxis {
  std::int64_t outer = 1, n = 1, inner = 1;
};
inline AroundAxis around_axis(std::span<const std::int64_t> shape, std::size_t axis) {
  AroundAxis a;
  for (std::size_t d = 0; d < axis; ++d)
    a.outer *= shape[d];
  for (std::size_t d = axis + 1; d < shape.size(); ++d)
    a.inner *= shape[d];
  a.n = shape[axis];
  return a;
}

inline constexpr int max_map_rank = 16;

/// Walks a row-major output range while tracking the matching element offsets of `N` strided
/// inputs. Built at bind time: axes of size 1 are dropped and adjacent axes that every input
/// walks contiguously are merged, so a same-shape operand becomes one run and a scalar a run
/// of stride 0.
template <int N>
struct StridedMap {
  int rank = 0;
  std::array<std::int64_t, max_map_rank> dims{};
  std::array<std::array<std::int64_t, max_map_rank>, N> strides{};
  std::array<std::int64_t, N> base{};

  /// Calls `f(offsets, inner_strides, out_index, run_length)` for maximal runs of the last axis
  /// inside [begin, end).
  template <typename F>
  void for_runs(std::int64_t begin, std::int64_t end, F&& f) const {
    if (begin >= end)
      return;
    std::array<std::int64_t, N> off = base, inner{};
    if (rank == 0) {
      f(off, inner, begin, end - begin);
      return;
    }
    const int last = rank - 1;
    for (int k = 0; k < N; ++k)
      inner[k] = strides[k][last];
    std::array<std::int64_t, max_map_rank> idx{};
    std::int64_t rem = begin;
    for (int d = last; d >= 0; --d) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
      for (int k = 0; k < N; ++k)
        off[k] += idx[d] * strides[k][d];
    }
    std::int64_t pos = begin;
    while (pos < end) {
      const std::int64_t run = std::min(dims[last] - idx[last], end - pos);
      f(off, inner, pos, run);
      pos += run;
      if (pos >= end)
        break;
      // The run reached the end of the last axis: back to its start, then carry.
      for (int k = 0; k < N; ++k)
        off[k] -= idx[last] * inner[k];
      idx[last] = 0;
      for (int d = last - 1; d >= 0; --d) {
        ++idx[d];
        for (int k = 0; k < N; ++k)
          off[k] += strides[k][d];
        if (idx[d] < dims[d])
          break;
        for (int k = 0; k < N; ++k)
          off[k] -= dims[d] * strides[k][d];
        idx[d] = 0;
      }
    }
  }
};

/// A map over `out_shape` where input k steps by `strides[k][d]` along output axis d.
template <int N>
StridedMap<N> make_strided_map(std::span<const std::int64_t> out_shape,
                               const std::array<Shape, N>& strides,
                               const std::array<std::int64_t, N>& base = {}) {
  StridedMap<N> m;
  m.base = base;
  for (std::size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1)
      continue;
    bool merge = m.rank > 0;
    for (int k = 0; k < N && merge; ++k)
      merge = m.strides[k][m.rank - 1] == strides[k][d] * out_shape[d];
    if (merge) {
      m.dims[m.rank - 1] *= out_shape[d];
      for (int k = 0; k < N; ++k)
        m.strides[k][m.rank - 1] = strides[k][d];
      continue;
    }
    if (m.rank == max_map_rank)
      throw ShapeError("emulator: index maps support at most " + std::to_string(max_map_rank) +
                       " non-trivial axes, got shape " + to_string(out_shape));
    m.dims[m.rank] = out_shape[d];
    for (int k = 0; k < N; ++k)
      m.strides[k][m.rank] = strides[k][d];
    ++m.rank;
  }
  return m;
}

/// Strides (in elements) of `in` broadcast to `out` under NumPy rules: 0 on broadcast axes.
inline Shape broadcast_strides(std::span<const std::int64_t> in,
                               std::span<const std::int64_t> out) {
  Shape s(out.size(), 0);
  const Shape own = strides_of(in);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t d = 0; d < in.size(); ++d)
    s[lead + d] = in[d] == 1 ? 0 : own[d];
  return s;
}

/// A map broadcasting each of `ins` to `out`.
template <int N>
StridedMap<N> make_broadcast_map(std::span<const std::int64_t> out,
                                 const std::array<Shape, N>& ins) {
  std::array<Shape, N> strides;
  for (int k = 0; k < N; ++k)
    strides[k] = broadcast_strides(ins[k], out);
  return make_strided_map<N>(out, strides);
}

} // namespace pxl::emu::detail
