// Conv1D, Conv2D and Conv3D: the forward pass and gradients against a convolution computed
// here from its definition, channels_last against channels_first, Keras's initialisers in
// ops::conv's layout, output sizes of each padding, and errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"
#include "run_module.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <vector>

using namespace pxl;

namespace test_conv_layers {

using addons::Activation;
using addons::Conv1D;
using addons::Conv2D;
using addons::Conv3D;
using addons::DataFormat;
using addons::Padding;
using test_addons::ramp;
using test_addons::run_module;

/// A 2-D convolution's geometry, for the definitions below (valid padding).
struct Geometry {
  std::int64_t n, c, h, w, filters, kh, kw, stride, dilation, groups;
  std::int64_t oh() const { return (h - dilation * (kh - 1) - 1) / stride + 1; }
  std::int64_t ow() const { return (w - dilation * (kw - 1) - 1) / stride + 1; }
  std::int64_t cg() const { return c / groups; }
  std::int64_t fg() const { return filters / groups; }
};

double at(const HostTensor& t, std::int64_t i) { return t.item(i); }

/// y[n, o, p, q] = Σ x[n, g·cg + i, p·s + a·d, q·s + b·d] · w[o, i, a, b] + bias[o], over the
/// channels i of o's group g and the taps (a, b): NCHW, straight from the definition.
HostTensor conv_by_definition(const Geometry& g, const HostTensor& x, const HostTensor& w,
                              const HostTensor& bias, bool relu) {
  HostTensor y({g.n, g.filters, g.oh(), g.ow()}, float32);
  auto out = y.data<float>();
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.filters; ++o)
      for (std::int64_t p = 0; p < g.oh(); ++p)
        for (std::int64_t q = 0; q < g.ow(); ++q) {
          double sum = at(bias, o);
          const std::int64_t group = o / g.fg();
          for (std::int64_t i = 0; i < g.cg(); ++i)
            for (std::int64_t a = 0; a < g.kh; ++a)
              for (std::int64_t b = 0; b < g.kw; ++b) {
                const std::int64_t ci = group * g.cg() + i;
                const std::int64_t row = p * g.stride + a * g.dilation;
                const std::int64_t col = q * g.stride + b * g.dilation;
                sum += at(x, ((n * g.c + ci) * g.h + row) * g.w + col) *
                       at(w, ((o * g.cg() + i) * g.kh + a) * g.kw + b);
              }
          out[static_cast<std::size_t>(((n * g.filters + o) * g.oh() + p) * g.ow() + q)] =
              static_cast<float>(relu ? std::max(sum, 0.0) : sum);
        }
  return y;
}

/// dL/dw[o, i, a, b] = Σ dy[n, o, p, q] · x[n, g·cg + i, p·s + a·d, q·s + b·d].
HostTensor weight_grad_by_definition(const Geometry& g, const HostTensor& x, const HostTensor& dy) {
  HostTensor dw({g.filters, g.cg(), g.kh, g.kw}, float32);
  auto out = dw.data<float>();
  for (std::int64_t o = 0; o < g.filters; ++o)
    for (std::int64_t i = 0; i < g.cg(); ++i)
      for (std::int64_t a = 0; a < g.kh; ++a)
        for (std::int64_t b = 0; b < g.kw; ++b) {
          double sum = 0;
          const std::int64_t ci = (o / g.fg()) * g.cg() + i;
          for (std::int64_t n = 0; n < g.n; ++n)
            for (std::int64_t p = 0; p < g.oh(); ++p)
              for (std::int64_t q = 0; q < g.ow(); ++q)
                sum += at(dy, ((n * g.filters + o) * g.oh() + p) * g.ow() + q) *
                       at(x, ((n * g.c + ci) * g.h + p * g.stride + a * g.dilation) * g.w +
                                 q * g.stride + b * g.dilation);
          out[static_cast<std::size_t>(((o * g.cg() + i) * g.kh + a) * g.kw + b)] =
              static_cast<float>(sum);
        }
  return dw;
}

/// `t` (N, C, H, W) as (N, H, W, C), or back with `to_first`.
HostTensor permute(const HostTensor& t, bool to_first) {
  const Shape& s = t.shape();
  const Shape out_shape = to_first ? Shape{s[0], s[3], s[1], s[2]} : Shape{s[0], s[2], s[3], s[1]};
  HostTensor out(out_shape, float32);
  auto o = out.data<float>();
  const auto in = t.data<float>();
  std::size_t k = 0;
  for (std::int64_t a = 0; a < out_shape[0]; ++a)
    for (std::int64_t b = 0; b < out_shape[1]; ++b)
      for (std::int64_t c = 0; c < out_shape[2]; ++c)
        for (std::int64_t d = 0; d < out_shape[3]; ++d) {
          // Out (a, b, c, d) reads in (a, d, b, c) going to channels-last, (a, c, d, b) back.
          const std::int64_t i = to_first ? ((a * s[1] + c) * s[2] + d) * s[3] + b
                                          : ((a * s[1] + d) * s[2] + b) * s[3] + c;
          o[k++] = in[static_cast<std::size_t>(i)];
        }
  return out;
}

