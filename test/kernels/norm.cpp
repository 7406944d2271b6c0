// The normalisations' kernels: batch norm through oneDNN (inference, training, both backward
// passes) and group norm against the naive reference over 0-3 spatial axes, in float32 and
// float16; bitwise equal on 1-4 workers, threads included; the training output's per-channel
// mean and variance.
#include "harness.hpp"

#include "pxl/ops/norm.hpp"

using namespace pxl;
using namespace pxl::testing;
namespace test_kernels_norm {

using V = std::vector<Tensor>;

/// (N, C, spatial...) shapes over 0 to 3 spatial axes; 17 channels make blocks of 3 and a tail
/// of 2.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {5, 3}, {2, 3, 7}, {3, 17, 4}, {2, 4, 3, 5}, {2, 6, 3, 2, 4},
  };
  return s;
}

/// Runs `c` on 1-4 workers, each on its own thread, and checks the runs bitwise equal; then each
/// output against the reference within `tol` of the output's largest magnitude (float32), or
/// that and two units in the last place (float16; the kernel rounds once from float32 sums, the
/// reference once from double ones). Returns the single-worker outputs.
std::vector<HostTensor> check_norm_kernel(const KernelCase& c, double tol = 2e-6) {
  const auto one = run_kernel(c, 1);
  for (unsigned w = 2; w <= 4; ++w) {
    CAPTURE(w);
    const auto many = run_kernel(c, w, true);
    for (std::size_t k = 0; k < one.size(); ++k)
      CHECK(many[k] == one[k]);
  }
  const auto want = ReferenceEvaluator(c.ir).evaluate(c.graph, c.inputs);
  for (std::size_t k = 0; k < want.size(); ++k) {
    CAPTURE(k);
    REQUIRE(one[k].spec() == want[k].spec());
    double largest = 0.0;
    for (std::int64_t i = 0; i < want[k].nelms(); ++i)
      largest = std::max(largest, std::fabs(want[k].item(i)));
    const bool half_out = want[k].dtype() == float16;
    for (std::int64_t i = 0; i < want[k].nelms(); ++i) {
      const double got = one[k].item(i), expected = want[k].item(i);
      const double allowed =
          tol * largest + (half_out ? std::ldexp(std::fabs(expected), -9) + 1e-7 : 0.0);
      CAPTURE(i);
      CAPTURE(got);
      CAPTURE(expected);
      if (std::isnan(expected))
        CHECK(std::isnan(got));
      else
        CHECK(std::fabs(got - expected) <= allowed);
    }
  }
  return one;
}

HostTensor per_channel(const Shape& x, DType d, double lo, double hi, std::uint64_t salt) {
  return random_tensor({x[1]}, d, lo, hi, salt);
}

TEST_CASE("batch_norm_inference against the reference, 0-3 spatial axes, 1-4 workers bitwise") {
  for (const DType d : {float32, float16})
    for (const Shape& x : shapes()) {
      CAPTURE(d);
      CAPTURE(to_string(x));
      check_norm_kernel(make_case(
          [](const V& v) {
            return V{ops::batch_norm_inference(v[0], v[1], v[2], v[3], v[4], 1e-3)};
          },
          {random_tensor(x, d, -2, 2, 1), per_channel(x, d, 0.5, 1.5, 2),
           per_channel(x, d, -1, 1, 3), per_channel(x, d, -0.5, 0.5, 4),
           per_channel(x, d, 0.5, 2, 5)}));
    }
}

TEST_CASE("batch_norm_training against the reference: output, batch mean and variance") {
  for (const DType d : {float32, float16})
    for (const Shape& x : shapes()) {
      CAPTURE(d);
      CAPTURE(to_string(x));
      check_norm_kernel(make_case(
          [](const V& v) {
            const auto r = ops::batch_norm_training(v[0], v[1], v[2]);
            return V{r.output, r.mean, r.var};
          },
          {random_tensor(x, d, -2, 2, 6), per_channel(x, d, 0.5, 1.5, 7),
           per_channel(x, d, -1, 1, 8)}));
    }
}

TEST_CASE("batch_norm_grad, batch and given statistics, against the reference") {
  for (const bool global : {false, true})
    for (const DType d : {float32, float16})
      for (const Shape& x : shapes()) {
        CAPTURE(global);
        CAPTURE(d);
        CAPTURE(to_string(x));
        check_norm_kernel(
            make_case(
                [global](const V& v) {
                  const auto r = ops::batch_norm_grad(v[0], v[1], v[2], v[3], v[4], 1e-5, global);
                  return V{r.t, r.scale, r.bias};
                },
                {random_tensor(x, d, -2, 2, 9), per_channel(x, d, 0.5, 1.5, 10),
                 per_channel(x, d, -0.5, 0.5, 11), per_channel(x, d, 0.5, 2, 12),
                 random_tensor(x, d, -1, 1, 13)}),
            // The sums over a channel are float32's in oneDNN, and d x subtracts them.
            d == float32 ? 2e-6 : 4e-3);
      }
}

TEST_CASE("group_norm and its gradient against the reference, groups of 1 to C channels") {
  struct Case {
    Shape x;
    std::int64_t groups;
  };
  for (const Case& c : std::vector<Case>{
           {{4, 6}, 3}, {{2, 6, 5}, 1}, {{2, 6, 5}, 6}, {{3, 8, 3, 4}, 4}, {{2, 6, 2, 3, 2}, 2}})
    for (const DType d : {float32, float16}) {
      CAPTURE(d);
      CAPTURE(to_string(c.x));
      CAPTURE(c.groups);
      const std::int64_t groups = c.groups;
      check_norm_kernel(
          make_case([groups](const V& v) { return V{ops::group_norm(v[0], v[1], v[2], groups)}; },
                    {random_tensor(c.x, d, -2, 2, 14), per_channel(c.x, d, 0.5, 1.5, 15),
                     per_channel(c.x, d, -1, 1, 16)}));
      check_norm_kernel(make_case(
          [groups](const V& v) {
            const auto r = ops::group_norm_grad(v[0], v[1], v[2], groups);
            return V{r.first, r.second};
          },
          {random_tensor(c.x, d, -2, 2, 17), per_channel(c.x, d, 0.5, 1.5, 18),
           random_tensor(c.x, d, -1, 1, 19)}));
    }
}

