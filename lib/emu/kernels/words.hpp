// What the data-movement kernels share (shape.cpp, shape_indexed.cpp): elements moved as raw
// unsigned words of their width, and the walk of an element-wise index mapping.
#pragma once

#include "common.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace pxl::emu::detail {

/// Calls `f(type_c<U>)` with an unsigned type as wide as an element of `d`.
template <typename F>
StepFn by_width(DType d, F f) {
  switch (size_of(d)) {
  case 1:
    return f(boost::hana::type_c<std::uint8_t>);
  case 2:
    return f(boost::hana::type_c<std::uint16_t>);
  case 4:
    return f(boost::hana::type_c<std::uint32_t>);
  case 8:
    return f(boost::hana::type_c<std::uint64_t>);
  }
  PXL_ASSERT(false);
  return {};
}

/// `value` converted to `d` (convert_element), as the word `U` of the same width.
template <typename U>
U element_bits(DType d, double value) {
  U bits{};
  visit_device_dtype(d, [&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (sizeof(T) == sizeof(U)) {
      const T v = convert_element<T>(value);
      std::memcpy(&bits, &v, sizeof(U));
    }
    return StepFn{};
  });
  return bits;
}

/// The output and input shapes of an element-wise index mapping, fixed-size so that walking
/// them at run time allocates nothing. Built at bind time.
struct IndexWalk {
  std::size_t rank = 0;
  std::array<std::int64_t, max_map_rank> out{}, in{};
};

inline IndexWalk make_walk(const KernelOp& op, const Shape& out, const Shape& in) {
  if (out.size() > static_cast<std::size_t>(max_map_rank))
    throw ShapeError(op.debug_name() + ": the emulator supports at most " +
                     std::to_string(max_map_rank) + " axes here, got shape " + to_string(out));
  IndexWalk w;
  w.rank = out.size();
  std::copy(out.begin(), out.end(), w.out.begin());
  std::copy(in.begin(), in.end(), w.in.begin());
  return w;
}

/// Calls `f(i, from)` for each output element i in [begin, end) with the flat input index
/// `from` it reads (-1: none), walking a multi-index instead of dividing per element.
/// `source(axis, out_coordinate)` gives the input coordinate on an axis, or -1.
template <typename Source, typename F>
void for_each_source(const IndexWalk& w, std::int64_t begin, std::int64_t end, Source source, F f) {
  if (begin >= end)
    return;
  std::array<std::int64_t, max_map_rank> index{};
  std::int64_t rest = begin;
  for (std::size_t d = w.rank; d-- > 0;) {
    index[d] = rest % w.out[d];
    rest /= w.out[d];
  }
  for (std::int64_t i = begin; i < end; ++i) {
    std::int64_t flat = 0;
    bool inside = true;
    for (std::size_t d = 0; d < w.rank && inside; ++d) {
      const std::int64_t c = source(d, index[d]);
      inside = c >= 0;
      flat = flat * w.in[d] + c;
    }
    f(i, inside ? flat : -1);
    for (std::size_t d = w.rank; d-- > 0;) {
      if (++index[d] < w.out[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace pxl::emu::detail
