// Data-movement kernels: reshape, transpose, slice, concat, split, the gathers, onehot, pad,
// tile, triangles, init, arange and subsample; scatter_reduce; interpolate and its gradient.
#include "harness.hpp"

#include "pxl/ops/shape.hpp"

using namespace pxl;
using namespace pxl::testing;

namespace {
std::vector<double> iota(std::int64_t n) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < n; ++i)
    v.push_back(static_cast<double>(i));
  return v;
}
} // namespace

TEST_CASE("reshape and transpose") {
  const auto x = tensor({2, 3}, float32, iota(6));
  check_values(check_kernel(
                   [](Tensor t) {
                     return ops::reshape(t, {3, 2});
                   },
                   {x})[0],
               {{3, 2}, float32}, iota(6));
  check_values(check_kernel([](Tensor t) { return ops::transpose(t); }, {x})[0], {{3, 2}, float32},
               {0, 3, 1, 4, 2, 5});
  for (DType d : {float32, float16, int32, bool_, uint32, int8, int16, uint16})
    for (const std::vector<std::int64_t>& perm :
         {std::vector<std::int64_t>{}, {1, 0, 2}, {2, 0, 1}, {0, 2, 1}}) {
      CAPTURE(d);
      check_kernel([perm](Tensor t) { return ops::transpose(t, perm); },
                   {random_tensor({3, 13, 7}, d, 0, 100)});
    }
  // Swapping the last two axes takes a tiled path: shapes that cross tile (32) and batch
  // boundaries, split across workers at odd places.
  for (DType d : {float32, float16})
    for (const Shape& shape : {Shape{100, 37}, Shape{2, 70, 45}, Shape{3, 1, 33}}) {
      CAPTURE(d);
      CAPTURE(shape.size());
      check_kernel(
          [](Tensor t) {
            const auto r = static_cast<std::int64_t>(t.shape().size());
            std::vector<std::int64_t> perm;
            for (std::int64_t k = 0; k + 2 < r; ++k)
              perm.push_back(k);
            perm.push_back(r - 1);
            perm.push_back(r - 2);
            return ops::transpose(t, perm);
          },
          {random_tensor(shape, d, -50, 50)});
    }
}

TEST_CASE("slice") {
  const auto x = tensor({3, 4}, float32, iota(12));
  check_values(check_kernel(
                   [](Tensor t) {
                     return ops::slice(t, {1, 1}, {3, 3});
                   },
                   {x})[0],
               {{2, 2}, float32}, {5, 6, 9, 10});
  check_values(check_kernel([](Tensor t) { return ops::slice(t, {-1}, {4}, {1}); }, {x})[0],
               {{3, 1}, float32}, {3, 7, 11});
  for (DType d : {float32, float16, bool_, int8, uint16})
    check_kernel(
        [](Tensor t) {
          return ops::slice(t, {1, 2, 0}, {3, 11, 5});
        },
        {random_tensor({3, 13, 7}, d, 0, 100)});
}

TEST_CASE("concat and split") {
  const auto a = tensor({2, 2}, float32, {0, 1, 2, 3});
  const auto b = tensor({2, 1}, float32, {8, 9});
  check_values(check_kernel(
                   [](Tensor x, Tensor y) {
                     return ops::concat({x, y}, 1);
                   },
                   {a, b})[0],
               {{2, 3}, float32}, {0, 1, 8, 2, 3, 9});
  const auto outs = check_kernel(
      [](Tensor t) {
        return ops::split(t, std::vector<std::int64_t>{1, 2}, 1);
      },
      {tensor({2, 3}, float32, iota(6))});
  REQUIRE(outs.size() == 2);
  check_values(outs[0], {{2, 1}, float32}, {0, 3});
  check_values(outs[1], {{2, 2}, float32}, {1, 2, 4, 5});
  for (DType d : {float32, float16, int32, int16})
    for (std::int64_t axis : {0, 1, 2}) {
      CAPTURE(d);
      CAPTURE(axis);
      Shape s1{3, 5, 7}, s2{3, 5, 7}, s3{3, 5, 7};
      s1[static_cast<std::size_t>(axis)] = 2;
      s3[static_cast<std::size_t>(axis)] = 1;
      check_kernel(
          [axis](Tensor x, Tensor y, Tensor z) {
            return ops::concat({x, y, z}, axis);
          },
          {random_tensor(s1, d, 0, 9, 1), random_tensor(s2, d, 0, 9, 2),
           random_tensor(s3, d, 0, 9, 3)});
      check_kernel(
          [axis](Tensor t) {
            return ops::split(t, {1, 3, 1}, axis);
          },
          {random_tensor({5, 5, 5}, d, 0, 9)});
    }
}

