// What the kernels built on oneDNN's primitives share: the CPU engine, pxl's dense layout, and
// the float32 staging of their operands (float16 widened on the way in, rounded once on the way
// out).
#pragma once

#include "pxl/core/half.hpp"

#include <dnnl.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <type_traits>

namespace pxl::emu::detail {

/// The one CPU engine every primitive is planned and run on.
inline dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

inline std::int64_t product(const dnnl::memory::dims& d) {
  return std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>());
}

/// A dense row-major float32 memory descriptor of `d`.
inline dnnl::memory::desc dense(const dnnl::memory::dims& d) {
  dnnl::memory::dims strides(d.size(), 1);
  for (std::size_t i = d.size() - 1; i-- > 0;)
    strides[i] = strides[i + 1] * d[i + 1];
  return {d, dnnl::memory::data_type::f32, strides};
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
