// addons::ops::cross_entropy and cross_entropy_with_grad: specs, values against the closed form
// (reference evaluator and emulator), gradients against autodiff and finite differences,
// float16, worker-count independence and errors.
#include "pxl/addons/ops/cross_entropy.hpp"

#include "../transforms/gradcheck.hpp"
#include "op_test.hpp"

#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

using namespace pxl;
using namespace pxl::testing;
namespace xops = pxl::addons::ops;
using T = std::vector<Tensor>;
using V = std::vector<double>;

namespace {

/// The loss and dL/dlogits of the cross entropy, in double, straight from the definitions:
/// per sample logsumexp(x) - x[label]; gradient softmax(x) - onehot(label), scaled by
/// `scale` / count for the mean; ignored (or out-of-range) samples contribute nothing.
struct ClosedForm {
  double loss = 0;
  V per_sample, dlogits;
};

ClosedForm closed_form(const V& x, std::int64_t n, std::int64_t c, const std::vector<int>& labels,
                       double scale = 1.0, std::optional<int> ignore = std::nullopt,
                       Reduction r = Reduction::mean) {
  ClosedForm f;
  f.per_sample.assign(static_cast<std::size_t>(n), 0.0);
  f.dlogits.assign(static_cast<std::size_t>(n * c), 0.0);
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = labels[static_cast<std::size_t>(i)];
    if ((ignore && label == *ignore) || label < 0 || label >= c)
      continue;
    ++count;
    double mx = -INFINITY;
    for (std::int64_t j = 0; j < c; ++j)
      mx = std::max(mx, x[static_cast<std::size_t>(i * c + j)]);
    double z = 0;
    for (std::int64_t j = 0; j < c; ++j)
      z += std::exp(x[static_cast<std::size_t>(i * c + j)] - mx);
    f.per_sample[static_cast<std::size_t>(i)] =
        mx + std::log(z) - x[static_cast<std::size_t>(i * c + label)];
    f.loss += f.per_sample[static_cast<std::size_t>(i)];
    for (std::int64_t j = 0; j < c; ++j)
      f.dlogits[static_cast<std::size_t>(i * c + j)] =
          (std::exp(x[static_cast<std::size_t>(i * c + j)] - mx) / z - (j == label ? 1.0 : 0.0)) *
          scale;
  }
  if (r == Reduction::mean && count > 0) {
    f.loss /= static_cast<double>(count);
    for (auto& d : f.dlogits)
      d /= static_cast<double>(count);
  }
  return f;
}

const V logits34 = {0.5, -1.0, 2.0, 0.25, 3.0, 3.0, -2.0, 0.0, -0.75, 1.5, 0.5, -4.0};
const std::vector<int> labels3 = {2, 0, 3};

HostTensor labels_tensor(const std::vector<int>& l) {
  std::vector<double> d(l.begin(), l.end());
  return tensor({static_cast<std::int64_t>(l.size())}, int32, d);
}

} // namespace

TEST_CASE("cross_entropy: specs and the ops it is built from") {
  ScratchGraph s;
  const Tensor x = s.input({4, 10}), l = s.input({4}, int32);
  const Tensor loss = xops::cross_entropy(x, l);
  CHECK(loss.spec() == TensorSpec{{}, float32});
  REQUIRE(loss.producer());
  CHECK(loss.producer()->kind() == OpKind::NllLoss);
  CHECK(loss.producer()->attrs_as<NllAttrs>() ==
        NllAttrs{Reduction::mean, std::nullopt, true, 1.0});
  CHECK(loss.producer()->input(0).producer()->kind() == OpKind::LogSoftmax);
  CHECK(xops::cross_entropy(x, l, -1, Reduction::none).spec() == TensorSpec{{4}, float32});
  CHECK(xops::cross_entropy(s.input({2, 3, 5}, float16), s.input({2, 3}, int32)).spec() ==
        TensorSpec{{}, float16});

  const auto [l2, d2] = xops::cross_entropy_with_grad(x, l, 8.0, -100, Reduction::sum);
  CHECK(l2.spec() == TensorSpec{{}, float32});
  CHECK(d2.spec() == x.spec());
  REQUIRE(d2.producer());
  CHECK(d2.producer()->kind() == OpKind::NllLossWithSoftmaxGrad);
  CHECK(d2.producer()->attrs_as<NllAttrs>() == NllAttrs{Reduction::sum, -100, false, 8.0});
  CHECK(d2.producer()->input(0).producer()->kind() == OpKind::Softmax);
}