TEST_CASE("gather: rows by index, zeros out of range") {
  const auto table = tensor({3, 2}, float32, iota(6));
  const auto idx = tensor({4}, int32, {2, 0, 7, -1});
  check_values(check_kernel([](Tensor t, Tensor i) { return ops::gather(t, i); }, {table, idx})[0],
               {{4, 2}, float32}, {4, 5, 0, 1, 0, 0, 0, 0});
  check_values(check_kernel([](Tensor t, Tensor i) { return ops::gather(t, i, 1); },
                            {table, tensor({2, 2}, int32, {1, 0, 1, 1})})[0],
               {{3, 2, 2}, float32}, {1, 0, 1, 1, 3, 2, 3, 3, 5, 4, 5, 5});
  for (std::int64_t axis : {0, 1, 2})
    check_kernel([axis](Tensor t, Tensor i) { return ops::gather(t, i, axis); },
                 {random_tensor({5, 7, 3}, float16), random_tensor({13}, int32, -2, 8)});
}

TEST_CASE("groupedgather and tied_gather: per group, zeros out of range, every dtype") {
  const auto t = tensor({2, 2, 3}, float32, iota(12));
  check_values(check_kernel([](Tensor x, Tensor i) { return ops::groupedgather(x, i, 2, 2); },
                            {t, tensor({2, 2}, int32, {2, 0, 1, 3})})[0],
               {{2, 2, 2}, float32}, {2, 0, 5, 3, 7, 0, 10, 0});
  check_values(check_kernel([](Tensor x, Tensor i) { return ops::tied_gather(x, i, 1); },
                            {t, tensor({3}, int32, {1, -1, 0})})[0],
               {{2, 3, 3}, float32}, {3, 4, 5, 0, 0, 0, 0, 1, 2, 9, 10, 11, 0, 0, 0, 6, 7, 8});
  for (DType d : {float32, float16, int32, bool_, int8, int16, uint16}) {
    CAPTURE(d);
    const auto x = random_tensor({3, 4, 5, 2}, d, -9, 9, 3);
    const auto idx = random_tensor({3, 2, 3}, int32, -2, 7, 4);
    for (std::int64_t axis : {1, 2, 3})
      check_kernel([axis](Tensor a, Tensor i) { return ops::groupedgather(a, i, axis, 3); },
                   {x, idx});
    check_kernel([](Tensor a, Tensor i) { return ops::tied_gather(a, i, 2); }, {x, idx});
  }
}

TEST_CASE("onehot with [off, on] values along any axis") {
  const auto idx = tensor({3}, int32, {2, 0, 5});
  const auto vals = tensor({2}, float32, {-1, 3});
  check_values(
      check_kernel([](Tensor i, Tensor v) { return ops::onehot(i, 3, v); }, {idx, vals})[0],
      {{3, 3}, float32}, {-1, -1, 3, 3, -1, -1, -1, -1, -1});
  check_values(
      check_kernel([](Tensor i, Tensor v) { return ops::onehot(i, 3, v, 0); }, {idx, vals})[0],
      {{3, 3}, float32}, {-1, 3, -1, -1, -1, -1, 3, -1, -1});
  for (DType d : {float32, float16, int32, bool_})
    for (std::int64_t axis : {0, 1, 2, -1})
      check_kernel([axis](Tensor i, Tensor v) { return ops::onehot(i, 7, v, axis); },
                   {random_tensor({5, 3}, int32, 0, 7), random_tensor({2}, d, 0, 2)});
}

TEST_CASE("init zero-fills; undef leaves the buffer alone") {
  const auto z = check_kernel([] { return ops::init({13, 7}, float32); }, {})[0];
  check_values(z, {{13, 7}, float32}, std::vector<double>(91, 0.0));
  const auto c = make_case([] { return ops::init({4}, int32, "u", InitType::undef); }, {});
  const auto u = run_kernel(c, 3)[0];
  for (std::int64_t i = 0; i < 4; ++i)
    CHECK(u.data<std::int32_t>()[static_cast<std::size_t>(i)] ==
          static_cast<std::int32_t>(0xA5A5A5A5u));
}

