// interpolate (PopART's Resize) and its gradient: shapes, every mode's values and every user
// error.
#include "shape_helpers.hpp"

#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using namespace pxl::test_ops_shape;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

namespace test_shape_interpolate {
using M = ResizeMode;
using N = ResizeNearestMode;
using C = ResizeCoordinateTransformationMode;

/// interpolate of `x` (float32 values, shape `shape`) by `scales`, as the reference computes it.
HostTensor interpolated(Shape shape, const std::vector<double>& x, std::vector<float> scales,
                        M mode, N nearest, C coord, DType dtype = float32) {
  return pxl::testing::evaluate1(
      [&](std::vector<Tensor> t) { return ops::interpolate(t[0], scales, mode, nearest, coord); },
      {pxl::testing::tensor(std::move(shape), dtype, x)});
}

TEST_CASE("interpolate: output shape, nearest rounding and coordinate modes") {
  {
    Fixture f;
    const Tensor t = graph_input({1, 2, 3, 4}, float32, "t");
    const Tensor y = ops::interpolate(t, {1.f, 1.f, 2.5f, 0.5f});
    CHECK(y.spec() == TensorSpec{{1, 2, 7, 2}, float32});
    CHECK(y.producer()->kind() == OpKind::Resize);
    CHECK(y.producer()->attrs<OpKind::Resize>() ==
          ResizeAttrs{{1.f, 1.f, 2.5f, 0.5f}, M::nearest, N::round_prefer_floor, C::half_pixel});
    CHECK(ops::interpolate(graph_input({3}, float16, "h"), {0.2f}).spec() ==
          TensorSpec{{0}, float16});
  }
  const std::vector<double> x3 = {0, 1, 2}, x4 = {10, 11, 12, 13};
  using pxl::testing::check_values;
  // Integral scale, half-pixel: each element repeated (PopART's upsample).
  check_values(interpolated({3}, x3, {2.f}, M::nearest, N::round_prefer_floor, C::half_pixel),
               {{6}, float32}, {0, 0, 1, 1, 2, 2});
  check_values(interpolated({3}, x3, {2.f}, M::nearest, N::ceil, C::asymmetric), {{6}, float32},
               {0, 1, 1, 2, 2, 2});
  check_values(interpolated({3}, x3, {2.f}, M::nearest, N::floor, C::asymmetric), {{6}, float32},
               {0, 0, 1, 1, 2, 2});
  // align_corners: x = i * 3 / 5 = 0, .6, 1.2, 1.8, 2.4, 3.
  check_values(interpolated({4}, x4, {1.5f}, M::nearest, N::round_prefer_ceil, C::align_corners),
               {{6}, float32}, {10, 11, 11, 12, 12, 13});
  check_values(interpolated({4}, x4, {1.5f}, M::nearest, N::floor, C::align_corners),
               {{6}, float32}, {10, 10, 11, 11, 12, 13});
  // Downsampling, half-pixel: x = 2i + 0.5, a tie.
  check_values(interpolated({4}, x4, {0.5f}, M::nearest, N::round_prefer_floor, C::half_pixel),
               {{2}, float32}, {10, 12});
  check_values(interpolated({4}, x4, {0.5f}, M::nearest, N::round_prefer_ceil, C::half_pixel),
               {{2}, float32}, {11, 13});
  // pytorch_half_pixel reads index 0 when the scaled length is 1; half_pixel reads x = 0.5.
  check_values(interpolated({2}, {5, 6}, {0.5f}, M::nearest, N::ceil, C::pytorch_half_pixel),
               {{1}, float32}, {5});
  check_values(interpolated({2}, {5, 6}, {0.5f}, M::nearest, N::ceil, C::half_pixel),
               {{1}, float32}, {6});
  // An axis of scale 1 is left alone, the others resized.
  check_values(interpolated({2, 2}, {1, 2, 3, 4}, {1.f, 2.f}, M::nearest, N::ceil, C::asymmetric),
               {{2, 4}, float32}, {1, 2, 2, 2, 3, 4, 4, 4});
}

TEST_CASE("interpolate: linear blends the floor and ceil neighbours, float32 and float16") {
  // Per axis of scale 2, half-pixel: x = -0.25, 0.25, 0.75, 1.25 give the weights
  // a = 0, 0.25, 0.75, 1 of the second element; y[r][c] = 20 a(r) + 10 a(c).
  const double a[] = {0, 0.25, 0.75, 1};
  std::vector<double> want;
  for (double r : a)
    for (double c : a)
      want.push_back(20 * r + 10 * c);
  for (DType d : {float32, float16})
    pxl::testing::check_values(interpolated({2, 2}, {0, 10, 20, 30}, {2.f, 2.f}, M::linear,
                                            N::round_prefer_floor, C::half_pixel, d),
                               {{4, 4}, d}, want);
  // Past the last element the ceil neighbour is clamped: the output stays at it.
  pxl::testing::check_values(
      interpolated({3}, {0, 10, 20}, {2.f}, M::linear, N::ceil, C::half_pixel), {{6}, float32},
      {0, 2.5, 7.5, 12.5, 17.5, 20});
  // float16: the closed form of the float16 input (0.1 is not representable) rounded once.
  const double h1 = static_cast<double>(half(0.1)), h2 = static_cast<double>(half(0.2));
  pxl::testing::check_values(
      interpolated({2}, {0.1, 0.2}, {2.f}, M::linear, N::floor, C::asymmetric, float16),
      {{4}, float16}, {h1, static_cast<double>(half(0.5 * h1 + 0.5 * h2)), h2, h2}, 0);
}

TEST_CASE("interpolate_grad: each input element sums the gradients of its readers") {
  using pxl::testing::check_values;
  const auto grad = [](Shape in, std::vector<float> scales, N nearest, C coord,
                       std::vector<double> g, Shape g_shape) {
    return pxl::testing::evaluate1(
        [&](std::vector<Tensor> t) {
          return ops::interpolate_grad(t[0], in, scales, M::nearest, nearest, coord);
        },
        {pxl::testing::tensor(std::move(g_shape), float32, g)});
  };
  check_values(grad({3}, {2.f}, N::round_prefer_floor, C::half_pixel, {1, 2, 3, 4, 5, 6}, {6}),
               {{3}, float32}, {3, 7, 11});
  // Readers 0, 1, 1, 2, 2, 3 (align_corners, round_prefer_ceil, as above).
  check_values(grad({4}, {1.5f}, N::round_prefer_ceil, C::align_corners, {1, 2, 3, 4, 5, 6}, {6}),
               {{4}, float32}, {1, 5, 9, 6});
  // Downsampled: the unread elements get 0.
  check_values(grad({4}, {0.5f}, N::round_prefer_ceil, C::half_pixel, {1, 2}, {2}), {{4}, float32},
               {0, 1, 0, 2});
}

TEST_CASE("interpolate: every user error") {
  Fixture f;
  const Tensor t = graph_input({2, 3}, float32, "t");
  CHECK_THROWS_WITH_AS(ops::interpolate(t),
                       Contains("interpolate: expected one scale factor per axis of an input of "
                                "shape (2, 3), got 4"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {1.f, 0.f}),
                       Contains("interpolate: scale factors must be positive and finite, got "
                                "0.000000 for axis 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {std::nanf(""), 1.f}),
                       Contains("scale factors must be positive and finite"), ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {1e30f, 1.f}),
                       Contains("interpolate: axis 0 of shape (2, 3) scaled by"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {2.f, 2.f}, M::cubic),
                       Contains("interpolate: mode 'cubic' is not supported; pxl implements "
                                "'nearest' and 'linear'"),
                       ValueError);
  CHECK_THROWS_WITH_AS(
      ops::interpolate(t, {2.f, 2.f}, M::nearest, N::floor, C::tf_crop_and_resize),
      Contains("interpolate: coordinate_transformation_mode 'tf_crop_and_resize' is not "
               "supported (PopART's Resize has no lowering for it)"),
      ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {2.f, 2.f}, M::nearest, static_cast<N>(9)),
                       Contains("interpolate: unknown nearest_mode or "
                                "coordinate_transformation_mode"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {2.f, 2.f}, static_cast<M>(7)),
                       Contains("interpolate: mode 'unknown (7)' is not supported"), ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(graph_input({2}, int32, "i"), {2.f}),
                       Contains("interpolate"), DTypeError);

