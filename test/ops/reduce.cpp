// Reductions: shape/dtype inference, attributes, values through the reference evaluator, and
// every error.
#include "op_test.hpp"

using namespace pxl;
using namespace pxl::testing;
using V = std::vector<double>;
using T = std::vector<Tensor>;
using Axes = std::optional<std::vector<std::int64_t>>;

TEST_CASE("reductions infer their shape from normalised axes") {
  ScratchGraph s;
  const Tensor x = s.input({2, 3, 4});
  CHECK(ops::sum(x).shape() == Shape{});
  CHECK(ops::sum(x, std::vector<std::int64_t>{}).shape() == Shape{});
  CHECK(ops::sum(x, std::nullopt, true).shape() == Shape{1, 1, 1});
  CHECK(ops::mean(x, {{1}}).shape() == Shape{2, 4});
  CHECK(ops::max(x, {{-1}}).shape() == Shape{2, 3});
  CHECK(ops::min(x, {{0, -1}}, true).shape() == Shape{1, 3, 1});
  CHECK(ops::sum(x, {{2, 0}}).shape() == Shape{3});
  CHECK(ops::sum(s.input({}, float32)).shape() == Shape{});
}

TEST_CASE("reductions record kind, sorted non-negative axes and keepdims") {
  ScratchGraph s;
  const Tensor x = s.input({2, 3, 4});
  const Op sum = *ops::sum(x, {{-1, 0}}, true).producer();
  CHECK(sum.kind() == OpKind::ReduceSum);
  CHECK(sum.attrs_as<ReduceAttrs>() == ReduceAttrs{{0, 2}, true});
  const Op all = *ops::mean(x).producer();
  CHECK(all.kind() == OpKind::ReduceMean);
  CHECK(all.attrs_as<ReduceAttrs>() == ReduceAttrs{{0, 1, 2}, false});
  CHECK(ops::max(x).producer()->kind() == OpKind::ReduceMax);
  CHECK(ops::min(x).producer()->kind() == OpKind::ReduceMin);
  const Op am = *ops::argmax(x, -2, true).producer();
  CHECK(am.kind() == OpKind::ArgMax);
  CHECK(am.attrs_as<AxisAttrs>() == AxisAttrs{1, true});
}

TEST_CASE("reductions keep the dtype; argmax gives int32") {
  ScratchGraph s;
  const Tensor h = s.input({2, 3}, float16);
  const Tensor i = s.input({2, 3}, int32);
  CHECK(ops::sum(h).dtype() == float16);
  CHECK(ops::mean(h).dtype() == float16);
  CHECK(ops::sum(i).dtype() == int32);
  CHECK(ops::max(i).dtype() == int32);
  CHECK(ops::min(i).dtype() == int32);
  CHECK(ops::argmax(h, 1).spec() == TensorSpec{{2}, int32});
  CHECK(ops::argmax(i, 0, true).spec() == TensorSpec{{1, 3}, int32});
}

namespace {
// x = [[1, 5, -2], [4, 0, 3]]
const V x23 = {1, 5, -2, 4, 0, 3};
} // namespace

TEST_CASE("sum, mean, max and min values in float32") {
  const auto x = tensor({2, 3}, float32, x23);
  check_values(evaluate1([](T t) { return ops::sum(t[0]); }, {x}), {{}, float32}, {11});
  check_values(evaluate1([](T t) { return ops::sum(t[0], {{0}}); }, {x}), {{3}, float32},
               {5, 5, 1});
  check_values(evaluate1([](T t) { return ops::sum(t[0], {{-1}}, true); }, {x}), {{2, 1}, float32},
               {4, 7});
  check_values(evaluate1([](T t) { return ops::mean(t[0], {{1}}); }, {x}), {{2}, float32},
               {4.0 / 3.0, 7.0 / 3.0});
  check_values(evaluate1([](T t) { return ops::mean(t[0]); }, {x}), {{}, float32}, {11.0 / 6.0});
  check_values(evaluate1([](T t) { return ops::max(t[0], {{0}}); }, {x}), {{3}, float32},
               {4, 5, 3});
  check_values(evaluate1([](T t) { return ops::max(t[0]); }, {x}), {{}, float32}, {5});
  check_values(evaluate1([](T t) { return ops::min(t[0], {{1}}, true); }, {x}), {{2, 1}, float32},
               {-2, 0});
}

