// Random ops: specs and attributes, the counter-based values, determinism, sample moments, and
// every error.
#include "op_test.hpp"

#include "core/random.hpp"

#include <cmath>
#include <set>

using namespace pxl;
using namespace pxl::testing;
using T = std::vector<Tensor>;

namespace {
constexpr std::int64_t samples = 100000;

struct Moments {
  double mean = 0.0, variance = 0.0, min = INFINITY, max = -INFINITY;
};

Moments moments(const HostTensor& t) {
  Moments m;
  for (std::int64_t i = 0; i < t.nelms(); ++i) {
    const double v = t.item(i);
    m.mean += v;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  m.mean /= static_cast<double>(t.nelms());
  for (std::int64_t i = 0; i < t.nelms(); ++i)
    m.variance += std::pow(t.item(i) - m.mean, 2);
  m.variance /= static_cast<double>(t.nelms());
  return m;
}
} // namespace

TEST_CASE("random_uniform and random_normal: spec, attributes, the seed as only input") {
  ScratchGraph s;
  const Tensor sd = s.input({2}, uint32);
  const Tensor u = ops::random_uniform(sd, {3, 4}, -1.0, 2.0);
  CHECK(u.spec() == TensorSpec{{3, 4}, float32});
  const Op uop = *u.producer();
  CHECK(uop.kind() == OpKind::RandomUniform);
  CHECK(uop.attrs_as<CreateAttrs>() ==
        CreateAttrs{TensorSpec{{3, 4}, float32}, InitType::zero, -1.0, 2.0});
  CHECK(uop.inputs() == std::vector<Tensor>{sd});
  const Tensor n = ops::random_normal(sd, {5}, 0.5, 3.0, float16);
  CHECK(n.spec() == TensorSpec{{5}, float16});
  CHECK(n.producer()->kind() == OpKind::RandomNormal);
  CHECK(n.producer()->attrs_as<CreateAttrs>() ==
        CreateAttrs{TensorSpec{{5}, float16}, InitType::zero, 0.5, 3.0});
  CHECK(ops::random_uniform(sd, {}).spec() == TensorSpec{{}, float32});
}

TEST_CASE("random_uniform: element i is low + (high - low) * random_uniform01(seed, i)") {
  const auto u = evaluate1(
      [](T t) {
        return ops::random_uniform(t[0], {2, 3}, -1.0, 3.0);
      },
      {seed(5, 9)});
  REQUIRE(u.spec() == TensorSpec{{2, 3}, float32});
  for (std::int64_t i = 0; i < 6; ++i) {
    const double want =
        -1.0 + 4.0 * pxl::detail::random_uniform01(5, 9, static_cast<std::uint64_t>(i));
    CHECK(u.item(i) == static_cast<double>(static_cast<float>(want)));
  }
}

TEST_CASE("random_normal: element i is mean + stddev * random_standard_normal(seed, i)") {
  const auto n =
      evaluate1([](T t) { return ops::random_normal(t[0], {4}, 1.0, 0.5); }, {seed(3, 4)});
  for (std::int64_t i = 0; i < 4; ++i) {
    const double want =
        1.0 + 0.5 * pxl::detail::random_standard_normal(3, 4, static_cast<std::uint64_t>(i));
    CHECK(n.item(i) == static_cast<double>(static_cast<float>(want)));
  }
}

TEST_CASE("random values are a function of the seed") {
  auto uniform = [](std::uint32_t s0, std::uint32_t s1) {
    return evaluate1([](T t) { return ops::random_uniform(t[0], {256}); }, {seed(s0, s1)});
  };
  auto normal = [](std::uint32_t s0, std::uint32_t s1) {
    return evaluate1([](T t) { return ops::random_normal(t[0], {256}); }, {seed(s0, s1)});
  };
  CHECK(uniform(1, 2) == uniform(1, 2));
  CHECK(normal(1, 2) == normal(1, 2));
  CHECK_FALSE(uniform(1, 2) == uniform(2, 1));
  CHECK_FALSE(uniform(1, 2) == uniform(1, 3));
  CHECK_FALSE(normal(0, 0) == normal(0, 1));
  // Within one tensor the values are distinct draws, not a repeated one.
  const auto v = values(uniform(1, 2));
  const std::set<double> distinct(v.begin(), v.end());
  CHECK(distinct.size() > 250);
}

TEST_CASE("random_uniform moments over 100k samples") {
  const double low = -2.0, high = 6.0;
  const auto u = evaluate1([=](T t) { return ops::random_uniform(t[0], {samples}, low, high); },
                           {seed(2024, 11)});
  const Moments m = moments(u);
  // Mean (low + high) / 2 = 2 with standard error 8 / sqrt(12 n) ~ 0.0073; variance
  // (high - low)^2 / 12 = 5.333 with standard error ~ 0.019. Five standard errors each.
  CHECK(std::abs(m.mean - 2.0) < 0.037);
  CHECK(std::abs(m.variance - 64.0 / 12.0) < 0.1);
  CHECK(m.min >= low);
  CHECK(m.max < high);
  CHECK(m.min < low + 0.01);
  CHECK(m.max > high - 0.01);
}

TEST_CASE("random_normal moments over 100k samples") {
  const double mean = 1.5, stddev = 2.0;
  const auto n = evaluate1([=](T t) { return ops::random_normal(t[0], {samples}, mean, stddev); },
                           {seed(7, 77)});
  const Moments m = moments(n);
  // Standard errors: mean 2 / sqrt(n) ~ 0.0063; variance 4 sqrt(2 / n) ~ 0.018.
  CHECK(std::abs(m.mean - mean) < 0.032);
  CHECK(std::abs(m.variance - stddev * stddev) < 0.09);
  // 100k normal draws reach beyond 3.5 sigma on both sides (P(miss) ~ 1e-10).
  CHECK(m.min < mean - 3.5 * stddev);
  CHECK(m.max > mean + 3.5 * stddev);
  // About 68.27% within one standard deviation.
  std::int64_t within = 0;
  for (double v : values(n))
    within += std::abs(v - mean) < stddev;
  CHECK(std::abs(static_cast<double>(within) / samples - 0.6827) < 0.0075);
}

TEST_CASE("random ops in float16 stay in range") {
  const auto u = evaluate1([](T t) { return ops::random_uniform(t[0], {1000}, 0.0, 1.0, float16); },
                           {seed(1, 1)});
  REQUIRE(u.dtype() == float16);
  const Moments m = moments(u);
  CHECK(m.min >= 0.0);
  CHECK(m.max <= 1.0); // rounding to float16 may reach high itself
  CHECK(std::abs(m.mean - 0.5) < 0.05);
  const auto n = evaluate1([](T t) { return ops::random_normal(t[0], {1000}, 0.0, 1.0, float16); },
                           {seed(1, 1)});
  CHECK(n.dtype() == float16);
  CHECK(std::abs(moments(n).mean) < 0.16);
}

TEST_CASE("split_random_seed: n uint32[2] seeds from split_seed_word") {
  ScratchGraph s;
  const Tensor sd = s.input({2}, uint32);
  const auto two = ops::split_random_seed(sd);
  REQUIRE(two.size() == 2);
  CHECK(two[0].spec() == TensorSpec{{2}, uint32});
  CHECK(two[1].spec() == TensorSpec{{2}, uint32});
  const Op op = *two[0].producer();
  CHECK(op == *two[1].producer());
  CHECK(op.kind() == OpKind::SplitRandomSeed);
  CHECK(op.attrs_as<ScalarAttrs>().a == 2.0);
  CHECK(ops::split_random_seed(sd, 1).size() == 1);
}

TEST_CASE("split_random_seed values are distinct, deterministic seeds") {
  const auto outs = evaluate([](T t) { return ops::split_random_seed(t[0], 4); }, {seed(10, 20)});
  REQUIRE(outs.size() == 4);
  std::set<std::pair<std::uint32_t, std::uint32_t>> seen{{10, 20}};
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const auto v = outs[k].data<std::uint32_t>();
    CHECK(v[0] == pxl::detail::split_seed_word(10, 20, k, 0));
    CHECK(v[1] == pxl::detail::split_seed_word(10, 20, k, 1));
    seen.insert({v[0], v[1]});
  }
  CHECK(seen.size() == 5);
  const auto again = evaluate([](T t) { return ops::split_random_seed(t[0], 4); }, {seed(10, 20)});
  CHECK(again == outs);
  // Chained: the split seeds drive generators whose streams differ.
  const auto two = evaluate(
      [](T t) {
        const auto s = ops::split_random_seed(t[0]);
        return std::vector<Tensor>{ops::random_uniform(s[0], {64}),
                                   ops::random_uniform(s[1], {64})};
      },
      {seed(10, 20)});
  CHECK_FALSE(two[0] == two[1]);
}

