// TensorDataset: order without a shuffle, a deterministic shuffle that differs per epoch,
// batch shapes with and without the remainder, repeat counts, element specs, immutability,
// dataset_benchmark's report, and errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

using namespace pxl;
using addons::data::LabelledBatch;
using addons::data::LabelledBatchSpec;
using addons::data::TensorDataset;
using Ids = std::vector<std::int64_t>;

namespace {

/// `n` examples: example i has features [2, 3] float32 all equal to i and label i (int32), so
/// a batch's labels say which examples it holds.
TensorDataset numbered(std::int64_t n) {
  HostTensor features({n, 2, 3}, float32);
  HostTensor labels({n}, int32);
  for (std::int64_t i = 0; i < n; ++i) {
    std::fill_n(features.data<float>().begin() + i * 6, 6, static_cast<float>(i));
    labels.data<std::int32_t>()[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  }
  return TensorDataset::from_tensor_slices(features, labels);
}

/// The example ids of every element of `view`, one list per element; CHECKs that each
/// element's features match its labels.
template <typename View>
std::vector<Ids> ids_of(View&& view) {
  std::vector<Ids> out;
  for (const LabelledBatch& b : view) {
    Ids ids;
    const auto labels = b.labels.data<std::int32_t>();
    const auto features = b.features.data<float>();
    for (std::size_t r = 0; r < labels.size(); ++r) {
      ids.push_back(labels[r]);
      CHECK(std::all_of(features.begin() + static_cast<std::ptrdiff_t>(r * 6),
                        features.begin() + static_cast<std::ptrdiff_t>(r * 6 + 6),
                        [&](float f) { return f == static_cast<float>(labels[r]); }));
    }
    out.push_back(ids);
  }
  return out;
}

Ids flat(const std::vector<Ids>& batches) {
  Ids all;
  for (const auto& b : batches)
    all.insert(all.end(), b.begin(), b.end());
  return all;
}

Ids iota(std::int64_t n) {
  Ids v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), std::int64_t{0});
  return v;
}

} // namespace