TEST_CASE("pad, tile, tril, triu and arange for every dtype and worker count") {
  for (DType d : {float32, float16, int32, bool_, int8, int16, uint16}) {
    CAPTURE(d);
    const auto x = random_tensor({3, 5, 4}, d, -9, 9, 4);
    check_kernel([](Tensor t) { return ops::pad(t, {{0, 2}, {1, 1}, {3, 0}}, 1.0); }, {x});
    check_kernel([](Tensor t) { return ops::tile(t, {2, 1, 3}); }, {x});
    for (std::int64_t k : {-2, 0, 1, 7}) {
      check_kernel([k](Tensor t) { return ops::tril(t, k); }, {x});
      check_kernel([k](Tensor t) { return ops::triu(t, k); }, {x});
    }
  }
  for (DType d : {float32, float16, int32})
    check_kernel([d]() { return ops::arange(-7, 300, 3, d); }, {});
  check_values(check_kernel([]() { return ops::arange(0, 1, 0.25, float32); }, {})[0],
               {{4}, float32}, {0, 0.25, 0.5, 0.75});
}

TEST_CASE("take_along_axis, scatter, scatter_add and the dynamic ops for every dtype") {
  const auto idx = random_tensor({3, 6, 4}, int32, -1, 5, 5); // some out of range
  for (DType d : {float32, float16, int32, bool_, int8, int16, uint16}) {
    CAPTURE(d);
    const auto x = random_tensor({3, 5, 4}, d, -9, 9, 4);
    const auto upd = random_tensor({3, 6, 4}, d, -9, 9, 6);
    check_kernel([](Tensor t, Tensor i) { return ops::take_along_axis(t, i, 1); }, {x, idx});
    check_kernel([](Tensor t, Tensor i, Tensor u) { return ops::scatter(t, i, u, 1); },
                 {x, idx, upd});
    if (d == float32 || d == float16 || d == int32) // scatter_add computes
      check_kernel([](Tensor t, Tensor i, Tensor u) { return ops::scatter_add(t, i, u, 1); },
                   {x, idx, upd});
    for (const auto& off : std::vector<std::vector<double>>{{0, 1}, {2, 3}, {-4, 100}}) {
      const auto at = tensor({2}, int32, off);
      check_kernel(
          [](Tensor t, Tensor i) {
            return ops::dynamic_slice(t, i, {2, 0}, {3, 2});
          },
          {x, at});
      check_kernel(
          [](Tensor t, Tensor i, Tensor u) {
            return ops::dynamic_update(t, i, u, {2, 0});
          },
          {x, at, random_tensor({2, 5, 3}, d, -9, 9, 7)});
    }
  }
}

TEST_CASE("scatter_reduce: every reduction and dtype, with and without initial values") {
  using R = ScatterReduction;
  check_values(
      check_kernel(
          [](Tensor d, Tensor i) { return ops::scatter_reduce(d, i, R::max, std::nullopt, 1, 3); },
          {tensor({2, 4}, float32, {1, 5, 2, 7, 3, -1, 4, 0}),
           tensor({2, 4}, int32, {0, 2, 0, 9, 1, 1, 2, -1})})[0],
      {{2, 3}, float32}, {2, 0, 5, 0, 3, 4});
  const auto idx = random_tensor({3, 6, 4}, int32, -1, 5, 5); // some out of range
  const auto vec = random_tensor({6}, int32, 0, 4, 8);
  for (DType d : {float32, float16, int32}) {
    CAPTURE(d);
    // Few distinct values, so that max and min meet ties.
    const auto data = random_tensor({3, 6, 4}, d, -3, 3, 6);
    const auto init = random_tensor({3, 5, 4}, d, -3, 3, 7);
    for (R r : {R::sum, R::max, R::min, R::none}) {
      CAPTURE(static_cast<int>(r));
      check_kernel(
          [r](Tensor x, Tensor i) { return ops::scatter_reduce(x, i, r, std::nullopt, 1, 5); },
          {data, idx});
      check_kernel([r](Tensor x, Tensor i, Tensor v) { return ops::scatter_reduce(x, i, r, v, 1); },
                   {data, idx, init});
      check_kernel(
          [r](Tensor x, Tensor i) { return ops::scatter_reduce(x, i, r, std::nullopt, 1, 4); },
          {data, vec});
    }
    check_kernel([](Tensor t, Tensor i, Tensor u) { return ops::scatter_add(t, i, u, 1); },
                 {init, idx, data});
  }
}

TEST_CASE("subsample matches the reference for every dtype, stride and worker count") {
  const std::vector<std::pair<Shape, std::vector<std::int64_t>>> cases = {
      {{10}, {3}}, {{7, 9}, {2, 4}}, {{7, 9}, {1, 9}}, {{3, 5, 8}, {2, 1, 3}}, {{4, 0}, {2, 2}}};
  for (DType d : {float32, float16, int32, int8, uint16})
    for (const auto& c : cases) {
      const std::vector<std::int64_t> strides = c.second; // the lambda captures a copy
      CAPTURE(d);
      CAPTURE(to_string(c.first));
      check_kernel([strides](Tensor t) { return ops::subsample(t, strides); },
                   {random_tensor(c.first, d, -9, 9, 7)});
    }
  const auto got = check_kernel(
      [](Tensor t) {
        return ops::subsample(t, {2, 3});
      },
      {tensor({3, 4}, float32, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})})[0];
  check_values(got, {{2, 2}, float32}, {0, 3, 8, 11});
}

