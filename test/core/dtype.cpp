#include "pxl/core/dtype.hpp"
#include "pxl/core/error.hpp"

#include <doctest/doctest.h>

#include <sstream>

using namespace pxl;

static_assert(std::is_same_v<cpp_type<float32>, float>);
static_assert(std::is_same_v<cpp_type<float16>, half>);
static_assert(std::is_same_v<cpp_type<int32>, std::int32_t>);
static_assert(std::is_same_v<cpp_type<uint32>, std::uint32_t>);
static_assert(std::is_same_v<cpp_type<uint8>, std::uint8_t>);
static_assert(std::is_same_v<cpp_type<bool_>, bool>);
static_assert(dtype_of<float> == float32 && dtype_of<half> == float16 && dtype_of<bool> == bool_);
static_assert(Element<float> && !Element<double> && !Element<std::int64_t>);

TEST_CASE("dtype names round-trip and sizes match the C++ types") {
  for (DType d : {float32, float16, int32, uint32, uint8, bool_}) {
    CHECK(dtype_from_name(name(d)) == d);
    const auto size = visit_dtype(d, [](auto t) { return sizeof(typename decltype(t)::type); });
    CHECK(size_of(d) == size);
  }
  CHECK(name(bool_) == "bool");
  CHECK(size_of(float16) == 2);
  std::ostringstream os;
  os << float16;
  CHECK(os.str() == "float16");
}

TEST_CASE("dtype classification") {
  CHECK(is_floating_point(float32));
  CHECK(is_floating_point(float16));
  CHECK_FALSE(is_floating_point(int32));
  CHECK(is_integral(uint8));
  CHECK_FALSE(is_integral(bool_));
}

TEST_CASE("half is IEEE binary16") {
  CHECK(static_cast<float>(static_cast<half>(65504.0f)) == 65504.0f);
  CHECK(static_cast<float>(static_cast<half>(1.0f / 3.0f)) == doctest::Approx(0.33325195f));
  // 2049 is not representable: rounds to even, 2048.
  CHECK(static_cast<float>(static_cast<half>(2049.0f)) == 2048.0f);
}

TEST_CASE("unknown dtype names are a clear error") {
  CHECK_THROWS_WITH_AS(dtype_from_name("float64"), doctest::Contains("unknown dtype 'float64'"),
                       DTypeError);
}
