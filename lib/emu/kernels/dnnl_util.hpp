// What the kernels built on oneDNN's primitives share: the CPU engine and pxl's dense layout.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <functional>
#include <numeric>

namespace pxl::emu::detail {

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

} // namespace pxl::emu::detail
