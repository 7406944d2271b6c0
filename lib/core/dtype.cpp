#include "pxl/core/dtype.hpp"
#include "pxl/core/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

namespace pxl {

// The dtype table lists the DTypes in the enum's order: cpp_type_of (dtype.hpp) finds a
// DType's entry at its value. Checked here, in one unit, rather than in every includer.
static_assert(
    []<std::size_t... I>(std::index_sequence<I...>) {
      return ((std::remove_cvref_t<decltype(boost::hana::first(
                   boost::hana::at_c<I>(detail::dtype_types)))>::value == static_cast<DType>(I)) &&
              ...);
    }(std::make_index_sequence<all_dtypes.size()>{}),
    "detail::dtype_types must list the DTypes in the enum's order");

std::string_view name(DType d) {
  switch (d) {
  case DType::float32:
    return "float32";
  case DType::float16:
    return "float16";
  case DType::int32:
    return "int32";
  case DType::uint32:
    return "uint32";
  case DType::uint8:
    return "uint8";
  case DType::bool_:
    return "bool";
  case DType::int8:
    return "int8";
  case DType::int16:
    return "int16";
  case DType::uint16:
    return "uint16";
  case DType::int64:
    return "int64";
  case DType::uint64:
    return "uint64";
  case DType::float64:
    return "float64";
  case DType::float8_143:
    return "float8_143";
  case DType::float8_152:
    return "float8_152";
  }
  return "?";
}

std::size_t size_of(DType d) {
  return visit_dtype(d, [](auto t) { return sizeof(typename decltype(t)::type); });
}

bool is_floating_point(DType d) {
  return d == float32 || d == float16 || d == float64 || is_float8(d);
}
bool is_float8(DType d) { return d == float8_143 || d == float8_152; }
Float8Format float8_format(DType d) {
  if (!is_float8(d))
    throw DTypeError("float8_format: " + std::string(name(d)) + " is not a float8 dtype");
  return d == float8_143 ? Float8Format::f143 : Float8Format::f152;
}
bool is_integral(DType d) {
  return d != bool_ &&
         visit_dtype(d, [](auto t) { return std::is_integral_v<typename decltype(t)::type>; });
}
bool is_device_dtype(DType d) { return downcast_dtype(d) == d; }

DType downcast_dtype(DType d) {
  switch (d) {
  case DType::int64:
    return int32;
  case DType::uint64:
    return uint32;
  case DType::float64:
    return float32;
  default:
    return d;
  }
}

DType dtype_from_name(std::string_view s) {
  std::string names;
  for (DType d : all_dtypes) {
    if (name(d) == s)
      return d;
    names += (names.empty() ? "" : ", ") + std::string(name(d));
  }
  throw DTypeError("unknown dtype '" + std::string(s) + "': expected one of " + names);
}

std::ostream& operator<<(std::ostream& os, DType d) { return os << name(d); }

void assertion_failed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "pxl internal error: %s failed at %s:%d\n", cond, file, line);
  std::abort();
}

} // namespace pxl
