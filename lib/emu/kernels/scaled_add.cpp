// The arithmetic of the scaled adds on contiguous values (scaled_add.hpp), compiled with
// -ffp-contract=off (kernels/meson.build) so that every clone rounds as the portable loop.
#include "scaled_add.hpp"

#include "half_blocks.hpp"
#include "stochastic_rounding.hpp"
#include "vector_math.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>

namespace pxl::emu::detail {

// z = a·x + b·y on contiguous float32, in double without contracting into FMAs (this file is
// compiled with -ffp-contract=off, see meson.build), so every clone rounds exactly like the
// portable loop (weights come out the same on any machine). Separate in-place and out-of-place
// loops: an output equal to x would fail the vectoriser's overlap check and run scalar.
PXL_VECTOR_CLONES void scaled_add_f32(const float* x, const float* y, float* z, std::int64_t n,
                                      double a, double b) {
  for (std::int64_t j = 0; j < n; ++j)
    z[j] = static_cast<float>(a * static_cast<double>(x[j]) + b * static_cast<double>(y[j]));
}
PXL_VECTOR_CLONES void scaled_add_f32_inplace(float* x, const float* y, std::int64_t n, double a,
                                              double b) {
  for (std::int64_t j = 0; j < n; ++j)
    x[j] = static_cast<float>(a * static_cast<double>(x[j]) + b * static_cast<double>(y[j]));
}
// x = a·x + b·y², the moving average of squares; y² is exact in double.
PXL_VECTOR_CLONES void scaled_add_square_f32_inplace(float* x, const float* y, std::int64_t n,
                                                     double a, double b) {
  for (std::int64_t j = 0; j < n; ++j) {
    const auto yd = static_cast<double>(y[j]);
    x[j] = static_cast<float>(a * static_cast<double>(x[j]) + b * (yd * yd));
  }
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

/// z = a·x + b·y (b·y² when `square`) in double, rounded stochastically to float16 values held
/// as floats: element j draws the bits of index `index0 + j` from the execution's `word`.
PXL_VECTOR_CLONES void scaled_add_f32_stochastic(const float* x, const float* y, float* z,
                                                 std::int64_t n, double a, double b, bool square,
                                                 std::uint64_t word, std::uint64_t index0) {
  for (std::int64_t j = 0; j < n; ++j) {
    const auto yd = static_cast<double>(y[j]);
    const double d = a * static_cast<double>(x[j]) + b * (square ? yd * yd : yd);
    z[j] = stochastic_half_value(d, element_bits(word, index0 + static_cast<std::uint64_t>(j)));
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

/// As scaled_add_half, rounding stochastically (SessionOptions::stochastic_rounding): blocks
/// widened, the formula in double rounded to a half's value, then narrowed exactly.
void scaled_add_half_stochastic(const half* x, const half* y, half* z, std::int64_t n, double a,
                                double b, bool square, std::uint64_t word, std::int64_t index0) {
  float fx[half_block], fy[half_block], fz[half_block];
  for (std::int64_t j = 0; j < n; j += half_block) {
    const std::int64_t m = std::min(half_block, n - j);
    convert(x + j, fx, static_cast<std::size_t>(m));
    convert(y + j, fy, static_cast<std::size_t>(m));
    scaled_add_f32_stochastic(fx, fy, fz, m, a, b, square, word,
                              static_cast<std::uint64_t>(index0 + j));
    convert(fz, z + j, static_cast<std::size_t>(m));
  }
}

void scaled_add_inplace(float* w, const float* g, std::int64_t n, double a, double b) {
  scaled_add_f32_inplace(w, g, n, a, b);
}

void scaled_add_inplace(half* w, const half* g, std::int64_t n, double a, double b) {
  scaled_add_half(w, g, w, n, a, b, false);
}

} // namespace pxl::emu::detail
