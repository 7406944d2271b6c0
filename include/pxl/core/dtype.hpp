// pxl::DType: the element types a tensor can hold, and their map to C++ types.
#pragma once

#include "pxl/core/float8.hpp"
#include "pxl/core/half.hpp"

// Only the parts of Hana the table uses: <boost/hana.hpp> whole costs every unit that
// includes a pxl header twice the parse time.
#include <boost/hana/at.hpp>
#include <boost/hana/equal.hpp>
#include <boost/hana/find_if.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/not_equal.hpp>
#include <boost/hana/optional.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string_view>
#include <type_traits>

namespace pxl {

/// The element types of PopXL, less complex. The 64-bit ones (int64, uint64, float64) are host
/// types: the device holds none of them (see `is_device_dtype`). The float8 ones are storage:
/// only the ops that move data and the pow2-scaled ops take them (see `is_float8`).
/// New enumerators go at the end, so that the values of the others never change.
enum class DType : std::uint8_t {
  float32,
  float16,
  int32,
  uint32,
  uint8,
  bool_,
  int8,
  int16,
  uint16,
  int64,
  uint64,
  float64,
  float8_143,
  float8_152,
};

inline constexpr DType float32 = DType::float32;
inline constexpr DType float16 = DType::float16;
inline constexpr DType int32 = DType::int32;
inline constexpr DType uint32 = DType::uint32;
inline constexpr DType uint8 = DType::uint8;
inline constexpr DType bool_ = DType::bool_;
inline constexpr DType int8 = DType::int8;
inline constexpr DType int16 = DType::int16;
inline constexpr DType uint16 = DType::uint16;
inline constexpr DType int64 = DType::int64;
inline constexpr DType uint64 = DType::uint64;
inline constexpr DType float64 = DType::float64;
inline constexpr DType float8_143 = DType::float8_143;
inline constexpr DType float8_152 = DType::float8_152;

/// Every DType, in the enum's order.
inline constexpr std::array<DType, 14> all_dtypes{float32, float16, int32,      uint32,    uint8,
                                                  bool_,   int8,    int16,      uint16,    int64,
                                                  uint64,  float64, float8_143, float8_152};

namespace detail {
namespace hana = boost::hana;

/// The one table from DType to C++ element type; everything else derives from it.
inline constexpr auto dtype_types = hana::make_tuple(
    hana::make_pair(hana::integral_c<DType, DType::float32>, hana::type_c<float>),
    hana::make_pair(hana::integral_c<DType, DType::float16>, hana::type_c<half>),
    hana::make_pair(hana::integral_c<DType, DType::int32>, hana::type_c<std::int32_t>),
    hana::make_pair(hana::integral_c<DType, DType::uint32>, hana::type_c<std::uint32_t>),
    hana::make_pair(hana::integral_c<DType, DType::uint8>, hana::type_c<std::uint8_t>),
    hana::make_pair(hana::integral_c<DType, DType::bool_>, hana::type_c<bool>),
    hana::make_pair(hana::integral_c<DType, DType::int8>, hana::type_c<std::int8_t>),
    hana::make_pair(hana::integral_c<DType, DType::int16>, hana::type_c<std::int16_t>),
    hana::make_pair(hana::integral_c<DType, DType::uint16>, hana::type_c<std::uint16_t>),
    hana::make_pair(hana::integral_c<DType, DType::int64>, hana::type_c<std::int64_t>),
    hana::make_pair(hana::integral_c<DType, DType::uint64>, hana::type_c<std::uint64_t>),
    hana::make_pair(hana::integral_c<DType, DType::float64>, hana::type_c<double>),
    hana::make_pair(hana::integral_c<DType, DType::float8_143>, hana::type_c<float8_143_t>),
    hana::make_pair(hana::integral_c<DType, DType::float8_152>, hana::type_c<float8_152_t>));

// The table lists the DTypes in the enum's order (lib/core/dtype.cpp checks it), so a DType's
// entry is at its value: visit_dtype's fourteen lookups, which every unit including this header
// pays for, are O(1) where find_if made them a third of the header's parse time.
template <DType D>
constexpr auto cpp_type_of() {
  return hana::second(hana::at_c<static_cast<std::size_t>(D)>(dtype_types));
}
template <typename T>
constexpr auto dtype_entry_of() {
  return hana::find_if(dtype_types, [](auto p) { return hana::second(p) == hana::type_c<T>; });
}
} // namespace detail

/// The C++ element type stored for a DType: `cpp_type<float16>` is `pxl::half`.
template <DType D>
using cpp_type = typename decltype(detail::cpp_type_of<D>())::type;

/// Types that can be tensor elements.
template <typename T>
concept Element = decltype(detail::dtype_entry_of<T>() != boost::hana::nothing)::value;

/// The DType of a C++ element type: `dtype_of<float>` is `float32`.
template <Element T>
inline constexpr DType dtype_of =
    std::remove_cvref_t<decltype(boost::hana::first(*detail::dtype_entry_of<T>()))>::value;

/// Calls `f(type_c<T>)` with the C++ type of `d`, the single runtime → compile-time bridge.
/// Every DType instantiates `f`: kernels, which see device dtypes only, dispatch on fewer.
template <typename F>
decltype(auto) visit_dtype(DType d, F&& f) {
  using detail::cpp_type_of;
  switch (d) {
  case DType::float32:
    return f(cpp_type_of<DType::float32>());
  case DType::float16:
    return f(cpp_type_of<DType::float16>());
  case DType::int32:
    return f(cpp_type_of<DType::int32>());
  case DType::uint32:
    return f(cpp_type_of<DType::uint32>());
  case DType::uint8:
    return f(cpp_type_of<DType::uint8>());
  case DType::bool_:
    return f(cpp_type_of<DType::bool_>());
  case DType::int8:
    return f(cpp_type_of<DType::int8>());
  case DType::int16:
    return f(cpp_type_of<DType::int16>());
  case DType::uint16:
    return f(cpp_type_of<DType::uint16>());
  case DType::int64:
    return f(cpp_type_of<DType::int64>());
  case DType::uint64:
    return f(cpp_type_of<DType::uint64>());
  case DType::float64:
    return f(cpp_type_of<DType::float64>());
  case DType::float8_143:
    return f(cpp_type_of<DType::float8_143>());
  case DType::float8_152:
    return f(cpp_type_of<DType::float8_152>());
  }
  __builtin_unreachable();
}
static_assert(decltype(boost::hana::length(detail::dtype_types))::value == all_dtypes.size(),
              "visit_dtype and all_dtypes must list every DType");

/// The element conversion of every pxl cast (ops::cast, HostTensor::astype, HostTensor::full):
/// - to bool: `x != 0` (NaN is true);
/// - to a float: rounded to nearest (float64 → float32 and → float16 included; beyond the
///   target's range, ±inf);
/// - integer to integer: modulo 2^bits (two's complement), as C++ and NumPy convert (so int64
///   → int32 keeps the low 32 bits);
/// - float to integer: truncated toward zero and saturated: NaN gives 0, +inf and values above
///   the type's range its maximum, -inf and values below it its minimum (so float32 3e9 → int32
///   2147483647, -1.5 → uint32 0). C++ leaves these undefined and NumPy unspecified; this is
///   what Rust's `as`, ARM's FCVTZS and Poplar's saturating casts do;
/// - from float8: its exact value, converted as above; to float8: unscaled, rounded to nearest
///   (NaN beyond its range), as `float8_from_double` with log2_scale 0 (so as PopXL's
///   `variable(data, float8_143)`). Scaled conversions are the `pow2scale` ones.
/// `From` may also be double (HostTensor::full's value, the reference evaluator's).
template <Element To, typename From>
requires Element<From> || std::is_same_v<From, double>
constexpr To convert_element(From x) {
  if constexpr (is_float8_v<From>) {
    return convert_element<To>(static_cast<double>(x));
  } else if constexpr (is_float8_v<To>) {
    if constexpr (std::is_same_v<From, half>)
      return To(static_cast<double>(static_cast<float>(x)));
    else
      return To(static_cast<double>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, half>)
      return static_cast<float>(x) != 0.0f;
    else
      return x != From{};
  } else if constexpr (std::is_same_v<From, half>) {
    return convert_element<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, half>) {
    return half(x);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // hi is 2^bits (signed: 2^(bits-1)) exactly, as From rounds the maximum up to it; below
    // hi and at or above lo, truncation lands in range. Selects, not branches: loops over this
    // still vectorise.
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max()) + From{1};
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    const From clamped = x < lo ? lo : x;
    return x != x         ? To{0}
           : clamped < hi ? static_cast<To>(clamped)
                          : std::numeric_limits<To>::max();
  } else {
    return static_cast<To>(x);
  }
}

