// BatchNorm2D and BatchNormalization: both forms against the closed form, the running
// statistics' update in PyTorch's and Keras's conventions, the training form's gradients,
// TrainingMode, and errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"
#include "run_module.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <vector>

using namespace pxl;

namespace test_batch_norm_layers {

using addons::BatchNorm2D;
using addons::BatchNormalization;
using test_addons::ramp;
using test_addons::run_module;

/// Per-channel statistics of an (N, C, S) view of x (S the values per image and channel, or
/// with `channels_last` an (N·S, C) one), in double.
struct Moments {
  std::vector<double> mean, var; ///< the biased variance
  std::int64_t count = 0;        ///< values per channel
};

Moments moments(const HostTensor& x, std::int64_t channels, bool channels_last) {
  Moments m{std::vector<double>(static_cast<std::size_t>(channels)),
            std::vector<double>(static_cast<std::size_t>(channels)), x.nelms() / channels};
  auto channel_of = [&](std::int64_t i) {
    return channels_last ? i % channels : (i / (x.nelms() / x.shape()[0] / channels)) % channels;
  };
  for (std::int64_t i = 0; i < x.nelms(); ++i)
    m.mean[static_cast<std::size_t>(channel_of(i))] += x.item(i) / static_cast<double>(m.count);
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const auto c = static_cast<std::size_t>(channel_of(i));
    m.var[c] += std::pow(x.item(i) - m.mean[c], 2) / static_cast<double>(m.count);
  }
  return m;
}

HostTensor floats(std::vector<float> values, Shape shape) {
  return HostTensor(values, std::move(shape));
}

void check_close(const HostTensor& got, const HostTensor& want, double tol = 1e-4) {
  REQUIRE(got.shape() == want.shape());
  for (std::int64_t i = 0; i < got.nelms(); ++i) {
    INFO("element " << i);
    CHECK(got.item(i) == doctest::Approx(want.item(i)).epsilon(tol).scale(1.0));
  }
}

TEST_CASE("BatchNorm2D training form: batch statistics, PyTorch's running update, gradients") {
  const std::int64_t n = 3, c = 2, h = 2, w = 3, per_image = c * h * w;
  const auto x = ramp({n, c, h, w}, 2.0);
  const auto gamma = floats({1.5f, -0.5f}, {c});
  const auto beta = floats({0.25f, 1.0f}, {c});
  const auto run_mean = floats({0.5f, -1.f}, {c});
  const auto run_var = floats({2.f, 0.5f}, {c});
  const auto dy = ramp({n, c, h, w}, 0.7);
  const auto r = run_module(
      BatchNorm2D({.eps = 1e-3, .momentum = 0.2, .training = true}), std::array{x}, dy,
      {{"weight", gamma}, {"bias", beta}, {"running_mean", run_mean}, {"running_var", run_var}});
  CHECK(r.factories.keys_flat() ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var"});
  CHECK(r.factories.at("weight").trainable);
  CHECK_FALSE(r.factories.at("running_mean").trainable);
  CHECK(r.factories.at("running_var").by_ref);

  const Moments m = moments(x, c, false);
  HostTensor y(x.shape(), float32), dx(x.shape(), float32);
  std::vector<double> dgamma(c), dbeta(c), mean_dy(c), mean_dy_xhat(c);
  auto xhat = [&](std::int64_t i, std::size_t ch) {
    return (x.item(i) - m.mean[ch]) / std::sqrt(m.var[ch] + 1e-3);
  };
  auto channel = [&](std::int64_t i) {
    return static_cast<std::size_t>((i % per_image) / (h * w));
  };
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const std::size_t ch = channel(i);
    y.data<float>()[static_cast<std::size_t>(i)] =
        static_cast<float>(xhat(i, ch) * gamma.item(static_cast<std::int64_t>(ch)) +
                           beta.item(static_cast<std::int64_t>(ch)));
    dgamma[ch] += dy.item(i) * xhat(i, ch);
    dbeta[ch] += dy.item(i);
    mean_dy[ch] += dy.item(i) / static_cast<double>(m.count);
    mean_dy_xhat[ch] += dy.item(i) * xhat(i, ch) / static_cast<double>(m.count);
  }
  // dx = γ / σ · (dy − mean(dy) − x̂ · mean(dy · x̂)): the batch statistics' own gradient.
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const std::size_t ch = channel(i);
    dx.data<float>()[static_cast<std::size_t>(i)] =
        static_cast<float>(gamma.item(static_cast<std::int64_t>(ch)) / std::sqrt(m.var[ch] + 1e-3) *
                           (dy.item(i) - mean_dy[ch] - xhat(i, ch) * mean_dy_xhat[ch]));
  }
  check_close(r.y, y);
  check_close(r.grads.at("input0"), dx);
  check_close(r.grads.at("weight"),
              floats({static_cast<float>(dgamma[0]), static_cast<float>(dgamma[1])}, {c}));
  check_close(r.grads.at("bias"),
              floats({static_cast<float>(dbeta[0]), static_cast<float>(dbeta[1])}, {c}));
  CHECK(r.grads.count("running_mean") == 0);

  // running = 0.8 · running + 0.2 · batch, the variance with Bessel's correction (18 / 17).
  const double bessel = static_cast<double>(m.count) / static_cast<double>(m.count - 1);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const auto k = static_cast<std::size_t>(ch);
    CHECK(r.variables.at("running_mean").item(ch) ==
          doctest::Approx(0.8 * run_mean.item(ch) + 0.2 * m.mean[k]));
    CHECK(r.variables.at("running_var").item(ch) ==
          doctest::Approx(0.8 * run_var.item(ch) + 0.2 * m.var[k] * bessel));
  }
}

