// What the ops over spatial axes (convolutions, pools) check alike: the (N, C, spatial...)
// input, per-axis lists, ONNX's pads and the pad_type's name in messages.
#pragma once

#include "ir/op_builder.hpp"
#include "pxl/ops/conv.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace pxl::ops::spatial {

using Ints = std::vector<std::int64_t>;

inline std::string list(const Ints& v) { return to_string(std::span<const std::int64_t>(v)); }

/// ShapeError unless `t` is (N, C, spatial...) with 1 to 3 spatial axes.
inline void check_input_rank(const std::string& op, const Tensor& t) {
  if (t.rank() < 3 || t.rank() > 5)
    throw ShapeError(op +
                     ": the input must be (N, C, spatial...) with 1, 2 or 3 spatial axes, got " +
                     to_string(t));
}

/// One value per spatial axis: `v`, or `fallback` on each when `v` is empty; ValueError when
/// its length or a value (below `least`) is wrong.
inline Ints per_axis(const std::string& op, const char* what, const Ints& v, std::size_t axes,
                     std::int64_t fallback, std::int64_t least) {
  if (v.empty())
    return Ints(axes, fallback);
  if (v.size() != axes)
    throw ValueError(op + ": " + what + " " + list(v) + " has " + std::to_string(v.size()) +
                     " entries, expected one per spatial axis (" + std::to_string(axes) + ")");
  for (const auto x : v)
    if (x < least)
      throw ValueError(op + ": " + what + " " + list(v) + " must be at least " +
                       std::to_string(least) + " on every axis");
  return v;
}

/// The explicit padding, checked: 2·axes non-negative values (before each axis, then after).
inline Ints explicit_padding(const std::string& op, const Ints& padding, std::size_t axes) {
  if (padding.empty())
    return Ints(2 * axes, 0);
  if (padding.size() != 2 * axes)
    throw ValueError(op + ": padding " + list(padding) + " has " + std::to_string(padding.size()) +
                     " entries, expected " + std::to_string(2 * axes) +
                     ": the padding before each spatial axis, then after each");
  for (const auto x : padding)
    if (x < 0)
      throw ValueError(op + ": padding " + list(padding) + " must be non-negative");
  return padding;
}

inline bool is_zero(const Ints& v) {
  return std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x == 0; });
}

inline const char* pad_type_name(PadType p) {
  switch (p) {
  case PadType::not_set:
    return "not_set";
  case PadType::same_upper:
    return "same_upper";
  case PadType::same_lower:
    return "same_lower";
  case PadType::valid:
    return "valid";
  }
  return "?";
}

/// The explicit padding of an op that also takes a `pad_type`, checked as explicit_padding and
/// against `pad_type` (ValueError when both are set), split: {before each axis, after each}.
inline std::pair<Ints, Ints> padding_or_pad_type(const std::string& op, const Ints& padding,
                                                 PadType pad_type, std::size_t axes) {
  const Ints p = explicit_padding(op, padding, axes);
  if (pad_type != PadType::not_set && !is_zero(p))
    throw ValueError(op + ": padding " + list(p) + " and pad_type " + pad_type_name(pad_type) +
                     " are both set; give one (pad_type not_set uses the padding)");
  const auto mid = p.begin() + static_cast<std::ptrdiff_t>(axes);
  return {Ints(p.begin(), mid), Ints(mid, p.end())};
}

/// The padding of ONNX's auto_pad `same_*` on an axis of size `in`: the total that gives
/// ceil(in / stride) windows of extent `span`, split as same_upper (the extra at the end) or
/// same_lower; {before, after}.
inline std::pair<std::int64_t, std::int64_t> same_padding(std::int64_t in, std::int64_t stride,
                                                          std::int64_t span, bool upper) {
  const std::int64_t want = (in + stride - 1) / stride;
  const std::int64_t total = std::max<std::int64_t>(0, (want - 1) * stride + span - in);
  const std::int64_t before = upper ? total / 2 : total - total / 2;
  return {before, total - before};
}

} // namespace pxl::ops::spatial
