// The batching pipeline: deterministic shuffles, whole epochs, normalisation, reuse, errors.
#include "pxl/addons/data/batches.hpp"

#include "pxl/addons/data/shuffle.hpp"

#include <doctest/doctest.h>

#include <range/v3/view/take.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

using pxl::HostTensor;
using pxl::Shape;
using pxl::addons::data::Batch;
using pxl::addons::data::batches;
using pxl::addons::data::BatchOptions;
using pxl::addons::data::Dataset;
using pxl::addons::data::num_batches;
using pxl::addons::data::shuffled_indices;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_batches {

/// n examples of 2×2 pixels; example i has pixels 4i … 4i+3 (mod 256) and label i (mod 256).
Dataset synthetic(std::int64_t n) {
  Dataset d{HostTensor(Shape{n, 2, 2}, pxl::uint8), HostTensor(Shape{n}, pxl::uint8)};
  auto px = d.images.data<std::uint8_t>();
  for (std::size_t i = 0; i < px.size(); ++i)
    px[i] = static_cast<std::uint8_t>(i);
  auto lb = d.labels.data<std::uint8_t>();
  for (std::size_t i = 0; i < lb.size(); ++i)
    lb[i] = static_cast<std::uint8_t>(i);
  return d;
}

bool is_permutation_of_iota(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != static_cast<std::int64_t>(i))
      return false;
  return true;
}

double normalised(int p, double mean, double std) { return (p / 255.0 - mean) / std; }

/// The defaults, as the pipeline sees them (float constants widened to double).
const double mean = pxl::addons::data::fashion_mnist_mean;
const double std_ = pxl::addons::data::fashion_mnist_std;

TEST_CASE("shuffled_indices is a permutation fixed by seed and epoch") {
  // The engine is the standard's mt19937_64: its 10,000th output is fixed by [rand.predef].
  std::mt19937_64 engine;
  engine.discard(9999);
  CHECK(engine() == 9981545732273789042ull);

  const auto a = shuffled_indices(1000, 42);
  CHECK(a.size() == 1000);
  CHECK(is_permutation_of_iota(a));
  CHECK(a == shuffled_indices(1000, 42));
  CHECK(a == shuffled_indices(1000, 42, 0));
  CHECK(a != shuffled_indices(1000, 43));
  CHECK(a != shuffled_indices(1000, 42, 1));
  CHECK(shuffled_indices(1000, 42, 1) == shuffled_indices(1000, 42, 1));
  CHECK(!std::is_sorted(a.begin(), a.end()));
  // Pinned: the same on every compiler and standard library, so runs reproduce anywhere
  // (checked against an independent implementation of mt19937_64 and this shuffle).
  CHECK(shuffled_indices(10, 42) == std::vector<std::int64_t>{5, 4, 8, 9, 1, 7, 2, 3, 0, 6});
  CHECK(shuffled_indices(10, 42, 1) == std::vector<std::int64_t>{8, 0, 7, 6, 2, 3, 5, 1, 4, 9});
  CHECK(shuffled_indices(0, 1).empty());
  CHECK(shuffled_indices(1, 1) == std::vector<std::int64_t>{0});
  CHECK_THROWS_WITH_AS(shuffled_indices(-1, 1), "shuffled_indices: n must be at least 0, found -1",
                       pxl::ValueError);
}

TEST_CASE("shuffled_indices is uniform enough: each example lands in each slot") {
  // 3 examples have 6 orders; over 6,000 seeds each should appear about 1,000 times.
  std::vector<int> counts(9, 0);
  for (std::uint64_t seed = 0; seed < 6000; ++seed) {
    const auto p = shuffled_indices(3, seed);
    counts[static_cast<std::size_t>(p[0] * 3 + p[1])]++;
  }
  for (int c : counts)
    CHECK((c == 0 || (c > 850 && c < 1150)));
  CHECK(std::count(counts.begin(), counts.end(), 0) == 3); // p[0] == p[1] never happens
}