TEST_CASE("batch_norm_training: each channel of the output has mean 0 and variance "
          "var / (var + eps) before its scale and bias") {
  const Shape shape{4, 5, 3, 3};
  const auto x = random_tensor(shape, float32, -3, 5, 20);
  const auto out = check_norm_kernel(make_case(
      [](const V& v) {
        const auto r = ops::batch_norm_training(v[0], v[1], v[2], 1e-5);
        return V{r.output, r.mean, r.var};
      },
      {x, tensor({5}, float32, {1, 1, 1, 1, 1}), tensor({5}, float32, {0, 0, 0, 0, 0})}));
  const std::int64_t per = 9, m = 4 * per;
  for (std::int64_t ch = 0; ch < 5; ++ch) {
    double s = 0.0, s2 = 0.0, xs = 0.0;
    for (std::int64_t n = 0; n < 4; ++n)
      for (std::int64_t p = 0; p < per; ++p) {
        const std::int64_t at = (n * 5 + ch) * per + p;
        s += out[0].item(at);
        s2 += out[0].item(at) * out[0].item(at);
        xs += x.item(at);
      }
    const double var = out[2].item(ch);
    CAPTURE(ch);
    CHECK(std::fabs(s / static_cast<double>(m)) < 1e-6);
    CHECK(std::fabs(s2 / static_cast<double>(m) - var / (var + 1e-5)) < 1e-5);
    CHECK(std::fabs(out[1].item(ch) - xs / static_cast<double>(m)) < 1e-5);
  }
}

TEST_CASE("norms of an empty batch: empty outputs, NaN batch statistics, zero scale and bias "
          "gradients") {
  for (const DType d : {float32, float16}) {
    CAPTURE(d);
    const Shape x{0, 3, 2};
    const auto p = per_channel(x, d, 0.5, 1.5, 21);
    check_norm_kernel(make_case(
        [](const V& v) {
          const auto r = ops::batch_norm_training(v[0], v[1], v[2]);
          return V{r.output, r.mean, r.var};
        },
        {HostTensor(x, d), p, p}));
    const auto g = check_norm_kernel(make_case(
        [](const V& v) {
          const auto r = ops::batch_norm_grad(v[0], v[1], v[2], v[3], v[4], 1e-5, false);
          return V{r.t, r.scale, r.bias};
        },
        {HostTensor(x, d), p, p, p, HostTensor(x, d)}));
    check_values(g[1], {{3}, d}, {0, 0, 0});
    check_norm_kernel(make_case(
        [](const V& v) { return V{ops::batch_norm_inference(v[0], v[1], v[2], v[3], v[4])}; },
        {HostTensor(x, d), p, p, p, p}));
    check_norm_kernel(make_case([](const V& v) { return V{ops::group_norm(v[0], v[1], v[2], 3)}; },
                                {HostTensor(x, d), p, p}));
  }
}

TEST_CASE("batch_norm_inference with the batch's own statistics gives batch_norm_training's "
          "output") {
  for (const DType d : {float32, float16}) {
    CAPTURE(d);
    const Shape shape{3, 4, 5};
    const auto x = random_tensor(shape, d, -2, 2, 22);
    const auto scale = per_channel(shape, d, 0.5, 1.5, 23), bias = per_channel(shape, d, 2, 3, 24);
    const auto trained = check_norm_kernel(make_case(
        [](const V& v) {
          const auto r = ops::batch_norm_training(v[0], v[1], v[2]);
          return V{r.output, r.mean, r.var};
        },
        {x, scale, bias}));
    const auto evaluated = check_norm_kernel(make_case(
        [](const V& v) { return V{ops::batch_norm_inference(v[0], v[1], v[2], v[3], v[4])}; },
        {x, scale, bias, trained[1], trained[2]}));
    // float32: oneDNN's two passes normalise alike; float16: the statistics were rounded to
    // half on their way out of the training pass.
    for (std::int64_t i = 0; i < x.nelms(); ++i)
      CHECK(std::fabs(evaluated[0].item(i) - trained[0].item(i)) <=
            (d == float32 ? 1e-6 : 2e-2) * std::fabs(trained[0].item(i)));
  }
}

TEST_CASE("batch_norm_inference: hand-computed values") {
  // Channel 0: (x − 1) / sqrt(4) · 2 + 1; channel 1: (x + 1) / sqrt(1) · 0.5 − 1 (eps 0).
  const auto out = check_norm_kernel(make_case(
      [](const V& v) { return V{ops::batch_norm_inference(v[0], v[1], v[2], v[3], v[4], 0.0)}; },
      {tensor({2, 2, 2}, float32, {1, 3, -1, 1, 5, -3, 0, 2}), tensor({2}, float32, {2, 0.5}),
       tensor({2}, float32, {1, -1}), tensor({2}, float32, {1, -1}),
       tensor({2}, float32, {4, 1})}));
  check_values(out[0], {{2, 2, 2}, float32}, {1, 3, -1, 0, 5, -3, -0.5, 0.5});
}

} // namespace test_kernels_norm
