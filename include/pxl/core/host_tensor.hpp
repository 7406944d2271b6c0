// pxl::HostTensor: an owned, contiguous n-d array on the host.
#pragma once

#include "pxl/core/error.hpp"
#include "pxl/core/read_options.hpp"
#include "pxl/core/shape.hpp"

#include <cstring>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace pxl {

/// Row-major host data with a shape and a dtype. Values, not views: copying copies the data.
///
///     HostTensor x({1.f, 2.f, 3.f, 4.f}, {2, 2});
///     x.data<float>()[3] == 4.f;
class HostTensor {
public:
  /// An empty float32 tensor of shape (0,).
  HostTensor() : HostTensor(TensorSpec{{0}, float32}) {}
  /// Zero-filled. A shape with a negative dimension or more bytes than int64 counts is a
  /// ShapeError; one the host cannot allocate, a ValueError naming the shape and bytes.
  explicit HostTensor(TensorSpec spec);
  HostTensor(Shape shape, DType dtype) : HostTensor(TensorSpec{std::move(shape), dtype}) {}

  /// Copies `values` into a tensor of `shape`; throws ShapeError if the counts differ.
  template <Element T>
  HostTensor(std::span<const T> values, Shape shape) : HostTensor(std::move(shape), dtype_of<T>) {
    check_count(values.size());
    std::memcpy(bytes_.data(), values.data(), bytes_.size());
  }
  template <Element T>
  HostTensor(const std::vector<T>& values, Shape shape)
      : HostTensor(std::span<const T>(values.data(), values.size()), std::move(shape)) {}
  /// A 1-D tensor, or one of `shape` when given.
  template <Element T>
  HostTensor(std::initializer_list<T> values, Shape shape)
      : HostTensor(std::span<const T>(values.begin(), values.size()), std::move(shape)) {}
  template <Element T>
  HostTensor(std::initializer_list<T> values)
      : HostTensor(std::span<const T>(values.begin(), values.size()),
                   Shape{static_cast<std::int64_t>(values.size())}) {}

  /// A rank-0 tensor holding `value`.
  template <Element T>
  static HostTensor scalar(T value) {
    return HostTensor(std::span<const T>(&value, 1), Shape{});
  }
  /// Every element set to `value` converted to `dtype` (by convert_element: saturating for
  /// integer dtypes).
  static HostTensor full(Shape shape, DType dtype, double value);

  const TensorSpec& spec() const { return spec_; }
  const Shape& shape() const { return spec_.shape; }
  DType dtype() const { return spec_.dtype; }
  std::int64_t nelms() const { return spec_.nelms(); }
  std::int64_t rank() const { return spec_.rank(); }
  std::size_t nbytes() const { return bytes_.size(); }

  /// Typed view; throws DTypeError unless `T` is this tensor's element type.
  template <Element T>
  std::span<T> data() {
    check_dtype(dtype_of<T>);
    return {reinterpret_cast<T*>(bytes_.data()), static_cast<std::size_t>(nelms())};
  }
  template <Element T>
  std::span<const T> data() const {
    check_dtype(dtype_of<T>);
    return {reinterpret_cast<const T*>(bytes_.data()), static_cast<std::size_t>(nelms())};
  }
  std::span<std::byte> bytes() { return bytes_; }
  std::span<const std::byte> bytes() const { return bytes_; }

  /// Element `flat_index` converted to double, whatever the dtype.
  double item(std::int64_t flat_index = 0) const;
  /// Element at a multi-index, checked against the shape.
  template <Element T>
  T& at(std::initializer_list<std::int64_t> index) {
    return data<T>()[static_cast<std::size_t>(flat_index(index))];
  }
  template <Element T>
  const T& at(std::initializer_list<std::int64_t> index) const {
    return data<T>()[static_cast<std::size_t>(flat_index(index))];
  }

  /// Element-wise conversion by convert_element: floats round to nearest, float → integer
  /// truncates toward zero and saturates (NaN → 0), integers wrap modulo 2^bits.
  HostTensor astype(DType dtype) const;
  /// Same data, another shape of the same element count (ShapeError otherwise).
  HostTensor reshaped(Shape shape) const;

  /// Same shape, dtype and bytes.
  friend bool operator==(const HostTensor& a, const HostTensor& b) {
    return a.spec_ == b.spec_ && a.bytes_ == b.bytes_;
  }

  /// NumPy's layout (`numpy.array2string` with separator ", " and no line wrapping): tensors of
  /// more than 1000 elements show the first and last 3 entries of every axis longer than 6,
  /// with "..." between; an empty tensor prints `[]`. Costs O(printed elements), however
  /// large the tensor. Elements print as `%g` with 6 digits, bools as true/false.
  std::string to_string() const;
  friend std::ostream& operator<<(std::ostream& os, const HostTensor& t) {
    return os << t.to_string();
  }

  /// NumPy `.npy` (format 1.0/2.0, little-endian, C order). Throws IoError with the path.
  /// Paths are strings (a std::filesystem::path converts to one): every pxl header includes
  /// this one, and <filesystem> would be a quarter of the parse of pxl/ir/graph.hpp.
  void save_npy(const std::string& path) const;
  /// Reads a `.npy` file written by NumPy or `save_npy`. Any file that is not one (a header
  /// that does not parse, an unsupported dtype or order, a shape whose size overflows, data
  /// shorter or longer than the shape, more than `options.max_bytes` of data) is an IoError
  /// naming the file, what was expected and what was found; nothing is allocated for data
  /// the file does not hold.
  static HostTensor load_npy(const std::string& path, const ReadOptions& options = {});

private:
  void check_count(std::size_t n) const;
  void check_dtype(DType d) const;
  std::int64_t flat_index(std::initializer_list<std::int64_t> index) const;

  TensorSpec spec_;
  std::vector<std::byte> bytes_;
};

/// |a - b| <= atol + rtol * |b| element-wise, for tensors of one shape (any dtypes).
bool allclose(const HostTensor& a, const HostTensor& b, double rtol = 1e-6, double atol = 0.0);

} // namespace pxl
