// nn ops: softmax family, layer norm, dropout and the nll losses. Shapes, attributes, values
// through the reference evaluator against closed forms, and every error.
#include "op_test.hpp"

#include "core/random.hpp"

#include <cmath>

using namespace pxl;
using namespace pxl::testing;
using V = std::vector<double>;
using T = std::vector<Tensor>;

TEST_CASE("softmax and log_softmax keep the spec and record a normalised axis") {
  ScratchGraph s;
  const Tensor x = s.input({2, 3, 4}, float16);
  const Tensor y = ops::softmax(x);
  CHECK(y.spec() == TensorSpec{{2, 3, 4}, float16});
  CHECK(y.producer()->kind() == OpKind::Softmax);
  CHECK(y.producer()->attrs_as<AxisAttrs>().axis == 2);
  const Tensor z = ops::log_softmax(x, -2);
  CHECK(z.spec() == TensorSpec{{2, 3, 4}, float16});
  CHECK(z.producer()->kind() == OpKind::LogSoftmax);
  CHECK(z.producer()->attrs_as<AxisAttrs>().axis == 1);
}

TEST_CASE("softmax values along the last and the first axis") {
  const auto x = tensor({2, 3}, float32, {1, 2, 3, 1001, 1002, 1003});
  // Shifting a row leaves its softmax unchanged; the large row must not overflow.
  const V row = {0.0900305732, 0.2447284711, 0.6652409558};
  check_values(evaluate1([](T t) { return ops::softmax(t[0]); }, {x}), {{2, 3}, float32},
               {row[0], row[1], row[2], row[0], row[1], row[2]});
  check_values(
      evaluate1([](T t) { return ops::log_softmax(t[0], 1); }, {x}), {{2, 3}, float32},
      {-2.4076059644, -1.4076059644, -0.4076059644, -2.4076059644, -1.4076059644, -0.4076059644});
  const auto c = tensor({2, 2}, float32, {1, 5, 3, 7});
  // Columns [1, 3] and [5, 7]: both differ by 2.
  check_values(evaluate1([](T t) { return ops::softmax(t[0], 0); }, {c}), {{2, 2}, float32},
               {0.1192029220, 0.1192029220, 0.8807970780, 0.8807970780});
}

TEST_CASE("softmax in float16") {
  const auto x = tensor({3}, float16, {0.5, -1, 2});
  check_values(evaluate1([](T t) { return ops::softmax(t[0]); }, {x}), {{3}, float16},
               {0.1752903921, 0.0391125733, 0.7855970346}, 1e-3);
}

TEST_CASE("layer_norm: spec and attributes") {
  ScratchGraph s;
  const Tensor y = ops::layer_norm(s.input({2, 4}), s.input({4}), s.input({4}), 1e-3);
  CHECK(y.spec() == TensorSpec{{2, 4}, float32});
  CHECK(y.producer()->kind() == OpKind::LayerNorm);
  CHECK(y.producer()->attrs_as<ScalarAttrs>().a == 1e-3);
}

TEST_CASE("layer_norm: population variance over the last axis, then weight and bias") {
  const auto x = tensor({2, 4}, float32, {1, 2, 3, 4, 2, 2, 2, 2});
  const auto w = tensor({4}, float32, {1, 2, 1, 2});
  const auto b = tensor({4}, float32, {0, 0, 1, 1});
  // Row 0: mean 2.5, variance 1.25, so (x - 2.5) / sqrt(1.25 + 1e-5). Row 1 is constant: its
  // normalised values are 0 and only the bias remains.
  const V n = {-1.3416354200, -0.4472118067, 0.4472118067, 1.3416354200};
  check_values(evaluate1([](T t) { return ops::layer_norm(t[0], t[1], t[2]); }, {x, w, b}),
               {{2, 4}, float32}, {n[0], 2 * n[1], n[2] + 1, 2 * n[3] + 1, 0, 0, 1, 1});
  // eps dominates a tiny variance: x = [0, 2e-3] has variance 1e-6, eps 1.
  const auto tiny = tensor({1, 2}, float32, {0, 2e-3});
  const auto ones = tensor({2}, float32, {1, 1});
  const auto zeros = tensor({2}, float32, {0, 0});
  check_values(
      evaluate1([](T t) { return ops::layer_norm(t[0], t[1], t[2], 1.0); }, {tiny, ones, zeros}),
      {{1, 2}, float32}, {-1e-3 / std::sqrt(1.000001), 1e-3 / std::sqrt(1.000001)});
}

