// MatMul through oneDNN's sgemm on fixed output tiles; float16 tiles in kernels/half_gemm.cpp.
#include "../compile_context.hpp"
#include "common.hpp"
#include "dnnl_threads.hpp"
#include "gemm_tiles.hpp"
#include "half_gemm.hpp"
#include "matmul_partials.hpp"
#include "pxl/ir/attrs.hpp"

#include <dnnl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace pxl::emu::detail {

void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
           std::int64_t ldc, float alpha, float beta) {
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  const auto status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda,
                                 b, ldb, beta, c, ldc);
  PXL_ASSERT(status == dnnl_success);
}

namespace {

MatMulPlan plan_matmul(const KernelOp& op, std::uint32_t transposed_inputs) {
  Shape sa = op.input(0).shape(), sb = op.input(1).shape();
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  MatMulPlan p;
  p.m = sa[sa.size() - 2];
  p.k = sa.back();
  p.n = sb.back();
  p.trans_a = (transposed_inputs & 1u) != 0;
  p.trans_b = (transposed_inputs & 2u) != 0;
  const Shape a_batch(sa.begin(), sa.end() - 2), b_batch(sb.begin(), sb.end() - 2);
  const Shape batch = broadcast_shapes(a_batch, b_batch, "MatMul");
  const auto map = make_broadcast_map<2>(batch, {a_batch, b_batch});
  const std::int64_t batches = nelms(batch);
  p.a_offset.resize(static_cast<std::size_t>(batches));
  p.b_offset.resize(static_cast<std::size_t>(batches));
  map.for_runs(
      0, batches, [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
        for (std::int64_t j = 0; j < len; ++j) {
          p.a_offset[static_cast<std::size_t>(pos + j)] = (off[0] + j * inner[0]) * p.m * p.k;
          p.b_offset[static_cast<std::size_t>(pos + j)] = (off[1] + j * inner[1]) * p.k * p.n;
        }
      });
  // Tiles large enough to amortise packing (< 3% extra traffic at K ~ 1000), small enough
  // that a batch-8 layer of 512 units still splits over several workers.
  // A batch of products has work for every worker in its batches already: one call each
  // (up to 256 x 256) spares the calls' fixed cost. So has a product with a long reduction
  // that makes at least 8 larger tiles: a tile packs K·(rows + cols) operand elements for
  // K·rows·cols multiply-adds, and packing a transposed operand reads it row by row
  // (a weight gradient aᵀg over 2048 rows as 128 x 256 tiles: 1.3x faster than 64 x 128).
  const auto tiles_of = [&](std::int64_t rows, std::int64_t cols) {
    return ((p.m + rows - 1) / rows) * ((p.n + cols - 1) / cols);
  };
  std::int64_t rows = 64, cols = 128;
  if (batches >= 8) {
    rows = cols = 256;
  } else if (p.k >= 256) {
    for (const auto& [r, c] : {std::pair{256, 256}, std::pair{128, 256}})
      if (tiles_of(r, c) >= 8) {
        rows = r;
        cols = c;
        break;
      }
  }
  p.row_block = std::max<std::int64_t>(1, std::min(p.m, rows));
  p.col_block = std::max<std::int64_t>(1, std::min(p.n, cols));
  p.row_tiles = (p.m + p.row_block - 1) / p.row_block;
  p.col_tiles = (p.n + p.col_block - 1) / p.col_block;
  p.tiles = batches * p.row_tiles * p.col_tiles;
  return p;
}

/// A fused MatMul's epilogue on the tile of `rows` rows and `cols` columns at `c` (rows `ld`
/// apart), whose first column is column `c0` of the product: each column's bias added in float
/// as the Add kernel adds it, then ReLU as the Relu kernel (NaN kept, -0 made +0). For float16
/// the tile holds the product already rounded to half (the unfused MatMul's result), `row`
/// is float scratch for one row of the tile, and each result is rounded to half once.
template <typename T>
void tile_epilogue(T* c, std::int64_t ld, std::int64_t rows, std::int64_t cols, std::int64_t c0,
                   const T* bias, bool relu, float* row) {
  for (std::int64_t r = 0; r < rows; ++r) {
    T* out = c + r * ld;
    float* v = nullptr;
    if constexpr (std::is_same_v<T, half>) {
      convert(out, row, static_cast<std::size_t>(cols));
      v = row;
    } else {
      v = out;
    }
    if (bias)
      for (std::int64_t j = 0; j < cols; ++j)
        v[j] += static_cast<float>(bias[c0 + j]);
    if (relu)
      for (std::int64_t j = 0; j < cols; ++j)
        v[j] = relu_value(v[j]);
    if constexpr (std::is_same_v<T, half>)
      convert(row, out, static_cast<std::size_t>(cols));
  }
}

} // namespace

