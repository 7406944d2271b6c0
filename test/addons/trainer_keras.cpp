// addons::Trainer as Keras means it: evaluate and predict take every example, fit honours
// steps_per_epoch and repeat, and a dataset's wrong dtype is named at fit.
#include "trainer_fixture.hpp"

#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace pxl;
using namespace pxl::test_trainer; // Classifier, data, fit, CompileOptions, FitOptions, Trainer
using doctest::Contains;

TEST_CASE("evaluate takes a batched dataset as it takes arrays") {
  const auto [x, y] = data(examples, 1);
  Trainer trainer(Classifier{});
  trainer.compile({.from_logits = true, .metrics = {"accuracy"}});
  trainer.fit(x, y, {.batch_size = 8});
  const auto batched = addons::data::TensorDataset::from_tensor_slices(x, y).batch(16);
  CHECK(trainer.evaluate(batched) == trainer.evaluate(x, y, 16));
  CHECK_THROWS_WITH_AS(
      trainer.evaluate(addons::data::TensorDataset::from_tensor_slices(x, y).batch(500)),
      "Trainer::evaluate: the dataset must be batched (the device program has fixed shapes) and "
      "hold at least one batch, got 0 batches of 500 from 400 examples",
      ValueError);
  CHECK_THROWS_WITH_AS(trainer.evaluate(x, y, 0),
                       "Trainer::evaluate: batch_size must be at least 1, got 0", ValueError);
  CHECK_THROWS_WITH_AS(trainer.evaluate(HostTensor({0, 4}, float32), HostTensor({0}, int32)),
                       "Trainer::evaluate: x and y have no examples (their first axis is 0)",
                       ShapeError);
}

TEST_CASE("evaluate and predict take every example: the remainder runs as a shorter batch") {
  const auto [x, y] = data(examples, 1);
  const auto [xt, yt] = data(80, 2);
  Trainer trainer(Classifier{});
  trainer.compile({.from_logits = true, .metrics = {"accuracy"}});
  trainer.fit(x, y, {.batch_size = 8});
  // 80 = 3 × 24 + 8, and 80 = 5 × 16: the same examples, each batch's mean weighted by its rows.
  const addons::Logs whole = trainer.evaluate(xt, yt, 16);
  const addons::Logs with_remainder = trainer.evaluate(xt, yt, 24);
  CHECK(with_remainder.at("loss") == doctest::Approx(whole.at("loss")).epsilon(1e-6));
  CHECK(with_remainder.at("accuracy") == doctest::Approx(whole.at("accuracy")).epsilon(1e-6));
  CHECK(trainer.evaluate(addons::data::TensorDataset::from_tensor_slices(xt, yt).batch(
            24, false)) == with_remainder);
  // A batch larger than the data is one short batch.
  const addons::Logs one_batch = trainer.evaluate(xt, yt, 1000);
  CHECK(one_batch.at("loss") == doctest::Approx(whole.at("loss")).epsilon(1e-6));

  const HostTensor by_16 = trainer.predict(xt, 16);
  const HostTensor by_24 = trainer.predict(xt, 24);
  REQUIRE(by_24.shape() == Shape{80, classes});
  const auto a = by_16.data<float>();
  const auto b = by_24.data<float>();
  for (std::size_t i = 0; i < a.size(); ++i)
    CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-6));
}

namespace {

/// Counts the batches fit trains.
struct BatchCounter : addons::Callback {
  std::int64_t batches = 0;
  void on_batch_end(std::int64_t, const addons::Logs&) override { ++batches; }
};

/// Trains a fresh Classifier on `dataset` and returns its weights and the batches it trained.
std::pair<std::map<std::string, HostTensor>, std::int64_t>
fit_dataset(const addons::data::TensorDataset& dataset, FitOptions options,
            std::int64_t steps_per_execution = 1) {
  Trainer trainer(Classifier{});
  trainer.compile({.from_logits = true, .steps_per_execution = steps_per_execution, .seed = 3});
  auto counter = std::make_shared<BatchCounter>();
  options.callbacks = {counter};
  trainer.fit(dataset, options);
  return {trainer.weights(), counter->batches};
}

} // namespace

