// Every differentiable op against central finite differences, at several shapes.
#include "gradcheck.hpp"

#include "pxl/ops/conv.hpp"
#include "pxl/ops/norm.hpp"
#include "pxl/ops/pool.hpp"
#include "pxl/ops/var_updates.hpp"

using namespace pxl;
using pxl::testing::check_gradients;
using pxl::testing::random_tensor;
using V = std::vector<Tensor>;

TEST_CASE("unary element-wise gradients") {
  const auto x = random_tensor({2, 3}, 1);
  const auto pos = random_tensor({5}, 2, 0.5f, 2.f);
  CHECK(check_gradients([](V v) { return ops::negate(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::abs(v[0]); }, {random_tensor({7}, 9, 0.2f, 1.f)}) >
        0);
  CHECK(check_gradients([](V v) { return ops::exp(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::log(v[0]); }, {pos}) > 0);
  CHECK(check_gradients([](V v) { return ops::sqrt(v[0]); }, {pos}) > 0);
  CHECK(check_gradients([](V v) { return ops::tanh(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::sigmoid(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::relu(v[0]); }, {random_tensor({6}, 3, 0.1f, 1.f)}) >
        0);
  CHECK(check_gradients([](V v) { return ops::gelu(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::geluerf(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::identity(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::log2(v[0]); }, {pos}) > 0);
  CHECK(check_gradients([](V v) { return ops::swish(v[0]); },
                        {random_tensor({2, 3}, 1, -4.f, 4.f)}) > 0);
  CHECK(check_gradients([](V v) { return ops::cast(ops::cast(v[0], float16), float32); }, {x}, 1e-1,
                        2e-2, 5e-3) > 0);
}

TEST_CASE("io_tile_copy's gradient is the copy back") {
  CHECK(check_gradients([](V v) { return ops::io_tile_copy(v[0] * v[0]); },
                        {HostTensor({0.5f, -1.5f, 2.f}, {3})}) > 0);
}

TEST_CASE("binary element-wise gradients with broadcasting") {
  const auto a = random_tensor({2, 3}, 4);
  const auto b = random_tensor({3}, 5);
  const auto c = random_tensor({2, 1}, 6, 0.5f, 1.5f);
  for (const auto& rhs : {b, c, random_tensor({2, 3}, 7, 0.5f, 1.5f)}) {
    CHECK(check_gradients([](V v) { return v[0] + v[1]; }, {a, rhs}) > 0);
    CHECK(check_gradients([](V v) { return v[0] - v[1]; }, {a, rhs}) > 0);
    CHECK(check_gradients([](V v) { return v[0] * v[1]; }, {a, rhs}) > 0);
  }
  CHECK(check_gradients([](V v) { return v[0] / v[1]; }, {a, c}) > 0);
  // Quotients a / b away from whole numbers, where fmod is smooth.
  CHECK(check_gradients([](V v) { return v[0] % v[1]; },
                        {HostTensor({2.3f, -3.7f, 5.2f, -1.1f, 0.45f, 7.9f}, {2, 3}),
                         HostTensor({1.5f, -2.f, 0.8f}, {3})}) > 0);
  CHECK(check_gradients([](V v) { return ops::pow(v[0], v[1]); },
                        {random_tensor({2, 3}, 8, 0.5f, 2.f), c}) > 0);
  CHECK(check_gradients([](V v) { return ops::maximum(v[0], v[1]); }, {a, b}) > 0);
  CHECK(check_gradients([](V v) { return ops::where(ops::greater(v[0], v[1]), v[0], v[1] * 2.0); },
                        {a, b}) > 0);
}

TEST_CASE("reduction gradients") {
  const auto x = random_tensor({2, 3, 4}, 10);
  CHECK(check_gradients([](V v) { return ops::sum(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::sum(v[0], std::vector<std::int64_t>{1}); }, {x}) > 0);
  CHECK(check_gradients(
            [](V v) {
              return ops::mean(v[0], std::vector<std::int64_t>{0, 2}, true);
            },
            {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::max(v[0], std::vector<std::int64_t>{-1}); }, {x}) >
        0);
  CHECK(check_gradients([](V v) { return ops::min(v[0], std::vector<std::int64_t>{0}); }, {x}) > 0);
  using Axes = std::vector<std::int64_t>;
  CHECK(check_gradients([](V v) { return ops::prod(v[0], Axes{1}); },
                        {random_tensor({2, 3, 4}, 13, 0.5f, 1.5f)}) > 0);
  CHECK(check_gradients(
            [](V v) {
              return ops::l1(v[0], Axes{0, 2});
            },
            {random_tensor({2, 3, 4}, 14, 0.2f, 1.f)}) > 0);
  CHECK(check_gradients([](V v) { return ops::l2(v[0], Axes{-1}, true); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::sumsquare(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::logsum(v[0], Axes{1}); },
                        {random_tensor({2, 3, 4}, 15, 0.5f, 2.f)}) > 0);
  CHECK(check_gradients([](V v) { return ops::logsumexp(v[0], Axes{0, 2}); }, {x}) > 0);
}

TEST_CASE("topk's gradient reaches the selected elements only") {
  // Values 0.3 apart: no finite-difference step changes which elements are selected.
  HostTensor x({2, 5}, float32);
  for (std::int64_t i = 0; i < x.nelms(); ++i)
    x.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>((i * 3 % 10) * 0.3 - 1.4);
  CHECK(check_gradients([](V v) { return ops::topk(v[0], 3, 1).first; }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::topk(v[0], 1, 0, false).first; }, {x}) > 0);
}

TEST_CASE("median's gradient reaches the element each median was taken from") {
  // Values 0.1 apart in a scrambled order, so that no finite-difference step changes the order.
  HostTensor x({3, 4, 5}, float32);
  for (std::int64_t i = 0; i < x.nelms(); ++i)
    x.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>((i * 17 % 60) * 0.1 - 3.0);
  using Axes = std::vector<std::int64_t>;
  CHECK(check_gradients([](V v) { return ops::median(v[0]); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::median(v[0], Axes{1}); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::median(v[0], Axes{0, 2}, true); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::median(v[0], Axes{-1}) * 3.0; }, {x}) > 0);
}

TEST_CASE("prod's gradient where elements are zero: the product of the others, exactly") {
  // d prod / dx_i: one zero in a row gets the product of the rest, the others 0; two zeros
  // give every element 0.
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph f = ir.create_graph(
      "f", [](Tensor x) { return ops::prod(x, std::vector<std::int64_t>{1}); },
      TensorSpec{{2, 3}, float32});
  const auto info = transforms::autodiff(f);
  const HostTensor x({2.f, 0.f, 3.f, 0.f, 0.f, 5.f}, {2, 3});
  const auto grads = pxl::testing::autodiff_gradients(info, {x}, {HostTensor({1.f, 1.f}, {2})});
  CHECK(grads.at(0) == HostTensor({0.f, 6.f, 0.f, 0.f, 0.f, 0.f}, {2, 3}));
}

TEST_CASE("matmul gradients: 2-d, batched, broadcast and 1-d operands") {
  CHECK(check_gradients([](V v) { return ops::matmul(v[0], v[1]); },
                        {random_tensor({3, 4}, 11), random_tensor({4, 2}, 12)}) > 0);
  CHECK(check_gradients([](V v) { return ops::matmul(v[0], v[1]); },
                        {random_tensor({2, 3, 4}, 13), random_tensor({4, 5}, 14)}) > 0);
  CHECK(check_gradients([](V v) { return ops::matmul(v[0], v[1]); },
                        {random_tensor({2, 1, 3, 4}, 15), random_tensor({3, 4, 2}, 16)}) > 0);
  CHECK(check_gradients([](V v) { return ops::matmul(v[0], v[1]); },
                        {random_tensor({4}, 17), random_tensor({4, 3}, 18)}) > 0);
  CHECK(check_gradients([](V v) { return ops::matmul(v[0], v[1]); },
                        {random_tensor({2, 4}, 19), random_tensor({4}, 20)}) > 0);
  CHECK(check_gradients([](V v) { return ops::matmul(v[0], v[1]); },
                        {random_tensor({4}, 21), random_tensor({4}, 22)}) > 0);
}

TEST_CASE("conv gradients: 1-d, 2-d and 3-d, strided, padded, dilated and grouped") {
  const auto conv = [](ops::ConvOptions o) {
    return [o](V v) { return ops::conv(v[0], v[1], o); };
  };
  CHECK(check_gradients(conv({}), {random_tensor({2, 3, 7}, 40), random_tensor({4, 3, 3}, 41)}) >
        0);
  CHECK(check_gradients(conv({.stride = {2}, .padding = {1, 2}, .dilation = {2}}),
                        {random_tensor({2, 2, 9}, 42), random_tensor({3, 2, 3}, 43)}) > 0);
  CHECK(check_gradients(conv({.stride = {2, 1}, .padding = {1, 0, 1, 1}}),
                        {random_tensor({2, 2, 6, 5}, 44), random_tensor({3, 2, 3, 2}, 45)}) > 0);
  CHECK(check_gradients(conv({.dilation = {2, 1}, .groups = 2}),
                        {random_tensor({1, 4, 6, 4}, 46), random_tensor({6, 2, 2, 2}, 47)}) > 0);
  // depthwise, with rows the stride skips at the end
  CHECK(check_gradients(conv({.stride = {2, 2}, .groups = 3}),
                        {random_tensor({2, 3, 6, 5}, 48), random_tensor({3, 1, 3, 2}, 49)}) > 0);
  CHECK(check_gradients(conv({.pad_type = ops::PadType::same_lower}),
                        {random_tensor({1, 2, 4, 5}, 50), random_tensor({2, 2, 2, 3}, 51)}) > 0);
  CHECK(check_gradients(conv({.stride = {1, 2, 1}, .padding = {0, 1, 0, 1, 0, 1}}),
                        {random_tensor({1, 2, 3, 4, 3}, 52), random_tensor({2, 2, 2, 2, 2}, 53)}) >
        0);
}

TEST_CASE("conv_transpose gradients: 1-d, 2-d and 3-d, output padding and groups") {
  const auto transpose = [](ops::ConvTransposeOptions o) {
    return [o](V v) { return ops::conv_transpose(v[0], v[1], o); };
  };
  CHECK(check_gradients(transpose({.stride = {2}, .output_padding = {1}}),
                        {random_tensor({2, 3, 4}, 60), random_tensor({3, 2, 3}, 61)}) > 0);
  CHECK(check_gradients(transpose({.stride = {2, 1}, .padding = {1, 0, 0, 1}, .groups = 2}),
                        {random_tensor({1, 4, 3, 4}, 62), random_tensor({4, 2, 3, 2}, 63)}) > 0);
  CHECK(check_gradients(transpose({.dilation = {2, 1}, .output_shape = {4, 3}}),
                        {random_tensor({1, 2, 3, 3}, 64), random_tensor({2, 3, 2, 2}, 65)}) > 0);
  CHECK(check_gradients(transpose({.stride = {1, 2, 1}}),
                        {random_tensor({1, 2, 2, 2, 2}, 66), random_tensor({2, 2, 2, 2, 2}, 67)}) >
        0);
}

namespace test_op_gradients_pool {

/// `shape` holding distinct values at least 0.05 apart (a permutation of a grid), so that no
/// finite-difference step changes which element of a window is the largest.
HostTensor distinct(const Shape& shape, std::uint64_t salt) {
  HostTensor t(shape, float32);
  const auto n = static_cast<std::uint64_t>(t.nelms());
  constexpr std::uint64_t primes[] = {7919, 7927, 7933, 7937, 7949}; // coprime with n here
  const std::uint64_t step = primes[salt % 5];
  for (std::uint64_t i = 0; i < n; ++i)
    t.data<float>()[i] = static_cast<float>((i * step) % n) * 0.05f - 1.0f;
  return t;
}

TEST_CASE("pool gradients: 1-d, 2-d and 3-d, strided, padded, dilated, ceil_mode") {
  const auto max = [](std::vector<std::int64_t> k, ops::PoolOptions o) {
    return [k, o](V v) { return ops::max_pool(v[0], k, o); };
  };
  const auto avg = [](std::vector<std::int64_t> k, ops::PoolOptions o) {
    return [k, o](V v) { return ops::average_pool(v[0], k, o); };
  };
  CHECK(check_gradients(max({3}, {.stride = {2}, .padding = {1, 1}}), {distinct({2, 2, 9}, 1)}) >
        0);
  CHECK(check_gradients(max({2, 2}, {.stride = {2, 1}, .ceil_mode = true}),
                        {distinct({1, 3, 5, 4}, 2)}) > 0);
  CHECK(check_gradients(max({2, 2}, {.padding = {1, 0, 0, 1}, .dilation = {2, 1}}),
                        {distinct({2, 1, 5, 5}, 3)}) > 0);
  CHECK(check_gradients(max({2, 2, 2}, {.stride = {2, 1, 2}, .ceil_mode = true}),
                        {distinct({1, 2, 3, 4, 3}, 4)}) > 0);
  CHECK(check_gradients(avg({3}, {.stride = {2}, .padding = {1, 1}}),
                        {random_tensor({2, 2, 9}, 70)}) > 0);
  CHECK(check_gradients(avg({3, 2}, {.stride = {2, 2},
                                     .padding = {1, 1, 1, 0},
                                     .ceil_mode = true,
                                     .count_include_pad = true}),
                        {random_tensor({2, 2, 6, 5}, 71)}) > 0);
  CHECK(check_gradients(avg({2, 2}, {.dilation = {2, 1}, .pad_type = ops::PadType::same_upper}),
                        {random_tensor({1, 2, 5, 4}, 72)}) > 0);
  CHECK(check_gradients(avg({2, 3, 2}, {.stride = {1, 2, 1}, .ceil_mode = true}),
                        {random_tensor({1, 2, 3, 4, 3}, 73)}) > 0);
  CHECK(check_gradients([](V v) { return ops::global_average_pool(v[0]); },
                        {random_tensor({2, 3, 4, 3}, 74)}) > 0);
  CHECK(check_gradients([](V v) { return ops::global_max_pool(v[0]); },
                        {distinct({2, 3, 4, 3}, 5)}) > 0);
}

} // namespace test_op_gradients_pool

TEST_CASE("nn gradients") {
  const auto x = random_tensor({3, 5}, 30);
  CHECK(check_gradients([](V v) { return ops::softmax(v[0], -1); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::softmax(v[0], 0); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::log_softmax(v[0], 1); }, {x}) > 0);
  CHECK(check_gradients(
            [](V v) { return ops::layer_norm(v[0], v[1], v[2]); },
            {random_tensor({2, 3, 4}, 31), random_tensor({4}, 32), random_tensor({4}, 33)}) > 0);
  CHECK(check_gradients(
            [](V v) {
              auto labels = constant(HostTensor(std::vector<std::int32_t>{1, 0, 4}, {3}), "labels");
              return ops::nll_loss(ops::softmax(v[0]), labels);
            },
            {x}) > 0);
  CHECK(check_gradients(
            [](V v) {
              auto labels = constant(HostTensor(std::vector<std::int32_t>{1, 2, 4}, {3}), "labels");
              return ops::nll_loss(v[0], labels, 2, Reduction::sum, /*log_prob=*/true);
            },
            {x}) > 0);
  CHECK(check_gradients(
            [](V v) {
              auto labels = constant(HostTensor(std::vector<std::int32_t>{3, 2, 0}, {3}), "labels");
              return ops::nll_loss(ops::softmax(v[0]), labels, std::nullopt, Reduction::none);
            },
            {x}) > 0);
  // Out-of-range labels (7, -3) add nothing but count in the mean, with ignore_index or not:
  // the rule's divisor must match the loss's for finite differences to agree.
  for (std::optional<std::int32_t> ignore : {std::optional<std::int32_t>{}, {-100}}) {
    CAPTURE(ignore.has_value());
    CHECK(check_gradients(
              [ignore](V v) {
                auto labels = constant(
                    HostTensor(std::vector<std::int32_t>{7, 2, -100, -3, 1}, {5}), "labels");
                return ops::nll_loss(ops::softmax(v[0]), labels, ignore);
              },
              {random_tensor({5, 4}, 34)}) > 0);
  }
}

TEST_CASE("dropout's gradient uses the same mask") {
  const HostTensor seed(std::vector<std::uint32_t>{7, 11}, {2});
  CHECK(check_gradients([&](V v) { return ops::dropout(v[0], constant(seed), 0.4); },
                        {random_tensor({4, 5}, 40)}) > 0);
}

TEST_CASE("shape and data-movement gradients") {
  const auto x = random_tensor({2, 3, 4}, 50);
  CHECK(check_gradients([](V v) { return ops::reshape(v[0], {4, 6}); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::transpose(v[0], {2, 0, 1}); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::squeeze(ops::unsqueeze(v[0], {0}), {0}); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::slice(v[0], {1, 0}, {3, -1}, {1, 2}); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return v[0][1]; }, {x}) > 0);
  CHECK(check_gradients(
            [](V v) {
              return ops::concat({v[0], v[1]}, 1);
            },
            {x, random_tensor({2, 2, 4}, 51)}) > 0);
  CHECK(check_gradients(
            [](V v) {
              auto parts = ops::split(v[0], {1, 3}, 2);
              return std::tuple{parts[0] * 2.0, parts[1]};
            },
            {x}) > 0);
  CHECK(check_gradients(
            [](V v) {
              auto idx = constant(HostTensor(std::vector<std::int32_t>{2, 0, 2, 1}, {2, 2}), "idx");
              return ops::gather(v[0], idx, 1);
            },
            {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::scaled_add(v[0], v[1], {.a = 0.5, .b = -2.0}); },
                        {x, random_tensor({4}, 52)}) > 0);
  CHECK(check_gradients([](V v) { return ops::subsample(v[0], {2, 2, 3}); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::subsample(v[0], {1, 3, 4}); }, {x}) > 0);
  CHECK(check_gradients([](V v) { return ops::subsample(v[0], {5, 1, 1}) * 2.0; }, {x}) > 0);
}

TEST_CASE("in-place update gradients: accumulate_square_, accumulate_mean_, sparse_accumulate_") {
  namespace vu = ops::var_updates;
  const auto t = random_tensor({3, 4}, 60);
  const auto row = random_tensor({4}, 61);
  CHECK(check_gradients([](V v) { return vu::accumulate_square_(v[0] * 1.0, v[1], 0.5); },
                        {t, row}) > 0);
  CHECK(check_gradients([](V v) { return vu::accumulate_mean_(v[0] * 1.0, v[1], 3.0); }, {t, row}) >
        0);
  CHECK(check_gradients(
            [](V v) {
              return vu::accumulate_mean_(v[0] * 1.0, v[1], constant(HostTensor::scalar(1.5f)));
            },
            {t, t}) > 0);
  CHECK(check_gradients(
            [](V v) {
              auto idx = constant(HostTensor(std::vector<std::int32_t>{2, 0, 2, 9}, {2, 2}), "idx");
              return vu::sparse_accumulate_(v[0] * 1.0, v[1], idx, 1, -0.5);
            },
            {t, random_tensor({3, 2, 2}, 62)}) > 0);
}

namespace test_op_gradients_indexing {
/// Values 0.3 apart from `base` on, in a scrambled order: no two closer than the finite
/// difference step, so max and min have no tie to step across.
HostTensor spread(Shape shape, std::int64_t salt, float base = -2.3f) {
  HostTensor t(std::move(shape), float32);
  const std::int64_t n = t.nelms();
  for (std::int64_t i = 0; i < n; ++i)
    t.data<float>()[static_cast<std::size_t>(i)] =
        base + 0.3f * static_cast<float>((i * 7 + salt) % n);
  return t;
}

TEST_CASE("scatter_reduce gradients: every reduction, with and without initial values") {
  using R = ScatterReduction;
  // Along axis 1 of a (2, 5, 3) data into 4 positions: index 4 is out of range, some
  // positions get nothing. `none`'s gradient (gathered, as PopART's) is the derivative only
  // where indices do not repeat along a line: its indices are distinct.
  const HostTensor repeats(std::vector<std::int32_t>{0, 2, 0, 1, 2, 2, 0, 0, 4, 1, 2, 2, 3, 0, 1,
                                                     2, 2, 2, 0, 1, 3, 4, 0, 0, 1, 1, 1, 3, 3, 0},
                           {2, 5, 3});
  HostTensor distinct({2, 5, 3}, int32);
  for (std::int32_t a = 0, k = 0; a < 2; ++a)
    for (std::int32_t j = 0; j < 5; ++j)
      for (std::int32_t c = 0; c < 3; ++c)
        distinct.data<std::int32_t>()[static_cast<std::size_t>(k++)] = (j + c + a) % 5;
  for (R r : {R::sum, R::max, R::min, R::none}) {
    CAPTURE(static_cast<int>(r));
    const HostTensor& idx = r == R::none ? distinct : repeats;
    const HostTensor along(r == R::none ? std::vector<std::int32_t>{1, 0, -1, 5}
                                        : std::vector<std::int32_t>{1, 0, 1, 1},
                           {4});
    CHECK(check_gradients(
              [&](V v) {
                return ops::scatter_reduce(v[0], constant(idx, "idx"), r, std::nullopt, 1, 4);
              },
              {spread({2, 5, 3}, 1)}) > 0);
    // Initial values off the data's grid of values: no ties between them either.
    CHECK(check_gradients(
              [&](V v) { return ops::scatter_reduce(v[0], constant(idx, "idx"), r, v[1], 1); },
              {spread({2, 5, 3}, 2), spread({2, 4, 3}, 3, -2.15f)}) > 0);
    // Vector indices along axis 0.
    CHECK(check_gradients(
              [&](V v) { return ops::scatter_reduce(v[0], constant(along, "along"), r, v[1], 0); },
              {spread({4, 3}, 4), spread({2, 3}, 5, -2.15f)}) > 0);
  }
}

TEST_CASE("scatter_reduce: max and min give every tie the whole gradient") {
  for (const ScatterReduction r : {ScatterReduction::max, ScatterReduction::min}) {
    Ir ir;
    auto main = ir.main_graph().scope();
    Graph fwd = ir.create_graph(
        "f",
        [r](std::vector<Tensor> xs) {
          const Tensor idx = constant(HostTensor(std::vector<std::int32_t>{0, 0, 1}, {3}), "i");
          return std::vector<Tensor>{ops::scatter_reduce(xs[0], idx, r, xs[1])};
        },
        std::vector<TensorSpec>{{{3}, float32}, {{2}, float32}});
    const auto info = transforms::autodiff(fwd, {.grads_required = fwd.inputs()});
    // Data 2, 2, 5 onto initial values 2, 7: position 0 is a three-way tie at 2; position 1
    // is 7 (the initial value) for max and 5 (the data) for min.
    const auto g = testing::autodiff_gradients(
        info, {HostTensor({2.f, 2.f, 5.f}, {3}), HostTensor({2.f, 7.f}, {2})},
        {HostTensor({10.f, 100.f}, {2})});
    const bool max = r == ScatterReduction::max;
    CHECK(g[0] == HostTensor({10.f, 10.f, max ? 0.f : 100.f}, {3}));
    CHECK(g[1] == HostTensor({10.f, max ? 100.f : 0.f}, {2}));
  }
}

TEST_CASE("groupedgather, tied_gather and shaped_dropout gradients") {
  const auto x = random_tensor({2, 3, 4}, 80);
  for (std::int64_t axis : {1, 2})
    CHECK(check_gradients(
              [axis](V v) {
                auto idx = constant(HostTensor(std::vector<std::int32_t>{2, 0, 2, 1, 1, 5}, {2, 3}),
                                    "idx");
                return ops::groupedgather(v[0], idx, axis, 2);
              },
              {x}) > 0);
  CHECK(check_gradients(
            [](V v) {
              auto idx = constant(HostTensor(std::vector<std::int32_t>{3, 0, 3, -1}, {2, 2}), "i");
              return ops::tied_gather(v[0], idx, 2);
            },
            {x}) > 0);
  const HostTensor seed(std::vector<std::uint32_t>{7, 11}, {2});
  CHECK(check_gradients(
            [&](V v) {
              return ops::shaped_dropout(v[0], constant(seed), {3, 1}, 0.4);
            },
            {x}) > 0);
}
TEST_CASE("interpolate gradients: nearest in every rounding and coordinate mode") {
  using C = ResizeCoordinateTransformationMode;
  using N = ResizeNearestMode;
  const auto x = random_tensor({2, 3, 4}, 81);
  const std::vector<std::vector<float>> scales = {{1.f, 2.f, 1.5f}, {2.f, 0.7f, 0.5f}};
  for (const auto& s : scales)
    for (C c : {C::half_pixel, C::pytorch_half_pixel, C::align_corners, C::asymmetric})
      for (N n : {N::round_prefer_floor, N::round_prefer_ceil, N::floor, N::ceil}) {
        CAPTURE(static_cast<int>(c));
        CAPTURE(static_cast<int>(n));
        CHECK(check_gradients(
                  [&s, n, c](V v) { return ops::interpolate(v[0], s, ResizeMode::nearest, n, c); },
                  {x}) > 0);
      }
}
TEST_CASE("roi_align gradients with respect to the feature map") {
  const auto x = random_tensor({2, 3, 5, 4}, 82);
  const HostTensor boxes({0.3f, 0.6f, 4.1f, 3.2f, -1.f, 1.5f, 2.5f, 6.f, 1.f, 1.f, 1.2f, 1.1f},
                         {3, 4});
  const HostTensor images(std::vector<std::int32_t>{1, 0, 1}, {3});
  for (std::int64_t ratio : {1, 2})
    CHECK(check_gradients(
              [&](V v) {
                return ops::roi_align(v[0], constant(boxes, "rois"), constant(images, "idx"),
                                      {2, 3}, 0.8f, ratio);
              },
              {x}) > 0);
}
} // namespace test_op_gradients_indexing

TEST_CASE("an MLP-shaped composition") {
  CHECK(check_gradients(
            [](V v) {
              auto h = ops::gelu(ops::matmul(v[0], v[1]) + v[2]);
              return ops::log_softmax(ops::matmul(h, v[3]));
            },
            {random_tensor({2, 4}, 60), random_tensor({4, 5}, 61), random_tensor({5}, 62),
             random_tensor({5, 3}, 63)}) > 0);
}

TEST_CASE("normalisation gradients: batch norm's two forms and group norm, 0-3 spatial axes") {
  const auto inference = [](V v) {
    return ops::batch_norm_inference(v[0], v[1], v[2], v[3], v[4], 1e-3);
  };
  // The statistics given: positive variances, gradients with respect to all five operands.
  for (const Shape& x : std::vector<Shape>{{4, 3}, {2, 3, 4}, {2, 2, 3, 2}, {1, 2, 2, 2, 2}}) {
    CAPTURE(to_string(x));
    const Shape c{x[1]};
    CHECK(check_gradients(inference, {random_tensor(x, 70), random_tensor(c, 71, 0.5f, 1.5f),
                                      random_tensor(c, 72), random_tensor(c, 73),
                                      random_tensor(c, 74, 0.5f, 2.f)}) > 0);
    // The batch's statistics: the output, mean and variance all receive gradients.
    CHECK(check_gradients(
              [](V v) {
                const auto r = ops::batch_norm_training(v[0], v[1], v[2]);
                return V{r.output, r.mean, r.var};
              },
              {random_tensor(x, 75), random_tensor(c, 76, 0.5f, 1.5f), random_tensor(c, 77)}) > 0);
    CHECK(check_gradients(
              [](V v) { return ops::batch_norm_training(v[0], v[1], v[2]).output; },
              {random_tensor(x, 78), random_tensor(c, 79, 0.5f, 1.5f), random_tensor(c, 80)}) > 0);
  }
  const auto group = [](std::int64_t groups) {
    return [groups](V v) { return ops::group_norm(v[0], v[1], v[2], groups); };
  };
  // Groups of 4 or more elements: a pair normalises to ±1 whatever its values, and finite
  // differences of that are noise.
  CHECK(check_gradients(group(2), {random_tensor({3, 8}, 81), random_tensor({8}, 82, 0.5f, 1.5f),
                                   random_tensor({8}, 83)}) > 0);
  CHECK(check_gradients(group(1), {random_tensor({2, 3, 4}, 84), random_tensor({3}, 85),
                                   random_tensor({3}, 86)}) > 0);
  CHECK(check_gradients(group(3), {random_tensor({2, 6, 2, 2}, 87), random_tensor({6}, 88),
                                   random_tensor({6}, 89)}) > 0);
  CHECK(check_gradients(group(2), {random_tensor({1, 4, 2, 2, 2}, 90), random_tensor({4}, 91),
                                   random_tensor({4}, 92)}) > 0);
}

TEST_CASE("the views with a gradient: concat_ as concat, detach_ none") {
  const auto x = random_tensor({2, 3, 4}, 61);
  CHECK(check_gradients(
            [](V v) {
              return ops::concat_({v[0], v[1]}, 1);
            },
            {x, random_tensor({2, 2, 4}, 62)}) > 0);
  CHECK(check_gradients([](V v) { return ops::concat_({v[0], v[0] * 2.0}, 0); }, {x}) > 0);
  // x · detach_(x): the detached factor contributes nothing, d/dx = x.
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f", [](Tensor t) { return t * ops::detach_(t); }, TensorSpec{{3}, float32});
  const auto info = transforms::autodiff(fwd);
  const HostTensor x3({1.f, 2.f, 3.f}, {3});
  const auto grads =
      pxl::testing::autodiff_gradients(info, {x3}, {HostTensor({1.f, 1.f, 1.f}, {3})});
  CHECK(grads[0] == x3);
}
