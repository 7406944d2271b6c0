// The Fashion-MNIST main job's programs, on a few thousand images: training learns,
// checkpoints round-trip, and a device loop equals single steps bitwise.
#include "device_loop_feed.hpp"
#include "programs.hpp"

#include "pxl/addons/data/batches.hpp"
#include "pxl/addons/data/fashion_mnist.hpp"
#include "pxl/addons/safetensors.hpp"
#include "pxl/core/error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <numeric>

namespace data = pxl::addons::data;

namespace {

const data::Dataset& train_data() {
  static const auto d =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train, 2000);
  return d;
}
const data::Dataset& test_data() {
  static const auto d =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::test, 1000);
  return d;
}

data::BatchOptions batching(std::int64_t batch_size) {
  return {.batch_size = batch_size, .seed = 7, .flatten = true};
}

/// Trains one epoch and returns every step's loss.
std::vector<float> train_epoch(mnist::TrainingProgram& program) {
  std::vector<float> losses;
  for (auto& b : data::batches(train_data(), batching(program.options().batch_size))) {
    auto l = program.run(b.images, b.labels);
    losses.insert(losses.end(), l.begin(), l.end());
  }
  return losses;
}

float mean(std::span<const float> xs) {
  return std::accumulate(xs.begin(), xs.end(), 0.0f) / static_cast<float>(xs.size());
}

bool same_bits(const pxl::HostTensor& a, const pxl::HostTensor& b) {
  return a.shape() == b.shape() && std::ranges::equal(a.bytes(), b.bytes());
}

} // namespace

TEST_CASE("one epoch on 2000 images: the loss falls and accuracy far beats chance") {
  mnist::TrainingProgram train({.batch_size = 8, .learning_rate = 0.05, .seed = 42});
  const auto losses = train_epoch(train);
  REQUIRE(losses.size() == 250);
  const float first = mean(std::span(losses).first(25));
  const float last = mean(std::span(losses).last(25));
  MESSAGE("mean loss of the first 25 steps " << first << ", of the last 25 " << last);
  CHECK(first > 2.0f); // about ln(10) = 2.30 at the start
  CHECK(last < 0.7f * first);

  mnist::TestProgram test(100);
  test.copy_weights_from(train);
  const double accuracy = test.accuracy(test_data());
  MESSAGE("test accuracy " << accuracy);
  CHECK(accuracy > 0.4); // chance is 0.1

  SUBCASE("a checkpoint saved and loaded gives identical test accuracy") {
    const auto path = std::filesystem::temp_directory_path() / "pxl_mnist_checkpoint.safetensors";
    pxl::addons::save_safetensors(path, train.weights().to_dict());
    mnist::TrainingProgram restored({.batch_size = 8, .seed = 1234});
    restored.load_weights(
        pxl::addons::NamedTensorData::from_dict(pxl::addons::load_safetensors(path)));
    std::filesystem::remove(path);
    mnist::TestProgram test2(100);
    test2.copy_weights_from(restored);
    CHECK(test2.accuracy(test_data()) == accuracy);
  }
}

TEST_CASE("a device loop of N steps gives bitwise the weights of N single-step runs") {
  constexpr std::int64_t n = 5, b = 8;
  mnist::TrainingProgram single({.batch_size = b, .steps_per_execution = 1, .seed = 3});
  mnist::TrainingProgram looped({.batch_size = b, .steps_per_execution = n, .seed = 3});

  mnist::DeviceLoopFeed feed(n, b);
  std::vector<float> single_losses;
  for (auto& batch : data::batches(train_data(), batching(b))) {
    single_losses.push_back(single.run(batch.images, batch.labels).at(0));
    if (feed.add(batch))
      break;
  }
  const auto looped_losses = looped.run(feed.images(), feed.labels());
  CHECK(looped_losses == single_losses);
  const auto w1 = single.weights().to_dict();
  const auto wn = looped.weights().to_dict();
  REQUIRE(w1.size() == 8);
  for (const auto& [name, t] : w1) {
    CAPTURE(name);
    CHECK(same_bits(t, wn.at(name)));
  }
}

TEST_CASE("weights that do not match the Net are refused with their names") {
  mnist::TrainingProgram train({.batch_size = 8});
  auto weights = train.weights();
  weights.insert("fc5.weight", pxl::HostTensor({2, 2}, pxl::float32));
  CHECK_THROWS_WITH_AS(train.load_weights(weights), doctest::Contains("unexpected: fc5.weight"),
                       pxl::ValueError);
  auto partial =
      pxl::addons::NamedTensorData::from_dict({{"fc1.weight", train.weights().at("fc1.weight")}});
  CHECK_THROWS_WITH_AS(train.load_weights(partial), doctest::Contains("missing: fc1.bias"),
                       pxl::ValueError);
}

TEST_CASE("accumulating 4 micro-batches of 2 is one SGD step on the batch of 8") {
  mnist::TrainingProgram big({.batch_size = 8, .seed = 5});
  mnist::TrainingProgram accumulated({.batch_size = 2, .gradient_accumulation = 4, .seed = 5});
  REQUIRE(accumulated.micro_batches_per_run() == 4);
  for (auto& batch : data::batches(train_data(), batching(8))) {
    big.run(batch.images, batch.labels);
    // The same 8 images as 4 host transfers of 2.
    const auto losses = accumulated.run(batch.images.reshaped({4, 2, mnist::image_size}),
                                        batch.labels.reshaped({4, 2}));
    CHECK(losses.size() == 4);
    break;
  }
  const auto w8 = big.weights().to_dict();
  const auto w2x4 = accumulated.weights().to_dict();
  for (const auto& [name, t] : w8) {
    CAPTURE(name);
    CHECK(pxl::allclose(t, w2x4.at(name), 1e-5, 1e-7));
  }
}
