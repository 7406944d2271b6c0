// How the benchmarks time a repeated call: warm-up calls first, then the timed ones.
#pragma once

#include <chrono>
#include <cstdint>

namespace bench {

/// Seconds since `t0` on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Calls `step(i)` for i < `warmup`, then times `count` more calls `step(0)` … `step(count−1)`:
/// returns their seconds.
template <typename Step>
double time_calls(std::int64_t warmup, std::int64_t count, Step&& step) {
  for (std::int64_t i = 0; i < warmup; ++i)
    step(i);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < count; ++i)
    step(i);
  return seconds_since(t0);
}

} // namespace bench
