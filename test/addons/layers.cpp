// Layers: LayerNorm, Embedding and Dropout against closed forms on the emulator, their
// gradients through addons::autodiff, variable names and errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"
#include "run_module.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <optional>

using namespace pxl;
using addons::Dropout;
using addons::Embedding;
using addons::LayerNorm;
using Keys = std::vector<std::string>;
using test_addons::ramp;
using test_addons::run_module;

namespace {

HostTensor floats(std::vector<float> values, Shape shape) {
  return HostTensor(values, std::move(shape));
}

} // namespace

TEST_CASE("LayerNorm: variables, forward against the closed form, gradients") {
  const std::int64_t rows = 3, cols = 5;
  const auto x = ramp({rows, cols}, 2.0);
  const auto weight = floats({0.5f, -1.f, 2.f, 1.5f, 0.25f}, {cols});
  const auto bias = floats({0.1f, 0.2f, -0.3f, 0.f, 1.f}, {cols});
  const auto dy = ramp({rows, cols}, 0.7);
  const double eps = 1e-3;
  const auto r =
      run_module(LayerNorm(eps), std::array{x}, dy, {{"weight", weight}, {"bias", bias}});

  CHECK(r.factories.keys_flat() == Keys{"weight", "bias"});
  CHECK(r.factories.at("weight").initializer(float32, 0) == HostTensor::full({cols}, float32, 1.0));
  CHECK(r.factories.at("bias").initializer(float32, 0) == HostTensor::full({cols}, float32, 0.0));

  HostTensor y({rows, cols}, float32), dw({cols}, float32), db({cols}, float32);
  std::vector<double> dw_acc(cols), db_acc(cols);
  for (std::int64_t i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      mean += x.item(i * cols + j) / cols;
    for (std::int64_t j = 0; j < cols; ++j)
      var += std::pow(x.item(i * cols + j) - mean, 2) / cols;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double xhat = (x.item(i * cols + j) - mean) / std::sqrt(var + eps);
      y.data<float>()[static_cast<std::size_t>(i * cols + j)] =
          static_cast<float>(xhat * weight.item(j) + bias.item(j));
      // dL/dweight = Σ dy·x̂ and dL/dbias = Σ dy over the rows.
      dw_acc[static_cast<std::size_t>(j)] += dy.item(i * cols + j) * xhat;
      db_acc[static_cast<std::size_t>(j)] += dy.item(i * cols + j);
    }
  }
  for (std::int64_t j = 0; j < cols; ++j) {
    dw.data<float>()[static_cast<std::size_t>(j)] =
        static_cast<float>(dw_acc[static_cast<std::size_t>(j)]);
    db.data<float>()[static_cast<std::size_t>(j)] =
        static_cast<float>(db_acc[static_cast<std::size_t>(j)]);
  }
  CHECK(allclose(r.y, y, 1e-5, 1e-5));
  REQUIRE(r.grads.count("weight"));
  CHECK(allclose(r.grads.at("weight"), dw, 1e-5, 1e-5));
  CHECK(allclose(r.grads.at("bias"), db, 1e-5, 1e-5));
  // dL/dx of layer norm sums to zero over each row (the mean is subtracted).
  REQUIRE(r.grads.count("input0"));
  for (std::int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      s += r.grads.at("input0").item(i * cols + j);
    CHECK(s == doctest::Approx(0.0).epsilon(1e-5).scale(1.0));
  }
}

TEST_CASE("LayerNorm as a sub-module names its variables after the member") {
  struct Block : addons::Module<Block> {
    PXL_SUBMODULE(addons::Linear, fc, 4);
    PXL_SUBMODULE(LayerNorm, norm);
    Tensor build(Tensor x) { return norm(fc(x)); }
  };
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = Block{}.create_graph(TensorSpec{{2, 3}, float16});
  CHECK(facts.keys_flat() == Keys{"fc.weight", "fc.bias", "norm.weight", "norm.bias"});
  CHECK(facts.at("norm.weight").spec() == TensorSpec{{4}, float16});
  CHECK(fwd.args().at("norm.bias").id() == fwd.graph().name() + "/norm/bias");
}

TEST_CASE("Embedding: rows by index, zeros out of range, gradient rows summed per index") {
  const std::int64_t vocab = 4, hidden = 3;
  const HostTensor indices(std::vector<std::int32_t>{2, 0, 2, -1, 4, 3}, {2, 3});
  const auto table = ramp({vocab, hidden});
  const auto dy = ramp({2, 3, hidden}, 0.5);
  const auto r = run_module(Embedding(vocab, hidden), std::array{indices}, dy, {{"weight", table}});

  CHECK(r.factories.keys_flat() == Keys{"weight"});
  CHECK(r.factories.at("weight").spec() == TensorSpec{{vocab, hidden}, float32});
  CHECK(r.factories.at("weight").initializer.description == "normal(mean=0, std=0.02)");
  REQUIRE(r.y.shape() == Shape{2, 3, hidden});
  HostTensor dw({vocab, hidden}, float32);
  for (std::int64_t k = 0; k < indices.nelms(); ++k) {
    const auto row = static_cast<std::int64_t>(indices.item(k));
    const bool in_range = row >= 0 && row < vocab;
    for (std::int64_t h = 0; h < hidden; ++h) {
      CHECK(r.y.item(k * hidden + h) == (in_range ? table.item(row * hidden + h) : 0.0));
      if (in_range)
        dw.data<float>()[static_cast<std::size_t>(row * hidden + h)] +=
            static_cast<float>(dy.item(k * hidden + h));
    }
  }
  // Row 1 is never looked up: no gradient; row 2 twice: both contributions.
  REQUIRE(r.grads.count("weight"));
  CHECK(allclose(r.grads.at("weight"), dw, 1e-6, 1e-7));
  CHECK(r.grads.count("input0") == 0); // indices have no gradient
}

