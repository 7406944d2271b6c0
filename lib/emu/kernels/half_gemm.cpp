// float16 matmul tiles: a short reduction or few rows through kernels that convert halves in
// registers (F16C, FMA), any other tile through sgemm on widened operands.
#include "half_gemm.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace pxl::emu::detail {

namespace {

/// Stored rows of a transposed float16 operand widened at a time (see widen_transposed).
constexpr std::int64_t transpose_lines = 8;

/// dst[c·ldd + r] = float(src[r·ld + c]) for r in [r_begin, n_rows), c < n_cols, portably:
/// transpose_lines source rows at a time are widened into `lines` with pxl::convert, then
/// written out as runs of consecutive floats of each destination row.
void widen_transposed_portable(const half* src, std::int64_t ld, std::int64_t r_begin,
                               std::int64_t n_rows, std::int64_t n_cols, float* dst,
                               std::int64_t ldd, float* lines) {
  for (std::int64_t r0 = r_begin; r0 < n_rows; r0 += transpose_lines) {
    const std::int64_t m = std::min(transpose_lines, n_rows - r0);
    for (std::int64_t t = 0; t < m; ++t)
      convert(src + (r0 + t) * ld, lines + t * n_cols, static_cast<std::size_t>(n_cols));
    for (std::int64_t c = 0; c < n_cols; ++c) {
      float* out = dst + c * ldd + r0;
      for (std::int64_t t = 0; t < m; ++t)
        out[t] = lines[t * n_cols + c];
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
/// Whether the CPU converts halves with F16C (and the OS saves the YMM registers).
bool has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __builtin_cpu_init();
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0 &&
           __builtin_cpu_supports("avx");
  }();
  return has;
}

/// dst[c·ldd + t] = float(src[t·ld + c]) for t, c < 8: 8 stored rows of 8 halves widened
/// with F16C, transposed in registers with unpacks and shuffles, stored as 8 runs of 8 floats.
__attribute__((target("avx,f16c"))) inline void widen_transpose8(const half* src, std::int64_t ld,
                                                                 float* dst, std::int64_t ldd) {
  __m256 r[8];
  for (int t = 0; t < 8; ++t)
    r[t] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + t * ld)));
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/// widen_transposed for whole blocks of 8 x 8 (widen_transpose8). Returns the rows done (a
/// multiple of 8); the caller finishes the rest.
__attribute__((target("avx,f16c"))) std::int64_t
widen_transposed_f16c(const half* src, std::int64_t ld, std::int64_t n_rows, std::int64_t n_cols,
                      float* dst, std::int64_t ldd) {
  const std::int64_t rows8 = n_rows - n_rows % 8, cols8 = n_cols - n_cols % 8;
  for (std::int64_t r0 = 0; r0 < rows8; r0 += 8) {
    for (std::int64_t c = 0; c < cols8; c += 8)
      widen_transpose8(src + r0 * ld + c, ld, dst + c * ldd + r0, ldd);
    for (std::int64_t c = cols8; c < n_cols; ++c)
      for (std::int64_t t = 0; t < 8; ++t)
        dst[c * ldd + r0 + t] = _cvtsh_ss(src[(r0 + t) * ld + c].bits());
  }
  return rows8;
}
#endif

#if defined(__x86_64__) || defined(__i386__)
/// 8 halves widened to floats with F16C (exact).
__attribute__((target("avx,f16c"))) inline void convert8_f16c(const half* in, float* out) {
  _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
}

/// 8 floats narrowed to halves with F16C, rounding to nearest even.
__attribute__((target("avx,f16c"))) inline void convert8_f16c(const float* in, half* out) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT));
}

/// One element of convert8_f16c, for the tail of a row.
inline float converted(half h) { return pxl::detail::half_bits_to_float(h.bits()); }
inline half converted(float f) { return half::from_bits(pxl::detail::float_to_half_bits(f)); }

/// convert_rows with F16C: one call for the whole block rather than one per row (a tile's rows
/// are short, 64 to 512 elements, so the per-call cost would show).
template <typename From, typename To>
__attribute__((target("avx,f16c"))) void convert_rows_f16c(const From* src, std::int64_t ld,
                                                           std::int64_t rows, std::int64_t cols,
                                                           To* dst, std::int64_t ldd) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const From* in = src + r * ld;
    To* out = dst + r * ldd;
    std::int64_t i = 0;
    for (; i + 8 <= cols; i += 8)
      convert8_f16c(in + i, out + i);
    for (; i < cols; ++i)
      out[i] = converted(in[i]);
  }
}
#endif