TEST_CASE("cross_entropy values: mean, sum, none against the closed form") {
  const auto x = tensor({3, 4}, float32, logits34);
  const auto l = labels_tensor(labels3);
  const auto cf = closed_form(logits34, 3, 4, labels3);
  check_values(evaluate1([](T t) { return xops::cross_entropy(t[0], t[1]); }, {x, l}),
               {{}, float32}, {cf.loss});
  check_values(
      evaluate1([](T t) { return xops::cross_entropy(t[0], t[1], {}, Reduction::sum); }, {x, l}),
      {{}, float32}, {cf.loss * 3});
  check_values(
      evaluate1([](T t) { return xops::cross_entropy(t[0], t[1], {}, Reduction::none); }, {x, l}),
      {{3}, float32}, cf.per_sample);
}

TEST_CASE("cross_entropy ignores samples: excluded from the mean, zero per-sample loss") {
  const auto x = tensor({3, 4}, float32, logits34);
  const std::vector<int> labels = {2, -100, 3};
  const auto l = labels_tensor(labels);
  const auto cf = closed_form(logits34, 3, 4, labels, 1.0, -100);
  check_values(evaluate1([](T t) { return xops::cross_entropy(t[0], t[1], -100); }, {x, l}),
               {{}, float32}, {cf.loss});
  check_values(
      evaluate1([](T t) { return xops::cross_entropy(t[0], t[1], -100, Reduction::none); }, {x, l}),
      {{3}, float32}, {cf.per_sample[0], 0.0, cf.per_sample[2]});
  // All ignored: a mean over nothing is 0, not NaN.
  const auto all = labels_tensor({-100, -100, -100});
  check_values(evaluate1([](T t) { return xops::cross_entropy(t[0], t[1], -100); }, {x, all}),
               {{}, float32}, {0.0});
}

TEST_CASE("cross_entropy stays finite for logits far apart") {
  // softmax would round the probability of class 1 to 0 and its log to -inf.
  const V big = {200.0, -200.0, 0.0, 0.0};
  const auto x = tensor({2, 2}, float32, big);
  const auto l = labels_tensor({1, 0});
  check_values(
      evaluate1([](T t) { return xops::cross_entropy(t[0], t[1], {}, Reduction::none); }, {x, l}),
      {{2}, float32}, {400.0, std::log(2.0)});
}

TEST_CASE(
    "cross_entropy_with_grad: loss unscaled, dlogits = (softmax - onehot) * scaling / count") {
  const auto x = tensor({3, 4}, float32, logits34);
  for (const double scaling : {1.0, 0.5, 1024.0}) {
    CAPTURE(scaling);
    for (const Reduction r : {Reduction::mean, Reduction::sum}) {
      CAPTURE(static_cast<int>(r));
      for (const std::optional<int> ignore : {std::optional<int>{}, std::optional<int>{0}}) {
        CAPTURE(ignore.value_or(-1));
        // with ignore = 0 the second sample (label 0) drops out
        const auto cf = closed_form(logits34, 3, 4, labels3, scaling, ignore, r);
        const auto outs = evaluate(
            [=](T t) {
              auto [loss, d] = xops::cross_entropy_with_grad(t[0], t[1], scaling, ignore, r);
              return T{loss, d};
            },
            {x, labels_tensor(labels3)});
        REQUIRE(outs.size() == 2);
        check_values(outs[0], {{}, float32}, {cf.loss});
        check_values(outs[1], {{3, 4}, float32}, cf.dlogits);
        if (ignore)
          for (int j = 0; j < 4; ++j)
            CHECK(outs[1].item(4 + j) == 0.0);
      }
    }
  }
}

TEST_CASE("cross_entropy_with_grad: every sample ignored gives loss 0 and zero dlogits") {
  const auto x = tensor({3, 4}, float32, logits34);
  const auto outs = evaluate(
      [](T t) {
        auto [loss, d] = xops::cross_entropy_with_grad(t[0], t[1], 4.0, 7);
        return T{loss, d};
      },
      {x, labels_tensor({7, 7, 7})});
  check_values(outs[0], {{}, float32}, {0.0});
  check_values(outs[1], {{3, 4}, float32}, V(12, 0.0));
}