/// PopXL's spelling: "float32", "float16", "int32", "uint32", "uint8", "bool", "int8",
/// "int16", "uint16", "int64", "uint64", "float64", "float8_143", "float8_152".
std::string_view name(DType d);
std::size_t size_of(DType d);
/// float16, float32, float64 and the float8 ones (PopXL's `dtype.is_floating_point`).
bool is_floating_point(DType d);
/// float8_143 and float8_152: storage, which only the ops that move data
/// (op_flags::Moves) and the pow2-scaled ones (op_flags::Float8) take.
bool is_float8(DType d);
/// The format of float8_143 or float8_152; a DTypeError for any other dtype.
Float8Format float8_format(DType d);
/// The signed and unsigned integers of 8 to 64 bits (not bool).
bool is_integral(DType d);
/// Whether PopXL's devices (and pxl's emulator) hold `d`: every dtype but int64, uint64 and
/// float64, which PopXL downcasts to int32, uint32 and float32 on the way in.
bool is_device_dtype(DType d);
/// The 32-bit dtype PopXL's `downcast` stores a 64-bit one as (int64 → int32, uint64 →
/// uint32, float64 → float32); any other dtype is its own.
DType downcast_dtype(DType d);
/// Parses a name as printed by `name`; throws DTypeError for anything else.
DType dtype_from_name(std::string_view s);
std::ostream& operator<<(std::ostream& os, DType d);

} // namespace pxl
