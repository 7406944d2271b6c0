// The arithmetic of the scaled adds on contiguous values (scaled_add.hpp), compiled with
// -ffp-contract=off (kernels/meson.build) so that every clone rounds as the portable loop.
#include "scaled_add.hpp"

#include "half_blocks.hpp"
#include "stochastic_rounding.hpp"
#include "vector_math.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>

namespace pxl::emu::detail {

// The clones of a function its header declares are those of a file-local function it calls:
// clang 14 makes no clones of a function declared without PXL_VECTOR_CLONES, but compiles its
// one body for the first target (AVX-512), which then runs on every CPU.
namespace {
// z = a·x + b·y on contiguous float32, in double without contracting into FMAs (this file is
// compiled with -ffp-contract=off, see meson.build), so every clone rounds exactly like the
// portable loop (weights come out the same on any machine). Separate in-place and out-of-place
// loops: an output equal to x would fail the vectoriser's overlap check and run scalar.
PXL_VECTOR_CLONES void scaled_add_f32_lanes(const float* x, const float* y, float* z,
                                            std::int64_t n, double a, double b) {
  for (std::int64_t j = 0; j < n; ++j)
    z[j] = static_cast<float>(a * static_cast<double>(x[j]) + b * static_cast<double>(y[j]));
}
PXL_VECTOR_CLONES void scaled_add_f32_inplace_lanes(float* x, const float* y, std::int64_t n,
                                                    double a, double b) {
  for (std::int64_t j = 0; j < n; ++j)
    x[j] = static_cast<float>(a * static_cast<double>(x[j]) + b * static_cast<double>(y[j]));
}
// x = a·x + b·y², the moving average of squares; y² is exact in double.
PXL_VECTOR_CLONES void scaled_add_square_f32_inplace_lanes(float* x, const float* y, std::int64_t n,
                                                           double a, double b) {
  for (std::int64_t j = 0; j < n; ++j) {
    const auto yd = static_cast<double>(y[j]);
    x[j] = static_cast<float>(a * static_cast<double>(x[j]) + b * (yd * yd));
  }
}
} // namespace

void scaled_add_f32(const float* x, const float* y, float* z, std::int64_t n, double a, double b) {
  scaled_add_f32_lanes(x, y, z, n, a, b);
}
void scaled_add_f32_inplace(float* x, const float* y, std::int64_t n, double a, double b) {
  scaled_add_f32_inplace_lanes(x, y, n, a, b);
}
void scaled_add_square_f32_inplace(float* x, const float* y, std::int64_t n, double a, double b) {
  scaled_add_square_f32_inplace_lanes(x, y, n, a, b);
}

namespace {

/// Whether the float `f` lies exactly halfway between two adjacent halves (or half's largest
/// finite value and its overflow threshold). Rounding a double `d` to float and then to half,
/// both to nearest, differs from rounding `d` to half once only when the float lands on such
/// a point while `d` was not there. The halfway bit sits 13 bits below a normal float's
/// leading bit for a normal half, higher for the subnormal halves below 2^-14; below 2^-25
/// everything rounds to zero either way. Branch-free, so a loop over it vectorises.
inline bool on_half_midpoint(float f) {
  const auto bits = std::bit_cast<std::uint32_t>(f);
  const int e = static_cast<int>((bits >> 23) & 0xffu) - 127;
  const int k = std::min(23, std::max(12, -2 - e)); // the halfway bit of the significand
  const std::uint32_t significand = (bits & 0x7fffffu) | 0x800000u;
  return static_cast<unsigned>(e >= -25) &
         static_cast<unsigned>((significand & ((2u << k) - 1u)) == (1u << k));
}

/// z = float(a·x + b·y), the formula in double as scaled_add_f32's; returns how many results
/// were rounded onto a half midpoint (exact ones round to half correctly). The rounding error
/// d - f is exact in double and far above float's smallest subnormal wherever a midpoint can
/// be, so it is tested in float: the whole loop stays in float lanes.
PXL_VECTOR_CLONES unsigned scaled_add_f32_midpoints(const float* x, const float* y, float* z,
                                                    std::int64_t n, double a, double b) {
  unsigned midpoints = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double d = a * static_cast<double>(x[j]) + b * static_cast<double>(y[j]);
    const auto f = static_cast<float>(d);
    const auto error = static_cast<float>(d - static_cast<double>(f));
    z[j] = f;
    midpoints += static_cast<unsigned>(on_half_midpoint(f)) & static_cast<unsigned>(error != 0.0f);
  }
  return midpoints;
}

/// As scaled_add_f32_midpoints for z = float(a·x + b·y²).
PXL_VECTOR_CLONES unsigned scaled_add_square_f32_midpoints(const float* x, const float* y, float* z,
                                                           std::int64_t n, double a, double b) {
  unsigned midpoints = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const auto yd = static_cast<double>(y[j]);
    const double d = a * static_cast<double>(x[j]) + b * (yd * yd);
    const auto f = static_cast<float>(d);
    const auto error = static_cast<float>(d - static_cast<double>(f));
    z[j] = f;
    midpoints += static_cast<unsigned>(on_half_midpoint(f)) & static_cast<unsigned>(error != 0.0f);
  }
  return midpoints;
}

