// The arithmetic of the in-place scaled adds (ScaledAddInplace, AddInplace, Accumulate) on
// contiguous values, for kernels that fold such an update into their own step and must give
// its bits (kernels/var_updates.cpp, compiled without FMA contraction).
#pragma once

#include "pxl/core/half.hpp"

#include <cstdint>

namespace pxl::emu::detail {

/// w = a·w + b·g over `n` contiguous values: each element the formula in double, rounded once
/// to float, as scaled_add_(w, g, {a, b}) computes it.
void scaled_add_inplace(float* w, const float* g, std::int64_t n, double a, double b);
/// w = a·w + b·g over `n` contiguous halves: each element the formula in double, rounded once
/// to half, as scaled_add_(w, g, {a, b}) computes it.
void scaled_add_inplace(half* w, const half* g, std::int64_t n, double a, double b);

} // namespace pxl::emu::detail
