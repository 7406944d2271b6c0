// Reduction kernels over arbitrary axes, and argmax.
#include "harness.hpp"

#include "pxl/ops/reduce.hpp"

using namespace pxl;
using namespace pxl::testing;

namespace {
using Axes = std::optional<std::vector<std::int64_t>>;

/// Calls `check(x, shape, axes, keep, d)` for every case (a shape and its axes), with and
/// without keepdims, on random float32, float16 and int32 tensors (ints in [-int_range,
/// int_range], floats in [-2, 2]), the case captured for the report.
template <typename Check>
void for_each_reduction(const std::vector<std::pair<Shape, Axes>>& cases, double int_range,
                        Check check) {
  for (DType d : {float32, float16, int32})
    for (const auto& c : cases)
      for (bool keep : {false, true}) {
        CAPTURE(d);
        CAPTURE(to_string(c.first));
        CAPTURE(keep);
        const double range = d == int32 ? int_range : 2;
        check(random_tensor(c.first, d, -range, range), c.first, c.second, keep, d);
      }
}
} // namespace

TEST_CASE("reductions over any axes match the reference for every dtype and worker count") {
  const std::vector<std::pair<Shape, Axes>> cases = {
      {{7}, std::nullopt},       {{13, 5}, Axes{{0}}},   {{13, 5}, Axes{{1}}},
      {{3, 4, 5}, Axes{{0, 2}}}, {{3, 4, 5}, Axes{{1}}}, {{2, 3, 4, 5}, Axes{{1, 3}}},
      {{13, 7}, std::nullopt}};
  for_each_reduction(
      cases, 50, [](const HostTensor& x, const Shape& shape, const Axes& axes, bool keep, DType d) {
        check_kernel([&](Tensor t) { return ops::sum(t, axes, keep); }, {x});
        check_kernel([&](Tensor t) { return ops::max(t, axes, keep); }, {x});
        check_kernel([&](Tensor t) { return ops::min(t, axes, keep); }, {x});
        check_kernel([&](Tensor t) { return ops::prod(t, axes, keep); },
                     {d == int32 ? x : random_tensor(shape, d, 0.8, 1.25)});
        if (d == int32)
          return;
        check_kernel([&](Tensor t) { return ops::mean(t, axes, keep); }, {x});
        check_kernel([&](Tensor t) { return ops::l1(t, axes, keep); }, {x});
        check_kernel([&](Tensor t) { return ops::l2(t, axes, keep); }, {x});
        check_kernel([&](Tensor t) { return ops::sumsquare(t, axes, keep); }, {x});
        check_kernel([&](Tensor t) { return ops::logsumexp(t, axes, keep); }, {x});
        check_kernel([&](Tensor t) { return ops::logsum(t, axes, keep); },
                     {random_tensor(shape, d, 0.1, 2)});
      });
}

TEST_CASE("topk matches the reference for every dtype, axis, k, direction and worker count") {
  for (DType d : {float32, float16, int32})
    for (const auto& c : std::vector<std::pair<Shape, std::int64_t>>{
             {{9}, 0}, {{4, 7}, 1}, {{4, 7}, 0}, {{3, 5, 6}, 1}, {{3, 5, 6}, -1}})
      for (bool largest : {true, false}) {
        const Shape& shape = c.first; // not structured bindings: the lambdas capture them
        const std::int64_t axis = c.second;
        const std::int64_t n = shape[static_cast<std::size_t>(axis < 0 ? axis + 3 : axis)];
        // int32 in [-3, 3]: many ties, which go to the lower index.
        const auto x = random_tensor(shape, d, d == int32 ? -3 : -2, d == int32 ? 3 : 2);
        for (std::int64_t k : {std::int64_t{0}, std::int64_t{1}, n / 2, n}) {
          CAPTURE(d);
          CAPTURE(to_string(shape));
          CAPTURE(axis);
          CAPTURE(largest);
          CAPTURE(k);
          check_kernel(
              [&](Tensor t) {
                auto [v, i] = ops::topk(t, k, axis, largest);
                return std::vector<Tensor>{v, i};
              },
              {x});
        }
      }
}

