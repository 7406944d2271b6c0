// Array conversions between half and float: AVX-512 or F16C when the running CPU has them
// (chosen once), the portable conversion of half.hpp otherwise. All round to nearest, ties to
// even, and handle infinities and NaNs alike, so results never depend on the CPU.
#include "pxl/core/half.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define PXL_X86_CONVERSIONS 1
#endif

namespace pxl {

namespace {

void to_float_portable(const half* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = detail::half_bits_to_float(in[i].bits());
}
void to_half_portable(const float* in, half* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = half::from_bits(detail::float_to_half_bits(in[i]));
}

#if defined(PXL_X86_CONVERSIONS)
// The vector bodies, then the tail through the portable code (which matches them bit for bit).
// The AVX-512 ones use the zero-masked forms: GCC 12 warns that the plain forms' undefined
// pass-through register may be used uninitialised. Each body ends with vzeroupper: GCC does
// not emit it before the tail call, and SSE code run with the upper registers dirty paid
// about 130 ns per conversion call on an AVX-512 Xeon (half of a float16 add's time).
__attribute__((target("avx,f16c"))) void to_float_f16c(const half* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  _mm256_zeroupper();
  to_float_portable(in + i, out + i, n - i);
}
__attribute__((target("avx,f16c"))) void to_half_f16c(const float* in, half* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  _mm256_zeroupper();
  to_half_portable(in + i, out + i, n - i);
}
__attribute__((target("avx512f"))) void to_float_avx512(const half* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i,
                     _mm512_maskz_cvtph_ps(
                         0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  _mm256_zeroupper();
  to_float_portable(in + i, out + i, n - i);
}
__attribute__((target("avx512f"))) void to_half_avx512(const float* in, half* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out + i),
        _mm512_maskz_cvtps_ph(0xffff, _mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  _mm256_zeroupper();
  to_half_portable(in + i, out + i, n - i);
}
#endif

struct Converters {
  void (*to_float)(const half*, float*, std::size_t) = to_float_portable;
  void (*to_half)(const float*, half*, std::size_t) = to_half_portable;
};

Converters pick_converters() {
  Converters c;
#if defined(PXL_X86_CONVERSIONS)
  __builtin_cpu_init();
  // F16C by its CPUID bit (clang 14's __builtin_cpu_supports does not know it); "avx" also
  // checks that the OS saves the YMM registers.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0 &&
                    __builtin_cpu_supports("avx");
  if (__builtin_cpu_supports("avx512f")) {
    c.to_float = to_float_avx512;
    c.to_half = to_half_avx512;
  } else if (f16c) {
    c.to_float = to_float_f16c;
    c.to_half = to_half_f16c;
  }
#endif
  return c;
}

const Converters& converters() {
  static const Converters c = pick_converters();
  return c;
}

} // namespace

void convert(const half* in, float* out, std::size_t n) { converters().to_float(in, out, n); }
void convert(const float* in, half* out, std::size_t n) { converters().to_half(in, out, n); }

} // namespace pxl
