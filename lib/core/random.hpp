// The counter-based generator behind random ops and dropout (private to lib/; the tests'
// reference evaluator computes expected draws with it): a value is a pure function of
// (seed, element index), so results never depend on how work is split across threads.
#pragma once

#include <cmath>
#include <cstdint>

namespace pxl::detail {

/// 64 random bits for element `counter` of a stream keyed by the uint32[2] `seed`
/// (SplitMix64's finaliser over the key and the counter, applied twice).
constexpr std::uint64_t random_bits(std::uint32_t seed0, std::uint32_t seed1,
                                    std::uint64_t counter) {
  auto mix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const std::uint64_t key = (std::uint64_t{seed1} << 32) | seed0;
  return mix(mix(key) ^ counter);
}

/// Uniform in [0, 1) with 24 random bits (exactly representable as float).
constexpr float random_uniform01(std::uint32_t s0, std::uint32_t s1, std::uint64_t counter) {
  return static_cast<float>(random_bits(s0, s1, counter) >> 40) * (1.0f / 16777216.0f);
}

/// Standard normal by Box–Muller from two uniforms of one 64-bit draw.
inline float random_standard_normal(std::uint32_t s0, std::uint32_t s1, std::uint64_t counter) {
  const std::uint64_t bits = random_bits(s0, s1, counter);
  const double u1 = (static_cast<double>(bits >> 40) + 1.0) / 16777217.0; // (0, 1]
  const double u2 = static_cast<double>(bits & 0xffffffull) / 16777216.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

/// Element `i` of split_random_seed's output `k`: [2k] and [2k+1] of the seed's stream at a
/// counter space disjoint from element draws (the top bit set).
constexpr std::uint32_t split_seed_word(std::uint32_t s0, std::uint32_t s1, std::uint64_t k,
                                        int word) {
  const std::uint64_t b = random_bits(s0, s1, (1ull << 63) | k);
  return static_cast<std::uint32_t>(word == 0 ? b : b >> 32);
}

} // namespace pxl::detail