StepFn compile_fused_matmul(CompileContext& ctx, const KernelOp& op, const StepFusion& fusion,
                            const OpBuffers& buffers) {
  const DType d = op.input(0).dtype();
  auto plan = std::make_shared<const MatMulPlan>(plan_matmul(op, fusion.transposed_inputs));
  if (d == float16 &&
      (op.attrs_as<MatMulAttrs>().partials_type == float16 || op.output(0).dtype() == float32)) {
    // Never fused with an epilogue or an update (fusion.cpp: has_plain_partials).
    PXL_ASSERT(!fusion.bias && !fusion.relu && !fusion.update);
    return compile_half_operand_matmul(ctx, op, plan, buffers);
  }
  // An epilogue (bias and/or ReLU, its bias the step's third input) or an update, not both
  // (fuse_product_updates folds updates into plain products only).
  const bool epilogue = fusion.bias || fusion.relu;
  PXL_ASSERT(!epilogue || !fusion.update);
  const std::byte* bias = fusion.bias ? buffers.inputs[2] : nullptr;
  if (d == float32) {
    const float* a = typed<const float>(buffers.inputs[0]);
    const float* b = typed<const float>(buffers.inputs[1]);
    float* c = typed<float>(buffers.outputs[0]);
    // A fused update makes the output keep·output + scale·product (sgemm's beta and alpha),
    // the scale times a scalar input when it has one (read as the step runs).
    const auto scale = static_cast<float>(fusion.update ? fusion.update->scale : 1.0);
    const auto beta = static_cast<float>(fusion.update ? fusion.update->keep : 0.0);
    const float* scale_input = fusion.update && fusion.update->scaled_by_input
                                   ? typed<const float>(buffers.inputs[2])
                                   : nullptr;
    return [=](unsigned w, unsigned nw) {
      const MatMulPlan& p = *plan;
      const float alpha = scale_input ? scale * *scale_input : scale;
      SingleThreadedDnnl single;
      for_tiles(p, w, nw,
                [&](std::int64_t bt, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                    std::int64_t cols) {
                  const auto [ta, lda] = a_tile(p, a, bt, r0);
                  const auto [tb, ldb] = b_tile(p, b, bt, c0);
                  float* tile = c + bt * p.m * p.n + r0 * p.n + c0;
                  sgemm(p.trans_a, p.trans_b, rows, cols, p.k, ta, lda, tb, ldb, tile, p.n, alpha,
                        beta);
                  if (epilogue)
                    tile_epilogue(tile, p.n, rows, cols, c0, typed<const float>(bias), fusion.relu,
                                  nullptr);
                });
    };
  }
  if (d == float16) {
    const half* a = typed<const half>(buffers.inputs[0]);
    const half* b = typed<const half>(buffers.inputs[1]);
    half* c = typed<half>(buffers.outputs[0]);
    // One scratch per worker that can get a tile (never more than there are tiles).
    const auto workers = static_cast<std::size_t>(
        std::min<std::int64_t>(ctx.num_workers, std::max<std::int64_t>(plan->tiles, 1)));
    auto scratch = std::make_shared<std::vector<HalfTileScratch>>(workers, HalfTileScratch(*plan));
    // Per worker, one row of a tile in float for the epilogue.
    auto rows32 = std::make_shared<std::vector<std::vector<float>>>(
        epilogue ? workers : 0, std::vector<float>(static_cast<std::size_t>(plan->col_block)));
    const bool relu = fusion.relu;
    const auto update = fusion.update;
    // A scalar scale input comes with float32 products only (fuse_product_updates).
    PXL_ASSERT(!update || !update->scaled_by_input);
    return [=](unsigned w, unsigned nw) {
      const MatMulPlan& p = *plan;
      if (w >= scratch->size()) {
        // Only workers past the tile count get here, with nothing to do; anything else would
        // be a pool larger than the one the plan was compiled for.
        const auto [begin, end] = worker_range(p.tiles, w, nw);
        PXL_ASSERT(begin == end);
        return;
      }
      HalfTileScratch& s = (*scratch)[w];
      SingleThreadedDnnl single;
      for_tiles(p, w, nw,
                [&](std::int64_t bt, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                    std::int64_t cols) {
                  half_tile(p, s, a, b, c, bt, r0, rows, c0, cols, update);
                  if (epilogue)
                    tile_epilogue(c + bt * p.m * p.n + r0 * p.n + c0, p.n, rows, cols, c0,
                                  typed<const half>(bias), relu, (*rows32)[w].data());
                });
    };
  }
  unsupported_dtype(op, d);
}

StepFn compile_MatMul(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_fused_matmul(ctx, op, StepFusion{}, buffers);
}

} // namespace pxl::emu::detail
