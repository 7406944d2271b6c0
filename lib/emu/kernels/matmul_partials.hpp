// Products of float16 operands that accumulate other than as plain float16 matmuls do
// (ops::MatMulOptions): float16 partials, or a float32 result (kernels/matmul_partials.cpp).
#pragma once

#include "../kernel.hpp"
#include "gemm_tiles.hpp"

#include <cstdint>
#include <memory>

namespace pxl::emu::detail {

/// The contraction's run of products summed in float32 before a float16 accumulator takes
/// them: the AMP's float16 input-channel group (PopLibs' weights per conv unit for half).
inline constexpr std::int64_t half_partials_group = 16;

/// The MatMul step of float16 operands `op` on `plan`'s tiles, with its MatMulAttrs'
/// partials type and its output's dtype:
/// - float16 partials: per output, each run of half_partials_group consecutive products (exact
///   in float32) is summed in order in float32, added to the float16 accumulator in float32
///   and the sum rounded to nearest float16; the result is the accumulator, widened for a
///   float32 output;
/// - float32 partials into a float32 result: the operands widened exactly and multiplied in
///   float32, as float16 matmuls compute before rounding.
StepFn compile_half_operand_matmul(CompileContext& ctx, const KernelOp& op,
                                   std::shared_ptr<const MatMulPlan> plan,
                                   const OpBuffers& buffers);

} // namespace pxl::emu::detail