TEST_CASE("BatchNorm2D inference form: the running statistics, left as they were") {
  const auto x = ramp({2, 3, 2, 2});
  const auto run_mean = floats({0.5f, -1.f, 0.f}, {3});
  const auto run_var = floats({2.f, 0.5f, 1.f}, {3});
  const auto r = run_module(BatchNorm2D({.affine = false, .training = false}), std::array{x},
                            std::nullopt, {{"running_mean", run_mean}, {"running_var", run_var}});
  CHECK(r.factories.keys_flat() == std::vector<std::string>{"running_mean", "running_var"});
  HostTensor y(x.shape(), float32);
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const std::int64_t ch = (i / 4) % 3;
    y.data<float>()[static_cast<std::size_t>(i)] =
        static_cast<float>((x.item(i) - run_mean.item(ch)) / std::sqrt(run_var.item(ch) + 1e-5));
  }
  check_close(r.y, y);
  CHECK(r.variables.at("running_mean") == run_mean);
  CHECK(r.variables.at("running_var") == run_var);
}

TEST_CASE("BatchNormalization: Keras's axis, momentum and biased moving variance; float16") {
  const auto x = ramp({4, 3, 5}, 1.5); // features last
  const auto r = run_module(BatchNormalization({.momentum = 0.9, .training = true}), std::array{x});
  const Moments m = moments(x, 5, true);
  HostTensor y(x.shape(), float32);
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const auto ch = static_cast<std::size_t>(i % 5);
    y.data<float>()[static_cast<std::size_t>(i)] =
        static_cast<float>((x.item(i) - m.mean[ch]) / std::sqrt(m.var[ch] + 1e-3));
  }
  check_close(r.y, y);
  for (std::int64_t ch = 0; ch < 5; ++ch) {
    const auto k = static_cast<std::size_t>(ch);
    CHECK(r.variables.at("running_mean").item(ch) == doctest::Approx(0.1 * m.mean[k]));
    CHECK(r.variables.at("running_var").item(ch) == doctest::Approx(0.9 + 0.1 * m.var[k]));
  }

  // float16: statistics in float32, the output rounded once; the state stays float32.
  const auto r16 =
      run_module(BatchNormalization({.axis = 1, .training = true}), std::array{x.astype(float16)});
  CHECK(r16.y.dtype() == float16);
  CHECK(r16.factories.at("running_mean").dtype == float32);
  CHECK(r16.factories.at("weight").dtype == float16);
  const Moments m1 = moments(x.astype(float16).astype(float32), 3, false);
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const auto ch = static_cast<std::size_t>((i / 5) % 3);
    CHECK(r16.y.item(i) ==
          doctest::Approx((x.astype(float16).item(i) - m1.mean[ch]) / std::sqrt(m1.var[ch] + 1e-3))
              .epsilon(2e-3)
              .scale(1.0));
  }
}