TEST_CASE("reductions over several axes of a rank-3 tensor") {
  // x[i][j][k] = 100 i + 10 j + k, shape (2, 3, 2)
  V v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k)
        v.push_back(100 * i + 10 * j + k);
  const auto x = tensor({2, 3, 2}, float32, v);
  // Over axes 0 and 2, for each j: j=0: 0+1+100+101 = 202; j=1: 10+11+110+111 = 242;
  // j=2: 20+21+120+121 = 282.
  check_values(evaluate1(
                   [](T t) {
                     return ops::sum(t[0], {{0, -1}});
                   },
                   {x}),
               {{3}, float32}, {202, 242, 282});
  check_values(evaluate1(
                   [](T t) {
                     return ops::max(t[0], {{1, 2}}, true);
                   },
                   {x}),
               {{2, 1, 1}, float32}, {21, 121});
  check_values(evaluate1(
                   [](T t) {
                     return ops::mean(t[0], {{0, 1}});
                   },
                   {x}),
               {{2}, float32}, {60, 61});
}

TEST_CASE("int32 sum, max and min are exact") {
  const auto x = tensor({2, 3}, int32, x23);
  check_values(evaluate1([](T t) { return ops::sum(t[0], {{1}}); }, {x}), {{2}, int32}, {4, 7});
  check_values(evaluate1([](T t) { return ops::max(t[0]); }, {x}), {{}, int32}, {5});
  check_values(evaluate1([](T t) { return ops::min(t[0], {{0}}); }, {x}), {{3}, int32}, {1, 0, -2});
}

TEST_CASE("float16 reductions round their double result once") {
  // 2048 + 1 + 1 is 2050 exactly, though 2048 + 1 alone is not representable in float16.
  const auto x = tensor({3}, float16, {2048, 1, 1});
  check_values(evaluate1([](T t) { return ops::sum(t[0]); }, {x}), {{}, float16}, {2050}, 0);
  const auto y = tensor({2, 2}, float16, {0.5, 0.25, -1.5, 3});
  check_values(evaluate1([](T t) { return ops::mean(t[0], {{0}}); }, {y}), {{2}, float16},
               {-0.5, 1.625}, 0);
  check_values(evaluate1([](T t) { return ops::max(t[0], {{1}}); }, {y}), {{2}, float16}, {0.5, 3},
               0);
}

TEST_CASE("max and min propagate NaN") {
  const auto x = tensor({2, 2}, float32, {1, NAN, 2, 3});
  check_values(evaluate1([](T t) { return ops::max(t[0], {{1}}); }, {x}), {{2}, float32}, {NAN, 3});
  check_values(evaluate1([](T t) { return ops::min(t[0], {{1}}); }, {x}), {{2}, float32}, {NAN, 2});
}

TEST_CASE("argmax picks the first maximum along the axis") {
  // [[1, 5, 5], [4, 4, 3]]: ties resolve to the lower index.
  const auto x = tensor({2, 3}, float32, {1, 5, 5, 4, 4, 3});
  check_values(evaluate1([](T t) { return ops::argmax(t[0], 1); }, {x}), {{2}, int32}, {1, 0});
  check_values(evaluate1([](T t) { return ops::argmax(t[0], 0); }, {x}), {{3}, int32}, {1, 0, 0});
  check_values(evaluate1([](T t) { return ops::argmax(t[0], -1, true); }, {x}), {{2, 1}, int32},
               {1, 0});
  const auto xi = tensor({4}, int32, {-3, 7, 2, 7});
  check_values(evaluate1([](T t) { return ops::argmax(t[0]); }, {xi}), {{}, int32}, {1});
}

