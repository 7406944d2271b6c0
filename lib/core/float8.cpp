#include "pxl/core/float8.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace pxl {

namespace {

struct Layout {
  int mantissa_bits;
  int bias;
  int max_exponent; ///< of the largest finite value: every exponent code is finite
};

constexpr Layout layout_of(Float8Format f) {
  return f == Float8Format::f143 ? Layout{3, 8, 15 - 8} : Layout{2, 16, 31 - 16};
}

constexpr std::uint8_t nan_bits = 0x80;

template <Float8Format F>
std::array<float, 256> make_values() {
  std::array<float, 256> v{};
  for (unsigned b = 0; b < 256; ++b)
    v[b] = static_cast<float>(float8_to_double(static_cast<std::uint8_t>(b), F));
  return v;
}

} // namespace

std::uint8_t float8_from_double(double x, Float8Format f, int log2_scale,
                                bool nan_on_overflow) noexcept {
  if (std::isnan(x))
    return nan_bits;
  const Layout l = layout_of(f);
  const bool negative = std::signbit(x);
  const std::uint8_t overflow =
      nan_on_overflow ? nan_bits : static_cast<std::uint8_t>(negative ? 0xff : 0x7f);
  // Exact: a float or half times 2^[-32, 32) stays far inside double's range.
  const double a = std::ldexp(std::fabs(x), log2_scale);
  if (std::isinf(a))
    return overflow;
  const int min_exponent = 1 - l.bias; // of the normals; below it the spacing stays fixed
  int e = 0;
  std::frexp(a, &e); // a = m · 2^e with m in [0.5, 1): its binade is 2^(e - 1)
  const int spacing = std::max(e - 1, min_exponent) - l.mantissa_bits;
  // a / 2^spacing is exact; rint rounds it to nearest, ties to even (the default mode).
  const double units = std::rint(std::ldexp(a, -spacing));
  const double q = std::ldexp(units, spacing);
  const double largest = std::ldexp(2.0 - std::ldexp(1.0, -l.mantissa_bits), l.max_exponent);
  if (q > largest)
    return overflow;
  if (q == 0.0)
    return 0; // no negative zero: 0x80 is NaN
  std::frexp(q, &e);
  const int exponent = e - 1;
  unsigned code = 0;
  if (exponent < min_exponent) // subnormal: exponent code 0, the units are the mantissa
    code = static_cast<unsigned>(std::ldexp(q, l.mantissa_bits - min_exponent));
  else
    code = static_cast<unsigned>(exponent + l.bias) << l.mantissa_bits |
           (static_cast<unsigned>(std::ldexp(q, l.mantissa_bits - exponent)) -
            (1u << l.mantissa_bits));
  return static_cast<std::uint8_t>(code | (negative ? 0x80u : 0u));
}

double float8_to_double(std::uint8_t bits, Float8Format f, int log2_scale) noexcept {
  if (bits == nan_bits)
    return std::numeric_limits<double>::quiet_NaN();
  const Layout l = layout_of(f);
  const unsigned exponent_code = (bits & 0x7fu) >> l.mantissa_bits;
  const unsigned mantissa = bits & ((1u << l.mantissa_bits) - 1u);
  const double magnitude =
      exponent_code == 0 ? std::ldexp(mantissa, 1 - l.bias - l.mantissa_bits)
                         : std::ldexp((1u << l.mantissa_bits) + mantissa,
                                      static_cast<int>(exponent_code) - l.bias - l.mantissa_bits);
  const double v = std::ldexp(magnitude, log2_scale);
  return (bits & 0x80u) != 0 ? -v : v;
}

const float* float8_values(Float8Format f) noexcept {
  static const std::array<float, 256> v143 = make_values<Float8Format::f143>();
  static const std::array<float, 256> v152 = make_values<Float8Format::f152>();
  return f == Float8Format::f143 ? v143.data() : v152.data();
}

} // namespace pxl