TEST_CASE("TensorDataset: examples in order without a shuffle, batched with or without the "
          "remainder") {
  const auto data = numbered(10);
  CHECK(data.size() == 10);

  const auto dropping = data.batch(4);
  CHECK(dropping.batches_per_epoch() == 2);
  CHECK(ids_of(dropping.epoch(0)) == std::vector<Ids>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(dropping.element_spec() == LabelledBatchSpec{{{4, 2, 3}, float32}, {{4}, int32}});

  const auto keeping = data.batch(4, /*drop_remainder=*/false);
  CHECK(keeping.batches_per_epoch() == 3);
  CHECK(ids_of(keeping.epoch(0)) == std::vector<Ids>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
  std::vector<Shape> shapes;
  for (const LabelledBatch& b : keeping.epoch(0))
    shapes.push_back(b.features.shape());
  CHECK(shapes == std::vector<Shape>{{4, 2, 3}, {4, 2, 3}, {2, 2, 3}});

  // Not batched: single examples, without the example axis.
  CHECK(data.batches_per_epoch() == 10);
  CHECK(data.element_spec() == LabelledBatchSpec{{{2, 3}, float32}, {{}, int32}});
  std::int64_t i = 0;
  for (const LabelledBatch& e : data.epoch(3)) {
    CHECK(e.features.spec() == TensorSpec{{2, 3}, float32});
    CHECK(e.labels == HostTensor::scalar(static_cast<std::int32_t>(i++)));
  }
  CHECK(i == 10);

  // A batch larger than the data: nothing when dropping the remainder, everything otherwise.
  CHECK(data.batch(11).batches_per_epoch() == 0);
  CHECK(ids_of(data.batch(11).epoch(0)).empty());
  CHECK(ids_of(data.batch(11, false).epoch(0)) == std::vector<Ids>{iota(10)});
}

TEST_CASE("TensorDataset: the shuffle is a permutation, deterministic, new every epoch") {
  const auto data = numbered(50).shuffle(50, 42).batch(5);
  const Ids epoch0 = flat(ids_of(data.epoch(0)));
  Ids sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == iota(50));
  CHECK(epoch0 != iota(50));
  // As the shared shuffle defines it.
  CHECK(epoch0 == addons::data::shuffled_indices(50, 42, 0));
  CHECK(flat(ids_of(data.epoch(1))) == addons::data::shuffled_indices(50, 42, 1));
  CHECK(flat(ids_of(data.epoch(1))) != epoch0);
  // The same seed and epoch again, from another copy: the same batches.
  CHECK(ids_of(numbered(50).batch(5).shuffle(50, 42).epoch(0)) == ids_of(data.epoch(0)));
  CHECK(flat(ids_of(numbered(50).shuffle(50, 43).batch(5).epoch(0))) != epoch0);
}

TEST_CASE("TensorDataset::shuffle(buffer_size, seed) has tf.data's meaning") {
  // A buffer of 10 over 100 examples: example k enters the buffer after k - 10 have left, so
  // output i is below i + 10; yet the order is not the examples'.
  const Ids local = flat(ids_of(numbered(100).shuffle(10, 5).epoch(0)));
  Ids sorted = local;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == iota(100));
  CHECK(local != iota(100));
  for (std::size_t i = 0; i < local.size(); ++i) {
    CAPTURE(i);
    CHECK(local[i] < static_cast<std::int64_t>(i) + 10);
  }
  CHECK(local == addons::data::buffered_shuffled_indices(100, 10, 5, 0));
  // Each draw is uniform over the buffer: the first example out is any of the first 10 with
  // probability 1/10 (2000 seeds: 200 each, standard deviation 13.4).
  std::vector<int> first(10, 0);
  for (std::uint64_t seed = 0; seed < 2000; ++seed) {
    const auto order = addons::data::buffered_shuffled_indices(100, 10, seed);
    REQUIRE(order[0] < 10);
    ++first[static_cast<std::size_t>(order[0])];
  }
  for (int count : first)
    CHECK(std::abs(count - 200) < 60);
  // A buffer of 1 keeps the order; one of at least the data set's size is a full shuffle.
  CHECK(flat(ids_of(numbered(30).shuffle(1, 5).epoch(3))) == iota(30));
  CHECK(addons::data::buffered_shuffled_indices(100, 100, 5, 2) ==
        addons::data::shuffled_indices(100, 5, 2));
  CHECK(flat(ids_of(numbered(100).shuffle(1000, 5).epoch(2))) ==
        flat(ids_of(numbered(100).shuffle(100, 5).epoch(2))));
  // Reshuffled each pass by default; reshuffle_each_iteration = false repeats pass 0's order.
  const auto fixed = numbered(100).shuffle(10, 5, false);
  CHECK_FALSE(fixed.settings().reshuffle_each_iteration);
  CHECK(flat(ids_of(fixed.epoch(3))) == local);
  CHECK(flat(ids_of(numbered(100).shuffle(10, 5).epoch(3))) != local);
  // One argument is the buffer size, as in tf.data (it used to be the seed): no seed draws one,
  // kept by the data set value, so its passes are reproducible and another call differs.
  const auto unseeded = numbered(50).shuffle(50);
  CHECK(unseeded.settings().shuffle_buffer_size == 50);
  REQUIRE(unseeded.settings().shuffle_seed.has_value());
  CHECK(flat(ids_of(unseeded.epoch(1))) == flat(ids_of(unseeded.epoch(1))));
  CHECK(flat(ids_of(unseeded.epoch(0))) ==
        flat(ids_of(numbered(50).shuffle(50, *unseeded.settings().shuffle_seed).epoch(0))));
  CHECK(flat(ids_of(unseeded.epoch(0))) != flat(ids_of(numbered(50).shuffle(50).epoch(0))));
  CHECK_THROWS_WITH_AS(numbered(50).shuffle(0),
                       "TensorDataset::shuffle: the buffer size must be at least 1, found 0; "
                       "pass size() (50) for a full shuffle",
                       ValueError);
  CHECK_THROWS_AS(addons::data::buffered_shuffled_indices(5, 0, 1), ValueError);
}