TEST_CASE("random op errors name the op and what the seed or dtype must be") {
  ScratchGraph s;
  const Tensor sd = s.input({2}, uint32);
  CHECK_THROWS_WITH_AS(ops::random_uniform(s.input({2}, int32), {3}),
                       doctest::Contains("RandomUniform: the seed must be uint32, got"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::random_normal(s.input({1, 2}, uint32), {3}),
                       doctest::Contains("RandomNormal: the seed must have shape (2,), got"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::random_uniform(sd, {3}, 0.0, 1.0, int32),
                       doctest::Contains("RandomUniform: dtype must be float32 or float16, got "
                                         "int32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::random_normal(sd, {3}, 0.0, 1.0, bool_),
                       doctest::Contains("RandomNormal: dtype must be float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::random_uniform(sd, {2, -1}),
                       doctest::Contains("RandomUniform: shape (2, -1) has a negative dimension"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::random_normal(sd, {std::int64_t{1} << 62, 4}),
                       doctest::Contains("RandomNormal: shape (4611686018427387904, 4) has more "
                                         "elements than a 64-bit count can hold"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::split_random_seed(s.input({2}, float32)),
                       doctest::Contains("SplitRandomSeed: the seed must be uint32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::split_random_seed(s.input({4}, uint32)),
                       doctest::Contains("SplitRandomSeed: the seed must have shape (2,)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::split_random_seed(sd, 0),
                       doctest::Contains("SplitRandomSeed: the number of seeds n must be >= 1, "
                                         "got 0"),
                       ValueError);
}

TEST_CASE("random_uniform needs finite low <= high; random_normal a finite stddev >= 0") {
  ScratchGraph s;
  const Tensor sd = s.input({2}, uint32);
  CHECK_THROWS_WITH_AS(ops::random_uniform(sd, {3}, 2.0, 1.0),
                       doctest::Contains("RandomUniform: expected finite low <= high, got low = 2 "
                                         "and high = 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::random_uniform(sd, {3}, 0.5, 0.25),
                       doctest::Contains("low = 0.5 and high = 0.25"), ValueError);
  CHECK_THROWS_AS(ops::random_uniform(sd, {3}, NAN, 1.0), ValueError);
  CHECK_THROWS_AS(ops::random_uniform(sd, {3}, 0.0, INFINITY), ValueError);
  CHECK_THROWS_AS(ops::random_uniform(sd, {3}, -1e308, 1e308), ValueError); // high - low is inf
  CHECK_THROWS_WITH_AS(ops::random_normal(sd, {3}, 0.0, -1.0),
                       doctest::Contains("RandomNormal: expected a finite mean and a finite "
                                         "stddev >= 0, got mean = 0 and stddev = -1"),
                       ValueError);
  CHECK_THROWS_AS(ops::random_normal(sd, {3}, NAN, 1.0), ValueError);
  // low == high is a constant tensor; stddev 0 the mean.
  CHECK(ops::random_uniform(sd, {3}, 1.5, 1.5).shape() == Shape{3});
  CHECK(ops::random_normal(sd, {3}, 1.5, 0.0).shape() == Shape{3});
}