TEST_CASE("TrainingMode chooses the form; Dropout drops nothing in TrainingMode(false)") {
  const auto x = ramp({4, 2, 3, 3});
  const std::map<std::string, HostTensor> stats{{"running_mean", floats({9.f, 9.f}, {2})},
                                                {"running_var", floats({4.f, 4.f}, {2})}};
  const auto train = [&] {
    const addons::TrainingMode training(true);
    return run_module(BatchNorm2D({.affine = false}), std::array{x}, std::nullopt, stats);
  }();
  const auto infer = [&] {
    const addons::TrainingMode inference(false);
    return run_module(BatchNorm2D({.affine = false}), std::array{x}, std::nullopt, stats);
  }();
  // Normalised by the batch, the output's mean is 0; by the running statistics, about -4.5.
  double train_sum = 0, infer_sum = 0;
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    train_sum += train.y.item(i);
    infer_sum += infer.y.item(i);
  }
  CHECK(train_sum / static_cast<double>(x.nelms()) ==
        doctest::Approx(0.0).epsilon(1e-5).scale(1.0));
  CHECK(infer_sum / static_cast<double>(x.nelms()) < -4.0);
  CHECK_FALSE(addons::training_mode().has_value());
  {
    const addons::TrainingMode outer(true);
    {
      const addons::TrainingMode inner(false);
      CHECK(addons::training_mode() == false);
    }
    CHECK(addons::training_mode() == true);
  }

  const HostTensor seed(std::vector<std::uint32_t>{1, 2}, {2});
  const auto ones = HostTensor::full({64}, float32, 1.0);
  const auto dropped = run_module(addons::Dropout(0.5), std::array{ones, seed});
  const auto kept = [&] {
    const addons::TrainingMode inference(false);
    return run_module(addons::Dropout(0.5), std::array{ones, seed});
  }();
  CHECK(kept.y == ones);
  CHECK_FALSE(dropped.y == ones);
}

/// BatchNorm2D's training form on `replicas` replicas, each normalising its own (2, 2, 2, 2)
/// part of `x` (replica r the rows 2r and 2r + 1): the outputs, replica after replica.
HostTensor replicated_batch_norm(const HostTensor& x, std::int64_t replicas,
                                 addons::BatchNorm2DOptions options) {
  Ir ir(replicas);
  HostToDeviceStream in;
  DeviceToHostStream out;
  {
    auto main = ir.main_graph().scope();
    in = h2d_stream({2, 2, 2, 2}, float32, "x");
    out = d2h_stream({2, 2, 2, 2}, float32, "y");
    options.training = true;
    auto [facts, graph] = BatchNorm2D(options).create_graph(in.spec());
    const addons::NamedTensors vars = facts.init();
    ops::host_store(out, graph.bind(vars).call({ops::host_load(in)})[0]);
  }
  Session session(ir, "ipu_model");
  auto attached = session.attach();
  return session.run({{in, x.reshaped({replicas, 2, 2, 2, 2})}}).at(out).reshaped(x.shape());
}

TEST_CASE("BatchNorm2D synchronized over groups of replicas: each group as one replica of their "
          "batches") {
  // 8 images over 4 replicas of 2; in groups of 2, replicas 0-1 and 2-3 share statistics.
  const HostTensor x = ramp({8, 2, 2, 2});
  std::vector<float> squared(x.data<float>().begin(), x.data<float>().end());
  for (float& v : squared)
    v = v * v * 0.1F; // the groups' statistics differ
  const HostTensor images(squared, {8, 2, 2, 2});
  const HostTensor grouped =
      replicated_batch_norm(images, 4, {.synchronized = true, .replica_group_size = 2});
  for (std::int64_t g = 0; g < 2; ++g) {
    CAPTURE(g);
    // The group's 4 images on one replica, unsynchronized: the same normalisation.
    std::vector<float> part(squared.begin() + g * 32, squared.begin() + (g + 1) * 32);
    const HostTensor alone =
        run_module(BatchNorm2D({.training = true}), std::array{HostTensor(part, {4, 2, 2, 2})}).y;
    std::vector<float> got(grouped.data<float>().begin() + g * 32,
                           grouped.data<float>().begin() + (g + 1) * 32);
    check_close(HostTensor(got, {4, 2, 2, 2}), alone);
  }
  // A group of every replica is the synchronized layer itself, bitwise.
  CHECK(replicated_batch_norm(images, 4, {.synchronized = true, .replica_group_size = 4}) ==
        replicated_batch_norm(images, 4, {.synchronized = true}));

  CHECK_THROWS_WITH_AS(
      replicated_batch_norm(images, 4, {.synchronized = true, .replica_group_size = 3}),
      "BatchNorm2D: replica_group_size 3 must divide the 4 replicas", ValueError);
  CHECK_THROWS_WITH_AS(BatchNorm2D({.replica_group_size = 2}),
                       doctest::Contains("BatchNorm2D: replica_group_size 2 groups the replicas "
                                         "whose statistics a synchronized layer shares"),
                       ValueError);
  CHECK_THROWS_WITH_AS(BatchNormalization({.synchronized = true, .replica_group_size = -1}),
                       "BatchNormalization: replica_group_size must be at least 0, got -1",
                       ValueError);
}

