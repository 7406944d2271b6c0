// Transposes read in place: a MatMul operand that is a Transpose of the last two axes is
// read transposed by the matmul itself, as Poplar's dimShuffle is a view rather than a copy.
#pragma once

#include "flatten.hpp"

namespace pxl::emu::detail {

/// Rewrites `schedule` so that each MatMul whose operand comes from a Transpose swapping the
/// last two axes reads the Transpose's input instead (FlatStep::transposed_inputs), when that
/// input and the transposed value are not written in between. A Transpose left with no
/// readers is removed, and values nothing uses any more are dropped. Results are unchanged;
/// the matmul gradient's weight transposes stop costing a copy each, and their buffers.
void fuse_transposes(const IrStorage& ir, FlatSchedule& schedule);

} // namespace pxl::emu::detail