void check_close(const HostTensor& got, const HostTensor& want, double tol = 1e-4) {
  REQUIRE(got.shape() == want.shape());
  for (std::int64_t i = 0; i < got.nelms(); ++i) {
    INFO("element " << i);
    CHECK(got.item(i) == doctest::Approx(want.item(i)).epsilon(tol).scale(1.0));
  }
}

TEST_CASE("Conv2D channels_first: conv, bias and ReLU against the definition, with gradients") {
  for (const Geometry& g :
       {Geometry{2, 3, 6, 7, 4, 3, 2, 1, 1, 1}, Geometry{2, 4, 9, 8, 6, 2, 3, 2, 2, 2},
        Geometry{1, 4, 5, 5, 4, 3, 3, 1, 1, 4}}) {
    CAPTURE(g.groups);
    const auto x = ramp({g.n, g.c, g.h, g.w});
    const auto w = ramp({g.filters, g.cg(), g.kh, g.kw}, 0.3);
    const auto bias = ramp({g.filters}, 0.1);
    const auto dy = ramp({g.n, g.filters, g.oh(), g.ow()}, 0.5);
    Conv2D layer(g.filters, {g.kh, g.kw},
                 {.strides = {g.stride},
                  .data_format = DataFormat::channels_first,
                  .dilation_rate = {g.dilation},
                  .groups = g.groups,
                  .activation = Activation::relu});
    const auto relu =
        run_module(layer, std::array{x}, std::nullopt, {{"weight", w}, {"bias", bias}});
    check_close(relu.y, conv_by_definition(g, x, w, bias, true));

    // Without the activation the gradients have closed forms: dbias = Σ dy over the batch and
    // space, dweight the correlation of dy with x.
    layer.options.activation = Activation::none;
    const auto r = run_module(layer, std::array{x}, dy, {{"weight", w}, {"bias", bias}});
    check_close(r.y, conv_by_definition(g, x, w, bias, false));
    HostTensor dbias({g.filters}, float32);
    for (std::int64_t o = 0; o < g.filters; ++o) {
      double sum = 0;
      for (std::int64_t n = 0; n < g.n; ++n)
        for (std::int64_t k = 0; k < g.oh() * g.ow(); ++k)
          sum += dy.item((n * g.filters + o) * g.oh() * g.ow() + k);
      dbias.data<float>()[static_cast<std::size_t>(o)] = static_cast<float>(sum);
    }
    check_close(r.grads.at("bias"), dbias);
    check_close(r.grads.at("weight"), weight_grad_by_definition(g, x, dy));
    CHECK(r.grads.at("input0").shape() == x.shape());
  }
}

TEST_CASE("Conv2D channels_last is channels_first with the axes permuted, bitwise") {
  const auto x = ramp({2, 3, 8, 7}); // channels-first
  const auto w = ramp({5, 3, 3, 3}, 0.2);
  const auto bias = ramp({5}, 0.1);
  const std::map<std::string, HostTensor> weights{{"weight", w}, {"bias", bias}};
  for (const Padding padding : {Padding::valid, Padding::same}) {
    addons::ConvLayerOptions options{.strides = {2}, .padding = padding};
    const auto last =
        run_module(Conv2D(5, {3}, options), std::array{permute(x, false)}, std::nullopt, weights);
    options.data_format = DataFormat::channels_first;
    const auto first = run_module(Conv2D(5, {3}, options), std::array{x}, std::nullopt, weights);
    CHECK(last.y == permute(first.y, false));
    // same: ceil(8 / 2) × ceil(7 / 2); valid: floor((8 - 3) / 2) + 1 × floor((7 - 3) / 2) + 1.
    CHECK(first.y.shape() == (padding == Padding::same ? Shape{2, 5, 4, 4} : Shape{2, 5, 3, 3}));
  }
}

TEST_CASE("Conv2D: softmax is over the channels of a channels_last output, as Keras's") {
  const auto x = ramp({1, 4, 4, 2});
  const auto r = run_module(Conv2D(3, {1}, {.activation = Activation::softmax}), std::array{x});
  REQUIRE(r.y.shape() == Shape{1, 4, 4, 3});
  for (std::int64_t pixel = 0; pixel < 16; ++pixel)
    CHECK(r.y.item(pixel * 3) + r.y.item(pixel * 3 + 1) + r.y.item(pixel * 3 + 2) ==
          doctest::Approx(1.0));
}