/// z = float(a·x + b·y²) on contiguous float32 (scaled_add_f32's formula with y squared, out of
/// place).
PXL_VECTOR_CLONES void scaled_add_square_f32(const float* x, const float* y, float* z,
                                             std::int64_t n, double a, double b) {
  for (std::int64_t j = 0; j < n; ++j) {
    const auto yd = static_cast<double>(y[j]);
    z[j] = static_cast<float>(a * static_cast<double>(x[j]) + b * (yd * yd));
  }
}

} // namespace

/// z = a·x + b·y (b·y² when `square`) on contiguous halves (z may be x): blocks widened with
/// pxl::convert, the float32 loop's formula in double rounded to float, that rounded to half;
/// the rare elements whose float lies on a half midpoint (about 1 in 8192) are rounded from
/// double again, so every element is the double formula rounded once to half (as
/// static_cast<half>(double)).
void scaled_add_half(const half* x, const half* y, half* z, std::int64_t n, double a, double b,
                     bool square) {
  float fx[half_block], fy[half_block], fz[half_block];
  for (std::int64_t j = 0; j < n; j += half_block) {
    const std::int64_t m = std::min(half_block, n - j);
    convert(x + j, fx, static_cast<std::size_t>(m));
    convert(y + j, fy, static_cast<std::size_t>(m));
    const unsigned midpoints = square ? scaled_add_square_f32_midpoints(fx, fy, fz, m, a, b)
                                      : scaled_add_f32_midpoints(fx, fy, fz, m, a, b);
    convert(fz, z + j, static_cast<std::size_t>(m));
    if (midpoints > 0)
      for (std::int64_t k = 0; k < m; ++k)
        if (on_half_midpoint(fz[k])) {
          const double d =
              a * static_cast<double>(fx[k]) + second_term(b, static_cast<double>(fy[k]), square);
          if (static_cast<double>(fz[k]) != d)
            z[j + k] = half(d);
        }
  }
}

void scaled_add_half_stochastic(const half* x, const half* y, half* z, std::int64_t n, double a,
                                double b, bool square, std::uint32_t word, std::int64_t index0) {
  float fx[half_block], fy[half_block], fz[half_block];
  for (std::int64_t j = 0; j < n; j += half_block) {
    const std::int64_t m = std::min(half_block, n - j);
    convert(x + j, fx, static_cast<std::size_t>(m));
    convert(y + j, fy, static_cast<std::size_t>(m));
    // The formula in double rounded to float, then to a half stochastically.
    if (square)
      scaled_add_square_f32(fx, fy, fz, m, a, b);
    else
      scaled_add_f32(fx, fy, fz, m, a, b);
    stochastic_half_values(fz, fz, m, word, static_cast<std::uint32_t>(index0 + j));
    convert(fz, z + j, static_cast<std::size_t>(m)); // exact: each is a half's value
  }
}