/// dst[r·ldd + c] = src[r·ld + c] for r < rows, c < cols, between float16 and float32:
/// widening is exact, narrowing rounds to nearest, ties to even.
template <typename From, typename To>
void convert_rows(const From* src, std::int64_t ld, std::int64_t rows, std::int64_t cols, To* dst,
                  std::int64_t ldd) {
#if defined(__x86_64__) || defined(__i386__)
  if (has_f16c())
    return convert_rows_f16c(src, ld, rows, cols, dst, ldd);
#endif
  for (std::int64_t r = 0; r < rows; ++r)
    convert(src + r * ld, dst + r * ldd, static_cast<std::size_t>(cols));
}

#if defined(__x86_64__) || defined(__i386__)
/// update_rows with F16C: multiplies and adds as separate float operations, like the scalar
/// loop (no FMA), so both give the same bits.
__attribute__((target("avx,f16c"))) void update_rows_f16c(const float* p, std::int64_t ld,
                                                          std::int64_t rows, std::int64_t cols,
                                                          half* w, std::int64_t ldw, float keep) {
  const __m256 k = _mm256_set1_ps(keep);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = p + r * ld;
    half* out = w + r * ldw;
    std::int64_t i = 0;
    for (; i + 8 <= cols; i += 8) {
      auto* at = reinterpret_cast<__m128i*>(out + i);
      const __m256 old = _mm256_cvtph_ps(_mm_loadu_si128(at));
      const __m256 sum = _mm256_add_ps(_mm256_mul_ps(k, old), _mm256_loadu_ps(in + i));
      _mm_storeu_si128(at, _mm256_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < cols; ++i) {
      const float old = pxl::detail::half_bits_to_float(out[i].bits());
      out[i] = half::from_bits(pxl::detail::float_to_half_bits(keep * old + in[i]));
    }
  }
}
#endif

/// w[r·ldw + c] = half(keep·float(w[r·ldw + c]) + p[r·ld + c]) for r < rows, c < cols: a fused
/// float16 update of w by the (scaled) product p, in float, rounded to half once.
void update_rows(const float* p, std::int64_t ld, std::int64_t rows, std::int64_t cols, half* w,
                 std::int64_t ldw, float keep) {
#if defined(__x86_64__) || defined(__i386__)
  if (has_f16c())
    return update_rows_f16c(p, ld, rows, cols, w, ldw, keep);
#endif
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      half& x = w[r * ldw + c];
      x = half(keep * static_cast<float>(x) + p[r * ld + c]);
    }
}

/// dst[c·ldd + r] = float(src[r·ld + c]) for r < n_rows, c < n_cols: a transposed operand's
/// tile widened into the layout of the unfused product (exact: conversions are exact and the
/// rest moves floats). sgemm always gets both operands untransposed: oneDNN's kernels sum in
/// an order that depends on the operands' layout (for a transposed A on AVX2 and AVX-512, for
/// a transposed B on AVX-512), which would make a fused transpose change the result.
void widen_transposed(const half* src, std::int64_t ld, std::int64_t n_rows, std::int64_t n_cols,
                      float* dst, std::int64_t ldd, float* lines) {
  std::int64_t done = 0;
#if defined(__x86_64__) || defined(__i386__)
  if (has_f16c())
    done = widen_transposed_f16c(src, ld, n_rows, n_cols, dst, ldd);
#endif
  widen_transposed_portable(src, ld, done, n_rows, n_cols, dst, ldd, lines);
}

/// The most rows few_rows_product takes: its R accumulators, the B vector and A's broadcast
/// fit the 16 YMM registers.
constexpr int few_rows_limit = 8;
/// The longest reduction few_k_product takes.
constexpr std::int64_t few_k_limit = 16;

#if defined(__x86_64__) || defined(__i386__)
/// Whether the CPU has F16C and FMA (and the OS saves the YMM registers): few_rows_product
/// and few_k_product.
bool has_f16c_fma() {
  static const bool has = has_f16c() && __builtin_cpu_supports("fma");
  return has;
}