TEST_CASE("Batch norm layers: errors name the layer, what was expected and what was found") {
  CHECK_THROWS_WITH_AS(BatchNorm2D({.eps = -1}), "BatchNorm2D: eps must be at least 0, got -1",
                       ValueError);
  CHECK_THROWS_WITH_AS(BatchNorm2D({.momentum = 1.5}),
                       "BatchNorm2D: momentum must be in [0, 1], got 1.5", ValueError);
  CHECK_THROWS_WITH_AS(BatchNormalization({.momentum = -0.1}),
                       "BatchNormalization: momentum must be in [0, 1], got -0.1", ValueError);
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(BatchNorm2D().create_graph(TensorSpec{{2, 3, 4, 4}, float32}),
                       doctest::Contains("BatchNorm2D: build it in its training or its inference "
                                         "form"),
                       ValueError);
  CHECK_THROWS_WITH_AS(BatchNorm2D({.training = true}).create_graph(TensorSpec{{2, 3, 4}, float32}),
                       "BatchNorm2D: expected an input of rank 4 (N, C, H, W), got shape (2, 3, 4)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      BatchNorm2D({.training = true}).create_graph(TensorSpec{{2, 3, 4, 4}, int32}),
      "BatchNorm2D: expected a float32 or float16 input, got int32", DTypeError);
  CHECK_THROWS_WITH_AS(
      BatchNorm2D({.training = true}).create_graph(TensorSpec{{1, 3, 1, 1}, float32}),
      "BatchNorm2D: training needs more than 1 value per channel to estimate a "
      "variance, got 1 (input shape (1, 3, 1, 1))",
      ValueError);
  CHECK_THROWS_WITH_AS(
      BatchNormalization({.axis = 2, .training = true}).create_graph(TensorSpec{{2, 3}, float32}),
      "BatchNormalization: axis 2 is out of range for an input of shape (2, 3)", ShapeError);
}

} // namespace test_batch_norm_layers

namespace test_group_norm_layer {

TEST_CASE("GroupNorm: each image's group normalised, then weight and bias; errors") {
  const std::int64_t n = 2, c = 4, groups = 2, hw = 3;
  const auto x = pxl::test_addons::ramp({n, c, hw}, 2.0);
  const HostTensor weight(std::vector<float>{1.f, 2.f, -1.f, 0.5f}, {c});
  const HostTensor bias(std::vector<float>{0.f, 1.f, 0.5f, -0.5f}, {c});
  const auto r = pxl::test_addons::run_module(addons::GroupNorm(groups, 1e-3), std::array{x},
                                              std::nullopt, {{"weight", weight}, {"bias", bias}});
  CHECK(r.factories.keys_flat() == std::vector<std::string>{"weight", "bias"});
  const std::int64_t per_group = c / groups * hw;
  for (std::int64_t i = 0; i < n * groups; ++i) {
    double mean = 0, var = 0;
    for (std::int64_t k = 0; k < per_group; ++k)
      mean += x.item(i * per_group + k) / static_cast<double>(per_group);
    for (std::int64_t k = 0; k < per_group; ++k)
      var += std::pow(x.item(i * per_group + k) - mean, 2) / static_cast<double>(per_group);
    for (std::int64_t k = 0; k < per_group; ++k) {
      const std::int64_t at = i * per_group + k, channel = (at / hw) % c;
      CHECK(r.y.item(at) ==
            doctest::Approx((x.item(at) - mean) / std::sqrt(var + 1e-3) * weight.item(channel) +
                            bias.item(channel))
                .epsilon(1e-4)
                .scale(1.0));
    }
  }
  CHECK_THROWS_WITH_AS(addons::GroupNorm(0), "GroupNorm: num_groups must be at least 1, got 0",
                       ValueError);
  CHECK_THROWS_WITH_AS(addons::GroupNorm(2, -1.0), "GroupNorm: eps must be at least 0, got -1",
                       ValueError);
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_AS(addons::GroupNorm(3).create_graph(TensorSpec{{2, 4, 5}, float32}), ShapeError);
}

} // namespace test_group_norm_layer
