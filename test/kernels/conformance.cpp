// The per-op suite: every row of the op table has a case here, run through its kernel on 1-4
// workers (bitwise equal, and equal to the reference evaluator) and, when differentiable,
// through autodiff against central finite differences (on the reference and the emulator).
// A new op kind fails "every op kind has a conformance case" until it gets one.
#include "../transforms/gradcheck.hpp"
#include "harness.hpp"

#include "pxl/core/fp8_utils.hpp"
#include "pxl/ops/collectives.hpp"
#include "pxl/ops/conv.hpp"
#include "pxl/ops/norm.hpp"
#include "pxl/ops/pool.hpp"
#include "pxl/ops/var_updates.hpp"

#include <functional>
#include <map>
#include <string>

using namespace pxl;
using V = std::vector<Tensor>;
using Axes = std::vector<std::int64_t>;

namespace {

struct OpCase {
  /// Builds the op under test (the last op it makes) from graph inputs of `inputs`' specs.
  std::function<V(const V&)> build;
  std::vector<HostTensor> inputs;
  /// Why the kind is checked elsewhere instead (non-empty: `build` is unused).
  std::string elsewhere;
  /// Finite-difference step and tolerances of the gradient check.
  double eps = 1e-2, rtol = 2e-2, atol = 2e-3;
  /// Where a gradient check against finite differences is not possible here, why.
  std::string no_finite_differences = "";
};

HostTensor f32(Shape shape, double lo = -2.0, double hi = 2.0, std::uint64_t salt = 1) {
  return testing::random_tensor(std::move(shape), float32, lo, hi, salt);
}
HostTensor i32(std::vector<std::int32_t> v, Shape shape) { return HostTensor(v, std::move(shape)); }
HostTensor seed() { return HostTensor(std::vector<std::uint32_t>{7, 11}, {2}); }
HostTensor bools(std::vector<std::uint8_t> v) {
  HostTensor t({static_cast<std::int64_t>(v.size())}, bool_);
  for (std::size_t i = 0; i < v.size(); ++i)
    t.data<bool>()[i] = v[i] != 0;
  return t;
}

OpCase unary(Tensor (*f)(const Tensor&), HostTensor x) {
  return {[f](const V& v) { return V{f(v[0])}; }, {std::move(x)}, ""};
}
OpCase binary(Tensor (*f)(const Tensor&, const Tensor&), HostTensor a, HostTensor b) {
  return {[f](const V& v) { return V{f(v[0], v[1])}; }, {std::move(a), std::move(b)}, ""};
}

const std::map<OpKind, OpCase>& op_cases() {
  static const std::map<OpKind, OpCase> cases = [] {
    std::map<OpKind, OpCase> c;
    const auto x = f32({2, 3});
    const auto positive = f32({2, 3}, 0.5, 2.0, 2);
    const auto away_from_zero = HostTensor({-1.5f, -0.5f, 0.25f, 0.75f, 1.25f, -2.f}, {2, 3});
    // Element-wise, unary.
    c[OpKind::Negate] = unary(ops::negate, x);
    c[OpKind::Abs] = unary(ops::abs, away_from_zero);
    c[OpKind::Exp] = unary(ops::exp, x);
    c[OpKind::Log] = unary(ops::log, positive);
    c[OpKind::Sqrt] = unary(ops::sqrt, positive);
    c[OpKind::Tanh] = unary(ops::tanh, x);
    c[OpKind::Sigmoid] = unary(ops::sigmoid, x);
    c[OpKind::Relu] = unary(ops::relu, away_from_zero);
    c[OpKind::Gelu] = unary(ops::gelu, x);
    c[OpKind::GeluErf] = unary(ops::geluerf, x);
    c[OpKind::GeluGrad] = binary(ops::gelu_grad, x, f32({2, 3}, -2.0, 2.0, 3));
    c[OpKind::TanhGrad] = binary(ops::tanh_grad, f32({2, 3}, -0.95, 0.95, 16), x);
    c[OpKind::Erf] = unary(ops::erf, x);
    c[OpKind::Sin] = unary(ops::sin, f32({2, 3}, -4.0, 4.0, 14));
    c[OpKind::Cos] = unary(ops::cos, f32({2, 3}, -4.0, 4.0, 15));
    c[OpKind::Sign] = unary(ops::sign, away_from_zero);
    c[OpKind::Clip] = {[](const V& v) { return V{ops::clip(v[0], -1.0, 1.5)}; },
                       {HostTensor({-1.7f, -0.6f, 0.3f, 1.2f, 1.9f, -0.2f}, {2, 3})},
                       ""};
    c[OpKind::LogicalNot] = unary(ops::logical_not, bools({1, 0, 1}));
    c[OpKind::IsNan] = unary(ops::isnan, HostTensor({1.f, NAN, -INFINITY}, {3}));
    c[OpKind::IsInf] = unary(ops::isinf, HostTensor({1.f, NAN, -INFINITY}, {3}));
    c[OpKind::IsFinite] = unary(ops::isfinite, HostTensor({1.f, NAN, -INFINITY}, {3}));
    c[OpKind::Floor] = unary(ops::floor, away_from_zero);
    c[OpKind::Ceil] = unary(ops::ceil, away_from_zero);
    c[OpKind::Log2] = unary(ops::log2, positive);
    c[OpKind::Swish] = unary(ops::swish, x);
    c[OpKind::IncrementMod] = {
        [](const V& v) { return V{ops::increment_mod(v[0], 1.5, 2.0)}; }, {x}, ""};
    c[OpKind::IncrementModInplace] = {
        [](const V& v) { return V{ops::increment_mod_(v[0], 3.0, 7.0)}; },
        {i32({1, 5, -9, 6, 0, 13}, {2, 3})},
        ""};
    c[OpKind::Pow2ScaleThenCast] = {
        [](const V& v) { return V{ops::pow2scale_cast_to_fp8(v[0], v[1], float8_143)}; },
        {f32({2, 3}, -300.0, 300.0, 31), i32({-1}, {})},
        ""};
    c[OpKind::CastThenPow2Scale] = {
        [](const V& v) { return V{ops::pow2scale_cast_from_fp8(v[0], v[1], float16)}; },
        {host_pow2scale_cast_to_fp8(f32({2, 3}, -4.0, 4.0, 32), float8_152), i32({3}, {})},
        ""};
    c[OpKind::Cast] = {[](const V& v) { return V{ops::cast(v[0], float16)}; },
                       {x},
                       "",
                       1e-2,
                       2e-2,
                       2e-3,
                       "a float16 output: test/transforms/op_gradients.cpp checks cast through a "
                       "float32 -> float16 -> float32 round trip"};
    c[OpKind::Identity] = unary(ops::identity, x);
    c[OpKind::Detach] = unary(ops::detach, x);
    c[OpKind::ReluInplace] = unary(ops::relu_, away_from_zero);
    c[OpKind::GeluInplace] = unary(ops::gelu_, x);
    c[OpKind::GeluErfInplace] = unary(ops::geluerf_, x);
    c[OpKind::ExpInplace] = unary(ops::exp_, x);
    c[OpKind::SwishInplace] = unary(ops::swish_, x);
    c[OpKind::DetachInplace] = unary(ops::detach_, x);
    c[OpKind::DetachInplace].no_finite_differences =
        "detach_ has no gradient by definition: test/ops/elementwise.cpp checks autodiff gives "
        "none through it";
    // Element-wise, binary, broadcasting.
    const auto row = f32({3}, -2.0, 2.0, 3);
    c[OpKind::Add] = binary(ops::add, x, row);
    c[OpKind::Sub] = binary(ops::sub, x, row);
    c[OpKind::Mul] = binary(ops::mul, x, row);
    c[OpKind::Div] = binary(ops::div, x, f32({2, 1}, 0.5, 1.5, 4));
    c[OpKind::Pow] = binary(ops::pow, positive, f32({3}, 0.5, 2.0, 5));
    // Quotients away from whole numbers, where fmod jumps.
    c[OpKind::Fmod] = binary(ops::fmod, HostTensor({2.3f, -3.7f, 5.2f, -1.1f, 0.45f, 7.9f}, {2, 3}),
                             HostTensor({1.5f, -2.f, 0.8f}, {3}));
    c[OpKind::Maximum] = binary(ops::maximum, away_from_zero, f32({3}, -0.1, 0.1, 6));
    c[OpKind::Minimum] = binary(ops::minimum, away_from_zero, f32({3}, -0.1, 0.1, 16));
    const auto ints = i32({1, 2, 3, 4, 5, 6}, {2, 3});
    c[OpKind::NotEqual] = binary(ops::not_equal, ints, i32({1, 0, 3}, {3}));
    c[OpKind::GreaterEqual] = binary(ops::greater_equal, ints, i32({1, 5, 7}, {3}));
    c[OpKind::Less] = binary(ops::less, x, row);
    c[OpKind::LessEqual] = binary(ops::less_equal, ints, i32({2, 2, 2}, {3}));
    c[OpKind::Equal] = binary(ops::equal, i32({1, 2, 3, 4, 5, 6}, {2, 3}), i32({1, 0, 3}, {3}));
    c[OpKind::Greater] = binary(ops::greater, x, row);
    c[OpKind::LogicalAnd] = binary(ops::logical_and, bools({1, 1, 0}), bools({1, 0, 0}));
    c[OpKind::LogicalOr] = binary(ops::logical_or, bools({1, 0, 0}), bools({0, 0, 1}));
    c[OpKind::Where] = {
        [](const V& v) { return V{ops::where(v[0], v[1], v[2])}; }, {bools({1, 0, 1}), x, row}, ""};
    // Reductions.
    const auto cube = f32({2, 3, 4}, -2.0, 2.0, 7);
    // Values 0.15 apart, so that no finite-difference step changes which element is extreme.
    HostTensor spaced({2, 3, 4}, float32);
    for (std::int64_t i = 0; i < spaced.nelms(); ++i)
      spaced.data<float>()[static_cast<std::size_t>(i)] =
          static_cast<float>((i * 7 % 24) * 0.15 - 1.8);
    c[OpKind::ReduceSum] = {[](const V& v) { return V{ops::sum(v[0], Axes{1})}; }, {cube}, ""};
    c[OpKind::ReduceMean] = {[](const V& v) {
                               return V{ops::mean(v[0], Axes{0, 2}, true)};
                             },
                             {cube},
                             ""};
    c[OpKind::ReduceMax] = {[](const V& v) { return V{ops::max(v[0], Axes{-1})}; }, {spaced}, ""};
    c[OpKind::ReduceMin] = {[](const V& v) { return V{ops::min(v[0], Axes{0})}; }, {spaced}, ""};
    c[OpKind::ReduceProd] = {
        [](const V& v) { return V{ops::prod(v[0], Axes{1})}; }, {f32({2, 3, 4}, 0.5, 1.5, 17)}, ""};
    // Both signs, at least 0.2 from 0, where |x| bends.
    HostTensor signed_away({2, 3, 4}, float32);
    for (std::int64_t i = 0; i < signed_away.nelms(); ++i)
      signed_away.data<float>()[static_cast<std::size_t>(i)] =
          static_cast<float>((0.2 + (i * 7 % 24) * 0.07) * (i % 2 ? -1 : 1));
    c[OpKind::ReduceL1] = {[](const V& v) {
                             return V{ops::l1(v[0], Axes{0, 2})};
                           },
                           {signed_away},
                           ""};
    c[OpKind::ReduceL2] = {[](const V& v) { return V{ops::l2(v[0], Axes{-1}, true)}; }, {cube}, ""};
    c[OpKind::ReduceSumSquare] = {
        [](const V& v) { return V{ops::sumsquare(v[0], Axes{1})}; }, {cube}, ""};
    c[OpKind::ReduceLogSum] = {[](const V& v) { return V{ops::logsum(v[0], Axes{2})}; },
                               {f32({2, 3, 4}, 0.5, 2.0, 18)},
                               ""};
    c[OpKind::ReduceLogSumExp] = {[](const V& v) {
                                    return V{ops::logsumexp(v[0], Axes{0, 1})};
                                  },
                                  {cube},
                                  ""};
    c[OpKind::TopK] = {[](const V& v) { return V{ops::topk(v[0], 2, 1).first}; }, {spaced}, ""};
    c[OpKind::ArgMax] = {[](const V& v) { return V{ops::argmax(v[0], 1)}; }, {spaced}, ""};
    c[OpKind::ArgMin] = {[](const V& v) { return V{ops::argmin(v[0], 2, true)}; }, {spaced}, ""};
    c[OpKind::CumSum] = {[](const V& v) { return V{ops::cumsum(v[0], 1)}; }, {cube}, ""};
    c[OpKind::ReduceMedian] = {[](const V& v) {
                                 return V{ops::median(v[0], Axes{0, 2})};
                               },
                               {spaced},
                               ""};
    c[OpKind::Histogram] = {[](const V& v) {
                              return V{ops::histogram(v[0], {-1.0, -0.25, 0.5}, false)};
                            },
                            {cube},
                            ""};
    c[OpKind::LambSquare] = unary(ops::lamb_square, cube);
    // Linear algebra.
    c[OpKind::MatMul] = binary(ops::matmul, f32({2, 2, 3}, -1, 1, 8), f32({3, 2}, -1, 1, 9));
    // Convolutions: strided, padded and grouped. Positive operands: sums free of cancellation
    // stay within 1e-6 of the double reference in any order.
    const ops::ConvOptions geometry{.stride = {2, 1}, .padding = {1, 0, 0, 1}, .groups = 2};
    c[OpKind::Conv] = {[geometry](const V& v) { return V{ops::conv(v[0], v[1], geometry)}; },
                       {f32({2, 4, 5, 4}, 0.1, 1, 14), f32({6, 2, 3, 2}, 0.1, 1, 15)},
                       ""};
    c[OpKind::ConvTranspose] = {
        [](const V& v) {
          return V{ops::conv_transpose(v[0], v[1],
                                       {.stride = {2, 1}, .padding = {1, 0, 0, 1}, .groups = 2})};
        },
        {f32({2, 4, 3, 4}, 0.1, 1, 16), f32({4, 3, 3, 2}, 0.1, 1, 17)},
        ""};
    c[OpKind::ConvWeightsGrad] = {
        [geometry](const V& v) {
          return V{ops::conv_weights_grad(v[0], v[1], {6, 2, 3, 2}, geometry)};
        },
        {f32({2, 6, 2, 4}, 0.1, 1, 18), f32({2, 4, 5, 4}, 0.1, 1, 19)},
        ""};
    // Pools: strided, padded, dilated, ceil_mode and count_include_pad. The max's inputs are
    // apart by more than the finite-difference step, so no nudge changes a window's argmax;
    // the averages' positive, so their sums are free of cancellation.
    const ops::PoolOptions pooling{
        .stride = {2, 1}, .padding = {1, 0, 0, 1}, .dilation = {1, 2}, .ceil_mode = true};
    const auto spread = [] {
      HostTensor t({2, 3, 5, 4}, float32);
      for (std::int64_t i = 0; i < t.nelms(); ++i)
        t.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>((i * 37) % 120) / 20.f;
      return t;
    }();
    c[OpKind::MaxPool] = {[pooling](const V& v) {
                            return V{ops::max_pool(v[0], {3, 2}, pooling)};
                          },
                          {spread},
                          ""};
    auto averaging = pooling;
    averaging.count_include_pad = true;
    c[OpKind::AveragePool] = {[averaging](const V& v) {
                                return V{ops::average_pool(v[0], {3, 2}, averaging)};
                              },
                              {f32({2, 3, 5, 4}, 0.1, 1, 20)},
                              ""};
    c[OpKind::MaxPoolGrad] = {[pooling](const V& v) {
                                return V{ops::max_pool_grad(v[0], v[1], {3, 2}, pooling)};
                              },
                              {f32({2, 3, 3, 3}, -1, 1, 21), spread},
                              ""};
    c[OpKind::AveragePoolGrad] = {
        [averaging](const V& v) {
          return V{ops::average_pool_grad(v[0], {2, 3, 5, 4}, {3, 2}, averaging)};
        },
        {f32({2, 3, 3, 3}, 0.1, 1, 22)},
        ""};
    const auto boxes = HostTensor({0.3f, 0.6f, 4.1f, 3.2f, -1.f, 1.5f, 2.5f, 6.f}, {2, 4});
    // The ROIs as constants: roi_align differentiates t only.
    c[OpKind::RoiAlign] = {
        [boxes](const V& v) {
          return V{ops::roi_align(v[0], constant(boxes, "rois"),
                                  constant(HostTensor(std::vector<std::int32_t>{1, 0}, {2}), "idx"),
                                  {2, 3}, 0.8f, 2)};
        },
        {f32({2, 3, 5, 4}, -1, 1, 24)},
        ""};
    c[OpKind::RoiAlignGrad] = {
        [](const V& v) {
          return V{ops::roi_align_grad(v[0], v[1], v[2], {2, 3, 5, 4}, {2, 3}, 0.8f, 2)};
        },
        {f32({2, 3, 2, 3}, -1, 1, 25), boxes, i32({1, 0}, {2})},
        ""};
    // nn.
    c[OpKind::Softmax] = {[](const V& v) { return V{ops::softmax(v[0], 0)}; }, {x}, ""};
    c[OpKind::LogSoftmax] = {[](const V& v) { return V{ops::log_softmax(v[0], 1)}; }, {x}, ""};
    c[OpKind::LayerNorm] = {[](const V& v) { return V{ops::layer_norm(v[0], v[1], v[2])}; },
                            {x, f32({3}, 0.5, 1.5, 10), row},
                            ""};
    c[OpKind::SoftmaxGrad] = {[](const V& v) { return V{ops::softmax_grad(v[0], v[1], 0)}; },
                              {f32({2, 3}, 0.1, 0.9, 12), x},
                              ""};
    c[OpKind::LayerNormGrad] = {[](const V& v) {
                                  auto [dx, weighted] = ops::layer_norm_grad(v[0], v[1], v[2]);
                                  return V{dx, weighted};
                                },
                                {x, f32({3}, 0.5, 1.5, 10), f32({2, 3}, -1.0, 1.0, 13)},
                                ""};
    c[OpKind::Dropout] = {
        [](const V& v) { return V{ops::dropout(v[0], v[1], 0.25)}; }, {f32({4, 5}), seed()}, ""};
    c[OpKind::ShapedDropout] = {[](const V& v) {
                                  return V{ops::shaped_dropout(v[0], v[1], {4, 1}, 0.25)};
                                },
                                {f32({4, 5}), seed()},
                                ""};
    const auto probs = f32({3, 4}, 0.1, 1.0, 11);
    const auto labels = i32({0, 3, 1}, {3});
    c[OpKind::NllLoss] = {
        [](const V& v) { return V{ops::nll_loss(v[0], v[1])}; }, {probs, labels}, ""};
    c[OpKind::NllLossWithSoftmaxGrad] = {[](const V& v) {
                                           auto [loss, grad] =
                                               ops::nll_loss_with_softmax_grad(v[0], v[1]);
                                           return V{loss, grad};
                                         },
                                         {probs, labels},
                                         ""};
    // Random numbers.
    c[OpKind::RandomNormal] = {[](const V& v) {
                                 return V{ops::random_normal(v[0], {3, 5}, 1.0, 2.0)};
                               },
                               {seed()},
                               ""};
    c[OpKind::RandomUniform] = {[](const V& v) {
                                  return V{ops::random_uniform(v[0], {3, 5}, -1.0, 3.0)};
                                },
                                {seed()},
                                ""};
    c[OpKind::SplitRandomSeed] = {
        [](const V& v) { return ops::split_random_seed(v[0], 3); }, {seed()}, ""};
    // Shape and data movement.
    c[OpKind::Reshape] = {[](const V& v) { return V{ops::reshape(v[0], {3, 2})}; }, {x}, ""};
    c[OpKind::IpuCopy] = {[](const V& v) { return V{ops::ipu_copy(v[0], 1)}; }, {x}, ""};
    c[OpKind::IoTileCopy] = unary(ops::io_tile_copy, x);
    c[OpKind::Transpose] = {[](const V& v) {
                              return V{ops::transpose(v[0], {2, 0, 1})};
                            },
                            {cube},
                            ""};
    c[OpKind::Slice] = {[](const V& v) {
                          return V{ops::slice(v[0], {0, 1, 1}, {2, 3, 4})};
                        },
                        {cube},
                        ""};
    c[OpKind::Concat] = {[](const V& v) {
                           return V{ops::concat({v[0], v[1]}, 1)};
                         },
                         {x, f32({2, 2}, -2, 2, 12)},
                         ""};
    c[OpKind::ReshapeInplace] = {[](const V& v) {
                                   return V{ops::reshape_(v[0], {3, 2})};
                                 },
                                 {x},
                                 ""};
    c[OpKind::TransposeInplace] = {[](const V& v) {
                                     return V{ops::transpose_(v[0], {2, 0, 1})};
                                   },
                                   {cube},
                                   ""};
    c[OpKind::SliceInplace] = {[](const V& v) {
                                 return V{ops::slice_(v[0], {0, 1, 1}, {2, 3, 4})};
                               },
                               {cube},
                               ""};
    c[OpKind::ConcatInplace] = {[](const V& v) {
                                  return V{ops::concat_({v[0], v[1]}, 1)};
                                },
                                {x, f32({2, 2}, -2, 2, 12)},
                                ""};
    c[OpKind::Split] = {[](const V& v) { return ops::split(v[0], {1, 3}, 2); }, {cube}, ""};
    c[OpKind::Gather] = {[](const V& v) { return V{ops::gather(v[0], v[1], 1)}; },
                         {cube, i32({2, 0, 2, 1}, {2, 2})},
                         ""};
    c[OpKind::GroupedGather] = {[](const V& v) { return V{ops::groupedgather(v[0], v[1], 2, 2)}; },
                                {cube, i32({3, 0, 0, 1, 2, 2}, {2, 3})},
                                ""};
    c[OpKind::TiedGather] = {[](const V& v) { return V{ops::tied_gather(v[0], v[1], 1)}; },
                             {cube, i32({2, 0, 2, 1}, {2, 2})},
                             ""};
    c[OpKind::OneHot] = {[](const V& v) { return V{ops::onehot(v[0], 4, v[1])}; },
                         {labels, HostTensor({0.f, 1.f}, {2})},
                         ""};
    c[OpKind::Init] = {[](const V&) { return V{ops::init({2, 3}, float32)}; }, {}, ""};
    c[OpKind::Arange] = {
        [](const V&) { return V{ops::arange(2.0, -1.0, -0.75, float32)}; }, {}, ""};
    const auto square = f32({2, 3, 3}, -2, 2, 17);
    c[OpKind::Tril] = {[](const V& v) { return V{ops::tril(v[0], -1)}; }, {square}, ""};
    c[OpKind::Triu] = {[](const V& v) { return V{ops::triu(v[0], 1)}; }, {square}, ""};
    c[OpKind::Pad] = {[](const V& v) { return V{ops::pad(v[0], {{1, 0}, {2, 1}}, 0.5)}; }, {x}, ""};
    c[OpKind::Tile] = {[](const V& v) { return V{ops::tile(v[0], {2, 1, 3})}; }, {cube}, ""};
    c[OpKind::Subsample] = {[](const V& v) {
                              return V{ops::subsample(v[0], {2, 2, 3})};
                            },
                            {cube},
                            ""};
    const auto picks = i32({2, 0, 1, 3, 0, 0, 1, 2, 3, 3, 2, 1}, {2, 2, 3});
    c[OpKind::TakeAlongAxis] = {[](const V& v) { return V{ops::take_along_axis(v[0], v[1], 2)}; },
                                {cube, i32({3, 0, 1, 2, 2, 2, 0, 1, 1, 0, 3, 3}, {2, 3, 2})},
                                ""};
    c[OpKind::Scatter] = {[](const V& v) { return V{ops::scatter(v[0], v[1], v[2], 1)}; },
                          {f32({2, 4, 3}), i32({3, 0, 1, 2, 2, 0}, {2, 1, 3}), f32({2, 1, 3})},
                          ""};
    c[OpKind::ScatterReduce] = {
        [](const V& v) {
          return V{ops::scatter_reduce(v[0], v[1], ScatterReduction::max, v[2], 1)};
        },
        {f32({2, 2, 3}, -2, 2, 18), picks, f32({2, 4, 3})},
        ""};
    c[OpKind::DynamicSlice] = {[](const V& v) {
                                 return V{ops::dynamic_slice(v[0], v[1], {2, 0}, {2, 1})};
                               },
                               {cube, i32({1, 1}, {2})},
                               ""};
    c[OpKind::DynamicUpdate] = {
        [](const V& v) { return V{ops::dynamic_update(v[0], v[1], v[2], {2})}; },
        {cube, i32({5}, {1}), f32({2, 3, 2}, -2, 2, 19)},
        ""};
    c[OpKind::DynamicUpdateInplace] = {
        [](const V& v) { return V{ops::dynamic_update_(v[0], v[1], v[2], {2})}; },
        {cube, i32({1}, {1}), f32({2, 3, 2}, -2, 2, 20)},
        ""};
    c[OpKind::Resize] = {[](const V& v) {
                           return V{
                               ops::interpolate(v[0], {1.f, 2.f, 1.5f}, ResizeMode::nearest,
                                                ResizeNearestMode::round_prefer_ceil,
                                                ResizeCoordinateTransformationMode::align_corners)};
                         },
                         {cube},
                         ""};
    c[OpKind::ResizeGrad] = {
        [](const V& v) {
          return V{ops::interpolate_grad(v[0], {2, 3, 4}, {1.f, 0.5f, 2.5f}, ResizeMode::nearest,
                                         ResizeNearestMode::floor,
                                         ResizeCoordinateTransformationMode::half_pixel)};
        },
        {f32({2, 1, 10}, -2, 2, 23)},
        ""};
    // Updates.
    c[OpKind::AddInplace] = binary(ops::add_, x, row);
    c[OpKind::SubInplace] = binary(ops::sub_, x, row);
    c[OpKind::MulInplace] = binary(ops::mul_, x, row);
    c[OpKind::ScaledAdd] = {
        [](const V& v) { return V{ops::scaled_add(v[0], v[1], {.a = 0.5, .b = -1.5})}; },
        {x, row},
        ""};
    c[OpKind::ScaledAddInplace] = {
        [](const V& v) { return V{ops::scaled_add_(v[0], v[1], {.a = 0.5, .b = -1.5})}; },
        {x, row},
        ""};
    c[OpKind::Accumulate] = {
        [](const V& v) { return V{ops::var_updates::accumulate_(v[0], v[1], 0.25)}; },
        {x, row},
        ""};
    c[OpKind::CopyVarUpdate] = {
        [](const V& v) { return V{ops::var_updates::copy_var_update_(v[0], v[1])}; },
        {x, f32({2, 3}, -2, 2, 13)},
        ""};
    c[OpKind::AccumulatorScale] = {
        [](const V& v) { return V{ops::var_updates::accumulator_scale_(v[0], -0.5)}; }, {x}, ""};
    c[OpKind::AccumulatorZero] = {
        [](const V& v) { return V{ops::var_updates::accumulator_zero_(v[0])}; }, {x}, ""};
    c[OpKind::AccumulateMovingAverage] = {
        [](const V& v) {
          return V{ops::var_updates::accumulate_moving_average_(v[0], v[1], 0.75)};
        },
        {x, row},
        ""};
    c[OpKind::AccumulateMovingAverageSquare] = {
        [](const V& v) {
          return V{ops::var_updates::accumulate_moving_average_square_(v[0], v[1], 0.75)};
        },
        {x, row},
        ""};
    // The updater with a weight decay; the bias correction (which reads the step adam_updater
    // increments first, an op before it) is checked on sessions in test/ops/var_updates.cpp.
    c[OpKind::AdamUpdater] = {[](const V& v) {
                                return V{ops::var_updates::adam_updater(
                                    v[0], v[1], {.weight = v[2], .weight_decay = 0.1})};
                              },
                              {x, positive, f32({2, 3}, -2, 2, 20)},
                              ""};
    c[OpKind::AdamaxUpdater].elsewhere =
        "test/ops/var_updates.cpp (sessions on 1-3 workers against the closed form and the "
        "reference: the time step it needs is incremented by an op before it)";
    c[OpKind::AccumulateSquare] = {
        [](const V& v) { return V{ops::var_updates::accumulate_square_(v[0], v[1], -0.75)}; },
        {x, row},
        ""};
    c[OpKind::AccumulateMean] = {
        [](const V& v) { return V{ops::var_updates::accumulate_mean_(v[0], v[1], 2.0)}; },
        {x, row},
        ""};
    c[OpKind::SparseAccumulate] = {
        [](const V& v) {
          return V{ops::var_updates::sparse_accumulate_(v[0], v[1], v[2], 0, 0.5)};
        },
        {f32({4, 3}, -2, 2, 21), f32({3, 3}, -2, 2, 22), i32({3, 1, 3}, {3})},
        ""};
    c[OpKind::AdamVarUpdate] = {
        [](const V& v) {
          return V{ops::var_updates::adam_var_update(v[0], v[1], v[2], v[3], 0.1, 1.5)};
        },
        {x, row, f32({}, 0.5, 4, 23), f32({}, 0.5, 4, 24)},
        ""};
    // Normalisations. Operands keep outputs and sums away from zero (the bias beyond what the
    // normalised values reach, the given mean below the input), so that oneDNN's float32 sums
    // stay within 1e-6 of the double reference.
    const auto bn_x = f32({3, 2, 4}, 1, 2, 21);
    const auto bn_scale = f32({2}, 0.5, 1.5, 22), bn_bias = f32({2}, 5, 6, 23);
    c[OpKind::BatchNormInference] = {
        [](const V& v) { return V{ops::batch_norm_inference(v[0], v[1], v[2], v[3], v[4])}; },
        {bn_x, bn_scale, bn_bias, f32({2}, -0.5, 0.5, 24), f32({2}, 0.5, 2, 25)},
        ""};
    c[OpKind::BatchNormTraining] = {[](const V& v) {
                                      const auto r = ops::batch_norm_training(v[0], v[1], v[2]);
                                      return V{r.output, r.mean, r.var};
                                    },
                                    {bn_x, bn_scale, bn_bias},
                                    ""};
    c[OpKind::BatchNormGrad] = {
        [](const V& v) {
          const auto r = ops::batch_norm_grad(v[0], v[1], v[2], v[3], v[4], 1e-5, true);
          return V{r.t, r.scale, r.bias};
        },
        {bn_x, bn_scale, f32({2}, -3, -2, 26), f32({2}, 0.5, 2, 27), f32({3, 2, 4}, 0.5, 1, 28)},
        ""};
    c[OpKind::GroupNorm] = {[](const V& v) { return V{ops::group_norm(v[0], v[1], v[2], 2)}; },
                            {f32({2, 4, 3}, -2, 2, 29), f32({4}, 0.5, 1.5, 30), f32({4}, 5, 6, 31)},
                            ""};
    c[OpKind::GroupNormGrad] = {
        [](const V& v) {
          const auto r = ops::group_norm_grad(v[0], v[1], v[2], 2);
          return V{r.first, r.second};
        },
        {f32({2, 4, 3}, -2, 2, 29), f32({4}, 0.5, 1.5, 30), f32({2, 4, 3}, -1, 1, 32)},
        ""};
    // Kinds whose kernels need the rest of the emulator.
    const std::string calls = "test/emu (calls, repeat, inlining) and test/transforms/autodiff";
    c[OpKind::Call].elsewhere = calls;
    c[OpKind::Repeat].elsewhere = calls;
    c[OpKind::Conditional].elsewhere =
        "test/emu/conditional.cpp (per-replica branches, 1-4 workers, gradients by finite "
        "differences)";
    const std::string streams = "test/ops/host_io.cpp and test/emu (streams, feeds)";
    c[OpKind::HostLoad].elsewhere = streams;
    c[OpKind::HostStore].elsewhere = streams;
    c[OpKind::PrintTensor].elsewhere = "test/ops/host_io.cpp (the lines printed, on the emulator)";
    const std::string replicas = "test/emu/collectives.cpp (replicas, against the replicated "
                                 "reference) and test/transforms (gradients)";
    for (const OpKind k : {OpKind::ReplicatedAllReduce, OpKind::ReplicatedAllReduceInplace,
                           OpKind::ReplicatedReduceScatter, OpKind::ReplicatedAllGather,
                           OpKind::ReplicatedSlice, OpKind::ReplicaShardedSlice})
      c[k].elsewhere = replicas;
    c[OpKind::AllReduce].elsewhere =
        "test/emu/ipus.cpp (3 IPUs of 2 replicas against closed forms, 1 and 3 workers; the "
        "three variants' gradients in closed form) and test/ops/collectives.cpp";
    const std::string remote = "test/ops/remote.cpp (reference) and test/emu/remote.cpp (against "
                               "the reference, per replica, 1-3 workers)";
    for (const OpKind k : {OpKind::RemoteLoad, OpKind::RemoteLoadInplace, OpKind::RemoteStore})
      c[k].elsewhere = remote;
    c[OpKind::RemoteCodeLoad].elsewhere =
        "test/ops/remote.cpp (errors, and a Session whose results it leaves unchanged)";
    return c;
  }();
  return cases;
}

} // namespace

TEST_CASE("every op kind has a conformance case") {
  for (const OpKind k : all_op_kinds) {
    CAPTURE(op_type_name(k));
    CHECK(op_cases().contains(k));
  }
}

TEST_CASE("every op kind: kernel on 1-4 workers against the reference, gradient against finite "
          "differences") {
  for (const auto& entry : op_cases()) {
    const OpKind kind = entry.first; // not a structured binding: CAPTURE's lambda reads it
    const OpCase& c = entry.second;
    CAPTURE(op_type_name(kind));
    if (!c.elsewhere.empty())
      continue;
    const auto kc = testing::make_case(c.build, c.inputs);
    REQUIRE(kc.op.kind() == kind);
    testing::check_kernel(kc, 1e-6);
    bool float_input = false;
    for (const auto& in : c.inputs)
      float_input = float_input || in.dtype() == float32;
    if (is_differentiable(kind) && float_input && kind != OpKind::Detach &&
        c.no_finite_differences.empty())
      CHECK(testing::check_gradients(c.build, c.inputs, c.eps, c.rtol, c.atol) > 0);
  }
}