TEST_CASE("argmax counts NaN as the maximum, as NumPy does") {
  const auto x = tensor({2, 3}, float32, {1, NAN, 5, 7, 2, NAN});
  check_values(evaluate1([](T t) { return ops::argmax(t[0], 1); }, {x}), {{2}, int32}, {1, 2});
}

TEST_CASE("argmin picks the first minimum; NaN counts as the minimum") {
  const auto x = tensor({2, 3}, float32, {4, 1, 1, NAN, 2, NAN});
  check_values(evaluate1([](T t) { return ops::argmin(t[0], 1); }, {x}), {{2}, int32}, {1, 0});
  check_values(evaluate1([](T t) { return ops::argmin(t[0], 0, true); }, {x}), {{1, 3}, int32},
               {1, 0, 1});
}

TEST_CASE("cumsum: running sums along an axis") {
  const auto x = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  check_values(evaluate1([](T t) { return ops::cumsum(t[0], 1); }, {x}), {{2, 3}, float32},
               {1, 3, 6, 4, 9, 15});
  check_values(evaluate1([](T t) { return ops::cumsum(t[0], -2); }, {x}), {{2, 3}, float32},
               {1, 2, 3, 5, 7, 9});
  const auto big = tensor({2}, int32, {2147483647, 2});
  check_values(evaluate1([](T t) { return ops::cumsum(t[0]); }, {big}), {{2}, int32},
               {2147483647, -2147483647});
}

TEST_CASE("int32 sums wrap around like int32 arithmetic") {
  const auto x = tensor({2}, int32, {2147483647, 2});
  check_values(evaluate1([](T t) { return ops::sum(t[0]); }, {x}), {{}, int32}, {-2147483647});
}

