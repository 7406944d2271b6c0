#include "pxl/core/host_tensor.hpp"

#include "sanitizers.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

using namespace pxl;

namespace {
std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("pxl_test_" + name);
}
} // namespace

TEST_CASE("construction from vectors, lists and spans") {
  HostTensor a({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.dtype() == float32);
  CHECK(a.at<float>({1, 2}) == 6.f);
  std::vector<std::int32_t> v{1, 2, 3};
  HostTensor b(v, {3});
  CHECK(b.dtype() == int32);
  CHECK(b.item(2) == 3.0);
  HostTensor c{1.f, 2.f};
  CHECK(c.shape() == Shape{2});
  auto s = HostTensor::scalar(half(1.5f));
  CHECK(s.rank() == 0);
  CHECK(s.dtype() == float16);
  CHECK(s.item() == 1.5);
  CHECK(HostTensor(TensorSpec{{2, 2}, int32}).data<std::int32_t>()[3] == 0);
  CHECK(HostTensor::full({3}, uint8, 7).data<std::uint8_t>()[1] == 7);
}

TEST_CASE("wrong counts, dtypes and indices are clear errors") {
  CHECK_THROWS_WITH_AS(HostTensor({1.f, 2.f, 3.f}, {2, 2}),
                       doctest::Contains("3 values do not fill shape (2, 2)"), ShapeError);
  HostTensor a({1.f, 2.f}, {2});
  CHECK_THROWS_WITH_AS(a.data<std::int32_t>(),
                       doctest::Contains("requested a int32 view of a float32 tensor"), DTypeError);
  CHECK_THROWS_WITH_AS(a.at<float>({2}), doctest::Contains("index 2 out of range"), ValueError);
  CHECK_THROWS_WITH_AS(a.at<float>({0, 0}), doctest::Contains("2 indices for a tensor of rank 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(a.reshaped({3}), doctest::Contains("cannot reshape (2,)"), ShapeError);
  CHECK_THROWS_AS(HostTensor(Shape{-1}, float32), ShapeError);
}

TEST_CASE("the new dtypes: construction, astype and equality") {
  const HostTensor w({std::int64_t{3'000'000'000}, std::int64_t{-1}, std::int64_t{7}});
  CHECK(w.dtype() == int64);
  CHECK(w.nbytes() == 24);
  CHECK(w.at<std::int64_t>({0}) == 3'000'000'000);
  // astype follows convert_element: wrap between integers, round to nearest to floats.
  CHECK(w.astype(int32) == HostTensor(std::vector<std::int32_t>{-1'294'967'296, -1, 7}, {3}));
  CHECK(w.astype(uint16) == HostTensor(std::vector<std::uint16_t>{0x5e00, 65535, 7}, {3}));
  CHECK(w.astype(int8) == HostTensor(std::vector<std::int8_t>{0, -1, 7}, {3}));
  CHECK(w.astype(float64) == HostTensor(std::vector<double>{3e9, -1.0, 7.0}, {3}));
  CHECK(w.astype(uint64).astype(int64) == w);
  const HostTensor d({0.1, 1e300, -2.5});
  CHECK(d.astype(float32) ==
        HostTensor(std::vector<float>{0.1f, std::numeric_limits<float>::infinity(), -2.5f}, {3}));
  CHECK(d.astype(int16) == HostTensor(std::vector<std::int16_t>{0, 32767, -2}, {3}));
  CHECK(d.astype(uint64).data<std::uint64_t>()[1] == ~std::uint64_t{0});
  CHECK(HostTensor::full({2}, uint64, 1.8e19).data<std::uint64_t>()[0] ==
        18'000'000'000'000'000'000u);
  CHECK(HostTensor::full({1}, int8, -200).item() == -128);
  // Equality is per dtype and byte.
  CHECK_FALSE(HostTensor({std::int64_t{1}}) == HostTensor({std::uint64_t{1}}));
  CHECK_FALSE(HostTensor({1.0}) == HostTensor({1.0f}));
  CHECK(HostTensor({1.0}) == HostTensor({1.0f}).astype(float64));
  CHECK_THROWS_WITH_AS((void)w.data<std::int32_t>(),
                       "HostTensor: requested a int32 view of a int64 tensor", DTypeError);
}

TEST_CASE("equality, conversion and reshaping") {
  HostTensor a({1.5f, -2.5f}, {2});
  CHECK(a == HostTensor({1.5f, -2.5f}, {2}));
  CHECK_FALSE(a == HostTensor({1.5f, -2.5f}, {1, 2}));
  CHECK(a.astype(int32) == HostTensor(std::vector<std::int32_t>{1, -2}, {2}));
  CHECK(a.astype(bool_).data<bool>()[0]);
  CHECK(a.astype(float16).astype(float32) == a);
  CHECK(a.reshaped({1, 2}).shape() == Shape{1, 2});
  CHECK(allclose(a, HostTensor({1.5f, -2.5000001f}, {2})));
  CHECK_FALSE(allclose(a, HostTensor({1.5f, -2.6f}, {2})));
}

TEST_CASE("sizes: an impossible shape is a ShapeError, an unallocatable one a ValueError") {
  constexpr std::int64_t big = std::int64_t{1} << 62;
  CHECK_THROWS_WITH_AS(HostTensor(Shape{big, 4}, float32),
                       doctest::Contains("HostTensor: shape (4611686018427387904, 4) has more "
                                         "elements than a 64-bit count can hold"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(HostTensor(Shape{big}, float32),
                       doctest::Contains("HostTensor: shape (4611686018427387904,) of float32 has "
                                         "more bytes than a 64-bit count can hold"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(HostTensor(Shape{3, -1}, int32),
                       doctest::Contains("shape (3, -1) has a negative dimension (-1)"),
                       ShapeError);
  // Valid sizes beyond any address space: never std::bad_alloc or std::length_error. (ASan's
  // operator new reports such a request as a fatal error instead of throwing bad_alloc.)
  if (!pxl::testing::address_sanitizer) {
    CHECK_THROWS_WITH_AS(HostTensor(Shape{std::int64_t{1} << 60}, uint8),
                         doctest::Contains("HostTensor: cannot allocate 1152921504606846976 "
                                           "bytes on the host for shape (1152921504606846976,) "
                                           "of uint8"),
                         ValueError);
    CHECK_THROWS_AS(HostTensor(Shape{std::numeric_limits<std::int64_t>::max()}, bool_), ValueError);
    CHECK_THROWS_AS(HostTensor::full({std::int64_t{1} << 40, 1 << 20}, float32, 1.0), ValueError);
  }
  // A zero dimension makes any other dimensions an empty, valid shape.
  CHECK(HostTensor(Shape{big, big, 0}, float32).nbytes() == 0);
}

TEST_CASE("conversions saturate: NaN → 0, out of range → the integer type's extremes") {
  const float inf = std::numeric_limits<float>::infinity();
  const HostTensor x({NAN, inf, -inf, 3e9f, -3e9f, 2147483520.f, -2147483648.f, -0.9f, 255.9f},
                     {9});
  CHECK(x.astype(int32) ==
        HostTensor(std::vector<std::int32_t>{0, 2147483647, -2147483647 - 1, 2147483647,
                                             -2147483647 - 1, 2147483520, -2147483647 - 1, 0, 255},
                   {9}));
  CHECK(x.astype(uint8) ==
        HostTensor(std::vector<std::uint8_t>{0, 255, 0, 255, 0, 255, 0, 0, 255}, {9}));
  CHECK(x.astype(uint32) == HostTensor(std::vector<std::uint32_t>{0, 4294967295u, 0, 3000000000u, 0,
                                                                  2147483520u, 0, 0, 255},
                                       {9}));
  CHECK(x.astype(float16).astype(int32).data<std::int32_t>()[3] == 2147483647); // inf in half
  // Integer to integer wraps, as in C++ and NumPy.
  CHECK(HostTensor(std::vector<std::int32_t>{-1, 256}, {2}).astype(uint8) ==
        HostTensor(std::vector<std::uint8_t>{255, 0}, {2}));
  CHECK(HostTensor::full({1}, int32, 1e300).data<std::int32_t>()[0] == 2147483647);
  CHECK(HostTensor::full({1}, uint32, -5.0).data<std::uint32_t>()[0] == 0);
}

TEST_CASE("printing is NumPy-like and summarises long tensors") {
  HostTensor a({1.f, 2.f, 3.f, 4.f}, {2, 2});
  CHECK(a.to_string() == "HostTensor([[1, 2],\n            [3, 4]], shape=(2, 2), dtype=float32)");
  CHECK(HostTensor({true, false}, {2}).to_string() ==
        "HostTensor([true, false], shape=(2,), dtype=bool)");
  // Integers print exactly, even where a double would round; int8 and uint8 as numbers.
  CHECK(HostTensor({std::int64_t{9'007'199'254'740'993}, std::int64_t{-1}}).to_string() ==
        "HostTensor([9007199254740993, -1], shape=(2,), dtype=int64)");
  CHECK(HostTensor({~std::uint64_t{0}}).to_string() ==
        "HostTensor([18446744073709551615], shape=(1,), dtype=uint64)");
  CHECK(HostTensor({std::int8_t{-5}, std::int8_t{65}}).to_string() ==
        "HostTensor([-5, 65], shape=(2,), dtype=int8)");
  CHECK(HostTensor({std::uint16_t{65535}}).to_string() ==
        "HostTensor([65535], shape=(1,), dtype=uint16)");
  CHECK(HostTensor({0.5, 1e300}).to_string() ==
        "HostTensor([0.5, 1e+300], shape=(2,), dtype=float64)");
  const auto big = HostTensor::full({2000}, int32, 1).to_string();
  CHECK(big.find("...") != std::string::npos);
  CHECK(big.size() < 100);
}

namespace {
HostTensor arange(std::int32_t n, Shape shape) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = i;
  return HostTensor(v, std::move(shape));
}
} // namespace

// The expected strings are NumPy 1.24's, from
//   "HostTensor(" + np.array2string(a, separator=', ', threshold=1000, edgeitems=3,
//       max_line_width=sys.maxsize, formatter={'int': str}, prefix='HostTensor(') + ...
// (NumPy's defaults but for line wrapping and padding, which pxl does not do).
TEST_CASE("printing summarises with NumPy's rules: over 1000 elements, 3 at each end") {
  CHECK(arange(2000, {2000}).to_string() ==
        "HostTensor([0, 1, 2, ..., 1997, 1998, 1999], shape=(2000,), dtype=int32)");
  CHECK(arange(10000, {100, 100}).to_string() ==
        "HostTensor([[0, 1, 2, ..., 97, 98, 99],\n"
        "            [100, 101, 102, ..., 197, 198, 199],\n"
        "            [200, 201, 202, ..., 297, 298, 299],\n"
        "            ...,\n"
        "            [9700, 9701, 9702, ..., 9797, 9798, 9799],\n"
        "            [9800, 9801, 9802, ..., 9897, 9898, 9899],\n"
        "            [9900, 9901, 9902, ..., 9997, 9998, 9999]], shape=(100, 100), dtype=int32)");
  CHECK(arange(1200, {2, 3, 200}).to_string() ==
        "HostTensor([[[0, 1, 2, ..., 197, 198, 199],\n"
        "             [200, 201, 202, ..., 397, 398, 399],\n"
        "             [400, 401, 402, ..., 597, 598, 599]],\n"
        "\n"
        "            [[600, 601, 602, ..., 797, 798, 799],\n"
        "             [800, 801, 802, ..., 997, 998, 999],\n"
        "             [1000, 1001, 1002, ..., 1197, 1198, 1199]]], shape=(2, 3, 200), "
        "dtype=int32)");
  // 1000 elements or fewer: everything, with NumPy's blank line between 2-D blocks.
  CHECK(arange(12, {2, 2, 3}).to_string() == "HostTensor([[[0, 1, 2],\n"
                                             "             [3, 4, 5]],\n"
                                             "\n"
                                             "            [[6, 7, 8],\n"
                                             "             [9, 10, 11]]], shape=(2, 2, 3), "
                                             "dtype=int32)");
  CHECK(arange(1000, {1000}).to_string().find("...") == std::string::npos);
}

TEST_CASE("printing an empty tensor is O(1), whatever its other dimensions") {
  // NumPy prints "[]" for every empty array; walking the (100000, 100000) rows would hang.
  CHECK(HostTensor(Shape{100000, 100000, 0}, float32).to_string() ==
        "HostTensor([], shape=(100000, 100000, 0), dtype=float32)");
  CHECK(HostTensor(Shape{0}, int32).to_string() == "HostTensor([], shape=(0,), dtype=int32)");
  std::ostringstream os;
  os << HostTensor(Shape{0, std::int64_t{1} << 40}, uint8);
  CHECK(os.str() == "HostTensor([], shape=(0, 1099511627776), dtype=uint8)");
}

TEST_CASE(".npy round trip for every dtype") {
  const auto path = temp_path("roundtrip.npy");
  for (DType d : all_dtypes) {
    CAPTURE(d);
    const HostTensor t = HostTensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f}, {2, 3}).astype(d);
    t.save_npy(path);
    CHECK(HostTensor::load_npy(path) == t);
  }
  const HostTensor scalar = HostTensor::scalar(3.25f);
  scalar.save_npy(path);
  CHECK(HostTensor::load_npy(path) == scalar);
  // Values only the wide and narrow dtypes hold, bit for bit.
  const std::vector<HostTensor> extremes = {
      HostTensor({std::int64_t{-9'223'372'036'854'775'807} - 1, std::int64_t{(1LL << 53) + 1}}),
      HostTensor({~std::uint64_t{0}, std::uint64_t{1} << 63}),
      HostTensor({0.1, -1e300, 5e-324}),
      HostTensor({std::int8_t{-128}, std::int8_t{127}}),
      HostTensor({std::int16_t{-32768}, std::int16_t{32767}}),
      HostTensor({std::uint16_t{65535}, std::uint16_t{0}})};
  for (const HostTensor& t : extremes) {
    CAPTURE(t);
    t.save_npy(path);
    CHECK(HostTensor::load_npy(path) == t);
  }
  std::filesystem::remove(path);
}

TEST_CASE(".npy descr of each dtype is NumPy's") {
  const auto path = temp_path("descr.npy");
  // float8 as PopXL's structured dtype of one uint8 field (popxl.utils.np_dtype_float8_143).
  const std::vector<std::pair<DType, std::string>> descrs = {
      {float32, "'<f4'"},
      {float16, "'<f2'"},
      {int32, "'<i4'"},
      {uint32, "'<u4'"},
      {uint8, "'|u1'"},
      {bool_, "'|b1'"},
      {int8, "'|i1'"},
      {int16, "'<i2'"},
      {uint16, "'<u2'"},
      {int64, "'<i8'"},
      {uint64, "'<u8'"},
      {float64, "'<f8'"},
      {float8_143, "[('float8_143', '|u1')]"},
      {float8_152, "[('float8_152', '|u1')]"}};
  REQUIRE(descrs.size() == all_dtypes.size());
  for (const auto& entry : descrs) {
    CAPTURE(entry.first);
    HostTensor({2}, entry.first).save_npy(path);
    std::ifstream f(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), {});
    CHECK(bytes.find("{'descr': " + entry.second + ", 'fortran_order'") == 10);
  }
  std::filesystem::remove(path);
}

TEST_CASE(".npy header is what NumPy writes") {
  const auto path = temp_path("header.npy");
  HostTensor({1.f, 2.f, 3.f}, {3}).save_npy(path);
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }") == 10);
  CHECK((bytes.size() - 12) % 64 == 0); // header padded to 64 bytes; 12 bytes of data
  std::filesystem::remove(path);
}

TEST_CASE("bad .npy files are clear errors") {
  CHECK_THROWS_WITH_AS(HostTensor::load_npy(temp_path("missing.npy")),
                       doctest::Contains("cannot open"), IoError);
  const auto path = temp_path("bad.npy");
  { std::ofstream(path) << "not numpy"; }
  CHECK_THROWS_WITH_AS(HostTensor::load_npy(path), doctest::Contains("bad magic"), IoError);
  HostTensor(Shape{100}, float32).save_npy(path);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4);
  CHECK_THROWS_WITH_AS(HostTensor::load_npy(path), doctest::Contains("truncated"), IoError);
  std::filesystem::remove(path);
}

// Hostile .npy files: each is an IoError naming the file and what is wrong, never another
// exception, a crash or an allocation of what the file does not hold.
namespace {

/// A .npy file of format `major`.0 with header `dict` (as given: no padding) and `data`.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  std::string s("\x93NUMPY", 6);
  s += {static_cast<char>(major), 0};
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    s += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return s + dict + data;
}

std::string npy_dict(const std::string& shape, const std::string& descr = "<f4") {
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }\n";
}

/// Loads `bytes` as a .npy file and checks the IoError names the file and has `expected`.
void check_npy_error(const std::string& bytes, const std::string& expected,
                     const ReadOptions& options = {}) {
  CAPTURE(expected);
  const auto path = temp_path("hostile.npy");
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
  try {
    (void)HostTensor::load_npy(path, options);
    FAIL("no IoError");
  } catch (const IoError& e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(msg.find("load_npy: '" + path.string() + "'") != std::string::npos);
    CHECK(msg.find(expected) != std::string::npos);
  }
  std::filesystem::remove(path);
}

} // namespace

TEST_CASE("hostile .npy files are IoErrors naming the file and the problem") {
  const std::string f32x2(8, '\0');
  SUBCASE("a shape number that does not parse") {
    check_npy_error(npy_file(npy_dict("(2, x)"), f32x2),
                    "expected a dimension (a non-negative integer), found \"x)");
  }
  SUBCASE("a shape number that overflows int64") {
    check_npy_error(npy_file(npy_dict("(99999999999999999999,)"), ""),
                    "shape dimension \"99999999999999999999\", which does not fit in 64 bits");
  }
  SUBCASE("a negative shape number") {
    check_npy_error(npy_file(npy_dict("(-2,)"), f32x2), "negative shape dimension -2");
  }
  SUBCASE("a shape whose byte count overflows") {
    check_npy_error(npy_file(npy_dict("(4611686018427387904, 4)"), ""),
                    "has a shape whose size overflows");
  }
  SUBCASE("a shape promising 2^60 bytes of data in a small file: refused, not allocated") {
    check_npy_error(npy_file(npy_dict("(288230376151711744,)"), f32x2),
                    "is truncated: its shape \"(288230376151711744,)\" of float32 needs "
                    "1152921504606846976 bytes of data, found 8");
  }
  SUBCASE("a header length promising 4 GB") {
    check_npy_error(npy_file("", "", 2).substr(0, 8) + std::string(4, '\xff') + "{}",
                    "is truncated: its header length is 4294967295 bytes but only 2 bytes follow");
  }
  SUBCASE("trailing bytes after the data") {
    check_npy_error(npy_file(npy_dict("(2,)"), f32x2 + "xyz"),
                    "has 3 trailing bytes: its shape \"(2,)\" of float32 needs 8 bytes of data, "
                    "found 11");
  }
  SUBCASE("every truncation of a valid file") {
    const auto whole = npy_file(npy_dict("(2,)"), f32x2);
    for (std::size_t n = 0; n < whole.size(); ++n) {
      CAPTURE(n);
      check_npy_error(whole.substr(0, n), n < 6 ? "bad magic" : "is truncated");
    }
  }
  SUBCASE("an unknown format version") {
    check_npy_error(npy_file(npy_dict("(2,)"), f32x2, 9),
                    "has format version 9.0; expected 1.0, 2.0 or 3.0");
  }
  SUBCASE("headers that are not the dict NumPy writes") {
    check_npy_error(npy_file("{'descr': '<f4', 'shape': (2,), }\n", f32x2),
                    "header has no 'fortran_order' key");
    check_npy_error(npy_file("{'descr': '<f4', 'descr': '<f4', }\n", f32x2),
                    "header has key 'descr' twice");
    check_npy_error(
        npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f32x2),
        "header has key \"x\"; expected only 'descr', 'fortran_order' and 'shape'");
    check_npy_error(npy_file("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", f32x2),
                    "expected True or False, found \"Maybe");
    check_npy_error(npy_file("{'descr': '<f4", f32x2), "expected a closing '");
    check_npy_error(npy_file(npy_dict("(2,)") + "junk", f32x2),
                    "expected the end of the header, found \"junk\"");
    check_npy_error(npy_file(npy_dict("(2 3)"), f32x2), "expected ',', found \"3)");
  }
  SUBCASE("unsupported dtype and order") {
    check_npy_error(
        npy_file(npy_dict("(1,)", ">f8"), f32x2),
        "has dtype \">f8\"; expected one of <f4, <f2, <i4, <u4, |u1, |b1, |i1, <i2, "
        "<u2, <i8, <u8, <f8, [('float8_143', '|u1')], [('float8_152', '|u1')] (little-endian)");
    check_npy_error(npy_file(npy_dict("(1,)", "<c8"), f32x2), "has dtype \"<c8\"");
    check_npy_error(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", f32x2),
                    "is in Fortran order");
  }
  SUBCASE("bool bytes other than 0 and 1") {
    check_npy_error(npy_file(npy_dict("(3,)", "|b1"), std::string("\x01\x00\x07", 3)),
                    "has bool byte 7 at element 2; expected 0 or 1");
  }
  SUBCASE("more data than ReadOptions::max_bytes") {
    check_npy_error(npy_file(npy_dict("(2,)"), f32x2),
                    "is too large: its shape \"(2,)\" of float32 needs 8 bytes of data, more "
                    "than ReadOptions::max_bytes (4)",
                    {.max_bytes = 4});
  }
  SUBCASE("a directory") {
    CHECK_THROWS_WITH_AS(HostTensor::load_npy(std::filesystem::temp_directory_path()),
                         doctest::Contains("cannot be read"), IoError);
  }
}

TEST_CASE(".npy files NumPy may write that pxl's writer does not: Python 2 longs, format 2.0") {
  const auto path = temp_path("variants.npy");
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40", 8); // 1.0f, 2.0f
  std::ofstream(path, std::ios::binary) << npy_file(npy_dict("(1L, 2L)"), data);
  CHECK(HostTensor::load_npy(path) == HostTensor({1.f, 2.f}, {1, 2}));
  std::ofstream(path, std::ios::binary) << npy_file(npy_dict("(2,)"), data, 2);
  CHECK(HostTensor::load_npy(path) == HostTensor({1.f, 2.f}, {2}));
  // A header over 64 KiB does not fit format 1.0's length: save_npy writes 2.0.
  const HostTensor deep(Shape(30000, 1), uint8);
  deep.save_npy(path);
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  CHECK(bytes[6] == 2);
  CHECK((bytes.size() - 1) % 64 == 0); // 12-byte preamble + header, then one data byte
  CHECK(HostTensor::load_npy(path) == deep);
  std::filesystem::remove(path);
}
