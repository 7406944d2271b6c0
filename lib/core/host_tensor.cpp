#include "pxl/core/host_tensor.hpp"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

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
    const double v = t.item(offset);
    if (t.dtype() == bool_)
      os << (v != 0 ? "true" : "false");
    else if (is_floating_point(t.dtype()))
      os << std::setprecision(6) << v;
    else
      os << static_cast<long long>(v);
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

namespace {
std::string npy_descr(DType d) {
  switch (d) {
  case DType::float32:
    return "<f4";
  case DType::float16:
    return "<f2";
  case DType::int32:
    return "<i4";
  case DType::uint32:
    return "<u4";
  case DType::uint8:
    return "|u1";
  case DType::bool_:
    return "|b1";
  }
  return "";
}
} // namespace

void HostTensor::save_npy(const std::filesystem::path& path) const {
  std::string dict = "{'descr': '" + npy_descr(dtype()) +
                     "', 'fortran_order': False, 'shape': " + pxl::to_string(shape()) + ", }";
  // Magic (6) + version (2) + header length (2) + dict, padded with spaces to a multiple of
  // 64 and ended by a newline.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f)
    throw IoError("save_npy: cannot open '" + path.string() + "' for writing");
  const auto len = static_cast<std::uint16_t>(dict.size());
  const char head[10] = {'\x93',
                         'N',
                         'U',
                         'M',
                         'P',
                         'Y',
                         1,
                         0,
                         static_cast<char>(len & 0xff),
                         static_cast<char>(len >> 8)};
  f.write(head, 10);
  f.write(dict.data(), static_cast<std::streamsize>(dict.size()));
  f.write(reinterpret_cast<const char*>(bytes_.data()), static_cast<std::streamsize>(nbytes()));
  if (!f)
    throw IoError("save_npy: writing '" + path.string() + "' failed");
}

namespace {
std::string dict_value(const std::string& dict, const std::string& key, const std::string& path) {
  const auto k = dict.find("'" + key + "'");
  if (k == std::string::npos)
    throw IoError("load_npy: '" + path + "' header has no '" + key + "'");
  auto v = dict.find(':', k);
  if (v == std::string::npos)
    throw IoError("load_npy: '" + path + "' header is malformed");
  ++v;
  while (v < dict.size() && dict[v] == ' ')
    ++v;
  std::size_t end = v;
  if (dict[v] == '(')
    end = dict.find(')', v) + 1;
  else if (dict[v] == '\'')
    end = dict.find('\'', v + 1) + 1;
  else
    while (end < dict.size() && dict[end] != ',' && dict[end] != '}')
      ++end;
  return dict.substr(v, end - v);
}
} // namespace

HostTensor HostTensor::load_npy(const std::filesystem::path& path) {
  const std::string p = path.string();
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw IoError("load_npy: cannot open '" + p + "'");
  char magic[8];
  if (!f.read(magic, 8) || std::string_view(magic, 6) != "\x93NUMPY")
    throw IoError("load_npy: '" + p + "' is not a .npy file (bad magic)");
  std::size_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char l[2];
    f.read(reinterpret_cast<char*>(l), 2);
    header_len = l[0] | (l[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char l[4];
    f.read(reinterpret_cast<char*>(l), 4);
    header_len = l[0] | (l[1] << 8) | (l[2] << 16) | (std::size_t{l[3]} << 24);
  } else {
    throw IoError("load_npy: '" + p + "' has unsupported format version " +
                  std::to_string(magic[6]));
  }
  std::string dict(header_len, '\0');
  if (!f.read(dict.data(), static_cast<std::streamsize>(header_len)))
    throw IoError("load_npy: '" + p + "' is truncated in its header");
  const std::string descr = dict_value(dict, "descr", p);
  DType dtype{};
  bool found = false;
  for (DType d : {float32, float16, int32, uint32, uint8, bool_})
    if (descr == "'" + npy_descr(d) + "'" ||
        (size_of(d) == 1 && descr == "'<" + npy_descr(d).substr(1) + "'")) {
      dtype = d;
      found = true;
    }
  if (!found)
    throw IoError("load_npy: '" + p + "' has dtype " + descr +
                  "; expected one of <f4, <f2, <i4, <u4, |u1, |b1");
  if (dict_value(dict, "fortran_order", p) != "False")
    throw IoError("load_npy: '" + p + "' is in Fortran order; only C order is supported");
  Shape shape;
  std::string s = dict_value(dict, "shape", p);
  for (std::size_t i = 1; i < s.size();) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ','))
      ++i;
    if (i >= s.size() || s[i] == ')')
      break;
    std::size_t used = 0;
    shape.push_back(std::stoll(s.substr(i), &used));
    i += used;
  }
  HostTensor t(shape, dtype);
  if (!f.read(reinterpret_cast<char*>(t.bytes_.data()), static_cast<std::streamsize>(t.nbytes())))
    throw IoError("load_npy: '" + p + "' is truncated: expected " + std::to_string(t.nbytes()) +
                  " bytes of data for shape " + pxl::to_string(shape));
  return t;
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
