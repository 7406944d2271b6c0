#include "pxl/core/host_tensor.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

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

TEST_CASE("printing is NumPy-like and summarises long tensors") {
  HostTensor a({1.f, 2.f, 3.f, 4.f}, {2, 2});
  CHECK(a.to_string() == "HostTensor([[1, 2],\n            [3, 4]], shape=(2, 2), dtype=float32)");
  CHECK(HostTensor({true, false}, {2}).to_string() ==
        "HostTensor([true, false], shape=(2,), dtype=bool)");
  const auto big = HostTensor::full({2000}, int32, 1).to_string();
  CHECK(big.find("...") != std::string::npos);
  CHECK(big.size() < 100);
}

TEST_CASE(".npy round trip for every dtype") {
  const auto path = temp_path("roundtrip.npy");
  for (DType d : {float32, float16, int32, uint32, uint8, bool_}) {
    const HostTensor t = HostTensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f}, {2, 3}).astype(d);
    t.save_npy(path);
    CHECK(HostTensor::load_npy(path) == t);
  }
  const HostTensor scalar = HostTensor::scalar(3.25f);
  scalar.save_npy(path);
  CHECK(HostTensor::load_npy(path) == scalar);
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
