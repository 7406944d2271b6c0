// Pools: output shapes over 1-3 spatial axes, strides, padding and pad_type, dilation and
// ceil_mode; the global pools; values through the reference evaluator (the tie rule, the
// divisors of count_include_pad and of ceil_mode's clipped windows); roi_align on linear ramps; and
// every error.
#include "op_test.hpp"

#include "pxl/ops/pool.hpp"

using namespace pxl;
using namespace pxl::testing;
using Ints = std::vector<std::int64_t>;

namespace test_ops_pool {

Shape max_shape(Shape x, const Ints& k, const ops::PoolOptions& o = {}) {
  ScratchGraph s;
  return ops::max_pool(s.input(std::move(x)), k, o).shape();
}

Shape avg_shape(Shape x, const Ints& k, const ops::PoolOptions& o = {}) {
  ScratchGraph s;
  return ops::average_pool(s.input(std::move(x)), k, o).shape();
}

TEST_CASE("max_pool and average_pool infer (N, C, out...) over 1, 2 and 3 spatial axes") {
  CHECK(max_shape({2, 3, 8}, {2}, {.stride = {2}}) == Shape{2, 3, 4});
  CHECK(max_shape({2, 3, 32, 32}, {2, 2}, {.stride = {2, 2}}) == Shape{2, 3, 16, 16});
  CHECK(max_shape({2, 3, 32, 32}, {3, 3}, {.stride = {2, 2}, .padding = {1, 1, 1, 1}}) ==
        Shape{2, 3, 16, 16});
  CHECK(avg_shape({1, 2, 9, 9}, {3, 2}, {.dilation = {2, 1}}) == Shape{1, 2, 5, 8});
  CHECK(avg_shape({1, 2, 5, 6, 7}, {2, 3, 3}, {.stride = {1, 2, 3}}) == Shape{1, 2, 4, 2, 2});
  ScratchGraph s;
  const Tensor y = ops::max_pool(s.input({1, 2, 4}, float16), {2});
  CHECK(y.spec() == TensorSpec{{1, 2, 3}, float16});
  CHECK(y.producer()->kind() == OpKind::MaxPool);
  CHECK(ops::average_pool(s.input({1, 2, 4}), {2}).producer()->kind() == OpKind::AveragePool);
}

TEST_CASE("pools: ceil_mode rounds up, but never starts a window past the input and its "
          "padding before") {
  // 6 - 3 = 3 over stride 2: floor 2 windows, ceil 3 (the last one clipped).
  CHECK(max_shape({1, 1, 6}, {3}, {.stride = {2}}) == Shape{1, 1, 2});
  CHECK(max_shape({1, 1, 6}, {3}, {.stride = {2}, .ceil_mode = true}) == Shape{1, 1, 3});
  // 5 + 1 + 1 - 2 = 5 over stride 2: ceil 4 windows, but the 4th would start at 6 - 1 = 5,
  // past the input (positions 0-4): 3, as PyTorch.
  CHECK(max_shape({1, 1, 5}, {2}, {.stride = {2}, .padding = {1, 1}}) == Shape{1, 1, 3});
  CHECK(max_shape({1, 1, 5}, {2}, {.stride = {2}, .padding = {1, 1}, .ceil_mode = true}) ==
        Shape{1, 1, 3});
  CHECK(avg_shape({1, 1, 4, 7}, {2, 2}, {.stride = {3, 3}, .ceil_mode = true}) ==
        Shape{1, 1, 2, 3});
}

TEST_CASE("pools resolve pad_type as ONNX's auto_pad") {
  CHECK(max_shape({1, 1, 7}, {3}, {.stride = {2}, .pad_type = ops::PadType::same_upper}) ==
        Shape{1, 1, 4});
  CHECK(max_shape({1, 1, 7}, {3}, {.stride = {2}, .pad_type = ops::PadType::valid}) ==
        Shape{1, 1, 3});
  ScratchGraph s;
  const auto attrs = [&](ops::PadType p) {
    return ops::average_pool(s.input({1, 1, 6}), {4}, {.pad_type = p})
        .producer()
        ->attrs<OpKind::AveragePool>();
  };
  CHECK(attrs(ops::PadType::same_upper).pads_begin == Ints{1});
  CHECK(attrs(ops::PadType::same_upper).pads_end == Ints{2});
  CHECK(attrs(ops::PadType::same_lower).pads_begin == Ints{2});
  CHECK(attrs(ops::PadType::same_lower).pads_end == Ints{1});
}

TEST_CASE("global pools keep the spatial axes as size 1") {
  {
    ScratchGraph s;
    const Tensor g = ops::global_average_pool(s.input({2, 3, 5, 4}));
    CHECK(g.shape() == Shape{2, 3, 1, 1});
    CHECK(g.producer()->attrs<OpKind::AveragePool>().kernel == Ints{5, 4});
    CHECK(ops::global_max_pool(s.input({2, 3, 7}, float16)).spec() ==
          TensorSpec{{2, 3, 1}, float16});
  }
  const auto x = tensor({1, 2, 2, 2}, float32, {1, 2, 3, 4, -1, -5, -2, -3});
  check_values(
      evaluate1([](const std::vector<Tensor>& v) { return ops::global_average_pool(v[0]); }, {x}),
      {{1, 2, 1, 1}, float32}, {2.5, -2.75});
  check_values(
      evaluate1([](const std::vector<Tensor>& v) { return ops::global_max_pool(v[0]); }, {x}),
      {{1, 2, 1, 1}, float32}, {4, -1});
}

TEST_CASE("pool values: padding never wins a max; the average's divisors") {
  const auto x = tensor({1, 1, 4}, float32, {-1, -2, -3, -4});
  const ops::PoolOptions padded{.stride = {2}, .padding = {1, 1}};
  check_values(
      evaluate1([&](const std::vector<Tensor>& v) { return ops::max_pool(v[0], {2}, padded); },
                {x}),
      {{1, 1, 3}, float32}, {-1, -2, -4});
  // Windows [pad, -1], [-2, -3], [-4, pad]: the padding left out of the count, then in it.
  check_values(
      evaluate1([&](const std::vector<Tensor>& v) { return ops::average_pool(v[0], {2}, padded); },
                {x}),
      {{1, 1, 3}, float32}, {-1, -2.5, -4});
  auto include = padded;
  include.count_include_pad = true;
  check_values(
      evaluate1([&](const std::vector<Tensor>& v) { return ops::average_pool(v[0], {2}, include); },
                {x}),
      {{1, 1, 3}, float32}, {-0.5, -2.5, -2});
  // ceil_mode's last window [5, 6, past] is clipped: it counts 2 elements with or without
  // count_include_pad.
  const auto y = tensor({1, 1, 6}, float32, {1, 2, 3, 4, 5, 6});
  for (const bool count_pad : {false, true}) {
    CAPTURE(count_pad);
    const ops::PoolOptions o{.stride = {2}, .ceil_mode = true, .count_include_pad = count_pad};
    check_values(
        evaluate1([o](const std::vector<Tensor>& v) { return ops::average_pool(v[0], {3}, o); },
                  {y}),
        {{1, 1, 3}, float32}, {2, 4, 5.5});
  }
}

TEST_CASE("max_pool's gradient goes to the first largest element of each window") {
  // Windows of 2 x 2 with stride 1 over a plane of equal values: each sends its gradient to its
  // top-left element.
  const auto x = tensor({1, 1, 3, 3}, float32, std::vector<double>(9, 1.0));
  const auto dy = tensor({1, 1, 2, 2}, float32, {1, 2, 3, 4});
  check_values(evaluate1(
                   [](const std::vector<Tensor>& v) {
                     return ops::max_pool_grad(v[0], v[1], {2, 2});
                   },
                   {dy, x}),
               {{1, 1, 3, 3}, float32}, {1, 2, 0, 3, 4, 0, 0, 0, 0});
  // A tie between the window's 2nd and 3rd taps: the 2nd wins.
  const auto z = tensor({1, 1, 3}, float32, {0, 5, 5});
  check_values(
      evaluate1([](const std::vector<Tensor>& v) { return ops::max_pool_grad(v[0], v[1], {3}); },
                {tensor({1, 1, 1}, float32, {7}), z}),
      {{1, 1, 3}, float32}, {0, 7, 0});
}

TEST_CASE("average_pool's gradient spreads evenly over what the divisor counted") {
  const auto dy = tensor({1, 1, 3}, float32, {2, 4, 6});
  const ops::PoolOptions o{.stride = {2}, .padding = {1, 1}};
  check_values(evaluate1(
                   [o](const std::vector<Tensor>& v) {
                     return ops::average_pool_grad(v[0], {1, 1, 4}, {2}, o);
                   },
                   {dy}),
               {{1, 1, 4}, float32}, {2, 2, 2, 6});
  auto include = o;
  include.count_include_pad = true;
  check_values(evaluate1(
                   [include](const std::vector<Tensor>& v) {
                     return ops::average_pool_grad(v[0], {1, 1, 4}, {2}, include);
                   },
                   {dy}),
               {{1, 1, 4}, float32}, {1, 2, 2, 3});
}

TEST_CASE("pool errors") {
  ScratchGraph s;
  const Tensor x = s.input({2, 4, 5, 5});
  using ops::max_pool;
  CHECK_THROWS_WITH_AS(max_pool(s.input({2, 4, 5, 5}, int32), {2, 2}),
                       doctest::Contains("MaxPool: expected a float32 or float16 tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::average_pool(s.input({4, 5}), {2}),
                       doctest::Contains("AveragePool: the input must be (N, C, spatial...) with "
                                         "1, 2 or 3 spatial axes, got"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::global_average_pool(s.input({1, 1, 2, 2, 2, 2})),
                       doctest::Contains("GlobalAveragePool: the input must be (N, C, "
                                         "spatial...)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::global_max_pool(s.input({3, 2}, float16)),
                       doctest::Contains("GlobalMaxPool: the input must be"), ShapeError);
  CHECK_THROWS_WITH_AS(max_pool(x, {2}),
                       doctest::Contains("MaxPool: kernel_size (2,) has 1 entries, expected one "
                                         "per spatial axis of the input"),
                       ValueError);
  CHECK_THROWS_WITH_AS(max_pool(x, {2, 0}),
                       doctest::Contains("MaxPool: kernel_size (2, 0) must be at least 1 on "
                                         "every axis"),
                       ValueError);
  CHECK_THROWS_WITH_AS(max_pool(x, {2, 2}, {.stride = {0, 1}}),
                       doctest::Contains("MaxPool: stride (0, 1) must be at least 1"), ValueError);
  CHECK_THROWS_WITH_AS(max_pool(x, {2, 2}, {.dilation = {1}}),
                       doctest::Contains("MaxPool: dilation (1,) has 1 entries"), ValueError);
  CHECK_THROWS_WITH_AS(max_pool(x, {2, 2}, {.padding = {1, 1}}),
                       doctest::Contains("MaxPool: padding (1, 1) has 2 entries, expected 4"),
                       ValueError);
  CHECK_THROWS_WITH_AS(max_pool(x, {2, 2}, {.padding = {0, 0, -1, 0}}),
                       doctest::Contains("MaxPool: padding (0, 0, -1, 0) must be non-negative"),
                       ValueError);
  CHECK_THROWS_WITH_AS(
      max_pool(x, {2, 2}, {.padding = {1, 1, 1, 1}, .pad_type = ops::PadType::same_upper}),
      doctest::Contains("MaxPool: padding (1, 1, 1, 1) and pad_type same_upper are both set"),
      ValueError);
  CHECK_THROWS_WITH_AS(max_pool(x, {2, 2}, {.count_include_pad = true}),
                       doctest::Contains("MaxPool: count_include_pad applies to average_pool "
                                         "only"),
                       ValueError);
  CHECK_THROWS_WITH_AS(max_pool(x, {2, 2}, {.padding = {0, 2, 0, 0}}),
                       doctest::Contains("MaxPool: padding 2 + 0 on spatial axis 1 must be "
                                         "smaller on each side than the window's extent 2"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::average_pool(x, {2, 6}),
                       doctest::Contains("AveragePool: the window spans 6 on spatial axis 1 "
                                         "(kernel 6, dilation 1), more than the padded input's 5"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::average_pool(x, {3, 2}, {.dilation = {3, 1}}),
                       doctest::Contains("the window spans 7 on spatial axis 0 (kernel 3, "
                                         "dilation 3), more than the padded input's 5"),
                       ShapeError);
  // Taps at -2 and 1 on an axis of size 1: the window sees padding only.
  CHECK_THROWS_WITH_AS(max_pool(s.input({1, 1, 1}), {2}, {.padding = {2, 1}, .dilation = {3}}),
                       doctest::Contains("MaxPool: window 0 on spatial axis 0 (taps -2, 1, ... "
                                         "every 3) holds no element of the input"),
                       ShapeError);
}

TEST_CASE("a pool's shape is inferred in time independent of the input's size") {
  // Windows were once checked one by one for padding-only windows: an input of 2^44 elements
  // on an axis (a hostile ONNX model's Pad) took hours. The shape needs no data, only the
  // arithmetic.
  ScratchGraph s;
  const std::int64_t huge = std::int64_t{1} << 44;
  CHECK(ops::average_pool(s.input({1, 1, huge}), {3}, {.stride = {2}}).shape() ==
        Shape{1, 1, (huge - 3) / 2 + 1});
  CHECK(ops::max_pool(s.input({1, 1, huge}), {3}, {.padding = {2, 2}, .dilation = {2}}).shape() ==
        Shape{1, 1, huge});
}

TEST_CASE("pool gradient errors") {
  ScratchGraph s;
  const Tensor x = s.input({2, 4, 5, 5});
  CHECK_THROWS_WITH_AS(ops::max_pool_grad(s.input({2, 4, 4, 4}, float16), x, {2, 2}),
                       doctest::Contains("MaxPoolGrad:"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::max_pool_grad(s.input({2, 4, 3, 3}), x, {2, 2}),
                       doctest::Contains("must have the pool's output shape (2, 4, 4, 4)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::average_pool_grad(s.input({2, 4, 4}), {2, 4}, {2}),
                       doctest::Contains("AveragePoolGrad: the input must be (N, C, spatial...) "
                                         "with 1, 2 or 3 spatial axes, got of shape (2, 4)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::average_pool_grad(s.input({2, 4, 4}, int32), {2, 4, 5}, {2}),
                       doctest::Contains("AveragePoolGrad: expected a float32 or float16 tensor"),
                       DTypeError);
}

} // namespace test_ops_pool

namespace test_ops_roi_align {
using T = std::vector<Tensor>;

/// Two 4x4 images of one channel: f(y, x) = 16·image + 4y + x.
HostTensor ramps(DType dtype = float32) {
  std::vector<double> v;
  for (int i = 0; i < 32; ++i)
    v.push_back(i);
  return tensor({2, 1, 4, 4}, dtype, v);
}

HostTensor aligned(const std::vector<double>& boxes, const std::vector<double>& images, Ints size,
                   float scale, std::int64_t ratio, DType dtype = float32) {
  const auto r = static_cast<std::int64_t>(images.size());
  return evaluate1([&](T t) { return ops::roi_align(t[0], t[1], t[2], size, scale, ratio); },
                   {ramps(dtype), tensor({r, 4}, dtype, boxes), tensor({r}, int32, images)});
}

TEST_CASE("roi_align: bilinear samples averaged per bin, on a linear ramp") {
  // On f = 16·image + 4y + x, each bin's value is f at the mean of its sample points.
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    // One bin of 3x3, one sample at (1.5, 1.5).
    check_values(aligned({0, 0, 3, 3}, {0}, {1, 1}, 1.f, 1, d), {{1, 1, 1, 1}, d}, {7.5}, 0);
    // 2x2 bins of 1, samples at 0.25, 0.75 | 1.25, 1.75: means 0.5 and 1.5; on image 1.
    check_values(aligned({0, 0, 2, 2}, {1}, {2, 2}, 1.f, 2, d), {{1, 1, 2, 2}, d},
                 {18.5, 19.5, 22.5, 23.5}, 0);
    // spatial_scale 0.5: the box [0, 2]², samples at 0.5 and 1.5, mean 1.
    check_values(aligned({0, 0, 4, 4}, {0}, {1, 1}, 0.5f, 2, d), {{1, 1, 1, 1}, d}, {5}, 0);
  }
  // A box narrower than 1 grows to 1: the sample at 3.5 reads the last row and column.
  check_values(aligned({3, 3, 3.2, 3.2}, {0}, {1, 1}, 1.f, 1), {{1, 1, 1, 1}, float32}, {15});
  // A sample exactly on the far edge (4, 4) is inside: it reads the last row and column.
  check_values(aligned({0, 0, 8, 8}, {0}, {1, 1}, 1.f, 1), {{1, 1, 1, 1}, float32}, {15});
  // Samples past the input add 0 (but count in the divisor); below 0 they clamp to 0.
  check_values(aligned({4, 0, 6, 2}, {0}, {1, 1}, 1.f, 1), {{1, 1, 1, 1}, float32}, {0});
  check_values(aligned({-2, -2, 0, 0}, {1}, {1, 1}, 1.f, 1), {{1, 1, 1, 1}, float32}, {16});
  // x in [2, 6] with two samples: 3 reads f, 5 is past the input: half of f(1, 3).
  check_values(aligned({2, 0, 6, 2}, {0}, {1, 1}, 1.f, 2), {{1, 1, 1, 1}, float32},
               {0.5 * ((4 * 0.5 + 3) + (4 * 1.5 + 3)) / 2});
  // A batch_index outside the batch gives zeros; the output has one row per ROI.
  check_values(aligned({0, 0, 3, 3, 0, 0, 3, 3}, {2, -1}, {1, 2}, 1.f, 1), {{2, 1, 1, 2}, float32},
               {0, 0, 0, 0});
}

TEST_CASE("roi_align_grad: each sample's gradient goes to its four neighbours") {
  const auto grad = evaluate1(
      [](T t) {
        return ops::roi_align_grad(t[0], t[1], t[2], {1, 1, 3, 3}, {1, 1}, 1.f, 1);
      },
      {tensor({1, 1, 1, 1}, float32, {8}), tensor({1, 4}, float32, {0, 0, 1, 1}),
       tensor({1}, int32, {0})});
  // The sample at (0.5, 0.5) reads rows and columns 0 and 1 with weight 1/4 each.
  check_values(grad, {{1, 1, 3, 3}, float32}, {2, 2, 0, 2, 2, 0, 0, 0, 0});
}

TEST_CASE("roi_align errors") {
  ScratchGraph s;
  const Tensor x = s.input({2, 3, 5, 5});
  const Tensor rois = s.input({4, 4});
  const Tensor idx = s.input({4}, int32);
  CHECK(ops::roi_align(x, rois, idx, {2, 3}, 0.5f, 2).spec() == TensorSpec{{4, 3, 2, 3}, float32});
  CHECK_THROWS_WITH_AS(ops::roi_align(s.input({2, 3, 5, 5}, int32), rois, idx, {2, 2}, 1.f, 1),
                       doctest::Contains("roi_align: expected a float32 or float16 tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::roi_align(x, s.input({4, 4}, float16), idx, {2, 2}, 1.f, 1),
                       doctest::Contains("roi_align: rois"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::roi_align(x, rois, s.input({4}), {2, 2}, 1.f, 1),
                       doctest::Contains("roi_align: batch_index must be int32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::roi_align(s.input({3, 5, 5}), rois, idx, {2, 2}, 1.f, 1),
                       doctest::Contains("roi_align: the input must be 4-d (N, C, H, W), got "
                                         "shape (3, 5, 5)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::roi_align(x, s.input({4, 5}), idx, {2, 2}, 1.f, 1),
                       doctest::Contains("roi_align: rois must be (num_rois, 4)"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::roi_align(x, rois, s.input({3}, int32), {2, 2}, 1.f, 1),
                       doctest::Contains("roi_align: batch_index must be (4,), one image per ROI"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::roi_align(x, rois, idx, {2}, 1.f, 1),
                       doctest::Contains("roi_align: output_size must be two extents >= 1 "
                                         "(height, width), got (2,)"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::roi_align(x, rois, idx, {2, 0}, 1.f, 1),
                       doctest::Contains("output_size must be two extents >= 1"), ValueError);
  CHECK_THROWS_WITH_AS(ops::roi_align(x, rois, idx, {2, 2}, 0.f, 1),
                       doctest::Contains("roi_align: spatial_scale must be positive and finite, "
                                         "got 0.000000"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::roi_align(x, rois, idx, {2, 2}, 1.f, 0),
                       doctest::Contains("roi_align: sampling_ratio must be >= 1 (PopLibs has no "
                                         "adaptive 0), got 0"),
                       ValueError);
  const Tensor g = s.input({4, 3, 2, 2});
  CHECK(ops::roi_align_grad(g, rois, idx, {2, 3, 5, 5}, {2, 2}, 1.f, 1).spec() ==
        TensorSpec{{2, 3, 5, 5}, float32});
  CHECK_THROWS_WITH_AS(ops::roi_align_grad(g, rois, idx, {2, 3, 5, 5}, {3, 2}, 1.f, 1),
                       doctest::Contains("roi_align_grad: grad"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::roi_align_grad(g, rois, idx, {2, 5, 5}, {2, 2}, 1.f, 1),
                       doctest::Contains("roi_align_grad: the input must be 4-d"), ShapeError);
}
} // namespace test_ops_roi_align