TEST_CASE("fit honours repeat and steps_per_epoch as Keras does") {
  const auto [x, y] = data(examples, 1);
  // 50 batches of 8 per pass, each pass shuffled afresh.
  const auto ds =
      addons::data::TensorDataset::from_tensor_slices(x, y).shuffle(x.shape()[0], 4).batch(8);
  for (const std::int64_t per_run : {1, 10}) {
    CAPTURE(per_run);
    // An epoch is one iteration of the dataset: repeat(2) makes it passes 0 and 1, the batches
    // two epochs of the unrepeated dataset train on.
    const auto two_epochs = fit_dataset(ds, {.epochs = 2}, per_run);
    const auto repeated = fit_dataset(ds.repeat(2), {.epochs = 1}, per_run);
    CHECK(two_epochs.second == 100);
    CHECK(repeated.second == 100);
    CHECK(repeated.first == two_epochs.first);
    // steps_per_epoch: the epochs take their batches from one stream over the passes, going
    // on where the last one stopped: 3 epochs of 30 are the first 90 batches.
    const auto stream = fit_dataset(ds.repeat(), {.epochs = 3, .steps_per_epoch = 30}, per_run);
    const auto whole = fit_dataset(ds.repeat(), {.epochs = 1, .steps_per_epoch = 90}, per_run);
    CHECK(stream.second == 90);
    CHECK(stream.first == whole.first);
  }

  Trainer trainer(Classifier{});
  trainer.compile({.from_logits = true, .steps_per_execution = 10});
  CHECK_THROWS_WITH_AS(trainer.fit(ds.repeat(), {}),
                       "Trainer::fit: the dataset repeats forever, so an epoch would never end: "
                       "give FitOptions::steps_per_epoch",
                       ValueError);
  CHECK_THROWS_WITH_AS(trainer.fit(ds.repeat(), {.steps_per_epoch = 25}),
                       "Trainer::fit: steps_per_epoch counts batches and an epoch ends on a whole "
                       "run: it must be a positive multiple of steps_per_execution 10, got 25",
                       ValueError);
  CHECK_THROWS_WITH_AS(trainer.fit(ds.repeat(2), {.epochs = 3, .steps_per_epoch = 40}),
                       "Trainer::fit: 3 epochs of 40 steps need 120 batches, but the dataset "
                       "yields 100 (400 examples in batches of 8 make 50 batches per pass, 2 "
                       "pass(es)): call .repeat() on it",
                       ValueError);
}

TEST_CASE("fit names the dataset's field whose dtype the model or the loss cannot take") {
  const auto [x, y] = data(examples, 1);
  Trainer trainer(Classifier{});
  trainer.compile({});
  // Integer images reach the model as they are: its first op refuses them, and fit says why.
  CHECK_THROWS_WITH_AS(trainer.fit(x.astype(uint8), y, {.batch_size = 8}),
                       "Trainer: the model cannot take the dataset's features [(8, 12) uint8]: "
                       "float features (float32 or float16) are cast to the model's dtype, "
                       "others reach it as they are, and the model refused them: MatMul: "
                       "expected a float32 or float16 tensor, got 'Classifier_subgraph(0)/t0' "
                       "[(8, 12) uint8]",
                       DTypeError);
  CHECK_THROWS_WITH_AS(trainer.fit(x, y.astype(float32), {.batch_size = 8}),
                       "Trainer: sparse_categorical_crossentropy takes int32 class indices as "
                       "labels; the dataset's labels are [(8,) float32]: convert them "
                       "(HostTensor::astype(int32))",
                       DTypeError);
  // The Trainer still trains once given what it takes.
  CHECK(trainer.fit(x, y, {.batch_size = 8}).epochs() == 1);
}