TEST_CASE("logsumexp folds without overflow; +inf, -inf and NaN as their limits") {
  const double inf = INFINITY;
  // Rows: huge values (exp overflows even double), all -inf, one +inf, a NaN, and nothing
  // large, against their closed forms.
  const auto x =
      tensor({5, 3}, float32, {1000, 999, 998, -inf, -inf, -inf, 1, inf, 2, 1, NAN, 2, -1, 0, 1});
  for (unsigned workers : {1u, 3u}) {
    CAPTURE(workers);
    const auto y = run_kernel(make_case([](Tensor t) { return ops::logsumexp(t, Axes{{1}}); }, {x}),
                              workers)[0];
    CHECK(y.item(0) == doctest::Approx(1000 + std::log(1 + std::exp(-1.0) + std::exp(-2.0))));
    CHECK(y.item(1) == -inf);
    CHECK(y.item(2) == inf);
    CHECK(std::isnan(y.item(3)));
    CHECK(y.item(4) == doctest::Approx(std::log(std::exp(-1.0) + 1 + std::exp(1.0))));
  }
}

TEST_CASE("reductions keeping a long last axis match the reference for every worker count") {
  // Outputs contiguous in the input are folded in blocks: runs longer than a block, shorter,
  // and split between workers, each output still folding its elements in order.
  const std::vector<std::pair<Shape, Axes>> cases = {
      {{3, 600}, Axes{{0}}}, {{2, 3, 300}, Axes{{0, 1}}}, {{4, 2, 520}, Axes{{1}}}};
  for (DType d : {float32, float16, int32})
    for (const auto& c : cases) {
      const auto& axes = c.second;
      CAPTURE(d);
      CAPTURE(to_string(c.first));
      const auto x = random_tensor(c.first, d, d == int32 ? -50 : -2, d == int32 ? 50 : 2);
      check_kernel([&](Tensor t) { return ops::sum(t, axes); }, {x});
      check_kernel([&](Tensor t) { return ops::max(t, axes); }, {x});
      if (d != int32)
        check_kernel([&](Tensor t) { return ops::mean(t, axes); }, {x});
      check_kernel([](Tensor t) { return ops::argmin(t, 0); }, {x});
    }
}

TEST_CASE("reductions: hand-computed values") {
  const auto x = tensor({2, 3}, float32, {1, 5, 3, 4, 2, 6});
  check_values(check_kernel([](Tensor t) { return ops::sum(t, Axes{{0}}); }, {x})[0],
               {{3}, float32}, {5, 7, 9});
  check_values(check_kernel([](Tensor t) { return ops::mean(t, Axes{{1}}, true); }, {x})[0],
               {{2, 1}, float32}, {3, 4});
  check_values(check_kernel([](Tensor t) { return ops::max(t); }, {x})[0], {{}, float32}, {6});
  check_values(check_kernel([](Tensor t) { return ops::min(t, Axes{{1}}); }, {x})[0],
               {{2}, float32}, {1, 2});
  check_values(check_kernel([](Tensor t) { return ops::argmax(t, 1); }, {x})[0], {{2}, int32},
               {1, 2});
  check_values(check_kernel([](Tensor t) { return ops::argmax(t, 0, true); }, {x})[0],
               {{1, 3}, int32}, {1, 0, 1});
}

TEST_CASE("argmax picks the first maximum and matches the reference") {
  const auto ties = tensor({2, 4}, float32, {3, 7, 7, 1, 2, 2, 2, 2});
  check_values(check_kernel([](Tensor t) { return ops::argmax(t, 1); }, {ties})[0], {{2}, int32},
               {1, 0});
  for (DType d : {float32, float16, int32})
    for (std::int64_t axis : {0, 1, 2}) {
      CAPTURE(d);
      CAPTURE(axis);
      check_kernel([axis](Tensor t) { return ops::argmax(t, axis); },
                   {random_tensor({3, 13, 7}, d, -100, 100)});
    }
}

