// float16 stochastic rounding (SessionOptions::stochastic_rounding): a value between two
// halves rounds up with the probability of its distance from the lower one, so that the mean
// of many roundings is the value itself. The random bits of an element are a function of the
// seed, the step, the step's execution count and the element's index alone: any split of a
// step over workers draws the same bits, and a run is reproducible from the seed.
#pragma once

#include "pxl/core/half.hpp"

#include <bit>
#include <cmath>
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

constexpr std::uint64_t golden_gamma = 0x9e3779b97f4a7c15ULL;

/// The random word of an execution of the step of op `op` under `seed`: elements draw theirs
/// from it (element_bits).
constexpr std::uint64_t execution_bits(std::uint64_t seed, std::uint64_t op,
                                       std::uint64_t execution) noexcept {
  return mix64(mix64(mix64(seed + golden_gamma) ^ (op * golden_gamma)) ^ execution);
}

/// The random bits of element `index` of an execution whose word is `execution`.
constexpr std::uint64_t element_bits(std::uint64_t execution, std::uint64_t index) noexcept {
  return mix64(execution ^ (index * golden_gamma));
}

/// The value of `d` rounded to one of the two halves around it, as a float (exact: every half
/// is a float): the one of larger magnitude with probability (|d| − lower) / (upper − lower),
/// the larger `bits` (uniform) the likelier. A half value, NaN and a value past half's largest
/// finite one round to nearest, as without stochastic rounding; ±0 keeps its sign. Branch-free,
/// so that a loop over it vectorises.
inline float stochastic_half_value(double d, std::uint64_t bits) noexcept {
  const double a = std::fabs(d);
  // A normal half keeps 10 of the double's 52 fraction bits. Adding 42 random bits to the
  // magnitude's encoding and dropping them carries into the kept bits (up to the next binade)
  // with probability (|d| − lower) / (upper − lower), to 2^-42. NaN stays NaN.
  constexpr int dropped = 42;
  const std::uint64_t m = (std::bit_cast<std::uint64_t>(a) + (bits >> (64 - dropped))) &
                          ~((std::uint64_t{1} << dropped) - 1);
  // Subnormal halves are 2^-24 apart: the same in fixed point (scaling by 2^24 is exact).
  const double scaled = a * 0x1p24, lower = std::floor(scaled);
  const double u = static_cast<double>(bits >> 11) * 0x1p-53; // uniform in [0, 1)
  const double subnormal = (lower + (u >= 1.0 - (scaled - lower) ? 1.0 : 0.0)) * 0x1p-24;
  double r = a >= 0x1p-14 ? std::bit_cast<double>(m) : subnormal;
  // Past the largest half, to nearest: that half below 65520, infinity from there.
  r = a > 65504.0 ? (a < 65520.0 ? 65504.0 : HUGE_VAL) : r;
  return static_cast<float>(std::copysign(r, d));
}

/// stochastic_half_value as a half.
inline half round_half_stochastic(double d, std::uint64_t bits) noexcept {
  return half(stochastic_half_value(d, bits));
}

/// What a kernel that rounds stochastically keeps: the seed, its op, and per chunk the count of
/// the step's executions. Every execution runs every chunk once, so each chunk's count is the
/// execution's index whatever the number of chunks.
struct StochasticRounding {
  std::uint64_t seed = 0, op = 0;
  std::vector<std::uint64_t> executions; ///< by chunk

  /// The random word of the execution chunk `w` is running now (counted as it starts).
  std::uint64_t start(unsigned w) { return execution_bits(seed, op, executions[w]++); }
};

} // namespace pxl::emu::detail