  const Tensor g = graph_input({4, 6}, float32, "g");
  CHECK(ops::interpolate_grad(g, {2, 3}, {2.f, 2.f}, M::nearest, N::floor, C::half_pixel).spec() ==
        TensorSpec{{2, 3}, float32});
  CHECK_THROWS_WITH_AS(
      ops::interpolate_grad(g, {2, 3}, {2.f, 2.f}, M::linear, N::floor, C::half_pixel),
      Contains("interpolate_grad: mode 'linear' has no gradient (PopART's Resize trains with "
               "'nearest' only)"),
      ValueError);
  CHECK_THROWS_WITH_AS(
      ops::interpolate_grad(g, {2, 3}, {2.f, 3.f}, M::nearest, N::floor, C::half_pixel),
      Contains("interpolate_grad: grad 'g/g' [(4, 6) float32] must have interpolate's output "
               "shape (4, 9) for an input of shape (2, 3)"),
      ShapeError);
  CHECK_THROWS_WITH_AS(ops::interpolate_grad(g, {2, 3}, {2.f}, M::nearest, N::floor, C::half_pixel),
                       Contains("interpolate_grad: expected one scale factor per axis"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate_grad(graph_input({4}, int32, "gi"), {2}, {2.f}, M::nearest,
                                             N::floor, C::half_pixel),
                       Contains("interpolate_grad"), DTypeError);
}

TEST_CASE("interpolate: autodiff through mode linear is a GraphError") {
  Ir ir;
  Graph fwd = ir.create_graph(
      "lin", [](Tensor x) { return ops::interpolate(x, {2.f}, M::linear); },
      TensorSpec{{3}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(fwd),
                       Contains("interpolates with mode 'linear', which has no gradient (as in "
                                "PopXL); detach its input or use mode 'nearest'"),
                       GraphError);
}
} // namespace test_shape_interpolate