/// acc[i] += A[i, kk]·bv for the R rows of A (row-major, lda = k), one fused multiply-add each.
template <int R>
__attribute__((target("avx,fma"))) inline void
multiply_add_rows(__m256 (&acc)[R], const float* a, std::int64_t k, std::int64_t kk, __m256 bv) {
  for (int i = 0; i < R; ++i)
    acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + i * k + kk), bv, acc[i]);
}

/// C[R, cols] = alpha·A[R, k]·op(B), A float (row-major, lda = k), B halves stored [k, cols]
/// or, with TransB, [cols, k] (ldb apart). Each output adds its k products in order with
/// fused multiply-adds, so B and its transpose give the same bits. Products of few rows (a
/// batch-8 layer's X·W and dY·Wᵀ) spend more time widening B into a float tile that sgemm
/// then reads back than multiplying: here B's halves are widened in registers as they are
/// read, each feeding R multiply-adds.
template <int R, bool TransB>
__attribute__((target("avx,fma,f16c"))) void
few_rows_product(const float* a, std::int64_t k, const half* b, std::int64_t ldb, std::int64_t cols,
                 float* c, std::int64_t ldc, float alpha) {
  const std::int64_t strips = cols - cols % 8;
  const __m256 scale = _mm256_set1_ps(alpha);
  if constexpr (TransB) {
    // 8 stored rows (a strip's columns) read along k, 8 x 8 blocks widened and transposed
    // in registers.
    alignas(32) float block[64];
    for (std::int64_t j = 0; j < strips; j += 8) {
      __m256 acc[R];
      for (int i = 0; i < R; ++i)
        acc[i] = _mm256_setzero_ps();
      const half* rows = b + j * ldb;
      std::int64_t kk = 0;
      for (; kk + 8 <= k; kk += 8) {
        widen_transpose8(rows + kk, ldb, block, 8);
        for (int t = 0; t < 8; ++t)
          multiply_add_rows<R>(acc, a, k, kk + t, _mm256_load_ps(block + 8 * t));
      }
      for (; kk < k; ++kk) {
        for (int l = 0; l < 8; ++l)
          block[l] = static_cast<float>(rows[l * ldb + kk]);
        multiply_add_rows<R>(acc, a, k, kk, _mm256_load_ps(block));
      }
      for (int i = 0; i < R; ++i)
        _mm256_storeu_ps(c + i * ldc + j, _mm256_mul_ps(scale, acc[i]));
    }
  } else {
    // k in chunks whose rows of B fit in L1 (16 KiB), every 8-column strip of the tile run
    // over a chunk before the next: a strip's partial sums wait in C between chunks (exactly,
    // as floats), so every output still adds its k products in order.
    const std::int64_t chunk =
        std::max<std::int64_t>(8, 16 * 1024 / std::max<std::int64_t>(1, strips * 2));
    for (std::int64_t k0 = 0; k0 < k; k0 += chunk) {
      const std::int64_t k1 = std::min(k, k0 + chunk);
      for (std::int64_t j = 0; j < strips; j += 8) {
        __m256 acc[R];
        for (int i = 0; i < R; ++i)
          acc[i] = k0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(c + i * ldc + j);
        const half* row = b + k0 * ldb + j;
        for (std::int64_t kk = k0; kk < k1; ++kk, row += ldb)
          multiply_add_rows<R>(
              acc, a, k, kk,
              _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row))));
        for (int i = 0; i < R; ++i)
          _mm256_storeu_ps(c + i * ldc + j, k1 == k ? _mm256_mul_ps(scale, acc[i]) : acc[i]);
      }
    }
  }
  // The last cols % 8 columns, one output at a time.
  for (std::int64_t j = strips; j < cols; ++j)
    for (int i = 0; i < R; ++i) {
      float acc = 0.0f;
      for (std::int64_t kk = 0; kk < k; ++kk)
        acc = std::fma(a[i * k + kk],
                       static_cast<float>(TransB ? b[j * ldb + kk] : b[kk * ldb + j]), acc);
      c[i * ldc + j] = alpha * acc;
    }
}

