#include "pxl/core/shape.hpp"
#include "pxl/core/error.hpp"

#include <sstream>

namespace pxl {

std::int64_t nelms(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  bool overflow = false, empty = false;
  for (auto d : shape) {
    if (d < 0)
      throw ShapeError("shape " + to_string(shape) + " has a negative dimension (" +
                       std::to_string(d) + "); expected every dimension >= 0");
    empty = empty || d == 0;
    overflow = __builtin_mul_overflow(n, d, &n) || overflow;
  }
  if (empty) // (2^40, 2^40, 0) holds no element: a valid, empty shape
    return 0;
  if (overflow)
    throw ShapeError("shape " + to_string(shape) +
                     " has more elements than a 64-bit count can hold");
  return n;
}

std::int64_t nbytes(std::span<const std::int64_t> shape, DType dtype) {
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(nelms(shape), static_cast<std::int64_t>(size_of(dtype)), &bytes))
    throw ShapeError("shape " + to_string(shape) + " of " + std::string(name(dtype)) +
                     " has more bytes than a 64-bit count can hold");
  return bytes;
}

std::int64_t nbytes(std::span<const std::int64_t> shape, DType dtype, std::string_view what) {
  try {
    return nbytes(shape, dtype);
  } catch (const ShapeError& e) {
    throw ShapeError(std::string(what) + ": " + e.what());
  }
}

std::string to_string(std::span<const std::int64_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

Shape strides_of(std::span<const std::int64_t> shape) {
  Shape s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

Shape broadcast_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b,
                       std::string_view what) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(what) + ": shapes " + to_string(a) + " and " + to_string(b) +
                       " do not broadcast (axis " + std::to_string(i) + ": " + std::to_string(da) +
                       " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, std::string_view what) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw ValueError(std::string(what) + ": axis " + std::to_string(axis) +
                     " is out of range for a tensor of rank " + std::to_string(rank) +
                     " (expected " + std::to_string(-rank) + " <= axis < " + std::to_string(rank) +
                     ")");
  return a;
}

std::string to_string(const TensorSpec& spec) {
  return "[" + to_string(spec.shape) + " " + std::string(name(spec.dtype)) + "]";
}

std::ostream& operator<<(std::ostream& os, const TensorSpec& spec) { return os << to_string(spec); }

} // namespace pxl
