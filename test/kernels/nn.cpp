// Softmax family, layer norm and the negative log-likelihood losses.
#include "harness.hpp"

#include "pxl/ops/nn.hpp"

#include <cmath>
#include <limits>

using namespace pxl;
using namespace pxl::testing;

TEST_CASE("softmax and log_softmax along any axis match the reference") {
  for (DType d : {float32, float16})
    for (const auto& c : std::vector<std::pair<Shape, std::int64_t>>{
             {{7}, 0}, {{13, 10}, -1}, {{13, 10}, 0}, {{3, 5, 7}, 1}, {{2, 3, 4}, 2}}) {
      const auto& shape = c.first;
      const std::int64_t axis = c.second;
      CAPTURE(d);
      CAPTURE(to_string(shape));
      CAPTURE(axis);
      const auto x = random_tensor(shape, d, -5, 5);
      check_kernel([axis](Tensor t) { return ops::softmax(t, axis); }, {x});
      check_kernel([axis](Tensor t) { return ops::log_softmax(t, axis); }, {x});
    }
  // Closed form: every softmax row sums to one.
  const auto rows = check_kernel([](Tensor t) { return ops::softmax(t, -1); },
                                 {random_tensor({13, 10}, float32, -5, 5)})[0];
  for (std::int64_t r = 0; r < 13; ++r) {
    double sum = 0;
    for (std::int64_t c = 0; c < 10; ++c)
      sum += rows.item(r * 10 + c);
    CAPTURE(r);
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("softmax: hand-computed values, stable for large logits") {
  const auto x = tensor({2, 2}, float32, {0, std::log(3.0), 1000, 1000});
  check_values(check_kernel([](Tensor t) { return ops::softmax(t); }, {x})[0], x.spec(),
               {0.25, 0.75, 0.5, 0.5});
  check_values(check_kernel([](Tensor t) { return ops::log_softmax(t); }, {x})[0], x.spec(),
               {std::log(0.25), std::log(0.75), std::log(0.5), std::log(0.5)});
}

TEST_CASE("softmax along the last axis: masked scores give 0, NaN and all-masked rows NaN, "
          "within an ulp of std::exp") {
  // Rows of 37 (a vector body and a remainder): causal-mask -inf entries, one row all -inf (as
  // std::exp gives: -inf - -inf is NaN), one with a NaN, one with +inf, one very negative.
  constexpr float inf = std::numeric_limits<float>::infinity();
  constexpr std::int64_t n = 37;
  auto x = random_tensor({6, n}, float32, -30, 30);
  auto xs = x.data<float>();
  for (std::int64_t j = 10; j < n; ++j)
    xs[j] = -inf; // row 0: masked after 10
  for (std::int64_t j = 0; j < n; ++j)
    xs[n + j] = -inf; // row 1: all masked
  xs[2 * n + 5] = std::numeric_limits<float>::quiet_NaN();
  xs[3 * n + 7] = inf;
  xs[4 * n + 3] = -1e30f;
  for (const bool log : {false, true}) {
    CAPTURE(log);
    // The reference takes x - max in double, the kernel in float (as std::exp(x - max) would):
    // at |x - max| up to 60 that is a relative difference of up to 60·2⁻²⁴ in the result.
    const auto y = check_kernel(
        [log](Tensor t) { return log ? ops::log_softmax(t, -1) : ops::softmax(t, -1); }, {x},
        1e-5)[0];
    const auto ys = y.data<float>();
    for (std::int64_t r = 0; r < 6; ++r) {
      CAPTURE(r);
      float m = -inf;
      for (std::int64_t j = 0; j < n; ++j)
        m = std::max(m, xs[r * n + j]);
      double sum = 0;
      for (std::int64_t j = 0; j < n; ++j)
        sum += std::exp(xs[r * n + j] - m);
      for (std::int64_t j = 0; j < n; ++j) {
        CAPTURE(j);
        const float got = ys[r * n + j];
        const double e = std::exp(xs[r * n + j] - m);
        const double want = log ? xs[r * n + j] - (m + std::log(sum)) : e / sum;
        if (std::isnan(want))
          CHECK(std::isnan(got));
        else if (r == 0 && j >= 10 && !log)
          CHECK(got == 0.0f);
        else // -inf for a masked entry's log
          CHECK((got == want || std::fabs(got - want) <= std::ldexp(std::fabs(want), -23) + 1e-37));
      }
    }
  }
}

TEST_CASE("layer_norm matches the reference and hand-computed values") {
  const auto x = tensor({2, 4}, float32, {1, 2, 3, 4, 10, 10, 10, 10});
  const auto w = tensor({4}, float32, {1, 1, 2, 2});
  const auto b = tensor({4}, float32, {0, 0, 0, 1});
  const double s = 1 / std::sqrt(1.25 + 1e-5);
  check_values(check_kernel([](Tensor t, Tensor g, Tensor h) { return ops::layer_norm(t, g, h); },
                            {x, w, b})[0],
               x.spec(), {-1.5 * s, -0.5 * s, 1.0 * s, 3.0 * s + 1, 0, 0, 0, 1});
  for (DType d : {float32, float16})
    for (const Shape& shape : {Shape{7}, Shape{13, 5}, Shape{3, 2, 9}}) {
      CAPTURE(d);
      CAPTURE(to_string(shape));
      const std::int64_t n = shape.back();
      check_kernel([](Tensor t, Tensor g, Tensor h) { return ops::layer_norm(t, g, h, 1e-3); },
                   {random_tensor(shape, d, -3, 3, 1), random_tensor({n}, d, 0.5, 1.5, 2),
                    random_tensor({n}, d, -1, 1, 3)});
    }
}

TEST_CASE("softmax_grad and layer_norm_grad match the reference on any axis, shape and dtype") {
  // Rows of odd lengths, long and short, so that worker ranges and vector remainders vary.
  for (DType d : {float32, float16})
    for (const Shape& shape : {Shape{7}, Shape{13, 5}, Shape{3, 2, 131}}) {
      CAPTURE(d);
      CAPTURE(to_string(shape));
      const double rtol = d == float32 ? 1e-6 : 2e-3;
      const auto y = random_tensor(shape, d, 0.0, 1.0, 4), g = random_tensor(shape, d, -2, 2, 5);
      for (std::int64_t axis = 0; axis < static_cast<std::int64_t>(shape.size()); ++axis) {
        CAPTURE(axis);
        check_kernel([axis](Tensor p, Tensor h) { return ops::softmax_grad(p, h, axis); }, {y, g},
                     rtol);
      }
      const std::int64_t n = shape.back();
      check_kernel(
          [](Tensor t, Tensor w, Tensor h) {
            auto [dx, weighted] = ops::layer_norm_grad(t, w, h, 1e-3);
            return std::vector<Tensor>{dx, weighted};
          },
          {random_tensor(shape, d, -3, 3, 1), random_tensor({n}, d, 0.5, 1.5, 2), g}, rtol);
    }
}

TEST_CASE("nll_loss: reductions, ignore_index and log_prob") {
  const auto probs = tensor({3, 2}, float32, {0.25, 0.75, 0.5, 0.5, 0.1, 0.9});
  const auto labels = tensor({3}, int32, {1, 0, 1});
  const auto ignore = tensor({3}, int32, {1, -100, 1});
  const double l0 = -std::log(0.75), l1 = -std::log(0.5), l2 = -std::log(0.9);
  check_values(
      check_kernel([](Tensor p, Tensor l) { return ops::nll_loss(p, l); }, {probs, labels})[0],
      {{}, float32}, {(l0 + l1 + l2) / 3});
  check_values(
      check_kernel([](Tensor p, Tensor l) { return ops::nll_loss(p, l, -100, Reduction::mean); },
                   {probs, ignore})[0],
      {{}, float32}, {(l0 + l2) / 2});
  check_values(
      check_kernel([](Tensor p, Tensor l) { return ops::nll_loss(p, l, -100, Reduction::none); },
                   {probs, ignore})[0],
      {{3}, float32}, {l0, 0, l2});
  check_values(
      check_kernel([](Tensor p,
                      Tensor l) { return ops::nll_loss(p, l, std::nullopt, Reduction::sum, true); },
                   {probs, labels})[0],
      {{}, float32}, {-0.75 - 0.5 - 0.9});
  for (DType d : {float32, float16})
    for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
      CAPTURE(d);
      const auto p = random_tensor({13, 7}, d, 0.05, 1, 1);
      const auto l = random_tensor({13}, int32, 0, 7, 2);
      check_kernel([r](Tensor a, Tensor b) { return ops::nll_loss(a, b, 3, r); }, {p, l});
    }
}

TEST_CASE("nll labels outside [0, classes) add nothing but count in the mean (PopART's rule)") {
  const auto probs = tensor({3, 2}, float32, {0.25, 0.75, 0.5, 0.5, 0.1, 0.9});
  const auto labels = tensor({3}, int32, {1, 2, -1});
  const double l0 = -std::log(0.75);
  check_values(
      check_kernel([](Tensor p, Tensor l) { return ops::nll_loss(p, l); }, {probs, labels})[0],
      {{}, float32}, {l0 / 3});
  check_values(
      check_kernel(
          [](Tensor p, Tensor l) { return ops::nll_loss(p, l, std::nullopt, Reduction::none); },
          {probs, labels})[0],
      {{3}, float32}, {l0, 0, 0});
  // -1 ignored: out of the divisor; 2 out of range: still in it.
  const auto outs = check_kernel(
      [](Tensor p, Tensor l) {
        auto [loss, grad] = ops::nll_loss_with_softmax_grad(p, l, 1.0, -1);
        return std::vector<Tensor>{loss, grad};
      },
      {probs, labels});
  check_values(outs[0], {{}, float32}, {l0 / 2});
  check_values(outs[1], probs.spec(), {0.125, -0.125, 0, 0, 0, 0});
}

TEST_CASE("nll_loss_with_softmax_grad: loss and dlogits = loss_grad (probs - onehot) / count") {
  const auto probs = tensor({3, 2}, float32, {0.25, 0.75, 0.5, 0.5, 0.1, 0.9});
  const auto labels = tensor({3}, int32, {1, -1, 0});
  const auto outs = check_kernel(
      [](Tensor p, Tensor l) {
        auto [loss, grad] = ops::nll_loss_with_softmax_grad(p, l, 2.0, -1);
        return std::vector<Tensor>{loss, grad};
      },
      {probs, labels});
  check_values(outs[0], {{}, float32}, {(-std::log(0.75) - std::log(0.1)) / 2});
  check_values(outs[1], probs.spec(), {0.25, -0.25, 0, 0, -0.9, 0.9});
  for (DType d : {float32, float16})
    for (Reduction r : {Reduction::mean, Reduction::sum}) {
      CAPTURE(d);
      check_kernel(
          [r](Tensor p, Tensor l) {
            auto [loss, grad] = ops::nll_loss_with_softmax_grad(p, l, 0.5, 2, r);
            return std::vector<Tensor>{loss, grad};
          },
          {random_tensor({13, 7}, d, 0.05, 1, 1), random_tensor({13}, int32, 0, 7, 2)});
    }
}
