// float16 products with float16 partials or a float32 result (matmul_partials.hpp): each
// tile's operands widened into float rows, then summed as the partials type says.
#include "matmul_partials.hpp"

#include "../compile_context.hpp"
#include "dnnl_threads.hpp"
#include "pxl/core/half.hpp"
#include "pxl/ir/attrs.hpp"

#include <algorithm>
#include <memory>
#include <vector>

namespace pxl::emu::detail {

namespace {

/// One worker's float copies of a tile's operands and its rows of partials.
struct PartialsScratch {
  std::vector<float> a, b, group, sum;
  std::vector<half> acc;
  explicit PartialsScratch(const MatMulPlan& p)
      : a(static_cast<std::size_t>(p.row_block * p.k)),
        b(static_cast<std::size_t>(p.k * p.col_block)),
        group(static_cast<std::size_t>(p.col_block)), sum(static_cast<std::size_t>(p.col_block)),
        acc(static_cast<std::size_t>(p.col_block)) {}
};

/// op(A)'s rows [r0, r0 + rows) of batch `bt` as float [rows, k] in s.a, and op(B)'s columns
/// [c0, c0 + cols) as float [k, cols] in s.b (widening is exact).
void partials_widen(const MatMulPlan& p, const half* a, const half* b, std::int64_t bt,
                    std::int64_t r0, std::int64_t rows, std::int64_t c0, std::int64_t cols,
                    PartialsScratch& s) {
  const auto [ta, lda] = a_tile(p, a, bt, r0);
  const auto [tb, ldb] = b_tile(p, b, bt, c0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t kk = 0; kk < p.k; ++kk)
      s.a[static_cast<std::size_t>(r * p.k + kk)] =
          static_cast<float>(p.trans_a ? ta[kk * lda + r] : ta[r * lda + kk]);
  for (std::int64_t kk = 0; kk < p.k; ++kk)
    for (std::int64_t c = 0; c < cols; ++c)
      s.b[static_cast<std::size_t>(kk * cols + c)] =
          static_cast<float>(p.trans_b ? tb[c * ldb + kk] : tb[kk * ldb + c]);
}

/// Row `r` of the tile in s.a and s.b with float16 partials, left in s.acc.
void partials_half_row(const MatMulPlan& p, std::int64_t r, std::int64_t cols, PartialsScratch& s) {
  const auto n = static_cast<std::size_t>(cols);
  std::fill_n(s.acc.begin(), n, half{});
  const float* a = s.a.data() + r * p.k;
  for (std::int64_t k0 = 0; k0 < p.k; k0 += half_partials_group) {
    const std::int64_t k1 = std::min(p.k, k0 + half_partials_group);
    std::fill_n(s.group.begin(), n, 0.0f);
    for (std::int64_t kk = k0; kk < k1; ++kk) {
      // A product of two halves is exact in float32, so a contracted multiply-add rounds as
      // the separate add does.
      const float x = a[kk];
      const float* b = s.b.data() + kk * cols;
      for (std::size_t c = 0; c < n; ++c)
        s.group[c] += x * b[c];
    }
    convert(s.acc.data(), s.sum.data(), n);
    for (std::size_t c = 0; c < n; ++c)
      s.sum[c] += s.group[c];
    convert(s.sum.data(), s.acc.data(), n);
  }
}

} // namespace

StepFn compile_half_operand_matmul(CompileContext& ctx, const KernelOp& op,
                                   std::shared_ptr<const MatMulPlan> plan,
                                   const OpBuffers& buffers) {
  const bool half_partials = op.attrs_as<MatMulAttrs>().partials_type == float16;
  const bool float_out = op.output(0).dtype() == float32;
  const half* a = typed<const half>(buffers.inputs[0]);
  const half* b = typed<const half>(buffers.inputs[1]);
  std::byte* c = buffers.outputs[0];
  const auto workers = static_cast<std::size_t>(
      std::min<std::int64_t>(ctx.num_workers, std::max<std::int64_t>(plan->tiles, 1)));
  auto scratch = std::make_shared<std::vector<PartialsScratch>>(workers, PartialsScratch(*plan));
  return [=](unsigned w, unsigned nw) {
    const MatMulPlan& p = *plan;
    if (w >= scratch->size())
      return; // past the tile count: nothing to do (for_tiles gives it no tile)
    PartialsScratch& s = (*scratch)[w];
    SingleThreadedDnnl single;
    for_tiles(p, w, nw,
              [&](std::int64_t bt, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                  std::int64_t cols) {
                partials_widen(p, a, b, bt, r0, rows, c0, cols, s);
                const std::int64_t at = bt * p.m * p.n + r0 * p.n + c0;
                if (!half_partials) { // float32 partials into a float32 result
                  sgemm(false, false, rows, cols, p.k, s.a.data(), p.k, s.b.data(), cols,
                        typed<float>(c) + at, p.n);
                  return;
                }
                for (std::int64_t r = 0; r < rows; ++r) {
                  partials_half_row(p, r, cols, s);
                  if (float_out)
                    convert(s.acc.data(), typed<float>(c) + at + r * p.n,
                            static_cast<std::size_t>(cols));
                  else
                    std::copy_n(s.acc.data(), cols, typed<half>(c) + at + r * p.n);
                }
              });
  };
}

} // namespace pxl::emu::detail
