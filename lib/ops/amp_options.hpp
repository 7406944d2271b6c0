// The options every AMP product (matmul and the convolutions) takes, checked alike.
#pragma once

#include "pxl/core/dtype.hpp"
#include "pxl/core/error.hpp"

#include <optional>
#include <string>

namespace pxl::detail {

/// `p`, or `fallback` when unset, in (0, 1]: a ValueError naming `op` otherwise.
inline double amp_memory_proportion(const std::string& op, std::optional<double> p,
                                    double fallback) {
  const double v = p.value_or(fallback);
  if (!(v > 0.0 && v <= 1.0))
    throw ValueError(op + ": available_memory_proportion must be in (0, 1], got " +
                     std::to_string(v));
  return v;
}

/// The partials type `p`, or `fallback` when unset, of a product of `operands`: float32, or
/// float16 for float16 operands; a DTypeError naming `op` otherwise.
inline DType amp_partials_type(const std::string& op, std::optional<DType> p, DType fallback,
                               DType operands) {
  const DType v = p.value_or(fallback);
  if (v != float32 && v != float16)
    throw DTypeError(op + ": partials_type must be float32 or float16, got " +
                     std::string(name(v)));
  if (v == float16 && operands != float16)
    throw DTypeError(op + ": float16 partials need float16 operands, got " +
                     std::string(name(operands)) +
                     " (the AMP accumulates float32 operands in float32)");
  return v;
}

} // namespace pxl::detail
