// Pooling layers: PyTorch's and Keras's arguments mapped onto ops::max_pool, average_pool and
// global_average_pool (checked against those ops run directly, and closed forms), layouts,
// output sizes, and errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"
#include "run_module.hpp"

#include <doctest/doctest.h>

#include <array>
#include <functional>

using namespace pxl;

namespace test_pool_layers {

using addons::DataFormat;
using addons::Padding;
using test_addons::ramp;
using test_addons::run_module;

/// What `op` gives for `x` in a graph of its own: the reference the layers must match bitwise.
HostTensor direct(const HostTensor& x, const std::function<Tensor(const Tensor&)>& op) {
  Ir ir;
  DeviceToHostStream out;
  {
    auto main = ir.main_graph().scope();
    const Tensor y = op(constant(x, "x"));
    out = d2h_stream(y.shape(), y.dtype(), "y");
    ops::host_store(out, y);
  }
  Session session(ir, "ipu_model");
  auto attached = session.attach();
  return session.run({}).at(out);
}

/// `t` (N, C, H, W) as (N, H, W, C), or back with `to_first`.
HostTensor permute(const HostTensor& t, bool to_first) {
  Ir ir;
  DeviceToHostStream out;
  {
    auto main = ir.main_graph().scope();
    const Tensor y =
        ops::transpose(constant(t, "t"), to_first ? std::vector<std::int64_t>{0, 3, 1, 2}
                                                  : std::vector<std::int64_t>{0, 2, 3, 1});
    out = d2h_stream(y.shape(), y.dtype(), "y");
    ops::host_store(out, y);
  }
  Session session(ir, "ipu_model");
  auto attached = session.attach();
  return session.run({}).at(out);
}

TEST_CASE("MaxPool2D and AvgPool2D: PyTorch's arguments as ops::max_pool's and average_pool's") {
  const auto x = ramp({2, 3, 7, 6});
  const auto max = run_module(
      addons::MaxPool2D({3}, {.stride = {2}, .padding = {1}, .dilation = {1, 2}}), std::array{x});
  CHECK(max.y == direct(x, [](const Tensor& t) {
          return ops::max_pool(t, {3, 3},
                               {.stride = {2, 2}, .padding = {1, 1, 1, 1}, .dilation = {1, 2}});
        }));
  // PyTorch's stride defaults to the kernel: 7 → 3 rows, 6 → 3 columns; ceil_mode keeps 7 → 4.
  CHECK(run_module(addons::MaxPool2D({2}), std::array{x}).y.shape() == Shape{2, 3, 3, 3});
  CHECK(run_module(addons::MaxPool2D({2}, {.ceil_mode = true}), std::array{x}).y.shape() ==
        Shape{2, 3, 4, 3});
  const auto avg = run_module(addons::AvgPool2D({2, 3}, {.padding = {1, 1}}), std::array{x});
  CHECK(avg.y == direct(x, [](const Tensor& t) {
          return ops::average_pool(
              t, {2, 3}, {.stride = {2, 3}, .padding = {1, 1, 1, 1}, .count_include_pad = true});
        }));
  const auto excluded = run_module(
      addons::AvgPool2D({2}, {.padding = {1}, .count_include_pad = false}), std::array{x});
  CHECK(excluded.y == direct(x, [](const Tensor& t) {
          return ops::average_pool(t, {2, 2}, {.stride = {2, 2}, .padding = {1, 1, 1, 1}});
        }));
}

TEST_CASE("GlobalAvgPool2D and GlobalAveragePooling2D: the mean over the image") {
  const auto x = ramp({2, 3, 4, 5});
  const auto r = run_module(addons::GlobalAvgPool2D{}, std::array{x});
  REQUIRE(r.y.shape() == Shape{2, 3});
  for (std::int64_t nc = 0; nc < 6; ++nc) {
    double sum = 0;
    for (std::int64_t k = 0; k < 20; ++k)
      sum += x.item(nc * 20 + k);
    CHECK(r.y.item(nc) == doctest::Approx(sum / 20).epsilon(1e-6));
  }
  CHECK(run_module(addons::GlobalAvgPool2D(true), std::array{x}).y.shape() == Shape{2, 3, 1, 1});
  // Keras's: channels last by default, the same means.
  const auto keras = run_module(addons::GlobalAveragePooling2D{}, std::array{permute(x, false)});
  CHECK(keras.y == r.y);
  CHECK(run_module(addons::GlobalAveragePooling2D(DataFormat::channels_last, true),
                   std::array{permute(x, false)})
            .y.shape() == Shape{2, 1, 1, 3});
}

TEST_CASE("MaxPooling2D and AveragePooling2D: Keras's pool size, strides, padding and layout") {
  const auto x = ramp({2, 3, 7, 6}); // channels first
  for (const Padding padding : {Padding::valid, Padding::same}) {
    const auto first = run_module(
        addons::MaxPooling2D({2}, {.padding = padding, .data_format = DataFormat::channels_first}),
        std::array{x});
    CHECK(first.y == direct(x, [&](const Tensor& t) {
            return ops::max_pool(t, {2, 2},
                                 {.stride = {2, 2},
                                  .pad_type = padding == Padding::same ? ops::PadType::same_upper
                                                                       : ops::PadType::not_set});
          }));
    // same: ceil(7 / 2) × ceil(6 / 2); valid: 3 × 3.
    CHECK(first.y.shape() == (padding == Padding::same ? Shape{2, 3, 4, 3} : Shape{2, 3, 3, 3}));
    const auto last =
        run_module(addons::MaxPooling2D({2}, {.padding = padding}), std::array{permute(x, false)});
    CHECK(last.y == permute(first.y, false));
  }
  // Keras's same padding never counts in the mean: the last row's windows (row 6 and a row of
  // padding) average 2 elements.
  const auto avg =
      run_module(addons::AveragePooling2D(
                     {2}, {.padding = Padding::same, .data_format = DataFormat::channels_first}),
                 std::array{x});
  CHECK(avg.y.item(9) == doctest::Approx((x.item(36) + x.item(37)) / 2).epsilon(1e-6));
  CHECK(
      run_module(addons::AveragePooling2D({3, 2}, {.strides = {1}}), std::array{permute(x, false)})
          .y.shape() == Shape{2, 5, 5, 3});
}

TEST_CASE("Pooling layers: errors name the layer, what was expected and what was found") {
  CHECK_THROWS_WITH_AS(addons::MaxPool2D({0}),
                       "MaxPool2D: every kernel size must be at least 1, got 0", ValueError);
  CHECK_THROWS_WITH_AS(addons::MaxPool2D({2, 2, 2}),
                       "MaxPool2D: kernel size needs 1 or 2 values, got 3", ValueError);
  CHECK_THROWS_WITH_AS(addons::MaxPool2D({2}, {.padding = {-1}}),
                       "MaxPool2D: every padding must be at least 0, got -1", ValueError);
  CHECK_THROWS_WITH_AS(addons::AvgPool2D({2}, {.dilation = {2}}),
                       "AvgPool2D: has no dilation (as PyTorch's AvgPool2d), got 2", ValueError);
  CHECK_THROWS_WITH_AS(addons::MaxPooling2D({2}, {.strides = {0}}),
                       "MaxPooling2D: every stride must be at least 1, got 0", ValueError);
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(addons::MaxPool2D({2}).create_graph(TensorSpec{{2, 3, 4}, float32}),
                       "MaxPool2D: expected an input of rank 4 (N, C, H, W), got shape (2, 3, 4)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      addons::GlobalAveragePooling2D().create_graph(TensorSpec{{2, 3}, float32}),
      "GlobalAveragePooling2D: expected an input of rank 4 (batch, rows, cols, channels), got "
      "shape (2, 3)",
      ShapeError);
  // A window larger than the padded input: ops::max_pool's own error.
  CHECK_THROWS_AS(addons::MaxPool2D({5}).create_graph(TensorSpec{{1, 1, 3, 3}, float32}), Error);
}

} // namespace test_pool_layers