TEST_CASE("cross_entropy_with_grad on [..., C] logits") {
  // A [2, 3, 4] batch is the [6, 4] problem.
  V x6 = logits34;
  for (double v : logits34)
    x6.push_back(-v / 2);
  const std::vector<int> labels = {2, 0, 3, 1, 1, 0};
  const auto cf = closed_form(x6, 6, 4, labels, 2.0);
  std::vector<double> ld(labels.begin(), labels.end());
  const auto outs = evaluate(
      [](T t) {
        auto [loss, d] = xops::cross_entropy_with_grad(t[0], t[1], 2.0);
        return T{loss, d};
      },
      {tensor({2, 3, 4}, float32, x6), tensor({2, 3}, int32, ld)});
  check_values(outs[0], {{}, float32}, {cf.loss});
  check_values(outs[1], {{2, 3, 4}, float32}, cf.dlogits);
}

TEST_CASE("cross_entropy_with_grad's dlogits equal autodiff of cross_entropy") {
  const auto x = random_tensor({5, 7}, 11, -3.f, 3.f);
  for (const std::optional<int> ignore : {std::optional<int>{}, std::optional<int>{-1}}) {
    CAPTURE(ignore.value_or(99));
    const std::vector<int> labels =
        ignore ? std::vector<int>{6, 0, -1, 3, 3} : std::vector<int>{6, 0, 2, 3, 3};
    const auto l = labels_tensor(labels);
    std::vector<HostTensor> grads;
    {
      Ir ir;
      auto main = ir.main_graph().scope();
      const Graph fwd = ir.create_graph(
          "ce", [&](T t) { return xops::cross_entropy(t[0], t[1], ignore); },
          std::vector<TensorSpec>{x.spec(), TensorSpec{{5}, int32}});
      const auto info = transforms::autodiff(fwd, {.grads_required = T{fwd.inputs()[0]}});
      grads = autodiff_gradients(info, {x, l}, {HostTensor::scalar(1.0f)});
    }
    REQUIRE(grads.size() == 1);
    const auto fused = evaluate(
        [=](T t) {
          auto [loss, d] = xops::cross_entropy_with_grad(t[0], t[1], 1.0, ignore);
          return T{loss, d};
        },
        {x, l});
    std::vector<double> xd;
    for (float v : x.data<float>())
      xd.push_back(v);
    const auto cf = closed_form(xd, 5, 7, labels, 1.0, ignore);
    check_values(grads[0], x.spec(), cf.dlogits, 1e-5);
    CHECK(allclose(fused[1], grads[0], 1e-5, 1e-7));
  }
}

TEST_CASE("cross_entropy gradients match finite differences (reference and emulator)") {
  const auto x = random_tensor({4, 5}, 3, -2.f, 2.f);
  const auto l = labels_tensor({4, 1, 0, 2});
  CHECK(check_gradients([](T t) { return xops::cross_entropy(t[0], t[1]); }, {x, l}) == 20);
  CHECK(check_gradients([](T t) { return xops::cross_entropy(t[0], t[1], 1); }, {x, l}) == 20);
  CHECK(check_gradients([](T t) { return xops::cross_entropy(t[0], t[1], {}, Reduction::none); },
                        {x, l}) == 20);
}