namespace {
// Eight lanes of GCC's and clang's vector extensions: each clone of stochastic_half_values
// lowers them to its own instructions (two SSE2 halves, one AVX2 register, ...), and every
// lane computes what stochastic_half_value computes, bit for bit. (The auto-vectoriser leaves
// that function's loop scalar: its branches do not if-convert. __builtin_bit_cast, not
// std::bit_cast, whose by-value vector return the SSE2 clone could not pass in a register.)
using u32x8 = std::uint32_t __attribute__((vector_size(32)));
using i32x8 = std::int32_t __attribute__((vector_size(32)));
using f32x8 = float __attribute__((vector_size(32)));

PXL_VECTOR_CLONES void stochastic_half_lanes(const float* in, float* out, std::int64_t n,
                                             std::uint32_t word, std::uint32_t index0) {
  using namespace sr_bits;
  std::int64_t j = 0;
  const u32x8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  for (; j + 8 <= n; j += 8) {
    u32x8 fb;
    std::memcpy(&fb, in + j, sizeof fb);
    // element_bits of each lane's index
    u32x8 bits = word ^ ((index0 + static_cast<std::uint32_t>(j) + lane) * 0x9e3779b9U);
    bits ^= bits >> 16;
    bits *= 0x7feb352dU;
    bits ^= bits >> 15;
    bits *= 0x846ca68bU;
    bits ^= bits >> 16;
    const u32x8 sign = fb & 0x80000000U, ab = fb ^ sign;
    const u32x8 normal = (ab + (bits >> 19)) & ~0x1fffU;
    // Comparisons give all-ones lanes where true: selections are masks.
    const auto small = __builtin_bit_cast(u32x8, ab < smallest_normal_half);
    const auto scaled = __builtin_bit_cast(f32x8, ab & small) * 0x1p24f;
    const i32x8 k = __builtin_convertvector(scaled, i32x8);
    const i32x8 frac =
        __builtin_convertvector((scaled - __builtin_convertvector(k, f32x8)) * 0x1p23f, i32x8);
    const auto up =
        __builtin_bit_cast(i32x8, ((bits >> 9) + __builtin_bit_cast(u32x8, frac)) >> 23);
    const auto sub = __builtin_bit_cast(u32x8, __builtin_convertvector(k + up, f32x8) * 0x1p-24f);
    const auto nan = __builtin_bit_cast(u32x8, ab > infinity);
    const auto to_infinity = __builtin_bit_cast(u32x8, ab >= half_overflow);
    const u32x8 past_value =
        (to_infinity & ((ab & nan) | (infinity & ~nan))) | (~to_infinity & largest_half);
    const auto past = __builtin_bit_cast(u32x8, ab > largest_half);
    const u32x8 kept = (small & sub) | (~small & normal);
    const u32x8 r = ((past & past_value) | (~past & kept)) | sign;
    std::memcpy(out + j, &r, sizeof r);
  }
  for (; j < n; ++j)
    out[j] =
        stochastic_half_value(in[j], element_bits(word, index0 + static_cast<std::uint32_t>(j)));
}
} // namespace

void stochastic_half_values(const float* in, float* out, std::int64_t n, std::uint32_t word,
                            std::uint32_t index0) {
  stochastic_half_lanes(in, out, n, word, index0);
}

void scaled_add_inplace(float* w, const float* g, std::int64_t n, double a, double b) {
  scaled_add_f32_inplace(w, g, n, a, b);
}

void scaled_add_inplace(half* w, const half* g, std::int64_t n, double a, double b) {
  scaled_add_half(w, g, w, n, a, b, false);
}

} // namespace pxl::emu::detail
