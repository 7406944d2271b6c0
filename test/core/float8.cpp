#include "pxl/core/float8.hpp"
#include "pxl/core/fp8_utils.hpp"
#include "pxl/core/host_tensor.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace pxl;

namespace test_float8 {

constexpr Float8Format formats[] = {Float8Format::f143, Float8Format::f152};

struct Facts {
  double smallest, smallest_normal, largest, one_bits;
};
/// PopXL's table of the formats (docs: "Float8 formats in PopXL") and ONNX's FNUZ values.
Facts facts_of(Float8Format f) {
  return f == Float8Format::f143 ? Facts{std::ldexp(1.0, -10), std::ldexp(1.0, -7), 240.0, 0x40}
                                 : Facts{std::ldexp(1.0, -17), std::ldexp(1.0, -15), 57344.0, 0x40};
}

double value(std::uint8_t b, Float8Format f) { return float8_to_double(b, f); }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("pxl_float8_" + name)).string();
}

} // namespace test_float8

using test_float8::formats;
using test_float8::value;

TEST_CASE("float8: the formats' known values, with 0x80 the only NaN and no infinity") {
  for (const Float8Format f : formats) {
    const auto facts = test_float8::facts_of(f);
    CAPTURE(static_cast<int>(f));
    CHECK(value(0x00, f) == 0.0);
    CHECK(value(0x01, f) == facts.smallest);
    CHECK(value(0x7f, f) == facts.largest);
    CHECK(value(0xff, f) == -facts.largest);
    CHECK(value(static_cast<std::uint8_t>(facts.one_bits), f) == 1.0);
    CHECK(std::isnan(value(0x80, f)));
    // The positive codes increase strictly; each negative code is its positive's negation.
    for (unsigned b = 1; b < 0x80; ++b) {
      CHECK(value(static_cast<std::uint8_t>(b), f) > value(static_cast<std::uint8_t>(b - 1), f));
      CHECK(std::isfinite(value(static_cast<std::uint8_t>(b), f)));
      CHECK(value(static_cast<std::uint8_t>(b | 0x80), f) ==
            -value(static_cast<std::uint8_t>(b), f));
    }
    // The smallest normal is the first code of exponent 1: the subnormals below it step evenly.
    const int mantissa_bits = f == Float8Format::f143 ? 3 : 2;
    CHECK(value(static_cast<std::uint8_t>(1u << mantissa_bits), f) == facts.smallest_normal);
    for (unsigned b = 1; b < (1u << mantissa_bits); ++b)
      CHECK(value(static_cast<std::uint8_t>(b), f) == b * facts.smallest);
    // The table kernels widen by is the same, as floats.
    const float* table = float8_values(f);
    for (unsigned b = 0; b < 256; ++b)
      if (b != 0x80)
        CHECK(static_cast<double>(table[b]) == value(static_cast<std::uint8_t>(b), f));
    CHECK(std::isnan(table[0x80]));
  }
}

TEST_CASE("float8: every value round-trips; between two values, nearest and ties to even") {
  for (const Float8Format f : formats) {
    CAPTURE(static_cast<int>(f));
    for (unsigned b = 0; b < 256; ++b) {
      if (b == 0x80)
        continue;
      CHECK(float8_from_double(value(static_cast<std::uint8_t>(b), f), f) == b);
    }
    for (unsigned b = 0; b + 1 < 0x80; ++b) {
      const auto lo = static_cast<std::uint8_t>(b), hi = static_cast<std::uint8_t>(b + 1);
      const double a = value(lo, f), c = value(hi, f), mid = (a + c) / 2;
      CAPTURE(b);
      // The tie goes to the even code (the one whose last mantissa bit is 0).
      CHECK(float8_from_double(mid, f) == ((lo & 1) == 0 ? lo : hi));
      CHECK(float8_from_double(std::nextafter(mid, 0.0), f) == lo);
      CHECK(float8_from_double(std::nextafter(mid, 1e9), f) == hi);
      // Negative values mirror them, but for the one that rounds to zero: +0, never 0x80.
      const std::uint8_t neg_lo = lo == 0 ? 0 : static_cast<std::uint8_t>(lo | 0x80);
      CHECK(float8_from_double(-std::nextafter(mid, 0.0), f) == neg_lo);
      CHECK(float8_from_double(-std::nextafter(mid, 1e9), f) == (hi | 0x80));
    }
  }
}