TEST_CASE("reduction errors name the op, the dtype or the rank") {
  ScratchGraph s;
  const Tensor x = s.input({2, 3});
  const Tensor i = s.input({2, 3}, int32);
  const Tensor b = s.input({2, 3}, bool_);
  CHECK_THROWS_WITH_AS(ops::mean(i),
                       doctest::Contains("ReduceMean: expected a float32 or float16 tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::sum(b),
                       doctest::Contains("ReduceSum: expected a float32, float16 or int32 "
                                         "tensor, got"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::max(s.input({2}, uint32)), doctest::Contains("ReduceMax: expected"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::argmax(b), doctest::Contains("ArgMax: expected"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::sum(x, {{2}}),
                       doctest::Contains("ReduceSum: axis 2 is out of range for a tensor of "
                                         "rank 2"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::min(x, {{-3}}),
                       doctest::Contains("ReduceMin: axis -3 is out of range for a tensor of "
                                         "rank 2"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::max(x, {{1, -1}}),
                       doctest::Contains("ReduceMax: axis 1 is repeated in axes [1, -1] of a "
                                         "tensor of rank 2"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::argmax(x, 2),
                       doctest::Contains("ArgMax: axis 2 is out of range for a tensor of rank 2"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::argmax(s.input({})), doctest::Contains("ArgMax: axis 0"), ValueError);
  CHECK_THROWS_WITH_AS(ops::argmin(b), doctest::Contains("ArgMin: expected"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::cumsum(b), doctest::Contains("CumSum: expected"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::cumsum(x, 2),
                       doctest::Contains("CumSum: axis 2 is out of range for a tensor of rank 2"),
                       ValueError);
}

TEST_CASE("prod, l1, l2, sumsquare, logsum, logsumexp: closed forms, shapes and errors") {
  const auto x = tensor({2, 3}, float32, {1, -2, 3, 0.5, 4, -1});
  const auto rows = Axes{{1}};
  check_values(evaluate1([&](T t) { return ops::prod(t[0], rows); }, {x}), {{2}, float32},
               {-6, -2});
  check_values(evaluate1([&](T t) { return ops::l1(t[0], rows, true); }, {x}), {{2, 1}, float32},
               {6, 5.5});
  check_values(evaluate1([&](T t) { return ops::l2(t[0]); }, {x}), {{}, float32},
               {std::sqrt(31.25)});
  check_values(evaluate1([&](T t) { return ops::sumsquare(t[0], Axes{{0}}); }, {x}), {{3}, float32},
               {1.25, 20, 10});
  const auto p = tensor({2, 2}, float32, {1, 3, 0.5, 0.5});
  check_values(evaluate1([&](T t) { return ops::logsum(t[0], rows); }, {p}), {{2}, float32},
               {std::log(4.0), 0});
  check_values(evaluate1([&](T t) { return ops::logsumexp(t[0], rows); }, {x}), {{2}, float32},
               {std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0)),
                std::log(std::exp(0.5) + std::exp(4.0) + std::exp(-1.0))});
  check_values(
      evaluate1([&](T t) { return ops::prod(t[0]); }, {tensor({3}, int32, {65536, 65536, 3})}),
      {{}, int32}, {0}); // 2^32 · 3 wraps to 0
  ScratchGraph s;
  const Tensor i = s.input({2, 3}, int32);
  CHECK(ops::prod(i).dtype() == int32);
  CHECK(ops::logsumexp(s.input({2, 3, 4}), Axes{{0, 2}}, true).shape() == Shape{1, 3, 1});
  CHECK_THROWS_WITH_AS(ops::l1(i), doctest::Contains("ReduceL1: expected a float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::l2(i), doctest::Contains("ReduceL2: expected"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::sumsquare(i), doctest::Contains("ReduceSumSquare: expected"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::logsum(i), doctest::Contains("ReduceLogSum: expected"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::logsumexp(i), doctest::Contains("ReduceLogSumExp: expected"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::prod(s.input({2}, bool_)),
                       doctest::Contains("ReduceProd: expected a float32, float16 or int32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::logsumexp(s.input({2}), Axes{{1}}),
                       doctest::Contains("ReduceLogSumExp: axis 1 is out of range"), ValueError);
}

TEST_CASE(
    "topk: the k best along an axis with their indices; ties to the lower index, NaN on top") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto x = tensor({2, 4}, float32, {3, 1, 3, 2, 0, nan, -1, 5});
  auto largest = [](T t) {
    auto [v, i] = ops::topk(t[0], 3, 1);
    return T{v, i};
  };
  const auto got = testing::evaluate(largest, {x});
  check_values(got[0], {{2, 3}, float32}, {3, 3, 2, nan, 5, 0});
  check_values(got[1], {{2, 3}, int32}, {0, 2, 3, 1, 3, 0});
  auto smallest = [](T t) {
    auto [v, i] = ops::topk(t[0], 2, 0, false);
    return T{v, i};
  };
  const auto low = testing::evaluate(smallest, {x});
  check_values(low[0], {{2, 4}, float32}, {0, 1, -1, 2, 3, nan, 3, 5});
  check_values(low[1], {{2, 4}, int32}, {1, 0, 1, 0, 0, 1, 0, 1});
  ScratchGraph s;
  const Tensor t = s.input({2, 5});
  CHECK(ops::topk(t, 0).first.shape() == Shape{2, 0});
  CHECK(ops::topk(s.input({2, 5}, int32), 5).first.dtype() == int32);
  CHECK_THROWS_WITH_AS(ops::topk(t, 6),
                       doctest::Contains("TopK: k = 6 must be in [0, 5], the extent of axis -1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::topk(t, -1), doctest::Contains("k = -1"), ValueError);
  CHECK_THROWS_WITH_AS(ops::topk(t, 1, 2), doctest::Contains("TopK: axis 2 is out of range"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::topk(s.input({}), 1), doctest::Contains("is a scalar"), ValueError);
  CHECK_THROWS_WITH_AS(ops::topk(s.input({3}, bool_), 1),
                       doctest::Contains("TopK: expected a float32, float16 or int32"), DTypeError);
}

TEST_CASE("argmax over an empty axis is a ValueError, as in NumPy") {
  ScratchGraph s;
  const Tensor x = s.input({3, 0}, float32);
  CHECK_THROWS_WITH_AS(ops::argmax(x, 1), doctest::Contains("ArgMax: axis 1 of"), ValueError);
  CHECK_THROWS_WITH_AS(ops::argmax(x, -1), doctest::Contains("is empty"), ValueError);
  CHECK(ops::argmax(x, 0).shape() == Shape{0}); // a non-empty axis of an empty tensor is fine
  CHECK_THROWS_WITH_AS(ops::argmin(x, 1), doctest::Contains("has no argmin"), ValueError);
}

TEST_CASE("median: the lower median over the axes, its index in the reduced axes; NaN on top") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Rows of 4 (even: the smaller middle one) and columns of 2 (the smaller of the two).
  const auto x = tensor({2, 4}, float32, {3, 1, 4, 2, 0, nan, -1, 5});
  auto both = [](const Axes& axes, bool keepdims) {
    return [axes, keepdims](T t) {
      auto [v, i] = ops::median_with_indices(t[0], axes, keepdims);
      return T{v, i};
    };
  };
  auto rows = testing::evaluate(both(std::vector<std::int64_t>{1}, false), {x});
  check_values(rows[0], {{2}, float32}, {2, 0});
  check_values(rows[1], {{2}, int32}, {3, 0});
  auto cols = testing::evaluate(both(std::vector<std::int64_t>{0}, true), {x});
  check_values(cols[0], {{1, 4}, float32}, {0, 1, -1, 2});
  check_values(cols[1], {{1, 4}, int32}, {1, 0, 1, 0});
  // All 8 (NaN last): rank 3 of -1 0 1 2 3 4 5 NaN is 2, at flat index 3.
  auto all = testing::evaluate(both(std::nullopt, false), {x});
  check_values(all[0], {{}, float32}, {2});
  check_values(all[1], {{}, int32}, {3});
  // Over axes 0 and 2 of a (2, 2, 3): the reduced elements flattened as (axis 0, axis 2).
  const auto cube = tensor({2, 2, 3}, float32, {9, 8, 7, 1, 2, 3, 6, 5, 4, 0, -1, -2});
  auto outer = testing::evaluate(both(std::vector<std::int64_t>{2, 0}, false), {cube});
  check_values(outer[0], {{2}, float32}, {6, 0});
  check_values(outer[1], {{2}, int32}, {3, 3});
  // Equal elements rank in index order: of five 7s the median is the third.
  const auto ties = tensor({5}, int32, {7, 7, 7, 7, 7});
  auto tied = testing::evaluate(both(std::nullopt, false), {ties});
  check_values(tied[0], {{}, int32}, {7});
  check_values(tied[1], {{}, int32}, {2});
  // PopXL's median gives the values only; float16 keeps its values exactly.
  const auto h = tensor({3}, float16, {0.1, -2.5, 65504});
  check_values(evaluate1([](T t) { return ops::median(t[0]); }, {h}), {{}, float16},
               {ref::round_to(float16, 0.1)});
  ScratchGraph s;
  const Tensor t = s.input({2, 3});
  const Op m = *ops::median(t, {{-1}}, true).producer();
  CHECK(m.kind() == OpKind::ReduceMedian);
  CHECK(m.attrs_as<ReduceAttrs>() == ReduceAttrs{{1}, true});
  CHECK(ops::median(t, {{-1}}, true).shape() == Shape{2, 1});
  CHECK_THROWS_WITH_AS(ops::median(s.input({2, 0}), {{1}}),
                       doctest::Contains("ReduceMedian: the reduced axes [1] of"), ValueError);
  CHECK_THROWS_WITH_AS(ops::median(t, {{1, -1}}),
                       doctest::Contains("ReduceMedian: axis 1 is repeated"), ValueError);
  CHECK_THROWS_WITH_AS(ops::median(s.input({3}, bool_)),
                       doctest::Contains("ReduceMedian: expected a float32, float16 or int32"),
                       DTypeError);
}

TEST_CASE("histogram: counts between sorted levels, of |x| on request; errors") {
  // PopART's own case: levels 0.1, 3.1, 7 (PopART sorts them; PopXL requires them sorted).
  const auto x = tensor({10}, float32, {-10, -0.1, 0.01, 0.09, 1.1, 4, 6.9, 7, 8, 900});
  const std::vector<double> levels{0.1, 3.1, 7};
  check_values(evaluate1([&](T t) { return ops::histogram(t[0], levels, false); }, {x}),
               {{4}, uint32}, {4, 1, 2, 3});
  check_values(evaluate1([&](T t) { return ops::histogram(t[0], levels, true); }, {x}),
               {{4}, uint32}, {2, 2, 2, 4});
  // float16: the levels are rounded to float16 first (0.1 to 0.0999755859375, so the float16
  // 0.1 is not below it); NaN lands in the last bin; the whole tensor counts.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto h = tensor({2, 2}, float16, {0.1, 0.0999, nan, -1});
  check_values(evaluate1([&](T t) { return ops::histogram(t[0], {0.1}, false); }, {h}),
               {{2}, uint32}, {2, 2});
  ScratchGraph s;
  const Tensor t = s.input({2, 3});
  const Op op = *ops::histogram(t, levels, true).producer();
  CHECK(op.kind() == OpKind::Histogram);
  CHECK(op.attrs<OpKind::Histogram>() == HistogramAttrs{levels, true});
  CHECK(!is_differentiable(OpKind::Histogram));
  CHECK_THROWS_WITH_AS(ops::histogram(t, {0.1, 7, 3.1}, false),
                       doctest::Contains("Histogram: the levels must increase strictly, but level "
                                         "2 (3.100000) does not exceed level 1 (7.000000)"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::histogram(t, {1, 1}, false),
                       doctest::Contains("must increase strictly"), ValueError);
  CHECK_THROWS_WITH_AS(ops::histogram(t, {}, false),
                       doctest::Contains("Histogram: needs at least one level"), ValueError);
  CHECK_THROWS_WITH_AS(ops::histogram(s.input({3}, int32), {0}, false),
                       doctest::Contains("Histogram: expected a float32 or float16 tensor"),
                       DTypeError);
}

TEST_CASE("lamb_square: the sum of squares as a float32 scalar") {
  const auto x = tensor({2, 2}, float16, {1, -2, 0.5, 3});
  check_values(evaluate1([](T t) { return ops::lamb_square(t[0]); }, {x}), {{}, float32}, {14.25});
  // In double: 3e-4² summed 10000 times is 9e-4 to float32 rounding.
  HostTensor small({10000}, float32);
  for (auto& v : small.data<float>())
    v = 3e-4f;
  const double want = 10000.0 * static_cast<double>(3e-4f) * static_cast<double>(3e-4f);
  CHECK(evaluate1([](T t) { return ops::lamb_square(t[0]); }, {small}).item(0) ==
        static_cast<double>(static_cast<float>(want)));
  ScratchGraph s;
  CHECK(ops::lamb_square(s.input({3}, float16)).spec() == TensorSpec{{}, float32});
  CHECK(!is_differentiable(OpKind::LambSquare));
  CHECK_THROWS_WITH_AS(ops::lamb_square(s.input({3}, int32)),
                       doctest::Contains("LambSquare: expected a float32 or float16 tensor"),
                       DTypeError);
}