namespace {

/// The Classifier with a softmax on its output: a Keras model ending in
/// Dense(classes, activation="softmax"). Its variables are the Classifier's.
struct SoftmaxClassifier : addons::Module<SoftmaxClassifier> {
  PXL_SUBMODULE(addons::Linear, fc1, 16);
  PXL_SUBMODULE(addons::Linear, fc2, classes);
  Tensor build(const Tensor& x) { return pxl::ops::softmax(fc2(pxl::ops::relu(fc1(x)))); }
};

/// The Classifier with a sigmoid on its output: probabilities that no softmax made.
struct SigmoidClassifier : addons::Module<SigmoidClassifier> {
  PXL_SUBMODULE(addons::Linear, fc1, 16);
  PXL_SUBMODULE(addons::Linear, fc2, classes);
  Tensor build(const Tensor& x) { return pxl::ops::sigmoid(fc2(pxl::ops::relu(fc1(x)))); }
};

} // namespace

TEST_CASE("a softmax output with from_logits = false trains on its logits, as Keras does") {
  const auto [x, y] = data(examples, 1);
  const auto [xt, yt] = data(80, 2);
  // One step per run in float32; device loops of 10, and mixed precision (float16 logits,
  // the loss in float32).
  for (const auto& run : {std::pair{std::int64_t{1}, float32}, std::pair{std::int64_t{10}, float32},
                          std::pair{std::int64_t{10}, float16}}) {
    // Not a structured binding: CAPTURE's lambda captures it, which clang 14 refuses.
    const std::int64_t per_run = run.first;
    const DType dtype = run.second;
    CAPTURE(per_run);
    CAPTURE(dtype);
    // The same network without the softmax, its logits taken as such: bitwise the same
    // training, since the loss and its gradient come from the same logits.
    Trainer logits(Classifier{});
    logits.compile({.from_logits = true,
                    .metrics = {"accuracy"},
                    .steps_per_execution = per_run,
                    .dtype = dtype});
    const addons::History expected = logits.fit(x, y, {.epochs = 2, .batch_size = 8});
    Trainer probs(SoftmaxClassifier{});
    probs.compile({.metrics = {"accuracy"}, .steps_per_execution = per_run, .dtype = dtype});
    const addons::History h = probs.fit(x, y, {.epochs = 2, .batch_size = 8});
    CHECK(h.history == expected.history);
    CHECK(probs.weights() == logits.weights());
    CHECK(probs.evaluate(xt, yt, 16) == logits.evaluate(xt, yt, 16));
    // What it predicts are probabilities.
    const HostTensor p = probs.predict(xt, 16);
    for (std::int64_t i = 0; i < 80; ++i) {
      double s = 0;
      for (std::int64_t c = 0; c < classes; ++c)
        s += p.item(i * classes + c);
      CHECK(s == doctest::Approx(1.0).epsilon(dtype == float16 ? 1e-2 : 1e-5));
    }
  }
}

TEST_CASE("a softmax output compiled with from_logits = true is refused at fit") {
  const auto [x, y] = data(examples, 1);
  Trainer trainer(SoftmaxClassifier{});
  trainer.compile({.from_logits = true});
  CHECK_THROWS_WITH_AS(trainer.fit(x, y, {.batch_size = 8}),
                       Contains("CompileOptions::from_logits is true, but the model's output"),
                       ValueError);
  CHECK_THROWS_WITH_AS(trainer.evaluate(x, y, 8), Contains("set from_logits = false"), ValueError);
}

TEST_CASE("probabilities no softmax made: the loss clips them at 1e-7 as Keras does") {
  const auto [x, y] = data(examples, 1);
  Trainer trainer(SigmoidClassifier{});
  trainer.compile({});
  trainer.fit(x, y, {.batch_size = 8});
  const HostTensor p = trainer.predict(x, 40);
  // The mean of −log(clip(p)[label] / Σ clip(p)), in double from the predictions.
  double expected = 0;
  const auto labels = y.data<std::int32_t>();
  for (std::int64_t i = 0; i < examples; ++i) {
    double s = 0;
    for (std::int64_t c = 0; c < classes; ++c)
      s += std::clamp(p.item(i * classes + c), 1e-7, 1 - 1e-7);
    const double py =
        std::clamp(p.item(i * classes + labels[static_cast<std::size_t>(i)]), 1e-7, 1 - 1e-7);
    expected -= std::log(py / s) / static_cast<double>(examples);
  }
  CHECK(trainer.evaluate(x, y, 40).at("loss") == doctest::Approx(expected).epsilon(1e-5));
}

