// The tutorial's hand-written programs (test/mnist/reference_programs.*), the oracle the
// Trainer is checked against in trainer.cpp, on a few thousand images: training learns,
// checkpoints round-trip, a device loop equals single steps bitwise, accumulation and replicas
// equal one larger batch, and a device loop fed by the infeed equals the same batches fed as
// arrays.
#include "helpers.hpp"
#include "reference_programs.hpp"

#include "pxl/addons/training/checkpoint.hpp"
#include "pxl/core/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace mnist::test;

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
    pxl::addons::save_checkpoint(train.session(), train.variables(), path);
    mnist::TrainingProgram restored({.batch_size = 8, .seed = 1234});
    pxl::addons::load_checkpoint(restored.session(), restored.variables(), path);
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
  for (const auto& entry : w1) {
    const auto& name = entry.first;
    const auto& t = entry.second;
    CAPTURE(name);
    CHECK(same_bits(t, wn.at(name)));
  }
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
  for (const auto& entry : w8) {
    const auto& name = entry.first;
    const auto& t = entry.second;
    CAPTURE(name);
    CHECK(pxl::allclose(t, w2x4.at(name), 1e-5, 1e-7));
  }
}

TEST_CASE("a device loop fed by the infeed trains bitwise as the same batches fed as arrays") {
  for (const mnist::TrainingOptions& options :
       {mnist::TrainingOptions{.steps_per_execution = 5, .seed = 11},
        mnist::TrainingOptions{.steps_per_execution = 2, .gradient_accumulation = 3, .seed = 11},
        mnist::TrainingOptions{.steps_per_execution = 1, .seed = 11}}) {
    CAPTURE(options.steps_per_execution);
    CAPTURE(options.gradient_accumulation);
    LossLog log; // outlives from_infeed, whose loss stream calls it
    mnist::TrainingProgram from_arrays(options);
    mnist::TrainingProgram from_infeed(options);
    const std::int64_t per_run = from_infeed.micro_batches_per_run();
    const std::int64_t runs = 12 / per_run; // 12 batches per epoch, some left over unless 1
    // Two epochs: the batches of the first that no run takes must not reach the second.
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      CAPTURE(epoch);
      const auto expected = train_epoch_from_arrays(from_arrays, small_data(), batching(8, epoch));
      REQUIRE(expected.size() == static_cast<std::size_t>(runs * per_run));
      log.calls.clear();
      from_infeed.feed_from(data::batches(small_data(), batching(8, epoch)), log.callback());
      for (std::int64_t r = 0; r < runs; ++r) {
        from_infeed.run();
        // Each run's losses have all been delivered, in order, when it returns.
        REQUIRE(log.calls.size() == static_cast<std::size_t>((r + 1) * per_run));
      }
      for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(log.calls[i].first == static_cast<std::int64_t>(i));
        CHECK(log.calls[i].second == expected[i]);
      }
    }
    const auto a = from_arrays.weights().to_dict();
    const auto f = from_infeed.weights().to_dict();
    REQUIRE(a.size() == 8);
    for (const auto& entry : a) {
      const auto& name = entry.first;
      const auto& t = entry.second;
      CAPTURE(name);
      CHECK(same_bits(t, f.at(name)));
    }
  }
}

TEST_CASE("an infeed whose batches run out fails the run that needs more with StreamError") {
  LossLog log;
  mnist::TrainingProgram program({.steps_per_execution = 4});
  std::vector<data::Batch> six;
  for (auto& b : data::batches(small_data(), batching(8))) {
    six.push_back(b);
    if (six.size() == 6)
      break;
  }
  program.feed_from(six, log.callback());
  program.run(); // batches 0-3
  CHECK(log.calls.size() == 4);
  // Batches 4 and 5, then none: the run fails after it ends.
  CHECK_THROWS_WITH_AS(program.run(),
                       "mnist TrainingProgram::feed_from: the batches ended after 6, but the "
                       "device needs more (each run takes 4 of them)",
                       pxl::StreamError);
}

