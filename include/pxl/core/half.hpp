// pxl::half: IEEE 754 binary16 storage, converted to and from float with round-to-nearest-even.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace pxl {

namespace detail {

/// The float of binary16 bits `h`: exact (every half is a float); infinities stay infinite,
/// NaNs become quiet NaNs with their payload, as F16C's vcvtph2ps does.
constexpr float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) // infinity or NaN (quietened)
    bits = 0x7f800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0u);
  else if (exponent != 0) // normal: rebias the exponent
    bits = ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  else if (mantissa == 0)
    bits = 0;
  else { // subnormal: m * 2^-24, exactly representable as a normal float
    const int shift = std::countl_zero(mantissa) - 21; // moves the leading 1 to bit 10
    const auto exponent_field = static_cast<std::uint32_t>(127 - 15 + 1 - shift);
    bits = (exponent_field << 23) | (((mantissa << shift) & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(sign | bits);
}

/// Binary16 bits of `d`, rounded once to nearest, ties to even; beyond ±65520 gives ±inf;
/// NaNs become quiet NaNs keeping the top of their payload. `Bits` is the width of `d`'s
/// significand field (23 for float, 52 for double), so float and double share one rounding.
template <int Bits, typename U>
constexpr std::uint16_t round_to_half_bits(U u) noexcept {
  constexpr int total = static_cast<int>(sizeof(U) * 8);
  constexpr int exp_bits = total - 1 - Bits;
  constexpr int bias = (1 << (exp_bits - 1)) - 1;
  constexpr U exp_mask = ((U{1} << exp_bits) - 1) << Bits;
  constexpr U mant_mask = (U{1} << Bits) - 1;
  const auto sign = static_cast<std::uint16_t>((u >> (total - 16)) & 0x8000u);
  const U mag = u & ~(U{1} << (total - 1));
  if ((mag & exp_mask) == exp_mask) { // infinity or NaN
    const U mant = mag & mant_mask;
    return static_cast<std::uint16_t>(
        sign | 0x7c00u | (mant != 0 ? 0x200u | static_cast<unsigned>(mant >> (Bits - 10)) : 0u));
  }
  const int e = static_cast<int>(mag >> Bits) - bias; // unbiased exponent (subnormal inputs
                                                      // are far below half's range)
  if (e > 15)
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e < -25)
    return sign;
  const U m = (mag & mant_mask) | (U{1} << Bits); // with the implicit bit
  // Keep 11 significant bits for a normal result, fewer for a subnormal one.
  const int shift = (Bits - 10) + (e < -14 ? -14 - e : 0);
  U r = m >> shift;
  const U rest = m & ((U{1} << shift) - 1);
  const U halfway = U{1} << (shift - 1);
  if (rest > halfway || (rest == halfway && (r & 1) != 0))
    ++r; // a carry out of the significand moves into the exponent, up to infinity
  const U biased = e < -14 ? r : (static_cast<U>(e + 14) << 10) + r;
  return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(biased));
}

/// Binary16 bits of `f`, as F16C's vcvtps2ph with round-to-nearest-even.
constexpr std::uint16_t float_to_half_bits(float f) noexcept {
  return round_to_half_bits<23>(std::bit_cast<std::uint32_t>(f));
}
/// Binary16 bits of `d`, rounded once (not through float, which could round twice).
constexpr std::uint16_t double_to_half_bits(double d) noexcept {
  return round_to_half_bits<52>(std::bit_cast<std::uint64_t>(d));
}

} // namespace detail

/// IEEE 754 binary16, the IPU's float16: 16-bit storage; arithmetic goes through float, to
/// which a half converts implicitly and exactly. Making one from a float, a double or an
/// integer rounds once to nearest, ties to even (±inf beyond ±65520, NaN stays NaN), so every
/// compiler and CPU gives the same bits. With F16C enabled at compile time (`-mf16c`,
/// `-march=native`) single conversions use it; `convert` converts arrays with F16C or
/// AVX-512 when the running CPU has them.
class half {
public:
  half() = default;
  constexpr explicit half(float f) noexcept : bits_(from_float(f)) {}
  constexpr explicit half(double d) noexcept : bits_(detail::double_to_half_bits(d)) {}
  template <std::integral I>
  constexpr explicit half(I i) noexcept : half(static_cast<double>(i)) {}

  constexpr operator float() const noexcept {
#if defined(__F16C__)
    if (!std::is_constant_evaluated())
      return _cvtsh_ss(bits_);
#endif
    return detail::half_bits_to_float(bits_);
  }

  /// The binary16 encoding.
  constexpr std::uint16_t bits() const noexcept { return bits_; }
  static constexpr half from_bits(std::uint16_t bits) noexcept {
    half h;
    h.bits_ = bits;
    return h;
  }

private:
  static constexpr std::uint16_t from_float(float f) noexcept {
#if defined(__F16C__)
    if (!std::is_constant_evaluated())
      return static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#endif
    return detail::float_to_half_bits(f);
  }

  std::uint16_t bits_;
};

static_assert(sizeof(half) == 2 && alignof(half) == 2 && std::is_trivially_copyable_v<half>);

/// Converts `n` halves to floats, with F16C or AVX-512 when the CPU has them; bitwise the
/// same as converting each element.
void convert(const half* in, float* out, std::size_t n);
/// Converts `n` floats to halves (round to nearest, ties to even), with F16C or AVX-512 when
/// the CPU has them; bitwise the same as converting each element.
void convert(const float* in, half* out, std::size_t n);

} // namespace pxl