/// few_rows_product for rows in [1, few_rows_limit]: the instance for `rows` from a table.
template <bool TransB>
void few_rows_product(std::int64_t rows, const float* a, std::int64_t k, const half* b,
                      std::int64_t ldb, std::int64_t cols, float* c, std::int64_t ldc,
                      float alpha) {
  static constexpr auto instances = []<int... R>(std::integer_sequence<int, R...>) {
    return std::array{&few_rows_product<R + 1, TransB>...};
  }
  (std::make_integer_sequence<int, few_rows_limit>{});
  // k > 0: an empty reduction is few_k_product's (the chunks above would write nothing).
  PXL_ASSERT(rows >= 1 && rows <= few_rows_limit && k > 0);
  instances[static_cast<std::size_t>(rows - 1)](a, k, b, ldb, cols, c, ldc, alpha);
}

/// One row of few_k_product over S strips of 8 columns from column j: S accumulators, each
/// adding its k products in order with fused multiply-adds, then scaled, added to keep·C
/// with an update, and rounded to half.
template <int S, bool Update>
__attribute__((target("avx,fma,f16c"))) inline void
few_k_strips(const float* a, std::int64_t k, const float* b, std::int64_t ldb, std::int64_t j,
             half* c, __m256 scale, __m256 keep) {
  __m256 acc[S];
  for (int s = 0; s < S; ++s)
    acc[s] = _mm256_setzero_ps();
  for (std::int64_t kk = 0; kk < k; ++kk) {
    const __m256 av = _mm256_broadcast_ss(a + kk);
    for (int s = 0; s < S; ++s)
      acc[s] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + kk * ldb + j + 8 * s), acc[s]);
  }
  for (int s = 0; s < S; ++s) {
    auto* out = reinterpret_cast<__m128i*>(c + j + 8 * s);
    __m256 value = _mm256_mul_ps(scale, acc[s]);
    if constexpr (Update)
      value = _mm256_add_ps(_mm256_mul_ps(keep, _mm256_cvtph_ps(_mm_loadu_si128(out))), value);
    _mm_storeu_si128(out, _mm256_cvtps_ph(value, _MM_FROUND_TO_NEAREST_INT));
  }
}

/// C[rows, cols] (halves, ldc apart) = half(alpha·A·B), or with Update
/// half(keep·C + alpha·A·B), A float [rows, k] and B float [k, cols], both row-major: a
/// product with a reduction so short (a batch-8 weight gradient, k = 8) that writing it costs
/// more than computing it is kept in registers and rounded straight into C, where sgemm's
/// float tile would be written, read back and rounded in a second pass. Eight strips of
/// columns at a time keep the two FMA pipes busy across the accumulators' latency.
template <bool Update>
__attribute__((target("avx,fma,f16c"))) void
few_k_product(const float* a, std::int64_t rows, std::int64_t k, const float* b, std::int64_t cols,
              half* c, std::int64_t ldc, float alpha, float keep) {
  const __m256 scale = _mm256_set1_ps(alpha), keep_v = _mm256_set1_ps(keep);
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* row = a + i * k;
    half* out = c + i * ldc;
    std::int64_t j = 0;
    for (; j + 64 <= cols; j += 64)
      few_k_strips<8, Update>(row, k, b, cols, j, out, scale, keep_v);
    for (; j + 8 <= cols; j += 8)
      few_k_strips<1, Update>(row, k, b, cols, j, out, scale, keep_v);
    for (; j < cols; ++j) {
      float acc = 0.0f;
      for (std::int64_t kk = 0; kk < k; ++kk)
        acc = std::fma(row[kk], b[kk * cols + j], acc);
      float value = alpha * acc;
      if constexpr (Update) {
        const float kept = keep * static_cast<float>(out[j]);
        value = kept + value;
      }
      out[j] = half(value);
    }
  }
}
#endif

/// How a float16 tile is multiplied.
enum class HalfTilePath {
  few_k,    ///< few_k_product: a reduction of at most few_k_limit
  few_rows, ///< few_rows_product: at most few_rows_limit rows
  sgemm,    ///< both operands widened, sgemm, the result rounded in a second pass
};

/// The path of a float16 tile of `rows` rows: by its shape alone (and the CPU), so that the
/// same product is computed alike whichever worker runs it.
HalfTilePath half_tile_path(std::int64_t rows, std::int64_t k) {
#if defined(__x86_64__) || defined(__i386__)
  if (has_f16c_fma()) {
    if (k <= few_k_limit)
      return HalfTilePath::few_k;
    if (rows <= few_rows_limit)
      return HalfTilePath::few_rows;
  }
#endif
  (void)rows;
  (void)k;
  return HalfTilePath::sgemm;
}

