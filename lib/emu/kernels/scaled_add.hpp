// The arithmetic of the scaled adds on contiguous values (kernels/scaled_add.cpp, compiled
// without FMA contraction): the var_updates kernels' loops, and the folded updates of kernels
// that fold such an update into their own step and must give its bits.
#pragma once

#include "pxl/core/half.hpp"

#include <cstdint>

namespace pxl::emu::detail {

/// z = a·x + b·y on contiguous float32, each element the formula in double rounded once to
/// float (z may not be x: scaled_add_f32_inplace is that case, which vectorises apart).
void scaled_add_f32(const float* x, const float* y, float* z, std::int64_t n, double a, double b);
/// x = a·x + b·y on contiguous float32, as scaled_add_f32.
void scaled_add_f32_inplace(float* x, const float* y, std::int64_t n, double a, double b);
/// x = a·x + b·y², the moving average of squares; y² is exact in double.
void scaled_add_square_f32_inplace(float* x, const float* y, std::int64_t n, double a, double b);

/// z = a·x + b·y (b·y² when `square`) on contiguous halves (z may be x): each element the double
/// formula rounded once to half, as static_cast<half>(double).
void scaled_add_half(const half* x, const half* y, half* z, std::int64_t n, double a, double b,
                     bool square);
/// As scaled_add_half, rounding stochastically (SessionOptions::stochastic_rounding): the
/// formula in double rounded to float, then to a half by stochastic_half_value, element j
/// drawing the bits of index `index0 + j` from the execution's `word` (stochastic_rounding.hpp).
void scaled_add_half_stochastic(const half* x, const half* y, half* z, std::int64_t n, double a,
                                double b, bool square, std::uint32_t word, std::int64_t index0);

/// b·y, or b·y² for the moving average of squares: the second term of every scaled add.
inline double second_term(double b, double y, bool square) { return b * (square ? y * y : y); }

/// w = a·w + b·g over `n` contiguous values: each element the formula in double, rounded once
/// to float, as scaled_add_(w, g, {a, b}) computes it.
void scaled_add_inplace(float* w, const float* g, std::int64_t n, double a, double b);
/// w = a·w + b·g over `n` contiguous halves: each element the formula in double, rounded once
/// to half, as scaled_add_(w, g, {a, b}) computes it.
void scaled_add_inplace(half* w, const half* g, std::int64_t n, double a, double b);

} // namespace pxl::emu::detail
