// pxl::float8_143_t and pxl::float8_152_t: PopXL's two 8-bit float storage types, and their
// conversions to and from wider floats with a power-of-two scale.
#pragma once

#include <cstdint>
#include <type_traits>

namespace pxl {

/// The layout of a float8 format: 1 sign bit, then the exponent and mantissa bits. Graphcore's
/// formats (ONNX's FLOAT8E4M3FNUZ and FLOAT8E5M2FNUZ are the same) have no infinities and no
/// negative zero: the byte 0x80 is their only NaN, and every other byte is finite.
enum class Float8Format : std::uint8_t {
  f143, ///< 4 exponent bits (bias 8), 3 mantissa bits: ±2^-10 to ±240
  f152, ///< 5 exponent bits (bias 16), 2 mantissa bits: ±2^-17 to ±57344
};

/// The range of `log2_scale` that PopXL's float8 conversions and products accept: [-32, 32).
inline constexpr int min_float8_log2_scale = -32;
inline constexpr int max_float8_log2_scale = 31;

/// x · 2^log2_scale (computed exactly) rounded to format `f`, to nearest with ties to even.
/// A result beyond the format's largest finite value (±240 or ±57344), ±inf included, is NaN
/// (0x80) when `nan_on_overflow`, else saturates to that value; NaN gives NaN; a result that
/// rounds to zero is +0 (0x00), whatever its sign. `log2_scale` need not be in PopXL's range
/// here: the ops and host conversions check it.
std::uint8_t float8_from_double(double x, Float8Format f, int log2_scale = 0,
                                bool nan_on_overflow = true) noexcept;

/// The value of float8 byte `bits` in format `f`, times 2^log2_scale: exact (NaN for 0x80).
double float8_to_double(std::uint8_t bits, Float8Format f, int log2_scale = 0) noexcept;

/// The 256 values of format `f`'s bytes as floats (exact; NaN at 0x80), the table that widens
/// float8 data.
const float* float8_values(Float8Format f) noexcept;

/// One element of a float8 tensor: the byte, with no arithmetic. Converting one from a number
/// is the unscaled conversion (`float8_from_double` with log2_scale 0 and NaN on overflow, as
/// PopXL's `variable(data, float8_143)` converts); converting one to a float or double is
/// exact. Scaled conversions are `host_pow2scale_cast_to_fp8` / `_from_fp8` (host) and the
/// ops of the same names (device).
template <Float8Format F>
class float8 {
public:
  static constexpr Float8Format format = F;

  float8() = default;
  explicit float8(double x) noexcept : bits_(float8_from_double(x, F)) {}

  explicit operator double() const noexcept { return float8_to_double(bits_, F); }
  explicit operator float() const noexcept { return float8_values(F)[bits_]; }

  constexpr std::uint8_t bits() const noexcept { return bits_; }
  static constexpr float8 from_bits(std::uint8_t bits) noexcept {
    float8 v;
    v.bits_ = bits;
    return v;
  }

  /// Equal bytes (so NaN == NaN: this compares storage, not values).
  friend constexpr bool operator==(float8 a, float8 b) noexcept { return a.bits_ == b.bits_; }

private:
  std::uint8_t bits_;
};

using float8_143_t = float8<Float8Format::f143>;
using float8_152_t = float8<Float8Format::f152>;

static_assert(sizeof(float8_143_t) == 1 && std::is_trivially_copyable_v<float8_143_t>);

template <typename T>
inline constexpr bool is_float8_v =
    std::is_same_v<T, float8_143_t> || std::is_same_v<T, float8_152_t>;

} // namespace pxl
