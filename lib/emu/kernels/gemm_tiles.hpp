// The tiling of a matmul over the workers, shared by its float32 and float16 kernels
// (kernels/matmul.cpp, kernels/half_gemm.cpp), and oneDNN's sgemm on one tile.
#pragma once

#include "common.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace pxl::emu::detail {

/// C[m, n] = alpha·op(A) op(B) + beta·C, row-major; op(X) is X transposed when its flag is
/// set (A stored [k, m], B stored [n, k]). beta = 0 ignores C's old contents.
void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
           std::int64_t ldc, float alpha = 1.0f, float beta = 0.0f);

/// The tiling of one matmul, fixed by the shapes alone: each tile is one sgemm call of the
/// same size whichever worker runs it, so results are identical for any number of workers.
struct MatMulPlan {
  std::int64_t m = 0, n = 0, k = 0;
  /// Whether A is stored [.., k, m] and B [.., n, k] (a Transpose fused into the matmul).
  bool trans_a = false, trans_b = false;
  std::int64_t row_block = 0, col_block = 0, row_tiles = 0, col_tiles = 0, tiles = 0;
  std::vector<std::int64_t> a_offset, b_offset; ///< per output batch, in elements
};

/// Calls `f(batch, row0, rows, col0, cols)` for the worker's tiles.
template <typename F>
void for_tiles(const MatMulPlan& p, unsigned w, unsigned nw, F&& f) {
  const auto [begin, end] = worker_range(p.tiles, w, nw);
  for (std::int64_t t = begin; t < end; ++t) {
    const std::int64_t ct = t % p.col_tiles, rt = (t / p.col_tiles) % p.row_tiles;
    const std::int64_t batch = t / (p.col_tiles * p.row_tiles);
    const std::int64_t row0 = rt * p.row_block, col0 = ct * p.col_block;
    f(batch, row0, std::min(p.row_block, p.m - row0), col0, std::min(p.col_block, p.n - col0));
  }
}

/// Where the tile of op(A) starting at row `r0` of batch `bt` begins, and its leading dim.
template <typename T>
std::pair<const T*, std::int64_t> a_tile(const MatMulPlan& p, const T* a, std::int64_t bt,
                                         std::int64_t r0) {
  const T* base = a + p.a_offset[static_cast<std::size_t>(bt)];
  return p.trans_a ? std::pair{base + r0, p.m} : std::pair{base + r0 * p.k, p.k};
}
/// Where the tile of op(B) starting at column `c0` of batch `bt` begins, and its leading dim.
template <typename T>
std::pair<const T*, std::int64_t> b_tile(const MatMulPlan& p, const T* b, std::int64_t bt,
                                         std::int64_t c0) {
  const T* base = b + p.b_offset[static_cast<std::size_t>(bt)];
  return p.trans_b ? std::pair{base + c0 * p.k, p.k} : std::pair{base + c0, p.n};
}

} // namespace pxl::emu::detail