TEST_CASE("layer_norm of a rank-3 tensor in float16") {
  const auto x = tensor({2, 1, 2}, float16, {1, 3, -2, 2});
  const auto w = tensor({2}, float16, {1, 1});
  const auto b = tensor({2}, float16, {0, 0.5});
  // Each row is ±(half the spread) around its mean: normalised values ±1/sqrt(1 + eps/var).
  const double r0 = 1 / std::sqrt(1 + 1e-5), r1 = 1 / std::sqrt(1 + 1e-5 / 4);
  check_values(evaluate1([](T t) { return ops::layer_norm(t[0], t[1], t[2]); }, {x, w, b}),
               {{2, 1, 2}, float16}, {-r0, r0 + 0.5, -r1, r1 + 0.5}, 1e-3);
}

TEST_CASE("dropout: spec, attributes and the keep rule") {
  ScratchGraph s;
  const Tensor y = ops::dropout(s.input({3, 5}, float16), s.input({2}, uint32), 0.25);
  CHECK(y.spec() == TensorSpec{{3, 5}, float16});
  CHECK(y.producer()->kind() == OpKind::Dropout);
  CHECK(y.producer()->attrs_as<ScalarAttrs>().a == 0.25);
}

TEST_CASE("dropout keeps element i iff random_uniform01(seed, i) >= p, scaled by 1/(1-p)") {
  constexpr std::int64_t n = 100000;
  const auto x = HostTensor::full({n}, float32, 3.0);
  for (double p : {0.5, 0.75}) {
    CAPTURE(p);
    const auto y = evaluate1([p](T t) { return ops::dropout(t[0], t[1], p); }, {x, seed(12, 34)});
    std::int64_t kept = 0;
    bool rule_holds = true, exact_scale = true;
    const auto v = y.data<float>();
    for (std::int64_t i = 0; i < n; ++i) {
      const bool keep = pxl::detail::random_uniform01(12, 34, static_cast<std::uint64_t>(i)) >= p;
      rule_holds &= (v[static_cast<std::size_t>(i)] != 0.0f) == keep;
      if (keep) {
        ++kept;
        exact_scale &= v[static_cast<std::size_t>(i)] == static_cast<float>(3.0 / (1.0 - p));
      } else {
        exact_scale &= v[static_cast<std::size_t>(i)] == 0.0f;
      }
    }
    CHECK(rule_holds);
    CHECK(exact_scale);
    // Binomial(n, 1 - p): the standard deviation of the rate is below 0.0016; allow 5 sigma.
    CHECK(std::abs(static_cast<double>(kept) / n - (1.0 - p)) < 0.008);
  }
}

TEST_CASE("dropout is a function of the seed: same seed same mask, other seed other mask") {
  const auto x = HostTensor::full({1000}, float32, 1.0);
  auto run = [&](std::uint32_t s0, std::uint32_t s1) {
    return evaluate1([](T t) { return ops::dropout(t[0], t[1], 0.5); }, {x, seed(s0, s1)});
  };
  CHECK(run(1, 2) == run(1, 2));
  CHECK_FALSE(run(1, 2) == run(2, 1));
  CHECK_FALSE(run(1, 2) == run(1, 3));
}