TEST_CASE("cross_entropy_with_grad on the emulator: closed form, identical for 1-4 workers") {
  constexpr std::int64_t n = 37, c = 10;
  const auto x = random_tensor({n, c}, 5, -4.f, 4.f);
  std::vector<int> labels;
  for (std::int64_t i = 0; i < n; ++i)
    labels.push_back(i % 5 == 3 ? -100 : static_cast<int>((i * 7) % c));
  const auto l = labels_tensor(labels);
  std::vector<double> xd;
  for (float v : x.data<float>())
    xd.push_back(v);
  const auto cf = closed_form(xd, n, c, labels, 16.0, -100);

  Ir ir;
  DeviceToHostStream loss_s, dx_s, ce_s;
  HostToDeviceStream x_s, l_s;
  {
    auto main = ir.main_graph().scope();
    x_s = h2d_stream({n, c}, float32, "logits");
    l_s = h2d_stream({n}, int32, "labels");
    const Tensor logits = ops::host_load(x_s), lab = ops::host_load(l_s);
    auto [loss, dx] = xops::cross_entropy_with_grad(logits, lab, 16.0, -100);
    loss_s = d2h_stream({}, float32, "loss");
    dx_s = d2h_stream({n, c}, float32, "dlogits");
    ce_s = d2h_stream({}, float32, "ce");
    ops::host_store(loss_s, loss);
    ops::host_store(dx_s, dx);
    ops::host_store(ce_s, xops::cross_entropy(logits, lab, -100));
  }
  std::optional<StreamOutputs> first;
  for (unsigned workers : {1u, 2u, 3u, 4u}) {
    CAPTURE(workers);
    Session session{ir, "ipu_model", {.workers = workers, .oversubscribe = true}};
    auto attached = session.attach();
    auto out = session.run({{x_s, x}, {l_s, l}});
    check_values(out.at(loss_s), {{}, float32}, {cf.loss});
    check_values(out.at(ce_s), {{}, float32}, {cf.loss});
    check_values(out.at(dx_s), {{n, c}, float32}, cf.dlogits);
    if (!first) {
      first = out;
      continue;
    }
    CHECK(out.at(loss_s) == first->at(loss_s));
    CHECK(out.at(dx_s) == first->at(dx_s));
    CHECK(out.at(ce_s) == first->at(ce_s));
  }
}

TEST_CASE("cross_entropy and cross_entropy_with_grad in float16") {
  const auto x = tensor({3, 4}, float16, logits34); // these logits are exact in half
  const auto l = labels_tensor(labels3);
  const auto cf = closed_form(logits34, 3, 4, labels3, 128.0);
  // float16 rounding of the probabilities and of the result: ~1e-3 relative
  const auto outs = evaluate(
      [](T t) {
        auto [loss, d] = xops::cross_entropy_with_grad(t[0], t[1], 128.0);
        return T{loss, d, xops::cross_entropy(t[0], t[1])};
      },
      {x, l});
  REQUIRE(outs.size() == 3);
  check_values(outs[0], {{}, float16}, {cf.loss}, 3e-3);
  check_values(outs[2], {{}, float16}, {cf.loss}, 3e-3);
  REQUIRE(outs[1].spec() == TensorSpec{{3, 4}, float16});
  for (std::int64_t i = 0; i < 12; ++i) {
    CAPTURE(i);
    CHECK(std::fabs(outs[1].item(i) - cf.dlogits[static_cast<std::size_t>(i)]) <= 3e-3 * 128.0 / 3);
  }

  // The emulator agrees with the reference evaluator.
  Ir ir;
  HostToDeviceStream x_s, l_s;
  DeviceToHostStream loss_s, dx_s;
  {
    auto main = ir.main_graph().scope();
    x_s = h2d_stream({3, 4}, float16, "logits");
    l_s = h2d_stream({3}, int32, "labels");
    auto [loss, dx] =
        xops::cross_entropy_with_grad(ops::host_load(x_s), ops::host_load(l_s), 128.0);
    loss_s = d2h_stream({}, float16, "loss");
    dx_s = d2h_stream({3, 4}, float16, "dlogits");
    ops::host_store(loss_s, loss);
    ops::host_store(dx_s, dx);
  }
  Session session{ir, "ipu_model", {.workers = 2}};
  auto attached = session.attach();
  auto out = session.run({{x_s, x}, {l_s, l}});
  CHECK(allclose(out.at(loss_s), outs[0], 1e-3, 1e-3));
  CHECK(allclose(out.at(dx_s), outs[1], 1e-3, 1e-2));
}