TEST_CASE("float8: overflow, NaN, zeros and the power-of-two scale") {
  for (const Float8Format f : formats) {
    const double largest = test_float8::facts_of(f).largest;
    const double ulp = f == Float8Format::f143 ? 16.0 : 8192.0; // the spacing at the top
    CAPTURE(static_cast<int>(f));
    // Below the midpoint past the largest value: rounds down to it. At it (a tie to the even
    // value past the range) and beyond: NaN, or the largest of the sign when saturating.
    CHECK(float8_from_double(largest + ulp / 2 - 1e-9, f) == 0x7f);
    for (const double x :
         {largest + ulp / 2, 2 * largest, 1e300, std::numeric_limits<double>::infinity()}) {
      CHECK(float8_from_double(x, f) == 0x80);
      CHECK(float8_from_double(-x, f) == 0x80);
      CHECK(float8_from_double(x, f, 0, false) == 0x7f);
      CHECK(float8_from_double(-x, f, 0, false) == 0xff);
    }
    CHECK(float8_from_double(std::numeric_limits<double>::quiet_NaN(), f) == 0x80);
    CHECK(float8_from_double(std::numeric_limits<double>::quiet_NaN(), f, 0, false) == 0x80);
    CHECK(float8_from_double(-0.0, f) == 0x00);
    CHECK(float8_from_double(-1e-30, f) == 0x00);
    // The scale multiplies before rounding, exactly, and after widening.
    for (const int s : {-32, -5, -1, 1, 4, 31})
      for (const double x : {0.3, -7.25, 1e-3, 100.0, 3e-6}) {
        CAPTURE(s);
        CAPTURE(x);
        CHECK(float8_from_double(x, f, s) == float8_from_double(std::ldexp(x, s), f));
        const std::uint8_t b = float8_from_double(x, f);
        CHECK(float8_to_double(b, f, s) == std::ldexp(value(b, f), s));
      }
  }
}

TEST_CASE("float8 dtypes: names, sizes, element type and the unscaled conversions") {
  CHECK(name(float8_143) == "float8_143");
  CHECK(name(float8_152) == "float8_152");
  CHECK(dtype_from_name("float8_152") == float8_152);
  CHECK(size_of(float8_143) == 1);
  CHECK(is_floating_point(float8_143));
  CHECK(is_float8(float8_152));
  CHECK_FALSE(is_float8(float16));
  CHECK(float8_format(float8_152) == Float8Format::f152);
  CHECK_THROWS_WITH_AS(float8_format(float16), "float8_format: float16 is not a float8 dtype",
                       DTypeError);
  CHECK(is_device_dtype(float8_143));
  CHECK(dtype_of<float8_152_t> == float8_152);
  // convert_element is the unscaled conversion: to float8 rounded with NaN on overflow, from
  // it exact.
  CHECK(convert_element<float8_143_t>(1.0).bits() == 0x40);
  CHECK(convert_element<float8_143_t>(1000.0f).bits() == 0x80);
  CHECK(convert_element<float8_152_t>(half(0.5f)).bits() == 0x3c);
  CHECK(convert_element<float>(float8_143_t::from_bits(0x7f)) == 240.0f);
  CHECK(convert_element<std::int32_t>(float8_152_t::from_bits(0xff)) == -57344);
  CHECK(convert_element<bool>(float8_143_t::from_bits(0x80))); // NaN is true, as for floats
  CHECK_FALSE(convert_element<bool>(float8_143_t::from_bits(0x00)));
  // 143 → 152 rounds (152 has one mantissa bit less): 1.125 is a tie, to even 1.0.
  CHECK(convert_element<float8_152_t>(float8_143_t(1.125)).bits() == 0x40);

  const HostTensor t = HostTensor({0.5f, -3.0f, 300.0f, 1e-4f}, {4}).astype(float8_143);
  CHECK(t.dtype() == float8_143);
  CHECK(t.nbytes() == 4);
  CHECK(t.item(0) == 0.5);
  CHECK(t.item(1) == -3.0);
  CHECK(std::isnan(t.item(2))); // beyond 240
  CHECK(t.item(3) == 0.0);      // below half the smallest value, 2^-10: +0
  std::ostringstream os;
  os << HostTensor::full({2}, float8_152, -1.5);
  CHECK(os.str().find("[-1.5, -1.5]") != std::string::npos);
}

