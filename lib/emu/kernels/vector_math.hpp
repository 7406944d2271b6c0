// Branch-free math the compiler vectorises, and per-instruction-set clones of the loops
// that use it: element-wise kernels whose libm calls would cost more than the rest of a step.
#pragma once

#include <bit>
#include <cstdint>

namespace pxl::emu::detail {

/// exp(t) for t in [-700, 700], relative error below 1e-13: Cody-Waite reduction to
/// r = t - k ln2 with |r| <= ln2/2, a degree-11 Taylor polynomial, then 2^k from the exponent
/// bits. No branches and no calls, so a loop over it vectorises.
inline double exp_bounded(double t) {
  constexpr double log2e = 1.4426950408889634;
  constexpr double ln2_hi = 6.93147180369123816490e-01; // 32 significant bits: k * ln2_hi is exact
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  constexpr double round_magic = 0x1.8p52; // adding it rounds to an integer held in the low bits
  const double shifted = t * log2e + round_magic;
  const double k = shifted - round_magic;
  const double r = (t - k * ln2_hi) - k * ln2_lo;
  double p = 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // The low 12 bits of `shifted` are k mod 4096; adding the bias and shifting them into the
  // exponent field gives 2^k for |k| <= 1022.
  const auto bits = (std::bit_cast<std::uint64_t>(shifted) + 1023u) << 52;
  return p * std::bit_cast<double>(bits);
}

/// `c ? a : b` by masking bits, for loops meant to vectorise: the compiler may not turn it into
/// a branch around the computation of `a` or `b` (which, under -ftrapping-math, it cannot
/// turn back into a vector blend without AVX-512's masked instructions).
inline double select(bool c, double a, double b) {
  const std::uint64_t mask = 0 - static_cast<std::uint64_t>(c);
  return std::bit_cast<double>((std::bit_cast<std::uint64_t>(a) & mask) |
                               (std::bit_cast<std::uint64_t>(b) & ~mask));
}

/// exp(t) for any t: exp_bounded with t clamped to [-700, 700], beyond which a float result is
/// 0 or inf either way; NaN stays NaN.
inline double exp_clamped(double t) {
  return exp_bounded(select(t < -700.0, -700.0, select(t > 700.0, 700.0, t)));
}

/// The sum of term(j) for j < n in double, in four interleaved lanes added pairwise at the
/// end: four independent chains of adds where one would wait for each add's result. The
/// order is fixed; against one sequential chain it changes a float result only when the double
/// sum lies within ~1e-16 of a float rounding boundary.
template <typename Term>
inline double sum_in_lanes(std::int64_t n, Term term) {
  double lane[4] = {0, 0, 0, 0};
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (std::int64_t l = 0; l < 4; ++l)
      lane[l] += term(j + l);
  for (; j < n; ++j)
    lane[0] += term(j);
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

// ThreadSanitizer instruments the clones' resolver, which runs before TSan has started and
// crashes every program at load time; sanitized builds use the portable versions only.
// A clone may contract multiply-adds into FMAs, so the last bit can differ between machines,
// but within a process every element of a loop goes through one clone, whose vector body and
// remainder loop contract alike: results do not depend on the number of workers.
#if defined(__SANITIZE_THREAD__) // GCC
#define PXL_TSAN_BUILD 1
#elif defined(__has_feature) // clang
#if __has_feature(thread_sanitizer)
#define PXL_TSAN_BUILD 1
#endif
#endif
// clang 14 resolves an "arch=x86-64-v4" clone by a CPU-name test that no CPU passes and never
// tests "arch=x86-64-v3", so it ran the default clone everywhere: it names the clones by
// feature (avx512f implies AVX2, FMA and F16C there). Under either compiler, a function with
// clones must have no declaration without them (a header's): clang 14 then makes no clones,
// but one body for the first target, which runs AVX-512 instructions on any CPU. Such a
// function calls a file-local one with the clones instead.
#ifdef PXL_TSAN_BUILD
#define PXL_VECTOR_CLONES
#elif defined(__clang__)
#define PXL_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PXL_VECTOR_CLONES                                                                          \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

} // namespace pxl::emu::detail