TEST_CASE("Conv1D and Conv3D: output sizes of valid and same padding, strides and dilation") {
  const auto r1 = run_module(Conv1D(4, {3}, {.strides = {2}, .padding = Padding::same}),
                             std::array{ramp({2, 7, 3})});
  CHECK(r1.y.shape() == Shape{2, 4, 4});
  CHECK(r1.factories.at("weight").initializer.shape == Shape{4, 3, 3});
  const auto r3 = run_module(
      Conv3D(2, {2, 3, 1}, {.data_format = DataFormat::channels_first, .dilation_rate = {2, 1, 1}}),
      std::array{ramp({1, 3, 5, 4, 3})});
  // Depth 5 - 2·(2 - 1) = 3, height 4 - 3 + 1 = 2, width 3.
  CHECK(r3.y.shape() == Shape{1, 2, 3, 2, 3});
  CHECK(r3.factories.at("weight").initializer.shape == Shape{2, 3, 2, 3, 1});
}

TEST_CASE("Conv2D: Keras's initialiser for Keras's kernel shape, permuted into conv's layout") {
  const Conv2D layer(6, {3, 2}, {.groups = 2});
  const auto r = run_module(layer, std::array{ramp({1, 5, 5, 4})});
  const auto& weight = r.factories.at("weight").initializer;
  REQUIRE(weight.shape == Shape{6, 2, 3, 2});
  const HostTensor got = weight(float32, 7);
  // Keras's kernel (3, 2, 2, 6) from the same initialiser and seed; (a, b, i, o) → (o, i, a, b).
  const HostTensor keras = addons::initializers::glorot_uniform()({3, 2, 2, 6})(float32, 7);
  bool permuted = true;
  for (std::int64_t o = 0; o < 6; ++o)
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t a = 0; a < 3; ++a)
        for (std::int64_t b = 0; b < 2; ++b)
          permuted = permuted && got.item(((o * 2 + i) * 3 + a) * 2 + b) ==
                                     keras.item(((a * 2 + b) * 2 + i) * 6 + o);
  CHECK(permuted);
  // Glorot's limit from Keras's fans: in = 2 · 6 taps, out = 6 · 6 taps.
  const double limit = std::sqrt(6.0 / (12 + 36));
  for (std::int64_t k = 0; k < got.nelms(); ++k)
    CHECK(std::abs(got.item(k)) <= limit);
  CHECK(r.factories.at("bias").initializer(float32, 0) == HostTensor::full({6}, float32, 0.0));
  CHECK(r.factories.keys_flat() == std::vector<std::string>{"weight", "bias"});
}

TEST_CASE("Conv layers: errors name the layer, what was expected and what was found") {
  CHECK_THROWS_WITH_AS(Conv2D(0, {3}), "Conv2D: filters must be at least 1, got 0", ValueError);
  CHECK_THROWS_WITH_AS(Conv2D(4, {}), "Conv2D: kernel_size needs 1 or 2 values, got none",
                       ValueError);
  CHECK_THROWS_WITH_AS(Conv2D(4, {3, 3, 3}), "Conv2D: kernel size needs 1 or 2 values, got 3",
                       ValueError);
  CHECK_THROWS_WITH_AS(Conv1D(4, {3}, {.strides = {0}}),
                       "Conv1D: every stride must be at least 1, got 0", ValueError);
  CHECK_THROWS_WITH_AS(Conv3D(4, {3}, {.dilation_rate = {1, 2}}),
                       "Conv3D: dilation rate needs 1 or 3 values, got 2", ValueError);
  CHECK_THROWS_WITH_AS(Conv2D(4, {3}, {.groups = 0}), "Conv2D: groups must be at least 1, got 0",
                       ValueError);
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(Conv2D(4, {3}).create_graph(TensorSpec{{2, 8, 8}, float32}),
                       "Conv2D: expected an input of rank 4 (batch, spatial..., channels), got "
                       "shape (2, 8, 8)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      Conv2D(4, {3}, {.groups = 2}).create_graph(TensorSpec{{2, 8, 8, 3}, float32}),
      "Conv2D: groups (2) must divide both the input's channels (3) and filters (4)", ValueError);
  CHECK_THROWS_AS(Conv2D(4, {9}).create_graph(TensorSpec{{2, 8, 8, 3}, float32}), ShapeError);
}

TEST_CASE("Conv2D in a Sequential: named by position, shapes traced through Flatten and Dense") {
  Ir ir;
  auto main = ir.main_graph().scope();
  addons::Sequential model{
      Conv2D(8, {3}, {.data_format = DataFormat::channels_first, .activation = Activation::relu}),
      addons::Flatten{}, addons::Dense(10)};
  auto [facts, fwd] = model.create_graph(TensorSpec{{4, 1, 10, 10}, float32});
  CHECK(facts.keys_flat() == std::vector<std::string>{"layers.0.weight", "layers.0.bias",
                                                      "layers.2.weight", "layers.2.bias"});
  CHECK(facts.at("layers.2.weight").initializer.shape == Shape{8 * 8 * 8, 10});
  CHECK(fwd.graph().outputs()[0].shape() == Shape{4, 10});
}

} // namespace test_conv_layers
