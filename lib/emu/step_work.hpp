// What a step computes, for the cost model: its floating-point (or element) operations and,
// for the AMP's ops, the product PopLibs would plan over the tiles.
#pragma once

#include "pxl/emu/step_observer.hpp"
#include "pxl/ir/view.hpp"

#include <cstdint>
#include <optional>

namespace pxl::emu::detail {

/// Floating-point operations of one execution of `op` (a multiply-add counts two), or its
/// element operations for kernels that do no arithmetic worth counting apart.
std::int64_t flops_of(const IrView& ir, OpId op);

/// An AMP step's product (StepInfo::amp): a matmul's m, n, k over its batch, dims broadcast in
/// one operand folded into the other operand's free dim; a convolution's output positions,
/// channels and input taps per group, in the terms of the convolution run (as flops_of).
/// None for other ops.
std::optional<AmpShape> amp_shape_of(const IrView& ir, OpId op);

} // namespace pxl::emu::detail
