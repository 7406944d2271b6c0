// float16 kernels in float registers: halves widened block by block with pxl::convert (F16C or
// AVX-512 where the CPU has them), computed in float, narrowed back. Every helper gives bitwise
// what converting each element on its own would, without a conversion call per element.
#pragma once

#include "pxl/core/half.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace pxl::emu::detail {

/// Elements per block: three blocks of floats fit in 12 KiB of stack (and in L1), and a block
/// is long enough for the vector conversions to run at full speed and their calls to cost
/// little (a (128, 512) float16 add's blocks: 14.5 µs with 256, 11.4 µs with 1024, on an
/// AVX-512 Xeon).
inline constexpr std::int64_t half_block = 1024;

/// Elements widened to float: a contiguous run through `convert`, a broadcast one repeated, a
/// strided one one by one.
inline void widen(const half* x, std::int64_t stride, float* out, std::int64_t n) {
  if (stride == 1)
    convert(x, out, static_cast<std::size_t>(n));
  else if (stride == 0)
    std::fill_n(out, n, static_cast<float>(x[0]));
  else
    for (std::int64_t k = 0; k < n; ++k)
      out[k] = static_cast<float>(x[k * stride]);
}

/// Floats rounded to half (to nearest, ties to even) into a run of stride `stride`.
inline void narrow(const float* x, half* out, std::int64_t stride, std::int64_t n) {
  if (stride == 1)
    convert(x, out, static_cast<std::size_t>(n));
  else
    for (std::int64_t k = 0; k < n; ++k)
      out[k * stride] = half(x[k]);
}

/// Calls `g(in, out, m)` on blocks of `x` widened to float and narrows each `out` into `y`:
/// y[i] = half(g's out[i]) for i in [0, n).
template <typename G>
void map_half_blocks(const half* x, half* y, std::int64_t n, G g) {
  float fx[half_block], fy[half_block];
  for (std::int64_t j = 0; j < n; j += half_block) {
    const std::int64_t m = std::min(half_block, n - j);
    convert(x + j, fx, static_cast<std::size_t>(m));
    g(static_cast<const float*>(fx), static_cast<float*>(fy), m);
    convert(fy, y + j, static_cast<std::size_t>(m));
  }
}

/// y[i] = f(float(x[i])) rounded to half, for i in [0, n), in blocks (a loop over each the
/// compiler may vectorise).
template <typename F>
void map_half(const half* x, half* y, std::int64_t n, F f) {
  map_half_blocks(x, y, n, [&f](const float* in, float* out, std::int64_t m) {
    for (std::int64_t k = 0; k < m; ++k)
      out[k] = static_cast<float>(f(in[k]));
  });
}

} // namespace pxl::emu::detail
