// Convolutions of float16 operands with float16 partials (ConvAttrs::partials_type):
// kernels/conv_partials.cpp.
#pragma once

#include "../kernel.hpp"
#include "conv_plan.hpp"
#include "pxl/core/half.hpp"
#include "pxl/ir/attrs.hpp"

namespace pxl::emu::detail {

/// The convolution `pass` of float16 tensors src (N, IC, in...), weights (OC, IC / groups,
/// k...) and dst (N, OC, out...) that accumulates in float16, the contract of
/// ops::ConvOptions::partials_type: each output sums runs of products, each run summed in
/// order in float32 and added to a float16 accumulator (rounding to nearest), a run without
/// products (all its reads in the padding) skipped. The runs:
/// - forward (dst): per block of 16 input channels of the group, per kernel tap (row-major);
/// - backward data (src): per block of 16 output channels of the group, per kernel tap;
/// - backward weights: 16 consecutive (image, output position) pairs, row-major.
StepFn compile_half_partials_conv(ConvPass pass, const ConvAttrs& attrs, const Shape& src,
                                  const Shape& weights, const Shape& dst, half* src_data,
                                  half* weights_data, half* dst_data);

} // namespace pxl::emu::detail