TEST_CASE("infeed mistakes are refused with what was expected") {
  LossLog log;
  mnist::TrainingProgram program({.steps_per_execution = 2});

  SUBCASE("run() without a feed") {
    CHECK_THROWS_WITH_AS(program.run(), doctest::Contains("call feed_from(batches, on_loss) first"),
                         pxl::StreamError);
  }
  SUBCASE("an empty loss callback") {
    CHECK_THROWS_WITH_AS(program.feed_from(data::batches(small_data(), batching(8)), {}),
                         doctest::Contains("the loss callback is empty"), pxl::ValueError);
  }
  SUBCASE("host arrays once the streams are fed") {
    program.feed_from(data::batches(small_data(), batching(8)), log.callback());
    mnist::DeviceLoopFeed feed(2, 8);
    for (auto& b : data::batches(small_data(), batching(8)))
      if (feed.add(b))
        break;
    CHECK_THROWS_WITH_AS(program.run(feed.images(), feed.labels()),
                         doctest::Contains("unexpected: ['images', 'labels']"), pxl::StreamError);
  }
  SUBCASE("batches that do not fit the streams") {
    auto unflattened = batching(8);
    unflattened.flatten = false;
    program.feed_from(data::batches(small_data(), unflattened), log.callback());
    CHECK_THROWS_WITH_AS(program.run(),
                         "mnist TrainingProgram::feed_from: batch 0 has images [(8, 28, 28) "
                         "float32] and labels [(8,) int32]; the streams need images [(8, 784) "
                         "float32] and labels [(8,) int32] (batch with .batch_size = 8, "
                         ".drop_remainder = true and .flatten = true)",
                         pxl::StreamError);
  }
}

namespace {

/// Max |a − b| / (|b| + 1e-3) over every weight, for the messages.
double max_relative_difference(const std::map<std::string, pxl::HostTensor>& a,
                               const std::map<std::string, pxl::HostTensor>& b) {
  double worst = 0;
  for (const auto& [name, t] : a) {
    const auto x = t.data<float>(), y = b.at(name).data<float>();
    for (std::size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(x[i]) - y[i]) /
                                  (std::abs(static_cast<double>(y[i])) + 1e-3));
  }
  return worst;
}

void check_same_weights(mnist::TrainingProgram& expected, mnist::TrainingProgram& actual) {
  const auto e = expected.weights().to_dict();
  const auto a = actual.weights().to_dict();
  REQUIRE(e.size() == 8);
  MESSAGE("largest relative weight difference " << max_relative_difference(a, e));
  // Pairs rather than structured bindings: clang 14 does not let CAPTURE's lambda read them.
  for (const auto& entry : e) {
    CAPTURE(entry.first);
    CHECK(pxl::allclose(a.at(entry.first), entry.second, 1e-5, 1e-6));
  }
}

} // namespace

TEST_CASE("2 replicas at batch 4 train as one replica at batch 8, with host arrays") {
  for (const std::int64_t accumulation : {1, 2}) {
    CAPTURE(accumulation);
    mnist::TrainingProgram one({.batch_size = 8, .seed = 13});
    mnist::TrainingProgram two({.batch_size = 4 / accumulation,
                                .gradient_accumulation = accumulation,
                                .replicas = 2,
                                .seed = 13});
    REQUIRE(two.global_batch_size() == 8 / accumulation);
    // Two epochs of the 100 images: 24 steps of 8.
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      const auto l1 = train_epoch_from_arrays(one, small_data(), batching(8, epoch));
      const auto l2 =
          train_epoch_from_arrays(two, small_data(), batching(two.global_batch_size(), epoch));
      REQUIRE(l2.size() == l1.size() * static_cast<std::size_t>(accumulation));
      if (accumulation == 1)
        for (std::size_t i = 0; i < l1.size(); ++i)
          CHECK(l2[i] == doctest::Approx(l1[i]).epsilon(1e-5)); // the replicas' mean loss
    }
    check_same_weights(one, two);
    mnist::TestProgram test1(100), test2(100);
    test1.copy_weights_from(one);
    test2.copy_weights_from(two);
    CHECK(test2.accuracy(test_data()) ==
          doctest::Approx(test1.accuracy(test_data())).epsilon(2e-3));
  }
}

