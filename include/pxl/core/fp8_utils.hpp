// Host conversions to and from float8 with a power-of-two scale: PopXL's `popxl.fp8_utils`.
#pragma once

#include "pxl/core/host_tensor.hpp"

namespace pxl {

/// PopXL `host_pow2scale_cast_to_fp8`: `src` (float16, float32 or float64) times 2^log2_scale,
/// rounded to `dtype` (float8_143 or float8_152) to nearest, ties to even. Beyond the format's
/// range, NaN when `nan_on_overflow`, else the largest value of the sign (float8_from_double).
/// `log2_scale` must be in [-32, 32). The device's `ops::pow2scale_cast_to_fp8` gives the same
/// bytes with nan_on_overflow.
HostTensor host_pow2scale_cast_to_fp8(const HostTensor& src, DType dtype, int log2_scale = 0,
                                      bool nan_on_overflow = true);

/// PopXL `host_pow2scale_cast_from_fp8`: `src` (float8_143 or float8_152) times 2^log2_scale
/// as `dtype` (float16, float32 or float64; rounded once where the value does not fit).
/// `log2_scale` must be in [-32, 32).
HostTensor host_pow2scale_cast_from_fp8(const HostTensor& src, DType dtype, int log2_scale = 0);

} // namespace pxl