TEST_CASE("dropout in float16 scales kept values exactly") {
  const auto x = tensor({1000}, float16, V(1000, 0.375));
  const auto y = evaluate1([](T t) { return ops::dropout(t[0], t[1], 0.75); }, {x, seed(4, 2)});
  REQUIRE(y.dtype() == float16);
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const bool keep = pxl::detail::random_uniform01(4, 2, static_cast<std::uint64_t>(i)) >= 0.75;
    CHECK(y.item(i) == (keep ? 1.5 : 0.0));
    kept += keep;
  }
  CHECK(kept > 150); // 250 expected, standard deviation ~14
  CHECK(kept < 350);
}

TEST_CASE("dropout with p = 0 is the identity") {
  const auto x = tensor({2, 2}, float16, {1, -2, 0.5, 8});
  CHECK(evaluate1([](T t) { return ops::dropout(t[0], t[1], 0.0); }, {x, seed(7, 7)}) == x);
}

namespace {
// Three samples over three classes.
const V probs33 = {0.7, 0.2, 0.1, 0.1, 0.8, 0.1, 0.25, 0.25, 0.5};
const V labels3 = {0, 1, 2};
// -log p[label] per sample
const V nll3 = {0.3566749439, 0.2231435513, 0.6931471806};
} // namespace

TEST_CASE("nll_loss: output spec per reduction and attributes") {
  ScratchGraph s;
  const Tensor p = s.input({4, 2, 5}, float16);
  const Tensor l = s.input({4, 2}, int32);
  CHECK(ops::nll_loss(p, l).spec() == TensorSpec{{}, float16});
  CHECK(ops::nll_loss(p, l, std::nullopt, Reduction::sum).spec() == TensorSpec{{}, float16});
  const Tensor none = ops::nll_loss(p, l, -100, Reduction::none, true);
  CHECK(none.spec() == TensorSpec{{4, 2}, float16});
  CHECK(none.producer()->kind() == OpKind::NllLoss);
  CHECK(none.producer()->attrs_as<NllAttrs>() == NllAttrs{Reduction::none, -100, true, 1.0});
  CHECK(ops::nll_loss(s.input({5}), s.input({}, int32)).spec() == TensorSpec{{}, float32});
}

TEST_CASE("nll_loss values: mean, sum, none") {
  const auto p = tensor({3, 3}, float32, probs33);
  const auto l = tensor({3}, int32, labels3);
  check_values(evaluate1([](T t) { return ops::nll_loss(t[0], t[1]); }, {p, l}), {{}, float32},
               {(nll3[0] + nll3[1] + nll3[2]) / 3});
  check_values(evaluate1([](T t) { return ops::nll_loss(t[0], t[1], {}, Reduction::sum); }, {p, l}),
               {{}, float32}, {nll3[0] + nll3[1] + nll3[2]});
  check_values(
      evaluate1([](T t) { return ops::nll_loss(t[0], t[1], {}, Reduction::none); }, {p, l}),
      {{3}, float32}, nll3);
}

TEST_CASE("nll_loss ignores samples: zero loss, excluded from the mean") {
  const auto p = tensor({3, 3}, float32, probs33);
  const auto l = tensor({3}, int32, labels3);
  check_values(evaluate1([](T t) { return ops::nll_loss(t[0], t[1], 1); }, {p, l}), {{}, float32},
               {(nll3[0] + nll3[2]) / 2});
  check_values(evaluate1([](T t) { return ops::nll_loss(t[0], t[1], 1, Reduction::sum); }, {p, l}),
               {{}, float32}, {nll3[0] + nll3[2]});
  check_values(evaluate1([](T t) { return ops::nll_loss(t[0], t[1], 1, Reduction::none); }, {p, l}),
               {{3}, float32}, {nll3[0], 0, nll3[2]});
  // Every sample ignored: the mean is 0, not 0/0.
  const auto all = tensor({3}, int32, {-1, -1, -1});
  check_values(evaluate1([](T t) { return ops::nll_loss(t[0], t[1], -1); }, {p, all}),
               {{}, float32}, {0});
}