namespace {

/// The running mean Keras's batch norm (momentum 0.99, from zeros) holds after one pass over
/// `x` in batches of `batch` in order, when its input is x · W + b and nothing trains.
std::vector<double> expected_running_mean(const HostTensor& x, const HostTensor& w,
                                          const HostTensor& b, std::int64_t batch) {
  const std::int64_t units = w.shape()[1];
  std::vector<double> running(static_cast<std::size_t>(units));
  for (std::int64_t start = 0; start + batch <= x.shape()[0]; start += batch)
    for (std::int64_t u = 0; u < units; ++u) {
      double mean = 0;
      for (std::int64_t i = start; i < start + batch; ++i) {
        double h = b.item(u);
        for (std::int64_t f = 0; f < features; ++f)
          h += x.item(i * features + f) * w.item(f * units + u);
        mean += h / static_cast<double>(batch);
      }
      auto& r = running[static_cast<std::size_t>(u)];
      r = 0.99 * r + 0.01 * mean;
    }
  return running;
}

} // namespace

TEST_CASE("a batch norm's running statistics: updated once per batch by fit, read by evaluate") {
  const auto [x, y] = data(examples, 1);
  const auto [xt, yt] = data(80, 2);
  // The learning rate is 0, so each batch's statistics follow from the initial weights alone.
  for (const std::int64_t steps_per_execution : {1, 5}) {
    CAPTURE(steps_per_execution);
    Trainer trainer(
        addons::Sequential{addons::Dense(6), addons::BatchNormalization(), addons::Dense(classes)});
    trainer.compile({.optimizer = addons::optimizers::SGDOptions{.lr = 0.0},
                     .from_logits = true,
                     .steps_per_execution = steps_per_execution});
    trainer.fit(x, y, {.batch_size = 8, .shuffle = false});
    auto weights = trainer.weights();
    REQUIRE(weights.count("layers.1.running_mean") == 1);
    const auto want =
        expected_running_mean(x, weights.at("layers.0.weight"), weights.at("layers.0.bias"), 8);
    for (std::int64_t u = 0; u < 6; ++u)
      CHECK(weights.at("layers.1.running_mean").item(u) ==
            doctest::Approx(want[static_cast<std::size_t>(u)]).epsilon(1e-4));
    // Evaluation and prediction read the running statistics and leave them as they were.
    const addons::Logs logs = trainer.evaluate(xt, yt, 16);
    CHECK(trainer.evaluate(xt, yt, 16) == logs);
    CHECK(trainer.weights().at("layers.1.running_mean") == weights.at("layers.1.running_mean"));
    CHECK(trainer.weights().at("layers.1.running_var") == weights.at("layers.1.running_var"));
  }
}

TEST_CASE("a batch norm trains: its weight and bias by the optimizer, its statistics by itself") {
  const auto [x, y] = data(examples, 1);
  Trainer trainer(
      addons::Sequential{addons::Dense(16), addons::BatchNormalization(), addons::Dense(classes)});
  trainer.compile({.optimizer = addons::optimizers::AdamOptions{.lr = 0.01},
                   .from_logits = true,
                   .metrics = {"accuracy"}});
  const auto history = trainer.fit(x, y, {.epochs = 3, .batch_size = 16});
  const auto& loss = history.history.at("loss");
  CHECK(loss.back() < loss.front());
  const auto weights = trainer.weights();
  CHECK_FALSE(weights.at("layers.1.weight") == HostTensor::full({16}, float32, 1.0));
  CHECK_FALSE(weights.at("layers.1.running_var") == HostTensor::full({16}, float32, 1.0));
  CHECK(trainer.evaluate(x, y, 16).at("accuracy") > 0.6);
}
