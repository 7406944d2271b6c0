// Convolutions through oneDNN: the forward pass, the data gradient (ConvTranspose) and the
// weight gradient against the naive reference over 1-3 spatial axes, strides, padding,
// dilation and groups, in float32 and float16; bitwise equal on 1-4 workers, threads included.
#include "harness.hpp"

#include "pxl/ops/conv.hpp"

#include <algorithm>
#include <optional>

using namespace pxl;
using namespace pxl::testing;

namespace test_kernels_conv {

/// A convolution: the input's and the weight's shapes and the geometry.
struct Geometry {
  Shape x, w;
  ops::ConvOptions o;
};

const std::vector<Geometry>& geometries() {
  static const std::vector<Geometry> g = {
      // 1-d: plain, strided and grouped, dilated
      {{2, 3, 11}, {4, 3, 3}, {}},
      {{2, 4, 12}, {6, 2, 3}, {.stride = {2}, .padding = {1, 2}, .groups = 2}},
      {{1, 2, 20}, {3, 2, 4}, {.padding = {2, 1}, .dilation = {3}}},
      // 2-d: padded, strided (rows a stride skips at the end), dilated, depthwise, grouped
      {{3, 3, 9, 9}, {8, 3, 3, 3}, {.padding = {1, 1, 1, 1}}},
      {{2, 4, 10, 9}, {5, 4, 3, 2}, {.stride = {2, 3}, .padding = {1, 0, 1, 1}}},
      {{2, 2, 9, 9}, {3, 2, 3, 3}, {.dilation = {2, 2}}},
      {{2, 8, 7, 7}, {8, 1, 3, 3}, {.padding = {1, 1, 1, 1}, .groups = 8}},
      {{2, 6, 6, 6}, {9, 2, 3, 3}, {.groups = 3}},
      {{2, 6, 6, 6}, {6, 6, 3, 3}, {.pad_type = ops::PadType::same_upper}},
      // weight-gradient blocks: 40 output channels as 16 + 16 + 8; 20 groups as 3 x 6 + 2
      {{2, 5, 6, 6}, {40, 5, 3, 3}, {}},
      {{2, 20, 5, 5}, {20, 1, 3, 3}, {.padding = {1, 0, 0, 1}, .groups = 20}},
      // 3-d
      {{2, 2, 5, 6, 4}, {3, 2, 2, 3, 2}, {.stride = {1, 2, 1}, .padding = {1, 0, 0, 0, 1, 1}}},
  };
  return g;
}

Shape conv_output(const Geometry& g) {
  Ir ir;
  auto graph = ir.create_empty_graph("shape");
  auto scope = graph.scope();
  return ops::conv(graph_input(g.x, float32), graph_input(g.w, float32), g.o).shape();
}

/// conv_transpose's options that map the convolution's output back onto its input's shape.
ops::ConvTransposeOptions transpose_options(const Geometry& g) {
  Ir ir;
  auto graph = ir.create_empty_graph("attrs");
  auto scope = graph.scope();
  const auto& a = ops::conv(graph_input(g.x, float32), graph_input(g.w, float32), g.o)
                      .producer()
                      ->attrs<OpKind::Conv>();
  std::vector<std::int64_t> padding = a.pads_begin, skipped;
  padding.insert(padding.end(), a.pads_end.begin(), a.pads_end.end());
  for (std::size_t i = 0; i < a.strides.size(); ++i)
    skipped.push_back(
        (g.x[i + 2] + a.pads_begin[i] + a.pads_end[i] - a.dilations[i] * (a.kernel[i] - 1) - 1) %
        a.strides[i]);
  return {.stride = a.strides,
          .padding = padding,
          .dilation = a.dilations,
          .groups = a.groups,
          .output_padding = skipped};
}

// Positive operands: no cancellation, so float32 sums in any order stay close to the double
// reference, and float16 within one unit in the last place of it.
constexpr double f32_rtol = 1e-5;

TEST_CASE("conv: the forward pass against the reference, 1-4 workers bitwise") {
  for_each_case(geometries(), [](const Geometry& g, DType d) {
    const auto o = g.o;
    check_kernel([o](Tensor x, Tensor w) { return ops::conv(x, w, o); },
                 {random_tensor(g.x, d, 0, 1, 1), random_tensor(g.w, d, 0, 1, 2)}, f32_rtol);
  });
}

TEST_CASE("conv_transpose (conv's data gradient) against the reference, 1-4 workers bitwise") {
  for_each_case(geometries(), [](const Geometry& g, DType d) {
    const auto o = transpose_options(g);
    const auto out = check_kernel(
        [o](Tensor dy, Tensor w) { return ops::conv_transpose(dy, w, o); },
        {random_tensor(conv_output(g), d, 0, 1, 3), random_tensor(g.w, d, 0, 1, 4)}, f32_rtol);
    CHECK(out[0].shape() == g.x);
  });
}

TEST_CASE("conv_weights_grad against the reference, 1-4 workers bitwise") {
  for_each_case(geometries(), [](const Geometry& g, DType d) {
    const auto o = g.o;
    const Shape w = g.w;
    check_kernel([o, w](Tensor dy, Tensor x) { return ops::conv_weights_grad(dy, x, w, o); },
                 {random_tensor(conv_output(g), d, 0, 1, 5), random_tensor(g.x, d, 0, 1, 6)},
                 f32_rtol);
  });
}

TEST_CASE("conv: hand-computed values") {
  // 2 x 2 box sums of 1..9, and the box's data gradient of ones: how many windows see each
  // pixel.
  const auto x = tensor({1, 1, 3, 3}, float32, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const auto box = tensor({1, 1, 2, 2}, float32, {1, 1, 1, 1});
  check_values(check_kernel([](Tensor a, Tensor b) { return ops::conv(a, b); }, {x, box})[0],
               {{1, 1, 2, 2}, float32}, {12, 16, 24, 28});
  check_values(check_kernel([](Tensor a, Tensor b) { return ops::conv_transpose(a, b); },
                            {tensor({1, 1, 2, 2}, float32, {1, 1, 1, 1}), box})[0],
               {{1, 1, 3, 3}, float32}, {1, 2, 1, 2, 4, 2, 1, 2, 1});
  // The weight gradient for an output gradient of ones: the window sums of x.
  check_values(check_kernel(
                   [](Tensor g, Tensor a) {
                     return ops::conv_weights_grad(g, a, {1, 1, 2, 2});
                   },
                   {tensor({1, 1, 2, 2}, float32, {1, 1, 1, 1}), x})[0],
               {{1, 1, 2, 2}, float32}, {12, 16, 24, 28});
}

TEST_CASE("conv kernels are bitwise identical when run on concurrent threads") {
  for (const DType d : {float32, float16}) {
    CAPTURE(d);
    const Geometry g{{6, 8, 12, 12}, {24, 4, 3, 3}, {.padding = {1, 1, 1, 1}, .groups = 2}};
    const auto o = g.o;
    const std::vector<KernelCase> cases = [&] {
      std::vector<KernelCase> r;
      r.push_back(make_case([o](Tensor x, Tensor w) { return ops::conv(x, w, o); },
                            {random_tensor(g.x, d, -1, 1, 7), random_tensor(g.w, d, -1, 1, 8)}));
      const auto t = transpose_options(g);
      r.push_back(make_case(
          [t](Tensor dy, Tensor w) { return ops::conv_transpose(dy, w, t); },
          {random_tensor(conv_output(g), d, -1, 1, 9), random_tensor(g.w, d, -1, 1, 10)}));
      const Shape w = g.w;
      r.push_back(make_case(
          [o, w](Tensor dy, Tensor x) { return ops::conv_weights_grad(dy, x, w, o); },
          {random_tensor(conv_output(g), d, -1, 1, 11), random_tensor(g.x, d, -1, 1, 12)}));
      return r;
    }();
    check_threads_bitwise(cases);
  }
}

TEST_CASE("conv over an empty batch gives an empty result, its weight gradient zeros") {
  const auto o = ops::ConvOptions{};
  check_kernel([o](Tensor x, Tensor w) { return ops::conv(x, w, o); },
               {HostTensor({0, 2, 5}, float32), random_tensor({3, 2, 2}, float32, 0, 1, 13)});
  const auto dw = check_kernel(
      [o](Tensor dy, Tensor x) {
        return ops::conv_weights_grad(dy, x, {3, 2, 2}, o);
      },
      {HostTensor({0, 3, 4}, float32), HostTensor({0, 2, 5}, float32)});
  check_values(dw[0], {{3, 2, 2}, float32}, std::vector<double>(12, 0.0));
}

TEST_CASE("float16 partials: the three convolutions are bitwise the reference's accumulation "
          "on 1-4 workers") {
  // Runs of 16 channels (or image positions) summed in float, added into a float16
  // accumulator: 1-d strided and grouped, 2-d strided with uneven padding, dilated,
  // depthwise, 40 output channels (16 + 16 + 8), 3-d, and 36 input channels (16 + 16 + 4).
  const std::vector<Geometry>& all = geometries();
  std::vector<Geometry> cases = {all[1], all[4], all[5], all[6], all[9], all[11]};
  cases.push_back({{1, 36, 5, 5}, {4, 36, 3, 3}, {.padding = {1, 1, 1, 1}}});
  for (const Geometry& g : cases) {
    CAPTURE(to_string(g.x));
    CAPTURE(to_string(g.w));
    const Shape y = conv_output(g), w = g.w;
    ops::ConvTransposeOptions t = transpose_options(g);
    t.partials_type = float16;
    ops::ConvOptions o = g.o;
    o.partials_type = float16;
    check_kernel([o](Tensor x, Tensor wt) { return ops::conv(x, wt, o); },
                 {random_tensor(g.x, float16, -1, 1, 1), random_tensor(g.w, float16, -1, 1, 2)}, 0);
    check_kernel([t](Tensor dy, Tensor wt) { return ops::conv_transpose(dy, wt, t); },
                 {random_tensor(y, float16, -1, 1, 3), random_tensor(g.w, float16, -1, 1, 4)}, 0);
    check_kernel([o, w](Tensor dy, Tensor x) { return ops::conv_weights_grad(dy, x, w, o); },
                 {random_tensor(y, float16, -1, 1, 5), random_tensor(g.x, float16, -1, 1, 6)}, 0);
  }
}

TEST_CASE("float16 partials: a closed form where they lose what float32 partials keep") {
  // A 1x1 convolution over 48 channels: 16 products of 128 make 2048, then two runs of 16
  // products of 1/16 add 1 each, which float16's spacing of 2 at 2048 rounds away (ties to
  // even); float32 partials sum 2050 and round it once.
  std::vector<double> xv(48, 0.0625);
  std::fill_n(xv.begin(), 16, 128.0);
  const HostTensor x = tensor({1, 48, 1, 1}, float16, xv);
  const HostTensor w = tensor({1, 48, 1, 1}, float16, std::vector<double>(48, 1.0));
  const auto conv = [&](std::optional<DType> partials) {
    const ops::ConvOptions o{.partials_type = partials};
    return check_kernel([o](Tensor a, Tensor b) { return ops::conv(a, b, o); }, {x, w})[0];
  };
  check_values(conv(std::nullopt), {{1, 1, 1, 1}, float16}, {2050}, 0);
  check_values(conv(float16), {{1, 1, 1, 1}, float16}, {2048}, 0);
}

} // namespace test_kernels_conv
