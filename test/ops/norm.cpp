// The normalisations: output specs over 0-3 spatial axes, values against closed forms through
// the reference evaluator (float16 as the float32 closed form rounded once), and every error.
#include "op_test.hpp"

#include "pxl/ops/norm.hpp"
#include "pxl/ops/var_updates.hpp"
#include "pxl/session.hpp"

#include <cmath>

using namespace pxl;
using namespace pxl::testing;
namespace test_ops_norm {

using V = std::vector<Tensor>;

TEST_CASE("norm output specs: the input's, and (C) statistics") {
  for (const Shape& x : std::vector<Shape>{{4, 3}, {2, 3, 5}, {2, 3, 4, 5}, {1, 3, 2, 2, 2}})
    for (const DType d : {float32, float16}) {
      CAPTURE(to_string(x));
      ScratchGraph s;
      const Tensor t = s.input(x, d), p = s.input({3}, d);
      CHECK(ops::batch_norm_inference(t, p, p, p, p).spec() == TensorSpec{x, d});
      const auto r = ops::batch_norm_training(t, p, p);
      CHECK(r.output.spec() == TensorSpec{x, d});
      CHECK(r.mean.spec() == TensorSpec{{3}, d});
      CHECK(r.var.spec() == TensorSpec{{3}, d});
      CHECK(ops::group_norm(t, p, p, 3).spec() == TensorSpec{x, d});
      CHECK(ops::group_norm(t, p, p, 1).producer()->attrs<OpKind::GroupNorm>() ==
            NormAttrs{.epsilon = 1e-5, .num_groups = 1});
      const auto g = ops::batch_norm_grad(t, p, p, p, t, 1e-5, false);
      CHECK(g.t.spec() == TensorSpec{x, d});
      CHECK(g.scale.spec() == TensorSpec{{3}, d});
      CHECK(g.bias.spec() == TensorSpec{{3}, d});
    }
}

TEST_CASE("batch_norm_training: the batch's mean and biased variance, and the output") {
  // Channel 0 holds 1, 2, 3, 4 (mean 2.5, biased variance 1.25), channel 1 holds 0, 0, 2, 2
  // (mean 1, variance 1); scale 2 and 1, bias 0 and 10, eps 0.
  const std::vector<double> x = {1, 2, 0, 0, 3, 4, 2, 2};
  for (const DType d : {float32, float16}) {
    CAPTURE(d);
    const auto out = evaluate(
        [](const V& v) {
          const auto r = ops::batch_norm_training(v[0], v[1], v[2], 0.0);
          return V{r.output, r.mean, r.var};
        },
        {tensor({2, 2, 2}, d, x), tensor({2}, d, {2, 1}), tensor({2}, d, {0, 10})});
    const double r = 1 / std::sqrt(1.25);
    std::vector<double> y = {-1.5 * r * 2, -0.5 * r * 2, 9, 9, 0.5 * r * 2, 1.5 * r * 2, 11, 11};
    for (auto& v : y)
      v = ref::round_to(d, v);
    check_values(out[0], {{2, 2, 2}, d}, y, d == float32 ? 1e-6 : 0.0);
    check_values(out[1], {{2}, d}, {2.5, 1});
    check_values(out[2], {{2}, d}, {1.25, 1});
  }
}

TEST_CASE("batch_norm_inference and group_norm: closed forms") {
  for (const DType d : {float32, float16}) {
    CAPTURE(d);
    // (x − mean) / sqrt(var + eps) · scale + bias, per channel of a (1, 2, 2) input.
    const auto y = evaluate1(
        [](const V& v) { return ops::batch_norm_inference(v[0], v[1], v[2], v[3], v[4], 0.5); },
        {tensor({1, 2, 2}, d, {3, 5, -1, 1}), tensor({2}, d, {1, 2}), tensor({2}, d, {0, 1}),
         tensor({2}, d, {1, 0}), tensor({2}, d, {3.5, 0.5})});
    check_values(y, {{1, 2, 2}, d}, {ref::round_to(d, 1.0), ref::round_to(d, 2.0), -1.0, 3.0},
                 d == float32 ? 1e-6 : 0.0);
    // Two groups of two one-position channels: group 0 holds 1, 3 (mean 2, variance 1), group 1
    // 5, 9 (mean 7, variance 4); both normalise to −1, 1.
    const auto g = evaluate1([](const V& v) { return ops::group_norm(v[0], v[1], v[2], 2, 0.0); },
                             {tensor({1, 4}, d, {1, 3, 5, 9}), tensor({4}, d, {1, 2, 1, 0.5}),
                              tensor({4}, d, {0, 0, 1, 1})});
    check_values(g, {{1, 4}, d}, {-1, 2, 0, 1.5});
  }
}

TEST_CASE("running statistics from batch_norm_training with ONNX's momentum, on a Session") {
  // Channel 0 holds 1, 2, 3, 4 (mean 2.5, biased variance 1.25), channel 1 0, 0, 2, 2 (1, 1).
  // After k steps from (0, 1): running_mean = (1 − 0.9^k)·mean, running_var = 0.9^k + (1 −
  // 0.9^k)·var; bitwise the same for 1 to 3 workers.
  Ir ir;
  Tensor running_mean, running_var;
  {
    auto in_main = ir.main_graph().scope();
    const Tensor x = variable(HostTensor({1.f, 2.f, 0.f, 0.f, 3.f, 4.f, 2.f, 2.f}, {2, 2, 2}), "x");
    const Tensor ones = variable(HostTensor({1.f, 1.f}, {2}), "scale");
    const Tensor zeros = variable(HostTensor({0.f, 0.f}, {2}), "bias");
    running_mean = variable(HostTensor({0.f, 0.f}, {2}), "running_mean");
    running_var = variable(HostTensor({1.f, 1.f}, {2}), "running_var");
    const auto r = ops::batch_norm_training(x, ones, zeros);
    ops::var_updates::accumulate_moving_average_(running_mean, r.mean, 0.9);
    ops::var_updates::accumulate_moving_average_(running_var, r.var, 0.9);
  }
  std::vector<HostTensor> first;
  for (unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    Session session(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = session.attach();
    for (int k = 1; k <= 3; ++k)
      session.run();
    const HostTensor m = session.get_tensor_data(running_mean);
    const HostTensor v = session.get_tensor_data(running_var);
    const double kept = std::pow(0.9, 3);
    check_values(m, {{2}, float32}, {(1 - kept) * 2.5, (1 - kept) * 1.0});
    check_values(v, {{2}, float32}, {kept + (1 - kept) * 1.25, kept + (1 - kept) * 1.0});
    if (workers == 1) {
      first = {m, v};
    } else {
      CHECK(m == first[0]);
      CHECK(v == first[1]);
    }
  }
}

TEST_CASE("norm errors name the op, what was expected and what was found") {
  ScratchGraph s;
  const Tensor x = s.input({2, 3, 4}), p = s.input({3});
  CHECK_THROWS_WITH_AS(ops::batch_norm_inference(s.input({3}), p, p, p, p),
                       doctest::Contains("BatchNormInference: the input must be (N, C, "
                                         "spatial...) with 0 to 3 spatial axes (rank 2 to 5), "
                                         "got"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::batch_norm_training(s.input({1, 3, 1, 1, 1, 1}), p, p),
                       doctest::Contains("BatchNormTraining: the input must be (N, C, spatial...)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::batch_norm_inference(x, p, p, s.input({4}), p),
                       doctest::Contains("BatchNormInference: mean must have shape (3,) (the "
                                         "channels of the input"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::batch_norm_inference(x, p, p, p, s.input({3, 1})),
                       doctest::Contains("var must have shape (3,)"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::batch_norm_training(x, s.input({2}), p),
                       doctest::Contains("BatchNormTraining: scale must have shape (3,)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::batch_norm_training(x, p, s.input({3}, float16)),
                       doctest::Contains("BatchNormTraining: bias must have the input's dtype "
                                         "float32, got"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::batch_norm_training(s.input({2, 3}, int32), p, p),
                       doctest::Contains("BatchNormTraining: expected a float32 or float16 "
                                         "tensor, got"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::batch_norm_training(x, p, p, -1.0),
                       doctest::Contains("BatchNormTraining: epsilon must be >= 0, got -1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::group_norm(x, p, p, 2),
                       doctest::Contains("GroupNormalization: num_groups must be at least 1 and "
                                         "divide the input's 3 channels, got num_groups 2"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::group_norm(x, p, p, 0), doctest::Contains("got num_groups 0"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::group_norm(x, s.input({6}), p, 3),
                       doctest::Contains("GroupNormalization: weight must have shape (3,)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::group_norm(s.input({4}), p, p, 1),
                       doctest::Contains("GroupNormalization: the input must be (N, C, "
                                         "spatial...)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::group_norm(x, p, s.input({3}, float16), 1),
                       doctest::Contains("GroupNormalization: bias must have the input's dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::batch_norm_grad(x, p, p, p, s.input({2, 3, 5}), 1e-5, false),
                       doctest::Contains("BatchNormGrad: the gradient"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::group_norm_grad(x, p, s.input({2, 3, 4}, float16), 3),
                       doctest::Contains("GroupNormalizationGrad: operands must have the same "
                                         "dtype"),
                       DTypeError);
}

} // namespace test_ops_norm