TEST_CASE("argmin and cumsum match the reference for every dtype, axis and worker count") {
  for (DType d : {float32, float16, int32})
    for (std::int64_t axis : {0, 1, 2}) {
      CAPTURE(d);
      CAPTURE(axis);
      const auto x = random_tensor({3, 13, 7}, d, -100, 100);
      check_kernel([axis](Tensor t) { return ops::argmin(t, axis); }, {x});
      check_kernel([axis](Tensor t) { return ops::cumsum(t, axis); }, {x});
    }
  // A long float32 scan stays within float rounding of the exact running sum (double inside).
  check_kernel([](Tensor t) { return ops::cumsum(t, 0); }, {random_tensor({5000}, float32)});
}

TEST_CASE("float32 sums are accurate over long reductions") {
  // 10,000 terms of 0.1: a float accumulator drifts by ~1e-4 relative; the kernel must not.
  const HostTensor x = HostTensor::full({10000}, float32, 0.1);
  const double term = static_cast<double>(0.1f);
  CHECK(check_kernel([](Tensor t) { return ops::sum(t); }, {x})[0].item() ==
        doctest::Approx(10000 * term).epsilon(1e-7));
  CHECK(check_kernel([](Tensor t) { return ops::mean(t); }, {x})[0].item() ==
        doctest::Approx(term).epsilon(1e-7));
}

TEST_CASE("reducing zero elements gives the fold's identity, in kernel and reference alike") {
  // sum 0, mean NaN, max -inf / min +inf (int32: INT32_MIN / INT32_MAX): NumPy raises for an
  // empty max or min, pxl defines them.
  const double inf = INFINITY;
  for (DType d : {float32, float16, int32}) {
    CAPTURE(d);
    const bool f = d != int32;
    const HostTensor x(Shape{3, 0}, d);
    const double lowest = f ? -inf : -2147483648.0, highest = f ? inf : 2147483647.0;
    check_values(check_kernel([](Tensor t) { return ops::sum(t, Axes{{1}}); }, {x})[0], {{3}, d},
                 {0, 0, 0});
    check_values(check_kernel([](Tensor t) { return ops::max(t, Axes{{1}}); }, {x})[0], {{3}, d},
                 {lowest, lowest, lowest});
    check_values(check_kernel([](Tensor t) { return ops::min(t); }, {x})[0], {{}, d}, {highest});
    if (f)
      check_values(check_kernel([](Tensor t) { return ops::mean(t, Axes{{1}}, true); }, {x})[0],
                   {{3, 1}, d}, {NAN, NAN, NAN});
    // Reducing the empty axis away leaves nothing: an empty result, no work.
    CHECK(check_kernel([](Tensor t) { return ops::sum(t, Axes{{0}}); }, {x})[0].nelms() == 0);
  }
}

TEST_CASE("float16 reductions are bitwise a float fold in order, across conversion blocks") {
  // [3, 600, 5]: over axis 1 the outputs are strided and each folds 600 strided elements (more
  // than a block); over axis 0 each block of contiguous outputs folds whole rows, 3000 of them
  // in more than one block.
  const auto x = random_tensor({3, 600, 5}, float16, -2, 2, 4);
  const auto xs = x.data<half>();
  const auto at = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
    return static_cast<float>(xs[static_cast<std::size_t>((i * 600 + j) * 5 + k)]);
  };
  const auto sum1 = check_kernel([](Tensor t) { return ops::sum(t, Axes{{1}}); }, {x})[0];
  const auto max1 = check_kernel([](Tensor t) { return ops::max(t, Axes{{1}}); }, {x})[0];
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t k = 0; k < 5; ++k) {
      float s = 0, m = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j < 600; ++j) {
        s += at(i, j, k);
        m = std::max(m, at(i, j, k));
      }
      CAPTURE(i);
      CAPTURE(k);
      CHECK(sum1.data<half>()[static_cast<std::size_t>(i * 5 + k)].bits() == half(s).bits());
      CHECK(max1.data<half>()[static_cast<std::size_t>(i * 5 + k)].bits() == half(m).bits());
    }
  const auto sum0 = check_kernel([](Tensor t) { return ops::sum(t, Axes{{0}}); }, {x})[0];
  const auto mean0 = check_kernel([](Tensor t) { return ops::mean(t, Axes{{0}}); }, {x})[0];
  for (std::int64_t o = 0; o < 3000; ++o) {
    float s = 0;
    for (std::int64_t i = 0; i < 3; ++i)
      s += at(i, o / 5, o % 5);
    CAPTURE(o);
    CHECK(sum0.data<half>()[static_cast<std::size_t>(o)].bits() == half(s).bits());
    CHECK(mean0.data<half>()[static_cast<std::size_t>(o)].bits() ==
          half(static_cast<float>(static_cast<double>(s) / 3.0)).bits());
  }
  const auto arg = check_kernel([](Tensor t) { return ops::argmax(t, 1); }, {x})[0];
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t k = 0; k < 5; ++k) {
      std::int32_t best = 0;
      for (std::int32_t j = 1; j < 600; ++j)
        best = at(i, j, k) > at(i, best, k) ? j : best;
      CHECK(arg.data<std::int32_t>()[static_cast<std::size_t>(i * 5 + k)] == best);
    }
}

