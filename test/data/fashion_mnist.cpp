// load_fashion_mnist on the installed data set, and its errors on crafted directories.
#include "pxl/addons/data/fashion_mnist.hpp"

#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using pxl::IoError;
using pxl::Shape;
using pxl::addons::data::fashion_mnist_default_dir;
using pxl::addons::data::load_fashion_mnist;
using pxl::addons::data::Split;
using pxl::test::TempDir;

namespace {

std::string idx_file(unsigned char type, std::vector<std::uint32_t> dims, char fill = '\0') {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  std::size_t n = 1;
  for (auto d : dims) {
    n *= d;
    for (int shift = 24; shift >= 0; shift -= 8)
      s += static_cast<char>((d >> shift) & 0xff);
  }
  return s + std::string(n * (type == 0x08 ? 1 : 4), fill);
}

/// A crafted split under `dir`: the reader tells raw from gzip by content, so `.gz` names
/// holding raw IDX data are fine.
void write_split(const TempDir& dir, const std::string& images, const std::string& labels) {
  dir.write("t10k-images-idx3-ubyte.gz", images);
  dir.write("t10k-labels-idx1-ubyte.gz", labels);
}

std::string message_of(const TempDir& dir) {
  try {
    (void)load_fashion_mnist(dir.path(), Split::test);
  } catch (const IoError& e) {
    return e.what();
  }
  return "no IoError";
}

} // namespace

TEST_CASE("load_fashion_mnist reads both splits of the installed data set") {
  const auto train = load_fashion_mnist();
  CHECK(train.images.shape() == Shape{60000, 28, 28});
  CHECK(train.labels.shape() == Shape{60000});
  CHECK(train.size() == 60000);
  CHECK(train.labels.data<std::uint8_t>()[0] == 9); // an ankle boot
  const auto px = train.images.data<std::uint8_t>();
  CHECK(std::accumulate(px.begin(), px.end(), std::uint64_t{0}) == 3431114169u);
  CHECK(std::accumulate(px.begin(), px.begin() + 784, std::uint64_t{0}) == 76247u);
  CHECK(train.images.at<std::uint8_t>({0, 14, 12}) == 0xed);

  // The named constants are the training pixels' statistics, to their four digits.
  const double n = static_cast<double>(px.size());
  double sum = 0, sum_sq = 0;
  for (std::uint8_t p : px) {
    sum += p / 255.0;
    sum_sq += (p / 255.0) * (p / 255.0);
  }
  const double mean = sum / n;
  CHECK(mean == doctest::Approx(pxl::addons::data::fashion_mnist_mean).epsilon(1e-4));
  CHECK(std::sqrt(sum_sq / n - mean * mean) ==
        doctest::Approx(pxl::addons::data::fashion_mnist_std).epsilon(1e-4));

  const auto test = load_fashion_mnist(fashion_mnist_default_dir, Split::test);
  CHECK(test.images.shape() == Shape{10000, 28, 28});
  CHECK(test.labels.shape() == Shape{10000});
  CHECK(test.labels.data<std::uint8_t>()[1] == 2);
  const auto tpx = test.images.data<std::uint8_t>();
  CHECK(std::accumulate(tpx.begin(), tpx.end(), std::uint64_t{0}) == 573469082u);
}

TEST_CASE("load_fashion_mnist's limit keeps the first examples") {
  const auto all = load_fashion_mnist(fashion_mnist_default_dir, Split::test);
  const auto few = load_fashion_mnist(fashion_mnist_default_dir, Split::test, 100);
  CHECK(few.images.shape() == Shape{100, 28, 28});
  CHECK(few.labels.shape() == Shape{100});
  CHECK(
      std::equal(few.images.bytes().begin(), few.images.bytes().end(), all.images.bytes().begin()));
  CHECK(
      std::equal(few.labels.bytes().begin(), few.labels.bytes().end(), all.labels.bytes().begin()));
  CHECK(load_fashion_mnist(fashion_mnist_default_dir, Split::test, 0).size() == 0);
  CHECK(load_fashion_mnist(fashion_mnist_default_dir, Split::test, 123456).size() == 10000);
  CHECK_THROWS_WITH_AS(load_fashion_mnist(fashion_mnist_default_dir, Split::test, -1),
                       "load_fashion_mnist: limit must be at least 0, found -1", pxl::ValueError);
}

TEST_CASE("load_fashion_mnist explains missing directories and files") {
  TempDir dir;
  const auto missing = dir / "no-such-dir";
  CHECK_THROWS_WITH_AS(
      load_fashion_mnist(missing),
      doctest::Contains(("directory '" + missing.string() + "' does not exist").c_str()), IoError);
  CHECK_THROWS_WITH_AS(load_fashion_mnist(missing), doctest::Contains("dataset-fashion-mnist"),
                       IoError);
  dir.write("t10k-images-idx3-ubyte.gz", idx_file(0x08, {1, 28, 28}));
  const auto labels = dir / "t10k-labels-idx1-ubyte.gz";
  const std::string msg = message_of(dir);
  CHECK(msg.find("file '" + labels.string() + "' does not exist") != std::string::npos);
  CHECK(msg.find("dataset-fashion-mnist") != std::string::npos);
}

TEST_CASE("load_fashion_mnist rejects files that are not a Fashion-MNIST split") {
  TempDir dir;
  SUBCASE("a crafted, well-formed split loads") {
    write_split(dir, idx_file(0x08, {2, 28, 28}, '\x07'), idx_file(0x08, {2}, '\x03'));
    const auto d = load_fashion_mnist(dir.path(), Split::test);
    CHECK(d.images.shape() == Shape{2, 28, 28});
    CHECK(d.images.data<std::uint8_t>()[1567] == 7);
    CHECK(d.labels.data<std::uint8_t>()[1] == 3);
  }
  SUBCASE("image and label counts differ") {
    write_split(dir, idx_file(0x08, {3, 28, 28}), idx_file(0x08, {2}));
    CHECK(message_of(dir).find("3 images in 't10k-images-idx3-ubyte.gz' but 2 labels in "
                               "'t10k-labels-idx1-ubyte.gz'; expected equal counts") !=
          std::string::npos);
  }
  SUBCASE("images of the wrong size") {
    write_split(dir, idx_file(0x08, {3, 28, 27}), idx_file(0x08, {3}));
    CHECK(message_of(dir).find("expected uint8 [N, 28, 28], found [(3, 28, 27) uint8]") !=
          std::string::npos);
  }
  SUBCASE("images of the wrong rank") {
    write_split(dir, idx_file(0x08, {3, 784}), idx_file(0x08, {3}));
    CHECK(message_of(dir).find("expected uint8 [N, 28, 28], found [(3, 784) uint8]") !=
          std::string::npos);
  }
  SUBCASE("labels of the wrong type") {
    write_split(dir, idx_file(0x08, {3, 28, 28}), idx_file(0x0C, {3}));
    CHECK(message_of(dir).find("expected uint8 [N], found [(3,) int32]") != std::string::npos);
  }
  SUBCASE("a label that is not a class index") {
    write_split(dir, idx_file(0x08, {3, 28, 28}), idx_file(0x08, {3}, '\x0a'));
    CHECK(message_of(dir).find("label 10 at index 0 is not a class index 0-9") !=
          std::string::npos);
  }
  SUBCASE("a truncated file names itself") {
    write_split(dir, idx_file(0x08, {3, 28, 28}).substr(0, 100), idx_file(0x08, {3}));
    const auto msg = message_of(dir);
    CHECK(msg.find("t10k-images-idx3-ubyte.gz' is truncated") != std::string::npos);
  }
}
