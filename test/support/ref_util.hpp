// Shared helpers of the reference kernels: index arithmetic and dtype-erased element access.
// Everything goes through double so each kernel is written once for every dtype.
#pragma once

#include "reference.hpp"

#include <cstdint>
#include <type_traits>

namespace pxl::testing::ref {

/// Multi-index of row-major element `flat` of `shape`.
inline Shape unravel(std::int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return index;
}

/// Row-major flat position of `index` in `shape`.
inline std::int64_t ravel(const Shape& index, const Shape& shape) {
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < shape.size(); ++i)
    flat = flat * shape[i] + index[i];
  return flat;
}

/// Flat position in an operand of shape `in_shape` of the element that NumPy broadcasting
/// places at output multi-index `out_index` (shapes aligned on the right; size-1 axes repeat).
inline std::int64_t broadcast_source(const Shape& out_index, const Shape& in_shape) {
  const std::size_t lead = out_index.size() - in_shape.size();
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < in_shape.size(); ++i)
    flat = flat * in_shape[i] + (in_shape[i] == 1 ? 0 : out_index[lead + i]);
  return flat;
}

/// Element `i` of `t` as a double, whatever its dtype.
inline double load(const HostTensor& t, std::int64_t i) { return t.item(i); }

/// Writes `v` rounded to `t`'s dtype: nearest for floats, `v != 0` for bool, toward zero for
/// integers and then wrapped modulo 2^bits, as two's-complement arithmetic does (int32 sums
/// that overflow wrap on the device too).
inline void store(HostTensor& t, std::int64_t i, double v) {
  visit_dtype(t.dtype(), [&](auto type) {
    using T = typename decltype(type)::type;
    auto& dst = t.data<T>()[static_cast<std::size_t>(i)];
    if constexpr (std::is_same_v<T, bool>) {
      dst = v != 0.0;
    } else if constexpr (std::is_integral_v<T>) {
      // The wrap is defined for values an int64 holds; beyond that (and for NaN) the ops leave
      // the result unspecified, and 0 will do.
      const bool representable = v > -9.2e18 && v < 9.2e18;
      const auto wide = representable ? static_cast<std::int64_t>(v) : std::int64_t{0};
      dst = static_cast<T>(static_cast<std::make_unsigned_t<T>>(static_cast<std::uint64_t>(wide)));
    } else {
      dst = static_cast<T>(v);
    }
  });
}

/// `v` rounded to `dtype` (a float dtype) and back: the value a tensor of it holds.
inline double round_to(DType dtype, double v) {
  HostTensor t({1}, dtype);
  store(t, 0, v);
  return load(t, 0);
}

/// The two words of a uint32[2] seed tensor.
inline std::pair<std::uint32_t, std::uint32_t> seed_words(const HostTensor& seed) {
  const auto s = seed.data<std::uint32_t>();
  return {s[0], s[1]};
}

} // namespace pxl::testing::ref

/// Defines reference kernel `ref_<kind>` with every parameter named (ev, op, inputs, outputs)
/// and allowed to go unused.
#define PXL_REF_KERNEL(kind)                                                                       \
  void ref_##kind([[maybe_unused]] ReferenceEvaluator& ev, [[maybe_unused]] const Op& op,          \
                  [[maybe_unused]] std::span<const HostTensor* const> inputs,                      \
                  [[maybe_unused]] std::span<HostTensor* const> outputs)