TEST_CASE("median matches the reference for every dtype, axes and worker count") {
  const std::vector<std::pair<Shape, Axes>> cases = {
      {{7}, std::nullopt},      {{8}, std::nullopt},       {{13, 6}, Axes{{0}}},
      {{13, 6}, Axes{{1}}},     {{3, 4, 5}, Axes{{0, 2}}}, {{2, 3, 4, 5}, Axes{{1, 3}}},
      {{1, 9, 1}, std::nullopt}};
  // int32 in [-3, 3]: many ties, ranked by index.
  for_each_reduction(cases, 3,
                     [](const HostTensor& x, const Shape&, const Axes& axes, bool keep, DType) {
                       check_kernel(
                           [&](Tensor t) {
                             auto [v, i] = ops::median_with_indices(t, axes, keep);
                             return std::vector<Tensor>{v, i};
                           },
                           {x});
                     });
  // NaN ranks last: of 1, NaN, NaN, 0, 2 the median (rank 2) is 2, at index 4.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto got = check_kernel(
      [](Tensor t) {
        auto [v, i] = ops::median_with_indices(t);
        return std::vector<Tensor>{v, i};
      },
      {tensor({5}, float32, {1, nan, nan, 0, 2})});
  check_values(got[0], {{}, float32}, {2});
  check_values(got[1], {{}, int32}, {4});
}

TEST_CASE("histogram matches the reference for every dtype and worker count") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto x = tensor({8}, float32, {-3, -1, -0.5, 0, 0.5, 1, 3, nan});
  check_values(check_kernel(
                   [](Tensor t) {
                     return ops::histogram(t, {-1, 0, 1}, false);
                   },
                   {x})[0],
               {{4}, uint32}, {1, 2, 2, 3});
  check_values(check_kernel(
                   [](Tensor t) {
                     return ops::histogram(t, {-1, 0, 1}, true);
                   },
                   {x})[0],
               {{4}, uint32}, {0, 0, 3, 5});
  for (DType d : {float32, float16})
    for (bool absolute : {false, true}) {
      CAPTURE(d);
      CAPTURE(absolute);
      check_kernel(
          [absolute](Tensor t) {
            return ops::histogram(t, {-1.5, -0.3, 0.1, 0.7, 1.9}, absolute);
          },
          {random_tensor({17, 23}, d, -2, 2, 5)});
    }
}

TEST_CASE("lamb_square: Σx² in double, rounded to float32 once") {
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    const auto x = random_tensor({37, 11}, d, -3, 3, 6);
    const auto got = check_kernel([](Tensor t) { return ops::lamb_square(t); }, {x})[0];
    double sum = 0.0;
    for (std::int64_t i = 0; i < x.nelms(); ++i)
      sum += x.item(i) * x.item(i);
    CHECK(got.item(0) == static_cast<double>(static_cast<float>(sum)));
  }
}