TEST_CASE("TensorDataset: repeat makes passes of their own epochs; cardinality") {
  const auto data = numbered(6).shuffle(6, 7).batch(2);
  CHECK(data.settings().repeat_count == 1);
  CHECK(data.cardinality() == 3);
  CHECK(ids_of(data.elements()) == ids_of(data.epoch(0)));

  const auto thrice = data.repeat(3);
  CHECK(thrice.cardinality() == 9);
  std::vector<Ids> expected;
  for (std::uint64_t e = 0; e < 3; ++e)
    for (const auto& b : ids_of(data.epoch(e)))
      expected.push_back(b);
  CHECK(ids_of(thrice.elements()) == expected);
  CHECK(ids_of(data.repeat(0).elements()).empty());
  CHECK(data.repeat(0).cardinality() == 0);

  // Forever: take as many as wanted; epoch 4 comes after 4 full passes.
  const auto forever = data.repeat();
  CHECK(forever.settings().repeat_count == -1);
  CHECK(forever.cardinality() == -1);
  std::vector<Ids> first;
  for (const LabelledBatch& b : forever.elements()) {
    first.push_back(
        Ids(b.labels.data<std::int32_t>().begin(), b.labels.data<std::int32_t>().end()));
    if (first.size() == 15)
      break;
  }
  CHECK(std::vector<Ids>(first.begin() + 12, first.end()) == ids_of(data.epoch(4)));
  // An empty pass repeated forever ends at once.
  CHECK(numbered(1).batch(2).repeat().cardinality() == 0);
  CHECK(ids_of(numbered(1).batch(2).repeat().elements()).empty());
}

TEST_CASE("TensorDataset: immutable values, any dtypes, views that outlive the data set") {
  const auto base = numbered(8);
  const auto batched = base.batch(3, false).shuffle(8, 1).repeat(2).prefetch(4);
  CHECK(base.settings().batch_size == std::nullopt);
  CHECK(base.settings().shuffle_seed == std::nullopt);
  CHECK(base.settings().prefetch_depth == 0);
  CHECK(batched.settings().batch_size == 3);
  CHECK_FALSE(batched.settings().drop_remainder);
  CHECK(batched.settings().shuffle_seed == 1u);
  CHECK(batched.settings().shuffle_buffer_size == 8);
  CHECK(batched.settings().repeat_count == 2);
  CHECK(batched.settings().prefetch_depth == 4);

  // uint8 features [N, 4], float32 labels [N, 2]: copied as they are.
  HostTensor pixels({3, 4}, uint8);
  for (std::size_t i = 0; i < 12; ++i)
    pixels.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i * 20);
  const HostTensor targets({0.f, 0.5f, 1.f, 1.5f, 2.f, 2.5f}, {3, 2});
  auto view = TensorDataset::from_tensor_slices(pixels, targets).batch(2).epoch(0);
  // The view keeps the examples alive after its data set is gone.
  std::vector<LabelledBatch> copies;
  for (const LabelledBatch& b : view)
    copies.push_back(b);
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].features ==
        HostTensor(std::vector<std::uint8_t>{0, 20, 40, 60, 80, 100, 120, 140}, {2, 4}));
  CHECK(copies[0].labels == HostTensor({0.f, 0.5f, 1.f, 1.5f}, {2, 2}));
}

