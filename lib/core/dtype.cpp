#include "pxl/core/dtype.hpp"
#include "pxl/core/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace pxl {

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
  }
  return "?";
}

std::size_t size_of(DType d) {
  return visit_dtype(d, [](auto t) { return sizeof(typename decltype(t)::type); });
}

bool is_floating_point(DType d) { return d == DType::float32 || d == DType::float16; }
bool is_integral(DType d) { return d == DType::int32 || d == DType::uint32 || d == DType::uint8; }

DType dtype_from_name(std::string_view s) {
  for (DType d : {float32, float16, int32, uint32, uint8, bool_})
    if (name(d) == s)
      return d;
  throw DTypeError("unknown dtype '" + std::string(s) +
                   "': expected one of float32, float16, int32, uint32, uint8, bool");
}

std::ostream& operator<<(std::ostream& os, DType d) { return os << name(d); }

void assertion_failed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "pxl internal error: %s failed at %s:%d\n", cond, file, line);
  std::abort();
}

} // namespace pxl