TEST_CASE("nll_loss on log-probabilities, batched labels, float16") {
  // log_prob: the loss is -p[label] as given.
  const auto lp = tensor({2, 2, 2}, float32, {-0.1, -2.3, -1.2, -0.4, -0.7, -0.7, -3, -0.05});
  const auto l = tensor({2, 2}, int32, {0, 1, 1, 0});
  check_values(
      evaluate1([](T t) { return ops::nll_loss(t[0], t[1], {}, Reduction::none, true); }, {lp, l}),
      {{2, 2}, float32}, {0.1, 0.4, 0.7, 3});
  check_values(
      evaluate1([](T t) { return ops::nll_loss(t[0], t[1], {}, Reduction::mean, true); }, {lp, l}),
      {{}, float32}, {(0.1 + 0.4 + 0.7 + 3) / 4});
  const auto ph = tensor({3, 3}, float16, probs33);
  check_values(
      evaluate1([](T t) { return ops::nll_loss(t[0], t[1]); }, {ph, tensor({3}, int32, labels3)}),
      {{}, float16}, {(nll3[0] + nll3[1] + nll3[2]) / 3}, 2e-3);
}

TEST_CASE("nll_loss_with_softmax_grad: loss and dlogits = loss_grad (p - onehot) / count") {
  ScratchGraph s;
  const auto [loss, grad] =
      ops::nll_loss_with_softmax_grad(s.input({3, 3}), s.input({3}, int32), 2.0, 1, Reduction::sum);
  CHECK(loss.spec() == TensorSpec{{}, float32});
  CHECK(grad.spec() == TensorSpec{{3, 3}, float32});
  const Op op = *loss.producer();
  CHECK(op == *grad.producer());
  CHECK(op.kind() == OpKind::NllLossWithSoftmaxGrad);
  CHECK(op.attrs_as<NllAttrs>() == NllAttrs{Reduction::sum, 1, false, 2.0});
}

TEST_CASE("nll_loss_with_softmax_grad values, mean and sum, with an ignored sample") {
  const auto p = tensor({3, 3}, float32, probs33);
  const auto l = tensor({3}, int32, labels3);
  auto run = [&](double loss_grad, std::optional<std::int32_t> ignore, Reduction r) {
    return evaluate(
        [=](T t) { return ops::nll_loss_with_softmax_grad(t[0], t[1], loss_grad, ignore, r); },
        {p, l});
  };
  // probs - onehot(labels), row by row
  const V d = {-0.3, 0.2, 0.1, 0.1, -0.2, 0.1, 0.25, 0.25, -0.5};
  auto scaled = [&](double f, bool drop_row1) {
    V r;
    for (std::size_t i = 0; i < d.size(); ++i)
      r.push_back(drop_row1 && i / 3 == 1 ? 0 : d[i] * f);
    return r;
  };
  auto mean = run(1.0, std::nullopt, Reduction::mean);
  REQUIRE(mean.size() == 2);
  check_values(mean[0], {{}, float32}, {(nll3[0] + nll3[1] + nll3[2]) / 3});
  check_values(mean[1], {{3, 3}, float32}, scaled(1.0 / 3, false));
  auto sum = run(0.5, std::nullopt, Reduction::sum);
  check_values(sum[0], {{}, float32}, {nll3[0] + nll3[1] + nll3[2]});
  check_values(sum[1], {{3, 3}, float32}, scaled(0.5, false));
  auto ignored = run(4.0, 1, Reduction::mean);
  check_values(ignored[0], {{}, float32}, {(nll3[0] + nll3[2]) / 2});
  check_values(ignored[1], {{3, 3}, float32}, scaled(4.0 / 2, true));
  // Every sample ignored: loss 0 and a zero gradient (no 0/0).
  const auto zero_labels = tensor({3}, int32, {0, 0, 0});
  auto none_counted = evaluate(
      [](T t) { return ops::nll_loss_with_softmax_grad(t[0], t[1], 1.0, 0); }, {p, zero_labels});
  check_values(none_counted[0], {{}, float32}, {0});
  check_values(none_counted[1], {{3, 3}, float32}, V(9, 0.0));
}

