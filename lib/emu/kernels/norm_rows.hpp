// Layer normalisation of one contiguous float32 row, for the kernels that normalise rows:
// layer_norm (a row is the last axis) and group_norm (a row is one image's group of channels,
// with the per-channel weight and bias spread over the row).
#pragma once

#include <cstdint>

namespace pxl::emu::detail {

/// y = (x − mean)·rstd·weight + bias over `d` elements, the mean and the biased variance in
/// double (sum_in_lanes' fixed order), each element rounded once.
void layer_norm_row(const float* x, const float* weight, const float* bias, float* y,
                    std::int64_t d, double eps);

/// The row's gradient: with x̂ = (x − mean)·rstd, a = Σ g·w / d and b = Σ g·w·x̂ / d,
/// dx = rstd·(g·w − a − x̂·b) and gx = g·x̂, each rounded once.
void layer_norm_grad_row(const float* x, const float* weight, const float* g, float* dx, float* gx,
                         std::int64_t d, double eps);

} // namespace pxl::emu::detail