TEST_CASE("num_batches drops or keeps the remainder") {
  const auto d = synthetic(10);
  CHECK(num_batches(d, {.batch_size = 3}) == 3);
  CHECK(num_batches(d, {.batch_size = 3, .drop_remainder = false}) == 4);
  CHECK(num_batches(d, {.batch_size = 5}) == 2);
  CHECK(num_batches(d, {.batch_size = 5, .drop_remainder = false}) == 2);
  CHECK(num_batches(d, {.batch_size = 11}) == 0);
  CHECK(num_batches(d, {.batch_size = 11, .drop_remainder = false}) == 1);
  CHECK(batches(d, {.batch_size = 3}).size() == 3);
  CHECK_THROWS_WITH_AS(num_batches(d, {.batch_size = 0}),
                       "batches: batch_size must be at least 1, found 0", pxl::ValueError);
}

TEST_CASE("an epoch visits every example once in the shuffled order") {
  const auto d = synthetic(10);
  const BatchOptions options{.batch_size = 3, .seed = 7, .drop_remainder = false};
  const auto order = shuffled_indices(10, 7);
  std::vector<std::int64_t> seen;
  std::vector<std::int64_t> sizes;
  for (auto& b : batches(d, options)) {
    sizes.push_back(b.labels.shape()[0]);
    CHECK(b.images.shape() == Shape{b.labels.shape()[0], 2, 2});
    CHECK(b.images.dtype() == pxl::float32);
    CHECK(b.labels.dtype() == pxl::int32);
    for (std::int64_t r = 0; r < b.labels.shape()[0]; ++r) {
      const std::int32_t label = b.labels.at<std::int32_t>({r});
      seen.push_back(label);
      // The image travels with its label.
      for (std::int64_t k = 0; k < 4; ++k)
        CHECK(b.images.data<float>()[static_cast<std::size_t>(r * 4 + k)] ==
              static_cast<float>(normalised(static_cast<int>(label * 4 + k), mean, std_)));
    }
  }
  CHECK(sizes == std::vector<std::int64_t>{3, 3, 3, 1});
  CHECK(seen == order);
  CHECK(is_permutation_of_iota(seen));

  // Dropping the remainder leaves out exactly the tail of the order.
  seen.clear();
  for (auto& b : batches(d, {.batch_size = 3, .seed = 7}))
    for (auto v : b.labels.data<std::int32_t>())
      seen.push_back(v);
  CHECK(seen == std::vector<std::int64_t>(order.begin(), order.begin() + 9));
}

TEST_CASE("batches are deterministic per seed and epoch, and unshuffled on request") {
  const auto d = synthetic(64);
  const auto labels_of = [&](BatchOptions o) {
    std::vector<std::int32_t> v;
    for (auto& b : batches(d, o))
      for (auto x : b.labels.data<std::int32_t>())
        v.push_back(x);
    return v;
  };
  CHECK(labels_of({.batch_size = 8, .seed = 42}) == labels_of({.batch_size = 8, .seed = 42}));
  CHECK(labels_of({.batch_size = 8, .seed = 42}) != labels_of({.batch_size = 8, .seed = 1}));
  CHECK(labels_of({.batch_size = 8, .seed = 42, .epoch = 0}) !=
        labels_of({.batch_size = 8, .seed = 42, .epoch = 1}));
  const auto plain = labels_of({.batch_size = 8, .shuffle = false});
  CHECK(plain.size() == 64);
  for (std::size_t i = 0; i < plain.size(); ++i)
    CHECK(plain[i] == static_cast<std::int32_t>(i));
}

TEST_CASE("normalisation is (p / 255 - mean) / std rounded to float32") {
  // 128 examples of 4 pixels: every pixel value 0..255, twice.
  Dataset d = synthetic(128);
  const auto check_all = [&](float m, float s) {
    BatchOptions o{.batch_size = 128, .shuffle = false, .mean = m, .std = s};
    for (auto& b : batches(d, o)) {
      const auto x = b.images.data<float>();
      for (int p = 0; p < 256; ++p)
        CHECK(x[static_cast<std::size_t>(p)] == static_cast<float>(normalised(p, m, s)));
    }
  };
  check_all(pxl::addons::data::fashion_mnist_mean, pxl::addons::data::fashion_mnist_std);
  check_all(0.0f, 1.0f);
  check_all(0.5f, 0.25f);
  // The extremes, by hand: -0.2860/0.3530 and (1-0.2860)/0.3530.
  for (auto& b : batches(d, {.batch_size = 128, .shuffle = false})) {
    CHECK(b.images.data<float>()[0] == doctest::Approx(-0.810198).epsilon(1e-6));
    CHECK(b.images.data<float>()[255] == doctest::Approx(2.022663).epsilon(1e-6));
    CHECK(b.images.data<float>()[256] == doctest::Approx(-0.810198).epsilon(1e-6));
  }
}

