// float16 matmul tiles: operands widened to float (in registers where a tile is small), the
// product rounded back to half, bitwise that of the unfused graph (kernels/half_gemm.cpp).
#pragma once

#include "../kernel.hpp"
#include "gemm_tiles.hpp"
#include "pxl/core/half.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace pxl::emu::detail {

/// One worker's float copies of a float16 tile's operands and result, sized for the largest
/// tile when the plan is compiled so that running it allocates nothing (and only as the
/// paths of the plan's tiles need them).
struct HalfTileScratch {
  /// `lines` holds transpose_lines stored rows of a transposed operand on their way into `a`
  /// or `b`.
  std::vector<float> a, b, c, lines;
  explicit HalfTileScratch(const MatMulPlan& p);
};

/// float16 tile: op(A)'s rows widened to float, then multiplied on the tile's path
/// (half_tile_path); the result rounded to half or, with a fused update,
/// w = keep·w + scale·product in float, rounded to half once. Every path gives bitwise the
/// same product of operands transposed beforehand (test/emu/fusion.cpp).
void half_tile(const MatMulPlan& p, HalfTileScratch& s, const half* a, const half* b, half* c,
               std::int64_t bt, std::int64_t r0, std::int64_t rows, std::int64_t c0,
               std::int64_t cols, const std::optional<StepFusion::Update>& update);

} // namespace pxl::emu::detail