TEST_CASE("the views copy, and dynamic_update_ writes in place, for every dtype") {
  for (DType d : {float32, float16, int32, bool_, int8, int16, uint16}) {
    CAPTURE(d);
    const auto x = random_tensor({3, 5, 4}, d, -9, 9, 21);
    check_kernel([](Tensor t) { return ops::reshape_(t, {5, -1}); }, {x});
    check_kernel([](Tensor t) { return ops::flatten_(t); }, {x});
    check_kernel([](Tensor t) { return ops::transpose_(t, {1, 2, 0}); }, {x});
    check_kernel([](Tensor t) { return ops::slice_(t, {1, -3}, {3, 4}, {0, 1}); }, {x});
    check_kernel(
        [](Tensor a, Tensor b) {
          return ops::concat_({a, b}, 1);
        },
        {x, random_tensor({3, 2, 4}, d, -9, 9, 22)});
    for (const auto& off : std::vector<std::vector<double>>{{0, 1}, {2, 3}, {-4, 100}})
      check_kernel(
          [](Tensor t, Tensor i, Tensor u) {
            return ops::dynamic_update_(t, i, u, {2, 0});
          },
          {x, tensor({2}, int32, off), random_tensor({2, 5, 3}, d, -9, 9, 23)});
  }
  // By hand: t = 0..5 as (2, 3), a (1, 2) update at (1, 1).
  const auto t = tensor({2, 3}, float32, iota(6));
  const auto out = check_kernel(
      [](Tensor a, Tensor i, Tensor u) {
        return ops::dynamic_update_(a, i, u, {0, 1});
      },
      {t, tensor({2}, int32, {1, 1}), tensor({1, 2}, float32, {10, 11})});
  check_values(out[0], t.spec(), {0, 1, 2, 3, 10, 11});
  check_values(check_kernel([](Tensor a) { return ops::transpose_(a); }, {t})[0],
               TensorSpec{{3, 2}, float32}, {0, 3, 1, 4, 2, 5});
}

namespace test_kernels_interpolate {
using M = ResizeMode;
using N = ResizeNearestMode;
using C = ResizeCoordinateTransformationMode;

TEST_CASE("interpolate and its gradient for every mode, float32 and float16, 1-4 workers") {
  const std::vector<std::vector<float>> scales = {
      {1.f, 2.f, 2.5f, 0.5f}, {1.f, 1.5f, 0.6f, 3.f}, {2.f, 1.f, 1.f, 1.25f}};
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    // Positive values: linear's blends never cancel, so float16 stays within one ulp.
    const auto x = random_tensor({2, 3, 5, 4}, d, 0.5, 2, 31);
    for (const auto& s : scales)
      for (C c : {C::half_pixel, C::pytorch_half_pixel, C::align_corners, C::asymmetric}) {
        CAPTURE(static_cast<int>(c));
        CAPTURE(s[1]);
        check_kernel([&s, c](Tensor t) { return ops::interpolate(t, s, M::linear, N::floor, c); },
                     {x});
        for (N n : {N::round_prefer_floor, N::round_prefer_ceil, N::floor, N::ceil}) {
          CAPTURE(static_cast<int>(n));
          check_kernel([&s, n, c](Tensor t) { return ops::interpolate(t, s, M::nearest, n, c); },
                       {x});
          Shape out;
          for (std::size_t a = 0; a < s.size(); ++a)
            out.push_back(
                static_cast<std::int64_t>(std::floor(static_cast<float>(x.shape()[a]) * s[a])));
          check_kernel(
              [&s, n, c](Tensor g) {
                return ops::interpolate_grad(g, {2, 3, 5, 4}, s, M::nearest, n, c);
              },
              {random_tensor(out, d, -2, 2, 32)});
        }
      }
  }
  // Hand-computed: x = (1, 2) by 2, align_corners: coordinates 0, 1/3, 2/3, 1.
  const auto lin = check_kernel(
      [](Tensor t) { return ops::interpolate(t, {2.f}, M::linear, N::floor, C::align_corners); },
      {tensor({2}, float32, {1, 2})});
  check_values(lin[0], {{4}, float32}, {1, 4.0 / 3, 5.0 / 3, 2});
}
} // namespace test_kernels_interpolate