TEST_CASE("host_pow2scale_cast_to_fp8 / _from_fp8: PopXL's host conversions") {
  const HostTensor x({0.1f, -2.5f, 7.0f, 1e-3f, 70000.0f}, {5});
  for (const DType d : {float8_143, float8_152}) {
    const Float8Format f = float8_format(d);
    for (const int s : {-4, 0, 3}) {
      CAPTURE(s);
      const HostTensor q = host_pow2scale_cast_to_fp8(x, d, s);
      REQUIRE(q.dtype() == d);
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(q.bytes().data());
      for (std::int64_t i = 0; i < x.nelms(); ++i)
        CHECK(bytes[i] == float8_from_double(x.item(i), f, s));
      // Back with the opposite scale: each value as rounded, exactly, in every float dtype.
      const HostTensor back = host_pow2scale_cast_from_fp8(q, float64, -s);
      for (std::int64_t i = 0; i < x.nelms(); ++i)
        if (bytes[i] != 0x80)
          CHECK(back.item(i) == float8_to_double(bytes[i], f, -s));
      CHECK(host_pow2scale_cast_from_fp8(q, float32, -s).dtype() == float32);
      CHECK(host_pow2scale_cast_from_fp8(q, float16, -s).dtype() == float16);
    }
    // Saturation instead of NaN on request.
    const HostTensor big({1e6}, {1});
    CHECK(host_pow2scale_cast_to_fp8(big, d, 0, false).item(0) == test_float8::facts_of(f).largest);
    CHECK(std::isnan(host_pow2scale_cast_to_fp8(big, d).item(0)));
  }
  CHECK_THROWS_WITH_AS(host_pow2scale_cast_to_fp8(x, float16), doctest::Contains("float8_143"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(
      host_pow2scale_cast_to_fp8(HostTensor(std::vector<std::int32_t>{1, 2}, {2}), float8_143),
      doctest::Contains("int32"), DTypeError);
  CHECK_THROWS_WITH_AS(host_pow2scale_cast_to_fp8(x, float8_143, 32),
                       doctest::Contains("log2_scale 32 is outside [-32, 32)"), ValueError);
  CHECK_THROWS_WITH_AS(host_pow2scale_cast_from_fp8(x, float32), doctest::Contains("float32"),
                       DTypeError);
  const HostTensor q = host_pow2scale_cast_to_fp8(x, float8_143);
  CHECK_THROWS_WITH_AS(host_pow2scale_cast_from_fp8(q, int32), doctest::Contains("int32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(host_pow2scale_cast_from_fp8(q, float32, -33),
                       doctest::Contains("log2_scale -33"), ValueError);
}

TEST_CASE("float8 .npy: PopXL's structured dtype, written and read") {
  const std::string path = test_float8::temp_path("a.npy");
  const HostTensor q =
      host_pow2scale_cast_to_fp8(HostTensor({0.25f, -1.0f, 3.5f}, {3}), float8_152);
  q.save_npy(path);
  {
    std::ifstream f(path, std::ios::binary);
    std::string head(128, '\0');
    f.read(head.data(), 128);
    CHECK(head.find("'descr': [('float8_152', '|u1')]") != std::string::npos);
  }
  const HostTensor back = HostTensor::load_npy(path);
  CHECK(back.dtype() == float8_152);
  CHECK(back.shape() == Shape{3});
  CHECK(std::equal(back.bytes().begin(), back.bytes().end(), q.bytes().begin()));
  // NumPy may spell the field's type without its byte order: '|u1', 'u1' and '<u1' alike.
  const auto write = [&](const std::string& descr) {
    std::string dict = "{'descr': " + descr + ", 'fortran_order': False, 'shape': (2,), }";
    dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
    dict += '\n';
    std::ofstream f(path, std::ios::binary);
    f << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(dict.size() & 0xff)
      << static_cast<char>(dict.size() >> 8) << dict << '\x40' << '\xc0';
  };
  for (const std::string descr : {"[('float8_143', 'u1')]", "[( 'float8_143' , '<u1' ), ]"}) {
    CAPTURE(descr);
    write(descr);
    const HostTensor t = HostTensor::load_npy(path);
    CHECK(t.dtype() == float8_143);
    CHECK(t.item(0) == 1.0);
    CHECK(t.item(1) == -1.0);
  }
  write("[('float8_999', 'u1')]");
  CHECK_THROWS_WITH_AS(HostTensor::load_npy(path), doctest::Contains("float8_999"), IoError);
  write("[('float8_143', 'u1')");
  CHECK_THROWS_WITH_AS(HostTensor::load_npy(path), doctest::Contains("expected ']'"), IoError);
  std::filesystem::remove(path);
}