TEST_CASE("cross entropy errors name the function, the operands and the fix") {
  ScratchGraph s;
  const Tensor x = s.input({4, 10}), l = s.input({4}, int32);
  for (bool fused : {false, true}) {
    CAPTURE(fused);
    auto call = [&](const Tensor& logits, const Tensor& labels) {
      if (fused)
        (void)xops::cross_entropy_with_grad(logits, labels);
      else
        (void)xops::cross_entropy(logits, labels);
    };
    const std::string fn = fused ? "cross_entropy_with_grad: " : "cross_entropy: ";
    CHECK_THROWS_WITH_AS(call(s.input({4, 10}, int32), l),
                         doctest::Contains((fn + "logits must be float32 or float16").c_str()),
                         DTypeError);
    CHECK_THROWS_WITH_AS(call(s.input({}), s.input({}, int32)),
                         doctest::Contains((fn + "logits must have a class axis").c_str()),
                         ShapeError);
    CHECK_THROWS_WITH_AS(call(s.input({4, 0}), l), doctest::Contains("a class axis of size >= 1"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(call(x, s.input({4})),
                         doctest::Contains((fn + "labels must be int32 class indices").c_str()),
                         DTypeError);
    CHECK_THROWS_WITH_AS(call(x, s.input({4, 10}, int32)),
                         doctest::Contains((fn + "labels must have shape (4,)").c_str()),
                         ShapeError);
    CHECK_THROWS_WITH_AS(call(x, s.input({5}, int32)), doctest::Contains("got labels"), ShapeError);
  }
  CHECK_THROWS_WITH_AS((void)xops::cross_entropy_with_grad(x, l, 1.0, {}, Reduction::none),
                       doctest::Contains("cross_entropy_with_grad: Reduction::none is not "
                                         "supported"),
                       ValueError);
}

namespace {

/// Keras's sparse_categorical_crossentropy on probabilities, in double from its definition:
/// p = clip(probs, 1e-7, 1 − 1e-7), loss_i = −log(p[label] / Σ p); the mean, and its
/// gradient with respect to probs, (1/S − [c = label]/p[c]) / n, zero where clipped.
ClosedForm keras_closed_form(const V& probs, std::int64_t n, std::int64_t c,
                             const std::vector<int>& labels) {
  ClosedForm f;
  f.dlogits.assign(probs.size(), 0.0);
  // float32's nearest to 1 − 1e-7, where the clipping of float32 probabilities lands.
  const double lo = 1e-7, hi = static_cast<double>(static_cast<float>(1.0 - 1e-7));
  for (std::int64_t i = 0; i < n; ++i) {
    double s = 0;
    V p;
    for (std::int64_t j = 0; j < c; ++j) {
      p.push_back(std::clamp(probs[static_cast<std::size_t>(i * c + j)], lo, hi));
      s += p.back();
    }
    const auto y = static_cast<std::size_t>(labels[static_cast<std::size_t>(i)]);
    f.per_sample.push_back(-std::log(p[y] / s));
    f.loss += f.per_sample.back() / static_cast<double>(n);
    for (std::int64_t j = 0; j < c; ++j) {
      const double x = probs[static_cast<std::size_t>(i * c + j)];
      if (x < lo || x > hi)
        continue;
      f.dlogits[static_cast<std::size_t>(i * c + j)] =
          (1.0 / s -
           (static_cast<std::size_t>(j) == y ? 1.0 / p[static_cast<std::size_t>(j)] : 0.0)) /
          static_cast<double>(n);
    }
  }
  return f;
}

} // namespace

TEST_CASE("sparse_categorical_crossentropy on probabilities: Keras's clipping, by hand") {
  // Row 0 has a 0 (clipped to 1e-7), row 1 a 1 (clipped below it), row 2 sums to 0.9
  // (renormalised).
  const V probs = {0.2, 0.3, 0.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.1, 0.1, 0.1, 0.6};
  const std::vector<int> labels = {2, 0, 3};
  const auto p = tensor({3, 4}, float32, probs);
  const auto l = labels_tensor(labels);
  const auto cf = keras_closed_form(probs, 3, 4, labels);
  // By hand: −log(0.5 / (1 + 1e-7)), −log(1e-7 / (1 + 2e-7)), −log(0.6 / 0.9).
  CHECK(cf.loss == doctest::Approx((0.6931473 + 16.1180958 + 0.4054651) / 3).epsilon(1e-6));
  const auto out = evaluate(
      [](T t) {
        auto [loss, d] = xops::sparse_categorical_crossentropy_with_grad(t[0], t[1]);
        return T{xops::sparse_categorical_crossentropy(t[0], t[1]), loss, d,
                 xops::sparse_categorical_crossentropy(t[0], t[1], false, Reduction::none)};
      },
      {p, l});
  check_values(out[0], {{}, float32}, {cf.loss}, 1e-6);
  check_values(out[1], {{}, float32}, {cf.loss}, 1e-6);
  check_values(out[2], {{3, 4}, float32}, cf.dlogits, 1e-5);
  check_values(out[3], {{3}, float32}, cf.per_sample, 1e-6);
  // The autodiff of the loss is the closed form's gradient too.
  std::vector<HostTensor> grads;
  {
    Ir ir;
    auto main = ir.main_graph().scope();
    const Graph fwd = ir.create_graph(
        "scce", [&](T t) { return xops::sparse_categorical_crossentropy(t[0], t[1]); },
        std::vector<TensorSpec>{p.spec(), l.spec()});
    const auto info = transforms::autodiff(fwd, {.grads_required = T{fwd.inputs()[0]}});
    grads = autodiff_gradients(info, {p, l}, {HostTensor::scalar(1.0f)});
  }
  REQUIRE(grads.size() == 1);
  check_values(grads[0], {{3, 4}, float32}, cf.dlogits, 1e-5);
  // Away from the clipping bounds the gradient is smooth: finite differences agree.
  const auto inner =
      tensor({3, 4}, float32, {0.2, 0.3, 0.4, 0.1, 0.5, 0.2, 0.2, 0.1, 0.3, 0.15, 0.25, 0.3});
  CHECK(check_gradients([](T t) { return xops::sparse_categorical_crossentropy(t[0], t[1]); },
                        {inner, l}, 1e-3) == 12);
}

TEST_CASE("sparse_categorical_crossentropy of a softmax output reads its logits, stably") {
  // Row 0's label has softmax probability e^-200, 0 in float32: from the logits the loss is
  // exact (≈ 200), where clipped probabilities would give −log(1e-7) ≈ 16.1.
  const V logits = {0.0, 200.0, -50.0, 1.0, 2.0, 3.0};
  const std::vector<int> labels = {0, 2};
  const auto x = tensor({2, 3}, float32, logits);
  const auto l = labels_tensor(labels);
  const auto cf = closed_form(logits, 2, 3, labels);
  CHECK(cf.loss == doctest::Approx((200.0 + 0.4076059644) / 2).epsilon(1e-6));
  for (const bool from_logits : {false, true}) {
    CAPTURE(from_logits);
    const auto out = evaluate(
        [&](T t) {
          const Tensor y = from_logits ? t[0] : ops::softmax(t[0]);
          return T{xops::sparse_categorical_crossentropy(y, t[1], from_logits)};
        },
        {x, l});
    check_values(out[0], {{}, float32}, {cf.loss}, 1e-6);
  }
  // Its gradient with respect to the logits is softmax − onehot, finite.
  std::vector<HostTensor> grads;
  {
    Ir ir;
    auto main = ir.main_graph().scope();
    const Graph fwd = ir.create_graph(
        "scce",
        [&](T t) { return xops::sparse_categorical_crossentropy(ops::softmax(t[0]), t[1]); },
        std::vector<TensorSpec>{x.spec(), l.spec()});
    const auto info = transforms::autodiff(fwd, {.grads_required = T{fwd.inputs()[0]}});
    grads = autodiff_gradients(info, {x, l}, {HostTensor::scalar(1.0f)});
  }
  REQUIRE(grads.size() == 1);
  check_values(grads[0], {{2, 3}, float32}, cf.dlogits, 1e-6);
}

TEST_CASE("sparse_categorical_crossentropy refuses a softmax output taken for logits") {
  ScratchGraph s;
  const Tensor x = s.input({4, 10}), l = s.input({4}, int32);
  CHECK_THROWS_WITH_AS((void)xops::sparse_categorical_crossentropy(ops::softmax(x), l, true),
                       doctest::Contains("sparse_categorical_crossentropy: from_logits is true, "
                                         "but the predictions"),
                       ValueError);
  CHECK_THROWS_WITH_AS((void)xops::sparse_categorical_crossentropy(ops::softmax(x), l, true),
                       doctest::Contains("pass from_logits = false"), ValueError);
  // A softmax over another axis is not the class softmax: its output is taken as it is.
  CHECK_NOTHROW((void)xops::sparse_categorical_crossentropy(ops::softmax(x, 0), l, true));
  CHECK_THROWS_AS((void)xops::sparse_categorical_crossentropy(x, s.input({4})), DTypeError);
}