TEST_CASE("nn op errors name the op, the operand and the fix") {
  ScratchGraph s;
  const Tensor x = s.input({2, 4});
  const Tensor i = s.input({2, 4}, int32);
  const Tensor w = s.input({4});
  const Tensor sd = s.input({2}, uint32);
  CHECK_THROWS_WITH_AS(ops::softmax(i),
                       doctest::Contains("Softmax: expected a float32 or "
                                         "float16 tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::log_softmax(x, 2),
                       doctest::Contains("LogSoftmax: axis 2 is out of range for a tensor of "
                                         "rank 2"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::layer_norm(i, i, i), doctest::Contains("LayerNorm: expected a float32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm(x, s.input({4}, float16), w),
                       doctest::Contains("LayerNorm: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm(x, s.input({2}), w),
                       doctest::Contains("LayerNorm: weight must have shape (4,)"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm(x, w, s.input({1, 4})),
                       doctest::Contains("LayerNorm: bias must have shape (4,)"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm(s.input({}), s.input({}), s.input({})),
                       doctest::Contains("LayerNorm: expected a tensor of rank >= 1"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm(x, w, w, -1.0),
                       doctest::Contains("LayerNorm: eps must be >= 0"), ValueError);
  CHECK_THROWS_WITH_AS(ops::softmax_grad(i, i),
                       doctest::Contains("SoftmaxGrad: expected a float32 or float16"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::softmax_grad(x, s.input({2, 4}, float16)),
                       doctest::Contains("SoftmaxGrad: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::softmax_grad(x, w),
                       doctest::Contains("must have the shape of the probabilities"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::softmax_grad(x, x, -3),
                       doctest::Contains("SoftmaxGrad: axis -3 is out of range"), ValueError);
  CHECK_THROWS_WITH_AS(ops::layer_norm_grad(i, i, i),
                       doctest::Contains("LayerNormGrad: expected a float32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm_grad(x, s.input({2}), x),
                       doctest::Contains("LayerNormGrad: weight must have shape (4,)"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm_grad(x, w, s.input({2, 4}, float16)),
                       doctest::Contains("LayerNormGrad: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm_grad(x, w, s.input({4, 2})),
                       doctest::Contains("LayerNormGrad: the gradient"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::layer_norm_grad(x, w, x, -1.0),
                       doctest::Contains("LayerNormGrad: eps must be >= 0"), ValueError);
  CHECK_THROWS_WITH_AS(ops::dropout(i, sd, 0.5), doctest::Contains("Dropout: expected a float32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::dropout(x, s.input({2}, int32), 0.5),
                       doctest::Contains("Dropout: the seed must be uint32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::dropout(x, s.input({3}, uint32), 0.5),
                       doctest::Contains("Dropout: the seed must have shape (2,), got"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::dropout(x, sd, 1.0),
                       doctest::Contains("Dropout: the drop probability p must satisfy 0 <= p < "
                                         "1, got 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::dropout(x, sd, -0.1), doctest::Contains("must satisfy 0 <= p < 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::dropout(x, sd, NAN), doctest::Contains("must satisfy 0 <= p < 1"),
                       ValueError);
  const Tensor l = s.input({2}, int32);
  CHECK_THROWS_WITH_AS(ops::nll_loss(i, l), doctest::Contains("Nll: expected a float32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::nll_loss(x, s.input({2})),
                       doctest::Contains("Nll: the labels must be int32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::nll_loss(x, s.input({4}, int32)),
                       doctest::Contains("Nll: labels must have shape (2,) (probs' shape without "
                                         "its class axis)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::nll_loss(s.input({}), s.input({}, int32)),
                       doctest::Contains("Nll: probs must have a class axis"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::nll_loss_with_softmax_grad(x, s.input({2, 1}, int32)),
                       doctest::Contains("NllWithSoftmaxGrad: labels must have shape (2,)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::nll_loss_with_softmax_grad(x, l, 1.0, std::nullopt, Reduction::none),
                       doctest::Contains("NllWithSoftmaxGrad: reduction none is not supported"),
                       ValueError);
}

namespace test_nn_shaped_dropout {
TEST_CASE("shaped_dropout: spec, attributes and every error") {
  ScratchGraph s;
  const Tensor x = s.input({3, 4, 5}, float16);
  const Tensor sd = s.input({2}, uint32);
  const Tensor y = ops::shaped_dropout(x, sd, {4, 1}, 0.25);
  CHECK(y.spec() == x.spec());
  CHECK(y.producer()->kind() == OpKind::ShapedDropout);
  CHECK(y.producer()->attrs<OpKind::ShapedDropout>() == ShapedDropoutAttrs{0.25, {4, 1}});
  CHECK(ops::shaped_dropout(x, sd, {3, 1, 5}, 0.5).spec() == x.spec());
  CHECK(ops::shaped_dropout(x, sd, {}, 0.0).spec() == x.spec());
  CHECK_THROWS_WITH_AS(ops::shaped_dropout(s.input({3}, int32), sd, {3}, 0.5),
                       doctest::Contains("ShapedDropout: expected a float32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::shaped_dropout(x, s.input({2}, int32), {1}, 0.5),
                       doctest::Contains("ShapedDropout: the seed must be uint32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::shaped_dropout(x, s.input({1, 2}, uint32), {1}, 0.5),
                       doctest::Contains("ShapedDropout: the seed must have shape (2,), got"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::shaped_dropout(x, sd, {1}, 1.0),
                       doctest::Contains("ShapedDropout: the drop probability ratio must satisfy "
                                         "0 <= ratio < 1, got 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::shaped_dropout(x, sd, {1}, -0.5),
                       doctest::Contains("must satisfy 0 <= ratio < 1"), ValueError);
  CHECK_THROWS_WITH_AS(ops::shaped_dropout(x, sd, {4, 2}, 0.5),
                       doctest::Contains("ShapedDropout: the mask shape (4, 2) does not broadcast "
                                         "to"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::shaped_dropout(x, sd, {1, 3, 4, 5}, 0.5),
                       doctest::Contains("the mask shape (1, 3, 4, 5) does not broadcast"),
                       ShapeError);
}

TEST_CASE("shaped_dropout keeps or drops whole broadcast groups by the mask element's draw") {
  const auto x = HostTensor::full({6, 50, 4}, float32, 3.0);
  const double p = 0.5;
  const auto y = evaluate1(
      [p](T t) {
        return ops::shaped_dropout(t[0], t[1], {50, 1}, p);
      },
      {x, seed(5, 9)});
  std::int64_t kept = 0;
  bool rule_holds = true;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const auto m = static_cast<std::uint64_t>(i / 4 % 50); // the mask element of (a, b, c) is b
    const bool keep = pxl::detail::random_uniform01(5, 9, m) >= p;
    rule_holds = rule_holds && y.item(i) == (keep ? 6.0 : 0.0);
    kept += keep;
  }
  CHECK(rule_holds);
  CHECK(kept > 0);
  CHECK(kept < y.nelms());
  // With the mask of t's shape it is dropout.
  HostTensor d({3, 7}, float32);
  for (std::int64_t i = 0; i < d.nelms(); ++i)
    d.data<float>()[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>(i) - 2.f;
  CHECK(evaluate1(
            [](T t) {
              return ops::shaped_dropout(t[0], t[1], {3, 7}, 0.3);
            },
            {d, seed(1, 2)}) ==
        evaluate1([](T t) { return ops::dropout(t[0], t[1], 0.3); }, {d, seed(1, 2)}));
  // float16: the kept value rounded once.
  const auto h = evaluate1([](T t) { return ops::shaped_dropout(t[0], t[1], {1}, 0.25); },
                           {HostTensor::full({5}, float16, 1.0), seed(3, 4)});
  const bool keep = pxl::detail::random_uniform01(3, 4, 0) >= 0.25;
  for (std::int64_t i = 0; i < 5; ++i)
    CHECK(h.item(i) == (keep ? HostTensor::full({1}, float16, 1.0 / 0.75).item(0) : 0.0));
}
} // namespace test_nn_shaped_dropout