/// op(B)'s tile of `cols` columns from column `c0` of batch `bt`, widened into s.b as the
/// unfused product holds it: [k, cols], row-major, whether or not B is stored transposed.
void widen_b_tile(const MatMulPlan& p, HalfTileScratch& s, const half* b, std::int64_t bt,
                  std::int64_t c0, std::int64_t cols) {
  const auto [tb, ldb] = b_tile(p, b, bt, c0);
  if (p.trans_b) // stored [n, k]: the tile's columns are `cols` consecutive stored rows
    widen_transposed(tb, ldb, cols, p.k, s.b.data(), cols, s.lines.data());
  else
    convert_rows(tb, ldb, p.k, cols, s.b.data(), cols);
}

} // namespace

HalfTileScratch::HalfTileScratch(const MatMulPlan& p) {
  bool widened_b = false, float_c = false;
  for (const std::int64_t rows : {p.row_block, p.m % p.row_block}) {
    if (rows == 0)
      continue;
    const HalfTilePath path = half_tile_path(rows, p.k);
    widened_b = widened_b || path != HalfTilePath::few_rows;
    float_c = float_c || path != HalfTilePath::few_k;
  }
  a.resize(static_cast<std::size_t>(p.row_block * p.k));
  if (widened_b)
    b.resize(static_cast<std::size_t>(p.k * p.col_block));
  if (float_c)
    c.resize(static_cast<std::size_t>(p.row_block * p.col_block));
  lines.resize(static_cast<std::size_t>(transpose_lines * std::max(p.row_block, p.k)));
}

void half_tile(const MatMulPlan& p, HalfTileScratch& s, const half* a, const half* b, half* c,
               std::int64_t bt, std::int64_t r0, std::int64_t rows, std::int64_t c0,
               std::int64_t cols, const std::optional<StepFusion::Update>& update) {
  const auto [ta, lda] = a_tile(p, a, bt, r0);
  if (p.trans_a) // stored [k, m]: the tile's rows are a column block of k stored rows
    widen_transposed(ta, lda, p.k, rows, s.a.data(), p.k, s.lines.data());
  else
    convert_rows(ta, lda, rows, p.k, s.a.data(), p.k);
  half* tc = c + bt * p.m * p.n + r0 * p.n + c0;
  // A fused update: the product scaled by alpha, then keep·w added as the tile is rounded
  // back to half (w is read once, in the same pass that writes it).
  const float alpha = update ? static_cast<float>(update->scale) : 1.0f;
  const auto finish = [&] {
    if (update)
      update_rows(s.c.data(), cols, rows, cols, tc, p.n, static_cast<float>(update->keep));
    else
      convert_rows(s.c.data(), cols, rows, cols, tc, p.n);
  };
#if defined(__x86_64__) || defined(__i386__)
  switch (half_tile_path(rows, p.k)) {
  case HalfTilePath::few_k: {
    widen_b_tile(p, s, b, bt, c0, cols);
    if (update)
      few_k_product<true>(s.a.data(), rows, p.k, s.b.data(), cols, tc, p.n, alpha,
                          static_cast<float>(update->keep));
    else
      few_k_product<false>(s.a.data(), rows, p.k, s.b.data(), cols, tc, p.n, alpha, 0.0f);
    return;
  }
  case HalfTilePath::few_rows: {
    const auto [tb, ldb] = b_tile(p, b, bt, c0); // read in place, widened in registers
    if (p.trans_b)
      few_rows_product<true>(rows, s.a.data(), p.k, tb, ldb, cols, s.c.data(), cols, alpha);
    else
      few_rows_product<false>(rows, s.a.data(), p.k, tb, ldb, cols, s.c.data(), cols, alpha);
    return finish();
  }
  case HalfTilePath::sgemm:
    break;
  }
#endif
  widen_b_tile(p, s, b, bt, c0, cols);
  sgemm(false, false, rows, cols, p.k, s.a.data(), p.k, s.b.data(), cols, s.c.data(), cols, alpha);
  finish();
}

} // namespace pxl::emu::detail
