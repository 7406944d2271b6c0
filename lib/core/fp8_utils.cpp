#include "pxl/core/fp8_utils.hpp"

#include <string>

namespace pxl {

namespace {

void check_host_log2_scale(const char* call, int log2_scale) {
  if (log2_scale < min_float8_log2_scale || log2_scale > max_float8_log2_scale)
    throw ValueError(std::string(call) + ": log2_scale " + std::to_string(log2_scale) +
                     " is outside [-32, 32)");
}

bool is_host_float(DType d) { return d == float16 || d == float32 || d == float64; }

} // namespace

HostTensor host_pow2scale_cast_to_fp8(const HostTensor& src, DType dtype, int log2_scale,
                                      bool nan_on_overflow) {
  constexpr const char* call = "host_pow2scale_cast_to_fp8";
  if (!is_float8(dtype))
    throw DTypeError(std::string(call) + ": dtype must be float8_143 or float8_152, got " +
                     std::string(name(dtype)));
  if (!is_host_float(src.dtype()))
    throw DTypeError(std::string(call) + ": expected float16, float32 or float64 data, got " +
                     to_string(src.spec()));
  check_host_log2_scale(call, log2_scale);
  HostTensor out(src.shape(), dtype);
  const Float8Format f = float8_format(dtype);
  const HostTensor wide = src.astype(float64); // exact from every host float
  const auto values = wide.data<double>();
  auto* bytes = reinterpret_cast<std::uint8_t*>(out.bytes().data());
  for (std::size_t i = 0; i < values.size(); ++i)
    bytes[i] = float8_from_double(values[i], f, log2_scale, nan_on_overflow);
  return out;
}

HostTensor host_pow2scale_cast_from_fp8(const HostTensor& src, DType dtype, int log2_scale) {
  constexpr const char* call = "host_pow2scale_cast_from_fp8";
  if (!is_float8(src.dtype()))
    throw DTypeError(std::string(call) + ": expected float8_143 or float8_152 data, got " +
                     to_string(src.spec()));
  if (!is_host_float(dtype))
    throw DTypeError(std::string(call) + ": dtype must be float16, float32 or float64, got " +
                     std::string(name(dtype)));
  check_host_log2_scale(call, log2_scale);
  const Float8Format f = float8_format(src.dtype());
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(src.bytes().data());
  HostTensor wide(src.shape(), float64);
  auto values = wide.data<double>();
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = float8_to_double(bytes[i], f, log2_scale);
  return dtype == float64 ? wide : wide.astype(dtype); // exact, or rounded once
}

} // namespace pxl
