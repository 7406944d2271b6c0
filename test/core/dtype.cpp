#include "pxl/core/dtype.hpp"
#include "pxl/core/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

using namespace pxl;

static_assert(std::is_same_v<cpp_type<float32>, float>);
static_assert(std::is_same_v<cpp_type<float16>, half>);
static_assert(std::is_same_v<cpp_type<int32>, std::int32_t>);
static_assert(std::is_same_v<cpp_type<uint32>, std::uint32_t>);
static_assert(std::is_same_v<cpp_type<uint8>, std::uint8_t>);
static_assert(std::is_same_v<cpp_type<bool_>, bool>);
static_assert(std::is_same_v<cpp_type<int8>, std::int8_t>);
static_assert(std::is_same_v<cpp_type<int16>, std::int16_t>);
static_assert(std::is_same_v<cpp_type<uint16>, std::uint16_t>);
static_assert(std::is_same_v<cpp_type<int64>, std::int64_t>);
static_assert(std::is_same_v<cpp_type<uint64>, std::uint64_t>);
static_assert(std::is_same_v<cpp_type<float64>, double>);
static_assert(dtype_of<float> == float32 && dtype_of<half> == float16 && dtype_of<bool> == bool_);
static_assert(dtype_of<double> == float64 && dtype_of<std::int64_t> == int64 &&
              dtype_of<std::int8_t> == int8 && dtype_of<std::uint16_t> == uint16);
static_assert(Element<double> && Element<std::int64_t> && !Element<long double> && !Element<char>);

TEST_CASE("dtype names round-trip and sizes match the C++ types") {
  for (DType d : all_dtypes) {
    CAPTURE(d);
    CHECK(dtype_from_name(name(d)) == d);
    const auto size = visit_dtype(d, [](auto t) { return sizeof(typename decltype(t)::type); });
    CHECK(size_of(d) == size);
  }
  CHECK(name(bool_) == "bool");
  // PopXL's spellings.
  CHECK(name(int8) == "int8");
  CHECK(name(int16) == "int16");
  CHECK(name(uint16) == "uint16");
  CHECK(name(int64) == "int64");
  CHECK(name(uint64) == "uint64");
  CHECK(name(float64) == "float64");
  CHECK(name(float8_143) == "float8_143");
  CHECK(name(float8_152) == "float8_152");
  CHECK(size_of(float16) == 2);
  CHECK(size_of(int8) == 1);
  CHECK(size_of(uint16) == 2);
  CHECK(size_of(float64) == 8);
  std::ostringstream os;
  os << float16 << ' ' << uint64;
  CHECK(os.str() == "float16 uint64");
}

TEST_CASE("dtype classification") {
  CHECK(is_floating_point(float32));
  CHECK(is_floating_point(float16));
  CHECK(is_floating_point(float64));
  CHECK_FALSE(is_floating_point(int32));
  CHECK_FALSE(is_floating_point(int64));
  CHECK(is_floating_point(float8_143)); // PopXL's dtype.is_floating_point
  CHECK(is_float8(float8_152));
  CHECK_FALSE(is_integral(float8_143));
  for (DType d : {int8, int16, int32, int64, uint8, uint16, uint32, uint64})
    CHECK(is_integral(d));
  CHECK_FALSE(is_integral(bool_));
  CHECK_FALSE(is_integral(float64));
}

TEST_CASE("the 64-bit dtypes are host dtypes, downcast to their 32-bit ones") {
  for (DType d : all_dtypes) {
    CAPTURE(d);
    const bool wide = d == int64 || d == uint64 || d == float64;
    CHECK(is_device_dtype(d) == !wide);
    CHECK(is_device_dtype(downcast_dtype(d)));
    CHECK(downcast_dtype(d) == (wide ? downcast_dtype(d) : d));
  }
  CHECK(downcast_dtype(int64) == int32);
  CHECK(downcast_dtype(uint64) == uint32);
  CHECK(downcast_dtype(float64) == float32);
}

TEST_CASE("convert_element's rules reach the new dtypes") {
  // float64 → float32 and → float16 round to nearest (ties to even); beyond the range, inf.
  CHECK(convert_element<float>(1.0 + 0x1p-24) == 1.0f); // a tie: to even
  CHECK(convert_element<float>(1.0 + 0x1p-24 + 0x1p-40) == 1.0f + 0x1p-23f);
  CHECK(convert_element<float>(0.1) == 0.1f);
  CHECK(convert_element<float>(1e300) == std::numeric_limits<float>::infinity());
  CHECK(static_cast<float>(convert_element<half>(2049.0)) == 2048.0f);
  // Integers wrap modulo 2^bits, 64-bit ones included.
  CHECK(convert_element<std::int32_t>(std::int64_t{3'000'000'000}) == -1'294'967'296);
  CHECK(convert_element<std::uint32_t>(std::uint64_t{0x1'0000'0005}) == 5u);
  CHECK(convert_element<std::int8_t>(std::int32_t{200}) == -56);
  CHECK(convert_element<std::uint16_t>(std::int16_t{-1}) == 65535);
  CHECK(convert_element<std::int64_t>(std::int32_t{-7}) == -7);
  CHECK(convert_element<std::uint64_t>(std::int8_t{-1}) == ~std::uint64_t{0});
  // Floats to integers truncate and saturate, NaN to 0.
  CHECK(convert_element<std::int8_t>(300.0f) == 127);
  CHECK(convert_element<std::int8_t>(-128.9f) == -128);
  CHECK(convert_element<std::int16_t>(-1e9) == -32768);
  CHECK(convert_element<std::uint16_t>(-0.5) == 0);
  CHECK(convert_element<std::int64_t>(1e19) == std::numeric_limits<std::int64_t>::max());
  CHECK(convert_element<std::int64_t>(-1e19) == std::numeric_limits<std::int64_t>::min());
  CHECK(convert_element<std::int64_t>(-2.9) == -2);
  CHECK(convert_element<std::uint64_t>(1.8446744073709552e19) ==
        std::numeric_limits<std::uint64_t>::max());
  CHECK(convert_element<std::uint64_t>(std::nan("")) == 0);
  // Integers to floats round to nearest.
  CHECK(convert_element<double>(std::int64_t{(1LL << 53) + 1}) == 0x1p53);
  CHECK(convert_element<float>(std::int64_t{(1LL << 24) + 1}) == 0x1p24f);
  CHECK(convert_element<bool>(0.0) == false);
  CHECK(convert_element<bool>(std::nan("")) == true);
  CHECK(convert_element<bool>(std::int64_t{1} << 40) == true);
}

TEST_CASE("half is IEEE binary16") {
  CHECK(static_cast<float>(static_cast<half>(65504.0f)) == 65504.0f);
  CHECK(static_cast<float>(static_cast<half>(1.0f / 3.0f)) == doctest::Approx(0.33325195f));
  // 2049 is not representable: rounds to even, 2048.
  CHECK(static_cast<float>(static_cast<half>(2049.0f)) == 2048.0f);
}

TEST_CASE("unknown dtype names are a clear error") {
  CHECK_THROWS_WITH_AS(
      dtype_from_name("complex64"),
      "unknown dtype 'complex64': expected one of float32, float16, int32, uint32, "
      "uint8, bool, int8, int16, uint16, int64, uint64, float64, float8_143, float8_152",
      DTypeError);
}
