#include "pxl/core/host_tensor.hpp"

#include <cmath>
#include <iomanip>
#include <new>
#include <sstream>
#include <string_view>

namespace pxl {

HostTensor::HostTensor(TensorSpec spec) : spec_(std::move(spec)) {
  const std::int64_t bytes = pxl::nbytes(spec_.shape, spec_.dtype, "HostTensor");
  bool allocated = false;
  try {
    bytes_.assign(static_cast<std::size_t>(bytes), std::byte{0});
    allocated = true;
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) { // beyond the vector's max_size
  }
  if (!allocated)
    throw ValueError("HostTensor: cannot allocate " + std::to_string(bytes) +
                     " bytes on the host for shape " + pxl::to_string(spec_.shape) + " of " +
                     std::string(name(spec_.dtype)));
}

HostTensor HostTensor::full(Shape shape, DType dtype, double value) {
  HostTensor t(std::move(shape), dtype);
  visit_dtype(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    const T v = convert_element<T>(value);
    for (auto& x : t.data<T>())
      x = v;
  });
  return t;
}

void HostTensor::check_count(std::size_t n) const {
  if (static_cast<std::int64_t>(n) != nelms())
    throw ShapeError("HostTensor: " + std::to_string(n) + " values do not fill shape " +
                     pxl::to_string(shape()) + " (" + std::to_string(nelms()) + " elements)");
}

void HostTensor::check_dtype(DType d) const {
  if (d != dtype())
    throw DTypeError("HostTensor: requested a " + std::string(name(d)) + " view of a " +
                     std::string(name(dtype())) + " tensor");
}

std::int64_t HostTensor::flat_index(std::initializer_list<std::int64_t> index) const {
  if (static_cast<std::int64_t>(index.size()) != rank())
    throw ValueError("HostTensor::at: " + std::to_string(index.size()) +
                     " indices for a tensor of rank " + std::to_string(rank()));
  std::int64_t flat = 0;
  std::size_t axis = 0;
  for (auto i : index) {
    const auto dim = shape()[axis];
    if (i < 0 || i >= dim)
      throw ValueError("HostTensor::at: index " + std::to_string(i) + " out of range for axis " +
                       std::to_string(axis) + " of size " + std::to_string(dim));
    flat = flat * dim + i;
    ++axis;
  }
  return flat;
}

double HostTensor::item(std::int64_t i) const {
  if (i < 0 || i >= nelms())
    throw ValueError("HostTensor::item: index " + std::to_string(i) + " out of range for " +
                     std::to_string(nelms()) + " elements");
  return visit_dtype(dtype(), [&](auto type) {
    using T = typename decltype(type)::type;
    return static_cast<double>(data<T>()[static_cast<std::size_t>(i)]);
  });
}

HostTensor HostTensor::astype(DType to) const {
  HostTensor out(shape(), to);
  visit_dtype(dtype(), [&](auto from_type) {
    using F = typename decltype(from_type)::type;
    visit_dtype(to, [&](auto to_type) {
      using T = typename decltype(to_type)::type;
      auto src = data<F>();
      auto dst = out.data<T>();
      for (std::size_t i = 0; i < src.size(); ++i)
        dst[i] = convert_element<T>(src[i]);
    });
  });
  return out;
}

HostTensor HostTensor::reshaped(Shape new_shape) const {
  if (pxl::nelms(new_shape) != nelms())
    throw ShapeError("HostTensor::reshaped: cannot reshape " + pxl::to_string(shape()) + " (" +
                     std::to_string(nelms()) + " elements) to " + pxl::to_string(new_shape));
  HostTensor out = *this;
  out.spec_.shape = std::move(new_shape);
  return out;
}

namespace {
/// numpy.array2string's recursion (_formatArray) with separator ", " and no line width: rows
/// of the last axis on one line, other axes one entry per line with a blank line per extra
/// axis left, and when summarising only the first and last `edge` entries of long axes.
void print_rec(std::ostream& os, const HostTensor& t, std::size_t axis, std::int64_t offset,
               const Shape& strides, int indent, bool summarise) {
  constexpr std::int64_t edge = 3;
  const auto& shape = t.shape();
  if (axis == shape.size()) {
    // Integers print exactly: int64 and uint64 hold values a double cannot.
    visit_dtype(t.dtype(), [&](auto type) {
      using T = typename decltype(type)::type;
      const T v = t.data<T>()[static_cast<std::size_t>(offset)];
      if constexpr (std::is_same_v<T, bool>)
        os << (v ? "true" : "false");
      else if constexpr (std::is_integral_v<T>)
        os << +v; // int8 and uint8 as numbers, not characters
      else
        os << std::setprecision(6) << static_cast<double>(v);
    });
    return;
  }
  const std::size_t axes_left = shape.size() - axis;
  const std::string sep =
      axes_left == 1 ? ", " : "," + std::string(axes_left - 1, '\n') + std::string(indent + 1, ' ');
  const std::int64_t n = shape[axis];
  const bool elide = summarise && n > 2 * edge;
  os << "[";
  for (std::int64_t i = 0; i < n; ++i) {
    if (i)
      os << sep;
    if (elide && i == edge) {
      os << "..." << sep;
      i = n - edge;
    }
    print_rec(os, t, axis + 1, offset + i * strides[axis], strides, indent + 1, summarise);
  }
  os << "]";
}
} // namespace

std::string HostTensor::to_string() const {
  std::ostringstream os;
  os << "HostTensor(";
  if (nelms() == 0) // NumPy's "[]" for any empty array: never a walk over the other axes
    os << "[]";
  else
    print_rec(os, *this, 0, 0, strides_of(shape()), 11, nelms() > 1000);
  os << ", shape=" << pxl::to_string(shape()) << ", dtype=" << name(dtype()) << ")";
  return os.str();
}

bool allclose(const HostTensor& a, const HostTensor& b, double rtol, double atol) {
  if (a.shape() != b.shape())
    return false;
  for (std::int64_t i = 0; i < a.nelms(); ++i) {
    const double x = a.item(i), y = b.item(i);
    if (std::isnan(x) && std::isnan(y))
      continue;
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y)))
      return false;
  }
  return true;
}

} // namespace pxl
