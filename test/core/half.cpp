#include "pxl/core/half.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace pxl;

namespace {

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

/// The float halfway between half `h` and the next half up (exact in float).
float midpoint_above(std::uint16_t h) {
  const double a = detail::half_bits_to_float(h);
  const double b = detail::half_bits_to_float(static_cast<std::uint16_t>(h + 1));
  return static_cast<float>((a + b) / 2);
}

} // namespace

static_assert(half(1.0f).bits() == 0x3c00 && half(-2.0).bits() == 0xc000 && half(0).bits() == 0);
static_assert(static_cast<float>(half::from_bits(0x3555)) == 0.333251953125f);

TEST_CASE("half: known encodings, rounding to nearest even, overflow and specials") {
  struct Case {
    float in;
    std::uint16_t out;
  };
  const Case cases[] = {
      {65504.0f, 0x7bff},   // largest half
      {65519.99f, 0x7bff},  // below the halfway point to 65536
      {65520.0f, 0x7c00},   // halfway: rounds to even, which is infinity
      {0x1p-24f, 0x0001},   // smallest subnormal
      {0x1p-25f, 0x0000},   // halfway between 0 and it: even is 0
      {0x1.8p-25f, 0x0001}, // above halfway
      {0x1p-14f, 0x0400},   // smallest normal
      {2049.0f, 0x6800},    // halfway between 2048 and 2050: 2048 (even)
      {2051.0f, 0x6802},    // halfway between 2050 and 2052: 2052 (even)
      {-0.0f, 0x8000},
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {-std::numeric_limits<float>::infinity(), 0xfc00},
      {std::numeric_limits<float>::quiet_NaN(), 0x7e00},
  };
  for (const auto& c : cases) {
    CAPTURE(c.in);
    CHECK(half(c.in).bits() == c.out);
    half h{};
    convert(&c.in, &h, 1);
    CHECK(h.bits() == c.out);
  }
}

TEST_CASE("half from double rounds once, not through float") {
  // 1 + 2^-11 + 2^-40 is just above the midpoint of 1 and 1 + 2^-10: it rounds up. Through
  // float the 2^-40 is lost first and the tie then goes to even, 1.
  CHECK(half(1.0 + 0x1p-11 + 0x1p-40).bits() == 0x3c01);
  CHECK(half(static_cast<float>(1.0 + 0x1p-11 + 0x1p-40)).bits() == 0x3c00);
  CHECK(half(1e300).bits() == 0x7c00);
  CHECK(half(-1e-300).bits() == 0x8000);
  CHECK(half(std::int64_t{-70000}).bits() == 0xfc00);
  CHECK(half(3).bits() == 0x4200);
}

TEST_CASE("every half converts to float exactly, singly and in arrays") {
  std::vector<half> all(65536);
  for (std::uint32_t i = 0; i < all.size(); ++i)
    all[i] = half::from_bits(static_cast<std::uint16_t>(i));
  std::vector<float> wide(all.size());
  convert(all.data(), wide.data(), all.size());
  int mismatches = 0;
  for (std::uint32_t i = 0; i < all.size(); ++i) {
    const float single = all[i];
    const float reference = detail::half_bits_to_float(static_cast<std::uint16_t>(i));
    mismatches += bits_of(single) != bits_of(reference) || bits_of(wide[i]) != bits_of(reference);
    // Round trip: a half survives float and back (NaNs come back quiet).
    if (!std::isnan(reference))
      mismatches += half(reference).bits() != i;
  }
  CHECK(mismatches == 0);
  CHECK(static_cast<float>(half::from_bits(0x0001)) == 0x1p-24f);
  CHECK(static_cast<float>(half::from_bits(0x7bff)) == 65504.0f);
  CHECK(std::isnan(static_cast<float>(half::from_bits(0x7c01))));
}

TEST_CASE("floats round alike singly, in arrays of any length, and as the reference") {
  // Every midpoint between adjacent halves and its float neighbours (where rounding
  // decides), plus a sweep over all exponents and signs.
  std::vector<float> in;
  for (std::uint32_t h = 0; h < 0x7bff; ++h) {
    const float m = midpoint_above(static_cast<std::uint16_t>(h));
    for (float f : {m, std::nextafter(m, 0.0f), std::nextafter(m, 1e9f)}) {
      in.push_back(f);
      in.push_back(-f);
    }
  }
  for (std::uint64_t u = 0; u < (1ull << 32); u += 40009)
    in.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
  for (std::size_t n : {in.size(), std::size_t{1}, std::size_t{7}, std::size_t{15}, std::size_t{17},
                        std::size_t{33}}) {
    CAPTURE(n);
    std::vector<half> out(n);
    convert(in.data(), out.data(), n);
    int mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t reference = detail::float_to_half_bits(in[i]);
      mismatches += out[i].bits() != reference || half(in[i]).bits() != reference;
    }
    CHECK(mismatches == 0);
  }
}