TEST_CASE("flattened batches are [b, features]") {
  const auto d = synthetic(6);
  int n = 0;
  for (auto& b : batches(d, {.batch_size = 2, .flatten = true})) {
    CHECK(b.images.shape() == Shape{2, 4});
    CHECK(b.labels.shape() == Shape{2});
    ++n;
  }
  CHECK(n == 3);
}

TEST_CASE("iterating reuses one buffer and composes with range-v3 views") {
  const auto d = synthetic(40);
  const std::byte* first = nullptr;
  int n = 0;
  for (auto& b : batches(d, {.batch_size = 4, .seed = 3})) {
    if (!first)
      first = b.images.bytes().data();
    CHECK(b.images.bytes().data() == first);
    ++n;
  }
  CHECK(n == 10);

  n = 0;
  std::vector<Batch> kept;
  for (auto& b : batches(d, {.batch_size = 4, .seed = 3}) | ranges::views::take(3)) {
    kept.push_back(b); // a copy outlives the step
    ++n;
  }
  CHECK(n == 3);
  CHECK(kept[0].labels != kept[1].labels);
  CHECK(kept[0].labels.at<std::int32_t>({0}) == shuffled_indices(40, 3)[0]);
}

TEST_CASE("batches over the real training set follow the shuffled order") {
  const auto train = pxl::addons::data::load_fashion_mnist();
  auto view = batches(train, {.batch_size = 8, .seed = 42});
  CHECK(view.size() == 7500);
  const auto order = shuffled_indices(60000, 42);
  const auto labels = train.labels.data<std::uint8_t>();
  for (auto& b : view | ranges::views::take(1)) {
    CHECK(b.images.shape() == Shape{8, 28, 28});
    for (std::int64_t r = 0; r < 8; ++r) {
      const auto ex = static_cast<std::size_t>(order[static_cast<std::size_t>(r)]);
      CHECK(b.labels.at<std::int32_t>({r}) == labels[ex]);
      CHECK(b.images.at<float>({r, 14, 12}) ==
            static_cast<float>(normalised(
                train.images.data<std::uint8_t>()[ex * 784 + 14 * 28 + 12], mean, std_)));
    }
  }
  std::int64_t count = 0;
  for (auto& b : batches(train, {.batch_size = 128, .seed = 1, .flatten = true})) {
    CHECK(b.images.shape()[1] == 784);
    ++count;
  }
  CHECK(count == 468);
}

TEST_CASE("batches rejects data and options it cannot batch") {
  const auto d = synthetic(4);
  CHECK_THROWS_WITH_AS(batches(d, {.batch_size = -2}),
                       "batches: batch_size must be at least 1, found -2", pxl::ValueError);
  CHECK_THROWS_WITH_AS(batches(d, {.std = 0.0f}), "batches: std must be positive, found 0.000000",
                       pxl::ValueError);
  Dataset floats{d.images.astype(pxl::float32), d.labels};
  CHECK_THROWS_WITH_AS(batches(floats),
                       "batches: expected uint8 images and labels, found images [(4, 2, 2) "
                       "float32] and labels [(4,) uint8]",
                       pxl::DTypeError);
  Dataset short_labels{d.images, HostTensor(Shape{3}, pxl::uint8)};
  CHECK_THROWS_WITH_AS(
      batches(short_labels),
      "batches: expected images [N, ...] and labels [N], found images (4, 2, 2) and labels (3,)",
      pxl::ShapeError);
  Dataset scalar_images{HostTensor(Shape{}, pxl::uint8), HostTensor(Shape{1}, pxl::uint8)};
  CHECK_THROWS_AS(batches(scalar_images), pxl::ShapeError);
}

} // namespace test_batches
