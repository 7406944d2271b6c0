// float16 stochastic rounding (SessionOptions::stochastic_rounding): a value between two
// halves rounds to the one of larger magnitude with the probability of its distance from the
// other, so that the mean of many roundings is the value itself. The random bits of an element are
// a function of the seed, the step, the step's execution count and the element's index alone: any
// split of a step over workers draws the same bits, and a run is reproducible from the seed.
#pragma once

#include "pxl/core/half.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace pxl::emu::detail {

/// splitmix64's finaliser: a bijection of 64-bit words whose every output bit depends on
/// every input bit.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The random word of an execution of the step of op `op` under `seed`: its elements draw their
/// bits from it (element_bits).
constexpr std::uint32_t execution_bits(std::uint64_t seed, std::uint64_t op,
                                       std::uint64_t execution) noexcept {
  constexpr std::uint64_t golden_gamma = 0x9e3779b97f4a7c15ULL;
  return static_cast<std::uint32_t>(
      mix64(mix64(mix64(seed + golden_gamma) ^ (op * golden_gamma)) ^ execution) >> 32);
}

/// A 32-bit mixer (Chris Wellons' lowbias32): every output bit depends on every input bit.
constexpr std::uint32_t mix32(std::uint32_t x) noexcept {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  return x ^ (x >> 16);
}

/// The random bits of element `index` (modulo 2^32) of an execution whose word is `word`.
constexpr std::uint32_t element_bits(std::uint32_t word, std::uint32_t index) noexcept {
  return mix32(word ^ (index * 0x9e3779b9U));
}

/// Encodings of the float values stochastic rounding tests against.
namespace sr_bits {
constexpr std::uint32_t smallest_normal_half = 0x38800000U; // 2^-14
constexpr std::uint32_t largest_half = 0x477fe000U;         // 65504
constexpr std::uint32_t half_overflow = 0x477ff000U;        // 65520: rounds to infinity
constexpr std::uint32_t infinity = 0x7f800000U;
} // namespace sr_bits

/// `f` rounded to one of the two halves around it, as a float (every half is one): the one of
/// larger magnitude with probability (|f| − lower) / (upper − lower), to 2^-13 for normal
/// halves and 2^-23 for subnormal ones; the larger `bits` (uniform), the likelier. Halves, NaN
/// and values past the largest half round to nearest, as without stochastic rounding; ±0 keeps
/// its sign. The reference of stochastic_half_values, which computes the same bits.
inline float stochastic_half_value(float f, std::uint32_t bits) noexcept {
  using namespace sr_bits;
  const auto fb = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = fb & 0x80000000U, ab = fb ^ sign;
  std::uint32_t r = 0;
  if (ab > largest_half) {
    r = ab >= half_overflow ? std::max(ab, infinity) : largest_half; // NaN stays NaN
  } else if (ab >= smallest_normal_half) {
    // A normal half keeps 10 of a float's 23 fraction bits: 13 random bits added to the
    // magnitude's encoding, then dropped, carry into the kept ones (up to the next binade)
    // with the probability of the dropped part.
    r = (ab + (bits >> 19)) & ~0x1fffU;
  } else {
    // Subnormal halves are 2^-24 apart: the same in fixed point (scaling by 2^24 is exact).
    const float scaled = std::bit_cast<float>(ab) * 0x1p24f;
    const auto k = static_cast<std::int32_t>(scaled);
    const auto frac = static_cast<std::int32_t>((scaled - static_cast<float>(k)) * 0x1p23f);
    const auto up =
        static_cast<std::int32_t>(((bits >> 9) + static_cast<std::uint32_t>(frac)) >> 23);
    r = std::bit_cast<std::uint32_t>(static_cast<float>(k + up) * 0x1p-24f);
  }
  return std::bit_cast<float>(r | sign);
}

/// stochastic_half_value as a half.
inline half round_half_stochastic(float f, std::uint32_t bits) noexcept {
  return half(stochastic_half_value(f, bits));
}

/// out[j] = stochastic_half_value(in[j], element_bits(word, index0 + j)) for `n` floats, eight
/// at a time (kernels/scaled_add.cpp).
void stochastic_half_values(const float* in, float* out, std::int64_t n, std::uint32_t word,
                            std::uint32_t index0);

/// What a kernel that rounds stochastically keeps: the seed, its op, and per chunk the count of
/// the step's executions. Every execution runs every chunk once, so each chunk's count is the
/// execution's index whatever the number of chunks.
struct StochasticRounding {
  std::uint64_t seed = 0, op = 0;
  std::vector<std::uint64_t> executions; ///< by chunk

  /// The random word of the execution chunk `w` is running now (counted as it starts).
  std::uint32_t start(unsigned w) { return execution_bits(seed, op, executions[w]++); }
};

} // namespace pxl::emu::detail