TEST_CASE("TensorDataset errors name the call and what was expected") {
  const HostTensor features({4, 2}, float32);
  CHECK_THROWS_WITH_AS(TensorDataset::from_tensor_slices(features, HostTensor({3}, int32)),
                       "TensorDataset::from_tensor_slices: expected features [N, ...] and labels "
                       "[N, ...] with the examples along their first axis, found features "
                       "[(4, 2) float32] and labels [(3,) int32]",
                       ShapeError);
  CHECK_THROWS_AS(
      TensorDataset::from_tensor_slices(HostTensor::scalar(1.f), HostTensor({1}, int32)),
      ShapeError);
  const auto data = TensorDataset::from_tensor_slices(features, HostTensor({4}, int32));
  CHECK_THROWS_WITH_AS(data.batch(0),
                       "TensorDataset::batch: the batch size must be at least 1, found 0",
                       ValueError);
  CHECK_THROWS_WITH_AS(data.repeat(-2),
                       "TensorDataset::repeat: the count must be -1 (forever) or at least 0, "
                       "found -2",
                       ValueError);
  CHECK_THROWS_WITH_AS(data.prefetch(-1),
                       "TensorDataset::prefetch: the depth must be at least 0, found -1",
                       ValueError);
  CHECK_THROWS_WITH_AS(addons::data::dataset_benchmark(data, 0),
                       doctest::Contains("dataset_benchmark: the number of elements to read must "
                                         "be at least 1, found 0"),
                       ValueError);
}

TEST_CASE("dataset_benchmark: counts, rates and their JSON") {
  const auto data = numbered(100).shuffle(100, 3).batch(8).repeat();
  const auto r = addons::data::dataset_benchmark(data, 30);
  CHECK(r.elements == 30);
  CHECK(r.examples == 240);
  CHECK(r.bytes == 30 * 8 * (6 * 4 + 4));
  CHECK(r.seconds > 0);
  CHECK(r.elements_per_second() > 0);
  const auto j = nlohmann::json::parse(r.json());
  for (const char* key : {"elements", "examples", "bytes", "seconds", "elements_per_second",
                          "examples_per_second", "bytes_per_second"}) {
    CAPTURE(key);
    REQUIRE(j.contains(key));
    CHECK(j.at(key).get<double>() > 0);
  }
  CHECK(j.at("elements").get<std::int64_t>() == 30);
  CHECK(j.at("bytes_per_second").get<double>() ==
        doctest::Approx(static_cast<double>(r.bytes) / r.seconds));

  // A finite data set ends the reading early.
  const auto finite = addons::data::dataset_benchmark(numbered(10).batch(4), 100);
  CHECK(finite.elements == 2);
  CHECK(finite.examples == 8);
}

TEST_CASE("BatchFanOut: one side far ahead of the other (a pipeline's first stage loads the "
          "features, its last the labels) keeps every part, in order") {
  using addons::data::BatchFanOut;
  const std::int64_t batches = 40, depth = 1, replicas = 2;
  std::vector<HostTensor> features, labels;
  for (std::int64_t b = 0; b < batches; ++b) {
    features.push_back(HostTensor::full({replicas, 3}, float32, static_cast<double>(b)));
    labels.push_back(HostTensor::full({replicas}, int32, static_cast<double>(b)));
  }
  std::int64_t next = 0;
  BatchFanOut fan_out(
      [&] {
        if (next == batches) // the pipeline has ended
          return addons::data::BatchHalves{};
        const auto b = static_cast<std::size_t>(next++);
        return addons::data::BatchHalves{&features[b], &labels[b]};
      },
      TensorSpec{{replicas, 3}, float32}, TensorSpec{{replicas}, int32}, depth, batches,
      {.total = replicas, .first = 0, .count = replicas});
  // Every feature element first (the ring holds (depth + 2) · replicas = 6 parts at the
  // start), then every label: batch b gives each side replicas elements.
  HostTensor feature({1, 3}, float32), label({1}, int32);
  for (std::int64_t e = 0; e < batches * replicas; ++e) {
    fan_out.fill(BatchFanOut::features, feature);
    CHECK(feature.item(0) == static_cast<double>(e / replicas));
  }
  for (std::int64_t e = 0; e < batches * replicas; ++e) {
    fan_out.fill(BatchFanOut::labels, label);
    CHECK(label.item(0) == static_cast<double>(e / replicas));
  }
  CHECK(next == batches);
  CHECK_THROWS_WITH_AS(fan_out.fill(BatchFanOut::labels, label),
                       doctest::Contains("the batches ended after 40"), StreamError);
}