TEST_CASE("replicas fed by the infeed train bitwise as the same batches fed as arrays") {
  // Replica r of every step gets rows r·4 … r·4+3 of the global batch of 8 either way.
  for (const mnist::TrainingOptions& options :
       {mnist::TrainingOptions{
            .batch_size = 4, .steps_per_execution = 3, .replicas = 2, .seed = 17},
        mnist::TrainingOptions{.batch_size = 2,
        .steps_per_execution = 2,
        .gradient_accumulation = 2,
        .replicas = 2,
        .seed = 17},
        mnist::TrainingOptions{.batch_size = 2, .replicas = 4, .seed = 17}}) {
    CAPTURE(options.replicas);
    CAPTURE(options.steps_per_execution);
    LossLog log;
    mnist::TrainingProgram from_arrays(options);
    mnist::TrainingProgram from_infeed(options);
    const std::int64_t per_run = from_infeed.micro_batches_per_run();
    const auto batch_options = batching(from_infeed.global_batch_size());
    const std::int64_t runs = data::num_batches(small_data(), batch_options) / per_run;
    const auto expected = train_epoch_from_arrays(from_arrays, small_data(), batch_options);
    REQUIRE(expected.size() == static_cast<std::size_t>(runs * per_run));
    from_infeed.feed_from(data::batches(small_data(), batch_options), log.callback());
    for (std::int64_t r = 0; r < runs; ++r)
      from_infeed.run();
    REQUIRE(log.calls.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
      CHECK(log.calls[i].second == expected[i]);
    const auto a = from_arrays.weights().to_dict();
    const auto f = from_infeed.weights().to_dict();
    for (const auto& entry : a) {
      CAPTURE(entry.first);
      CHECK(same_bits(entry.second, f.at(entry.first)));
    }
    // And as one replica at the global batch, to float rounding.
    mnist::TrainingProgram one({.batch_size = from_infeed.global_batch_size(),
                                .steps_per_execution = options.steps_per_execution,
                                .gradient_accumulation = options.gradient_accumulation,
                                .seed = 17});
    train_epoch_from_arrays(one, small_data(), batch_options);
    check_same_weights(one, from_infeed);
  }
}

TEST_CASE("replicas below 1 are refused") {
  CHECK_THROWS_WITH_AS(mnist::TrainingProgram({.replicas = 0}),
                       doctest::Contains("replicas must be at least 1, got 8, 1, 1 and 0"),
                       pxl::ValueError);
}

TEST_CASE("float16 mixed precision: one epoch on 2000 images learns as float32 does") {
  mnist::TrainingProgram train(
      {.batch_size = 8, .learning_rate = 0.05, .seed = 42, .dtype = pxl::float16});
  for (const auto& [name, w] : train.variables().to_dict())
    CHECK(w.dtype() == pxl::float16);
  const auto losses = train_epoch(train);
  REQUIRE(losses.size() == 250);
  const float first = mean(std::span(losses).first(25));
  const float last = mean(std::span(losses).last(25));
  MESSAGE("float16: mean loss of the first 25 steps " << first << ", of the last 25 " << last);
  CHECK(first > 2.0f);
  CHECK(last < 0.7f * first);

  mnist::TestProgram test(100, 0, pxl::float16);
  test.copy_weights_from(train);
  const double accuracy = test.accuracy(test_data());
  MESSAGE("float16 test accuracy " << accuracy);
  CHECK(accuracy > 0.4);

  SUBCASE("the same run is bitwise the same on another worker count") {
    mnist::TrainingProgram again(
        {.batch_size = 8, .learning_rate = 0.05, .seed = 42, .workers = 1, .dtype = pxl::float16});
    train_epoch(again);
    const auto a = train.weights().to_dict(), b = again.weights().to_dict();
    for (const auto& entry : a) { // not a structured binding: CAPTURE's lambda reads it
      CAPTURE(entry.first);
      CHECK(same_bits(entry.second, b.at(entry.first)));
    }
  }
}

TEST_CASE("a dtype other than float32 or float16, or a loss scaling of 0, is refused") {
  CHECK_THROWS_WITH_AS(mnist::TrainingProgram({.dtype = pxl::int32}),
                       doctest::Contains("dtype must be float32 or float16, got int32"),
                       pxl::DTypeError);
  CHECK_THROWS_WITH_AS(mnist::TrainingProgram({.dtype = pxl::float16, .loss_scaling = 0}),
                       doctest::Contains("loss_scaling must be positive"), pxl::ValueError);
}
