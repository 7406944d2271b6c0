// Convolutions: output shapes over 1-3 spatial axes, strides, padding and pad_type, dilation and
// groups; conv_transpose's output_padding and output_shape; values through the reference
// evaluator; and every error.
#include "op_test.hpp"

#include "pxl/ir/attrs.hpp"
#include "pxl/ops/conv.hpp"
#include "pxl/transforms/autodiff.hpp"

using namespace pxl;
using namespace pxl::testing;
using T = std::vector<Tensor>;
using Ints = std::vector<std::int64_t>;

namespace test_ops_conv {

Shape conv_shape(Shape x, Shape w, const ops::ConvOptions& o = {}) {
  ScratchGraph s;
  return ops::conv(s.input(std::move(x)), s.input(std::move(w)), o).shape();
}

Shape transpose_shape(Shape x, Shape w, const ops::ConvTransposeOptions& o = {}) {
  ScratchGraph s;
  return ops::conv_transpose(s.input(std::move(x)), s.input(std::move(w)), o).shape();
}

/// The attributes of the op `fn` builds on inputs of shapes `x` and `w`.
template <typename Fn>
ConvAttrs attrs_of(Shape x, Shape w, Fn fn) {
  ScratchGraph s;
  return fn(s.input(std::move(x)), s.input(std::move(w)))
      .producer()
      ->template attrs_as<ConvAttrs>();
}

TEST_CASE("conv infers (N, C_out, out...) over 1, 2 and 3 spatial axes") {
  CHECK(conv_shape({2, 3, 32, 32}, {8, 3, 3, 3}) == Shape{2, 8, 30, 30});
  CHECK(conv_shape({2, 3, 32, 32}, {8, 3, 3, 3}, {.padding = {1, 1, 1, 1}}) == Shape{2, 8, 32, 32});
  CHECK(conv_shape({2, 3, 32, 32}, {8, 3, 3, 3}, {.stride = {2, 2}}) == Shape{2, 8, 15, 15});
  CHECK(conv_shape({2, 3, 32, 32}, {8, 3, 3, 3}, {.dilation = {2, 1}}) == Shape{2, 8, 28, 30});
  CHECK(conv_shape({2, 3, 9, 9}, {8, 3, 3, 3}, {.stride = {2, 3}, .padding = {1, 0, 0, 2}}) ==
        Shape{2, 8, 4, 3});
  CHECK(conv_shape({1, 4, 10}, {6, 2, 3}, {.groups = 2}) == Shape{1, 6, 8});
  CHECK(conv_shape({1, 2, 5, 6, 7}, {4, 2, 3, 3, 3}) == Shape{1, 4, 3, 4, 5});
  // Depthwise: one group per channel.
  CHECK(conv_shape({1, 8, 5, 5}, {8, 1, 3, 3}, {.groups = 8}) == Shape{1, 8, 3, 3});
  ScratchGraph s;
  const Tensor y = ops::conv(s.input({1, 2, 4}, float16), s.input({3, 2, 2}, float16));
  CHECK(y.spec() == TensorSpec{{1, 3, 3}, float16});
  CHECK(y.producer()->kind() == OpKind::Conv);
}

TEST_CASE("conv resolves pad_type as ONNX's auto_pad") {
  const auto conv = [](ops::ConvOptions o) {
    return [o](const Tensor& x, const Tensor& w) { return ops::conv(x, w, o); };
  };
  // same: out = ceil(in / stride); an odd total padding's extra at the end (upper) or the
  // beginning (lower).
  CHECK(conv_shape({1, 1, 7}, {1, 1, 3}, {.stride = {2}, .pad_type = ops::PadType::same_upper}) ==
        Shape{1, 1, 4});
  auto a = attrs_of({1, 1, 6}, {1, 1, 4}, conv({.pad_type = ops::PadType::same_upper}));
  CHECK(a.pads_begin == Ints{1});
  CHECK(a.pads_end == Ints{2});
  a = attrs_of({1, 1, 6}, {1, 1, 4}, conv({.pad_type = ops::PadType::same_lower}));
  CHECK(a.pads_begin == Ints{2});
  CHECK(a.pads_end == Ints{1});
  CHECK(conv_shape({1, 1, 6, 5}, {1, 1, 4, 3}, {.pad_type = ops::PadType::same_lower}) ==
        Shape{1, 1, 6, 5});
  // A stride larger than the kernel needs no padding.
  a = attrs_of({1, 1, 8}, {1, 1, 1}, conv({.stride = {3}, .pad_type = ops::PadType::same_upper}));
  CHECK(a.pads_begin == Ints{0});
  CHECK(a.pads_end == Ints{0});
  CHECK(conv_shape({1, 1, 7}, {1, 1, 3}, {.stride = {2}, .pad_type = ops::PadType::valid}) ==
        Shape{1, 1, 3});
  a = attrs_of({1, 1, 7, 7}, {1, 1, 3, 3},
               conv({.stride = {2, 1}, .padding = {1, 0, 2, 0}, .dilation = {1, 2}}));
  CHECK(a.strides == Ints{2, 1});
  CHECK(a.pads_begin == Ints{1, 0});
  CHECK(a.pads_end == Ints{2, 0});
  CHECK(a.dilations == Ints{1, 2});
  CHECK(a.kernel == Ints{3, 3});
  CHECK(a.groups == 1);
}

TEST_CASE("conv_transpose infers ONNX ConvTranspose's output") {
  CHECK(transpose_shape({1, 4, 5, 5}, {4, 3, 3, 3}, {.stride = {2, 2}}) == Shape{1, 3, 11, 11});
  CHECK(transpose_shape({1, 4, 5, 5}, {4, 3, 3, 3}, {.stride = {2, 2}, .output_padding = {1, 0}}) ==
        Shape{1, 3, 12, 11});
  CHECK(transpose_shape({1, 4, 5, 5}, {4, 3, 3, 3}, {.stride = {2, 2}, .padding = {1, 1, 1, 1}}) ==
        Shape{1, 3, 9, 9});
  CHECK(transpose_shape({1, 4, 5}, {4, 3, 3}, {.groups = 2}) == Shape{1, 6, 7});
  CHECK(transpose_shape({2, 1, 3, 3, 3}, {1, 2, 2, 2, 2}, {.dilation = {2, 1, 1}}) ==
        Shape{2, 2, 5, 4, 4});
  CHECK(transpose_shape({1, 4, 5, 5}, {4, 3, 3, 3},
                        {.stride = {2, 2}, .pad_type = ops::PadType::same_upper}) ==
        Shape{1, 3, 10, 10});
  CHECK(transpose_shape({1, 4, 5}, {4, 3, 3}, {.pad_type = ops::PadType::valid}) == Shape{1, 3, 7});
  const auto transpose = [](ops::ConvTransposeOptions o) {
    return [o](const Tensor& x, const Tensor& w) { return ops::conv_transpose(x, w, o); };
  };
  // output_shape: the total padding 11 - 10 = 1, its extra at the beginning unless same_upper.
  auto a =
      attrs_of({1, 4, 5, 5}, {4, 3, 3, 3}, transpose({.stride = {2, 2}, .output_shape = {10, 11}}));
  CHECK(a.pads_begin == Ints{1, 0});
  CHECK(a.pads_end == Ints{0, 0});
  a = attrs_of(
      {1, 4, 5, 5}, {4, 3, 3, 3},
      transpose({.stride = {2, 2}, .pad_type = ops::PadType::same_upper, .output_shape = {10, 9}}));
  CHECK(a.pads_begin == Ints{0, 1});
  CHECK(a.pads_end == Ints{1, 1});
  CHECK(transpose_shape({1, 4, 5, 5}, {4, 3, 3, 3}, {.stride = {2, 2}, .output_shape = {10, 9}}) ==
        Shape{1, 3, 10, 9});
}

TEST_CASE("conv values, 1-d to 3-d, strided, padded, dilated and grouped") {
  const auto conv = [](ops::ConvOptions o) {
    return [o](T t) { return ops::conv(t[0], t[1], o); };
  };
  const auto x = tensor({1, 1, 4}, float32, {1, 2, 3, 4});
  const auto diff = tensor({1, 1, 2}, float32, {1, -1});
  check_values(evaluate1(conv({}), {x, diff}), {{1, 1, 3}, float32}, {-1, -1, -1});
  check_values(evaluate1(conv({.padding = {1, 1}}), {x, diff}), {{1, 1, 5}, float32},
               {-1, -1, -1, -1, 4});
  check_values(evaluate1(conv({.stride = {2}}), {x, diff}), {{1, 1, 2}, float32}, {-1, -1});
  // y[i] = x[i] + x[i + 2]
  check_values(evaluate1(conv({.dilation = {2}}), {tensor({1, 1, 5}, float32, {1, 2, 3, 4, 5}),
                                                   tensor({1, 1, 2}, float32, {1, 1})}),
               {{1, 1, 3}, float32}, {4, 6, 8});
  // 2 x 2 box sums of 1..9
  check_values(evaluate1(conv({}), {tensor({1, 1, 3, 3}, float32, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                                    tensor({1, 1, 2, 2}, float32, {1, 1, 1, 1})}),
               {{1, 1, 2, 2}, float32}, {12, 16, 24, 28});
  // Two groups of one channel: each scaled by its own weight.
  check_values(evaluate1(conv({.groups = 2}), {tensor({1, 2, 2}, float32, {1, 2, 3, 4}),
                                               tensor({2, 1, 1}, float32, {2, 3})}),
               {{1, 2, 2}, float32}, {2, 4, 9, 12});
  // A 2 x 2 x 2 box over a 2 x 2 x 3 volume of ones, padded by one at the end of the last axis.
  check_values(evaluate1(conv({.padding = {0, 0, 0, 0, 0, 1}}),
                         {tensor({1, 1, 2, 2, 3}, float32, std::vector<double>(12, 1.0)),
                          tensor({1, 1, 2, 2, 2}, float32, std::vector<double>(8, 1.0))}),
               {{1, 1, 1, 1, 3}, float32}, {8, 8, 4});
  // float16: the double result rounded once (1/3 + 1/3 + 1/3 with weights 1, 2, 4).
  const double third = static_cast<double>(half(1.0 / 3.0));
  check_values(evaluate1(conv({}), {tensor({1, 1, 3}, float16, {1.0 / 3, 1.0 / 3, 1.0 / 3}),
                                    tensor({1, 1, 3}, float16, {1, 2, 4})}),
               {{1, 1, 1}, float16}, {static_cast<double>(half(7 * third))}, 0);
}

TEST_CASE("conv_transpose values: strided, padded, output-padded and grouped") {
  const auto transpose = [](ops::ConvTransposeOptions o) {
    return [o](T t) { return ops::conv_transpose(t[0], t[1], o); };
  };
  const auto x = tensor({1, 1, 2}, float32, {1, 2});
  const auto box = tensor({1, 1, 3}, float32, {1, 1, 1});
  check_values(evaluate1(transpose({.stride = {2}}), {x, box}), {{1, 1, 5}, float32},
               {1, 1, 3, 2, 2});
  check_values(evaluate1(transpose({.stride = {2}, .output_padding = {1}}), {x, box}),
               {{1, 1, 6}, float32}, {1, 1, 3, 2, 2, 0});
  check_values(evaluate1(transpose({.stride = {2}, .padding = {1, 1}}), {x, box}),
               {{1, 1, 3}, float32}, {1, 3, 2});
  check_values(evaluate1(transpose({.groups = 2}), {tensor({1, 2, 1}, float32, {1, 2}),
                                                    tensor({2, 1, 2}, float32, {1, 1, 2, 2})}),
               {{1, 2, 2}, float32}, {1, 1, 4, 4});
}

TEST_CASE("conv_weights_grad has the weight's shape") {
  ScratchGraph s;
  const Tensor x = s.input({2, 4, 9, 9}), g = s.input({2, 6, 4, 9});
  const Tensor dw = ops::conv_weights_grad(
      g, x, {6, 2, 3, 3}, {.stride = {2, 1}, .padding = {0, 1, 0, 1}, .groups = 2});
  CHECK(dw.spec() == TensorSpec{{6, 2, 3, 3}, float32});
  CHECK(dw.producer()->kind() == OpKind::ConvWeightsGrad);
}

TEST_CASE("conv errors name the op, the tensors, what was expected and what was found") {
  ScratchGraph s;
  const Tensor x = s.input({2, 4, 5, 5}), w = s.input({6, 4, 3, 3});
  const auto conv = [&](const Tensor& t, const Tensor& k, const ops::ConvOptions& o = {}) {
    return ops::conv(t, k, o);
  };
  CHECK_THROWS_WITH_AS(conv(s.input({2, 4, 5, 5}, int32), s.input({6, 4, 3, 3}, int32)),
                       doctest::Contains("Conv: expected a float32 or float16 tensor"), DTypeError);
  CHECK_THROWS_WITH_AS(conv(x, s.input({6, 4, 3, 3}, float16)),
                       doctest::Contains("Conv: operands must have the same dtype"), DTypeError);
  CHECK_THROWS_WITH_AS(
      conv(s.input({2, 4}), s.input({6, 4})),
      doctest::Contains("Conv: the input must be (N, C, spatial...) with 1, 2 or 3 "
                        "spatial axes, got"),
      ShapeError);
  CHECK_THROWS_WITH_AS(conv(s.input({1, 1, 2, 2, 2, 2}), s.input({1, 1, 1, 1, 1, 1})),
                       doctest::Contains("with 1, 2 or 3 spatial axes"), ShapeError);
  CHECK_THROWS_WITH_AS(conv(x, s.input({6, 4, 3})),
                       doctest::Contains("Conv: the weight must have the input's rank 4"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.groups = 0}),
                       doctest::Contains("Conv: groups must be at least 1, got 0"), ValueError);
  CHECK_THROWS_WITH_AS(conv(x, s.input({6, 1, 3, 3}), {.groups = 3}),
                       doctest::Contains("Conv: groups 3 must divide the input's channels and the "
                                         "weight's output channels, got 4"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(conv(x, s.input({6, 4, 3, 3}), {.groups = 2}),
                       doctest::Contains("has 4 input channels per group, expected 4 / 2 = 2"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      conv(x, s.input({6, 4, 0, 3})),
      doctest::Contains("has kernel size 0 on spatial axis 0, expected at least 1"), ShapeError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.stride = {1}}),
                       doctest::Contains("Conv: stride (1,) has 1 entries, expected one per "
                                         "spatial axis (2)"),
                       ValueError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.stride = {1, 0}}),
                       doctest::Contains("Conv: stride (1, 0) must be at least 1 on every axis"),
                       ValueError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.dilation = {1, 1, 1}}),
                       doctest::Contains("Conv: dilation (1, 1, 1) has 3 entries"), ValueError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.dilation = {0, 1}}),
                       doctest::Contains("Conv: dilation (0, 1) must be at least 1"), ValueError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.padding = {1, 1}}),
                       doctest::Contains("Conv: padding (1, 1) has 2 entries, expected 4: the "
                                         "padding before each spatial axis, then after each"),
                       ValueError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.padding = {1, -1, 0, 0}}),
                       doctest::Contains("Conv: padding (1, -1, 0, 0) must be non-negative"),
                       ValueError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.padding = {1, 1, 1, 1}, .pad_type = ops::PadType::valid}),
                       doctest::Contains("Conv: padding (1, 1, 1, 1) and pad_type valid are both "
                                         "set"),
                       ValueError);
  CHECK_THROWS_WITH_AS(conv(x, s.input({6, 4, 3, 6})),
                       doctest::Contains("spans 6 on spatial axis 1 (kernel 6, dilation 1), more "
                                         "than the padded input's 5"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(conv(x, w, {.padding = {0, 0, 1, 0}, .dilation = {3, 1}}),
                       doctest::Contains("spans 7 on spatial axis 0 (kernel 3, dilation 3), more "
                                         "than the padded input's 6"),
                       ShapeError);
}

TEST_CASE("conv_weights_grad errors") {
  ScratchGraph s;
  const Tensor x = s.input({2, 4, 5, 5});
  CHECK_THROWS_WITH_AS(ops::conv_weights_grad(s.input({2, 6, 3, 3}, float16), x, {6, 4, 3, 3}),
                       doctest::Contains("ConvWeightsGrad: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::conv_weights_grad(s.input({2, 6}), s.input({2, 4}), {6, 4}),
                       doctest::Contains("ConvWeightsGrad: the input must be (N, C, spatial...)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::conv_weights_grad(s.input({2, 6, 3, 3}), x, {6, 4, 3}),
                       doctest::Contains("ConvWeightsGrad: the weight shape (6, 4, 3) must have "
                                         "the input's rank"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::conv_weights_grad(s.input({2, 6, 4, 4}), x, {6, 4, 3, 3}),
                       doctest::Contains("ConvWeightsGrad: the gradient"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::conv_weights_grad(s.input({2, 6, 4, 4}), x, {6, 4, 3, 3}),
                       doctest::Contains("must have conv's output shape (2, 6, 3, 3)"), ShapeError);
}

TEST_CASE("conv_transpose errors") {
  ScratchGraph s;
  const Tensor x = s.input({1, 4, 5}), w = s.input({4, 3, 3});
  const auto transpose = [&](const Tensor& t, const Tensor& k,
                             const ops::ConvTransposeOptions& o = {}) {
    return ops::conv_transpose(t, k, o);
  };
  CHECK_THROWS_WITH_AS(transpose(x, s.input({4, 3, 3}, float16)),
                       doctest::Contains("ConvTranspose: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(transpose(s.input({1, 4}), s.input({4, 3})),
                       doctest::Contains("ConvTranspose: the input must be (N, C, spatial...)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(transpose(x, s.input({3, 4, 3})),
                       doctest::Contains("must be (C_in, C_out / groups, kernel...) with C_in the "
                                         "input's 4 channels"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      transpose(x, w, {.groups = 3}),
      doctest::Contains("ConvTranspose: groups 3 must divide the input's channels"), ShapeError);
  CHECK_THROWS_WITH_AS(transpose(x, w, {.groups = -1}),
                       doctest::Contains("ConvTranspose: groups must be at least 1, got -1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(transpose(x, s.input({4, 3, 0})),
                       doctest::Contains("has kernel size 0 on spatial axis 0"), ShapeError);
  CHECK_THROWS_WITH_AS(transpose(x, w, {.stride = {2}, .output_padding = {2}}),
                       doctest::Contains("ConvTranspose: output_padding (2,) must be smaller than "
                                         "the stride (2,) on every axis"),
                       ValueError);
  CHECK_THROWS_WITH_AS(transpose(x, w, {.output_padding = {0, 0}}),
                       doctest::Contains("ConvTranspose: output_padding (0, 0) has 2 entries, "
                                         "expected one per spatial axis (1)"),
                       ValueError);
  CHECK_THROWS_WITH_AS(transpose(x, w, {.output_padding = {-1}}),
                       doctest::Contains("output_padding (-1,) must be at least 0"), ValueError);
  CHECK_THROWS_WITH_AS(transpose(x, w, {.output_shape = {0}}),
                       doctest::Contains("ConvTranspose: output_shape (0,) must be at least 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(transpose(x, w, {.padding = {1, 0}, .output_shape = {6}}),
                       doctest::Contains("ConvTranspose: padding (1, 0) and output_shape (6,) are "
                                         "both set"),
                       ValueError);
  CHECK_THROWS_WITH_AS(transpose(x, w, {.padding = {1, 0}, .pad_type = ops::PadType::same_lower}),
                       doctest::Contains("padding (1, 0) and pad_type same_lower are both set"),
                       ValueError);
  CHECK_THROWS_WITH_AS(transpose(x, w, {.output_shape = {8}}),
                       doctest::Contains("ConvTranspose: an output of size 8 on spatial axis 0 "
                                         "needs negative padding: at most 7"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      transpose(x, s.input({4, 3, 1}), {.stride = {2}, .pad_type = ops::PadType::same_upper}),
      doctest::Contains("an output of size 10 on spatial axis 0 needs negative "
                        "padding: at most 9"),
      ShapeError);
  CHECK_THROWS_WITH_AS(transpose(s.input({1, 4, 1}), s.input({4, 3, 1}), {.padding = {1, 0}}),
                       doctest::Contains("ConvTranspose: the output would have size 0 on spatial "
                                         "axis 0"),
                       ShapeError);
}

} // namespace test_ops_conv

TEST_CASE("conv's memory proportion and partials type: on the op, in its gradients, checked") {
  const auto attrs_of = [](const Op& op) -> const ConvAttrs& {
    return op.kind() == OpKind::Conv            ? op.attrs<OpKind::Conv>()
           : op.kind() == OpKind::ConvTranspose ? op.attrs<OpKind::ConvTranspose>()
                                                : op.attrs<OpKind::ConvWeightsGrad>();
  };
  {
    Ir ir;
    auto main = ir.main_graph().scope();
    Graph fwd = ir.create_graph(
        "f",
        [](Tensor x, Tensor w) {
          return ops::conv(
              x, w,
              {.stride = {2, 2}, .available_memory_proportion = 0.15, .partials_type = float16});
        },
        TensorSpec{{2, 3, 9, 9}, float16}, TensorSpec{{4, 3, 3, 3}, float16});
    for (const auto& op : fwd.ops()) {
      CHECK(attrs_of(op).available_memory_proportion == 0.15);
      CHECK(attrs_of(op).partials_type == float16);
    }
    const auto info = transforms::autodiff(fwd);
    std::size_t convolutions = 0;
    for (const auto& op : info.graph().ops())
      if (op.kind() == OpKind::ConvTranspose || op.kind() == OpKind::ConvWeightsGrad) {
        ++convolutions;
        CHECK(attrs_of(op).available_memory_proportion == 0.15);
        CHECK(attrs_of(op).partials_type == float16);
      }
    CHECK(convolutions == 2);
  }
  ScratchGraph s;
  const Tensor x = s.input({1, 2, 5, 5}), w = s.input({2, 2, 3, 3});
  const ConvAttrs& plain = ops::conv(x, w).producer()->attrs<OpKind::Conv>();
  CHECK(plain.available_memory_proportion == 0.6);
  CHECK(plain.partials_type == float32);
  for (const double p : {0.0, 1.01}) {
    CAPTURE(p);
    CHECK_THROWS_WITH_AS(ops::conv(x, w, {.available_memory_proportion = p}),
                         doctest::Contains("Conv: available_memory_proportion must be in (0, 1]"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::conv_transpose(x, w, {.available_memory_proportion = p}),
                         doctest::Contains("ConvTranspose: available_memory_proportion must be "
                                           "in (0, 1]"),
                         ValueError);
  }
  CHECK_THROWS_WITH_AS(ops::conv(x, w, {.partials_type = float16}),
                       doctest::Contains("Conv: float16 partials need float16 operands, got "
                                         "float32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::conv_transpose(x, w, {.partials_type = int32}),
                       doctest::Contains("ConvTranspose: partials_type must be float32 or "
                                         "float16, got int32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(
      ops::conv_weights_grad(s.input({1, 2, 3, 3}), x, {2, 2, 3, 3}, {.partials_type = float16}),
      doctest::Contains("ConvWeightsGrad: float16 partials need float16 operands"), DTypeError);
}