TEST_CASE("Dropout: seeded mask, scaled kept values, identity when p = 0 or not training") {
  const std::int64_t n = 20000;
  const auto x = HostTensor::full({n}, float32, 1.0);
  const HostTensor seed(std::vector<std::uint32_t>{11, 7}, {2});
  const double p = 0.25;
  const auto dy = ramp({n});
  const auto r = run_module(Dropout(p), std::array{x, seed}, dy);
  CHECK(r.factories.empty());

  std::int64_t dropped = 0;
  bool all_valid = true;
  for (std::int64_t i = 0; i < n; ++i) {
    const double y = r.y.item(i);
    dropped += y == 0.0;
    all_valid &= y == 0.0 || y == static_cast<double>(static_cast<float>(1.0 / (1.0 - p)));
  }
  CHECK(all_valid);
  // Binomial(n, p): the standard deviation is ~61 elements; allow 5 of them.
  CHECK(std::abs(static_cast<double>(dropped) - p * n) < 5 * std::sqrt(n * p * (1 - p)));

  // dL/dx = dy · mask / (1 − p), which for x = 1 is dy · y.
  REQUIRE(r.grads.count("input0"));
  HostTensor dx({n}, float32);
  for (std::int64_t i = 0; i < n; ++i)
    dx.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(dy.item(i) * r.y.item(i));
  CHECK(allclose(r.grads.at("input0"), dx, 1e-6, 1e-7));

  // The same seed drops the same elements of another input; another seed drops others.
  const auto x2 = ramp({n});
  const auto again = run_module(Dropout(p), std::array{x2, seed});
  HostTensor expected({n}, float32);
  for (std::int64_t i = 0; i < n; ++i)
    expected.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(
        r.y.item(i) == 0.0 ? 0.0
                           : static_cast<double>(x2.data<float>()[static_cast<std::size_t>(i)] *
                                                 static_cast<float>(1.0 / (1.0 - p))));
  CHECK(allclose(again.y, expected, 1e-6, 0.0));
  const HostTensor other_seed(std::vector<std::uint32_t>{12, 7}, {2});
  CHECK_FALSE(run_module(Dropout(p), std::array{x, other_seed}).y == r.y);

  // Identity.
  CHECK(run_module(Dropout(0.0), std::array{x2, seed}).y == x2);
  CHECK(run_module(Dropout(0.5, /*training=*/false), std::array{x2, seed}).y == x2);
}

TEST_CASE("Layer errors") {
  CHECK_THROWS_WITH_AS(LayerNorm(-1.0), doctest::Contains("LayerNorm: eps must be >= 0, got -1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(Embedding(0, 3),
                       doctest::Contains("Embedding: vocab_size and hidden_size must be positive, "
                                         "got 0 and 3"),
                       ValueError);
  CHECK_THROWS_WITH_AS(
      Embedding(4, 3, int32),
      doctest::Contains("Embedding: the table must be float32 or float16, got int32"), DTypeError);
  CHECK_THROWS_WITH_AS(Dropout(1.0),
                       doctest::Contains("Dropout: the drop probability p must satisfy 0 <= p < 1, "
                                         "got 1"),
                       ValueError);
  CHECK_THROWS_AS(Dropout(-0.1), ValueError);

  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(LayerNorm().create_graph(TensorSpec{{}, float32}),
                       doctest::Contains("LayerNorm: expected an input of rank >= 1"), ShapeError);
  CHECK_THROWS_WITH_AS(
      LayerNorm().create_graph(TensorSpec{{2, 3}, int32}),
      doctest::Contains("LayerNorm: expected a float32 or float16 input, got int32"), DTypeError);
  CHECK_THROWS_WITH_AS(Embedding(4, 3).create_graph(TensorSpec{{2}, float32}),
                       doctest::Contains("Embedding: expected int32 indices, got float32"),
                       DTypeError);
  const TensorSpec x{{4}, float32};
  CHECK_THROWS_WITH_AS(
      Dropout(0.1).create_graph(x, TensorSpec{{2}, int32}),
      doctest::Contains("Dropout: the seed must be uint32 of shape (2,), got int32"), DTypeError);
  CHECK_THROWS_WITH_AS(Dropout(0.1).create_graph(x, TensorSpec{{3}, uint32}),
                       doctest::Contains("Dropout: the seed must have shape (2,), got (3,)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(Dropout(0.1).create_graph(TensorSpec{{4}, int32}, TensorSpec{{2}, uint32}),
                       doctest::Contains("Dropout: expected a float32 or float16 input, got int32"),
                       DTypeError);
  // Checked when not training too, so switching modes cannot break a graph.
  CHECK_THROWS_AS(Dropout(0.1, false).create_graph(x, TensorSpec{{3}, uint32}), ShapeError);
}
