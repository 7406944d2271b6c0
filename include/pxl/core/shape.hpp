// pxl::Shape and pxl::TensorSpec: what a tensor looks like, without its data.
#pragma once

#include "pxl/core/dtype.hpp"

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pxl {

/// Dimensions of a tensor, outermost first. A scalar has the empty shape.
using Shape = std::vector<std::int64_t>;

/// Number of elements of a shape (1 for a scalar). The one checked place sizes come from:
/// a negative dimension, or a count int64 cannot hold, is a ShapeError naming the shape.
std::int64_t nelms(std::span<const std::int64_t> shape);
/// Bytes of a tensor of `shape` and `dtype`; a ShapeError when the count overflows int64.
std::int64_t nbytes(std::span<const std::int64_t> shape, DType dtype);
/// nbytes for the thing `what` names ("variable 'w'"), which leads the ShapeError's message.
std::int64_t nbytes(std::span<const std::int64_t> shape, DType dtype, std::string_view what);
/// PopXL's spelling: "(1, 784)", "(3,)", "()".
std::string to_string(std::span<const std::int64_t> shape);
/// Row-major strides in elements.
Shape strides_of(std::span<const std::int64_t> shape);
/// NumPy broadcasting of two shapes; throws ShapeError naming `what` and both shapes.
Shape broadcast_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b,
                       std::string_view what);
/// Normalises a possibly negative axis against `rank`; throws ValueError naming `what`.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, std::string_view what);

/// Shape and dtype of a tensor: the placeholder argument of `Ir::create_graph`.
struct TensorSpec {
  Shape shape;
  DType dtype = float32;

  std::int64_t nelms() const { return pxl::nelms(shape); }
  std::int64_t rank() const { return static_cast<std::int64_t>(shape.size()); }
  std::size_t nbytes() const { return static_cast<std::size_t>(pxl::nbytes(shape, dtype)); }
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

/// "[(1, 784) float32]", the form print_schedule uses.
std::string to_string(const TensorSpec& spec);
std::ostream& operator<<(std::ostream& os, const TensorSpec& spec);

} // namespace pxl
