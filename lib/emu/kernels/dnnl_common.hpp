// What the kernels built on oneDNN's primitives share: the CPU engine, and the float32 staging
// of their operands (float16 widened on the way in and rounded once on the way out).
#pragma once

#include "pxl/core/half.hpp"

#include <dnnl.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pxl::emu::detail {

/// The one CPU engine every primitive is planned and run on.
inline dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// Widens `n` elements into float32 (`T` half) or copies them (`T` float).
template <typename T>
void to_float(const T* in, float* out, std::int64_t n) {
  if constexpr (std::is_same_v<T, half>)
    convert(in, out, static_cast<std::size_t>(n));
  else
    std::memcpy(out, in, static_cast<std::size_t>(n) * sizeof(float));
}

/// Rounds `n` float32 elements to `T` once (`T` half) or copies them (`T` float).
template <typename T>
void from_float(const float* in, T* out, std::int64_t n) {
  if constexpr (std::is_same_v<T, half>)
    convert(in, out, static_cast<std::size_t>(n));
  else
    std::memcpy(out, in, static_cast<std::size_t>(n) * sizeof(float));
}

} // namespace pxl::emu::detail
