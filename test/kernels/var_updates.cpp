// In-place updates (output aliases input 0) and scaled_add.
#include "harness.hpp"

#include "pxl/ops/var_updates.hpp"

using namespace pxl;
using namespace pxl::testing;
namespace vu = pxl::ops::var_updates;

TEST_CASE("add_ broadcasts its right operand into the left one") {
  const auto a = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  const auto b = tensor({3}, float32, {10, 20, 30});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::add_(x, y); }, {a, b})[0],
               a.spec(), {11, 22, 33, 14, 25, 36});
  for (DType d : {float32, float16, int32})
    check_kernel([](Tensor x, Tensor y) { return ops::add_(x, y); },
                 {random_tensor({13, 7}, d, -9, 9, 1), random_tensor({13, 1}, d, -9, 9, 2)});
}

TEST_CASE("sub_ and mul_ broadcast their right operand into the left one") {
  const auto a = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  const auto b = tensor({3}, float32, {10, 20, 30});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::sub_(x, y); }, {a, b})[0],
               a.spec(), {-9, -18, -27, -6, -15, -24});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::mul_(x, y); }, {a, b})[0],
               a.spec(), {10, 40, 90, 40, 100, 180});
  for (DType d : {float32, float16, int32}) {
    check_kernel([](Tensor x, Tensor y) { return ops::sub_(x, y); },
                 {random_tensor({13, 7}, d, -9, 9, 1), random_tensor({13, 1}, d, -9, 9, 2)});
    check_kernel([](Tensor x, Tensor y) { return ops::mul_(x, y); },
                 {random_tensor({13, 7}, d, -9, 9, 3), random_tensor({7}, d, -9, 9, 4)});
  }
  // int32 wraps around, as two's complement does.
  const auto big = tensor({2}, int32, {2147483647, -2147483647 - 1});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::sub_(x, y); },
                            {big, tensor({2}, int32, {-1, 1})})[0],
               big.spec(), {-2147483647.0 - 1, 2147483647});
}

TEST_CASE("scaled_add and scaled_add_: a·x + b·y") {
  const auto x = tensor({3}, float32, {1, 2, 3});
  const auto y = tensor({3}, float32, {10, 20, 30});
  check_values(
      check_kernel([](Tensor p, Tensor q) { return ops::scaled_add(p, q, {.a = 2.0, .b = -0.5}); },
                   {x, y})[0],
      x.spec(), {-3, -6, -9});
  check_values(check_kernel([](Tensor p, Tensor q) { return ops::scaled_add_(p, q, {.b = -0.1}); },
                            {x, y})[0],
               x.spec(), {0, 0, 0});
  for (DType d : {float32, float16}) {
    check_kernel([](Tensor p, Tensor q) { return ops::scaled_add(p, q, {.a = 0.3, .b = 1.7}); },
                 {random_tensor({13, 7}, d, -2, 2, 1), random_tensor({7}, d, -2, 2, 2)});
    check_kernel([](Tensor p, Tensor q) { return ops::scaled_add_(p, q, {.a = 0.9, .b = -0.01}); },
                 {random_tensor({13, 7}, d, -2, 2, 1), random_tensor({13, 7}, d, -2, 2, 2)});
  }
}

TEST_CASE("float32 scaled adds round a·x + b·y computed in double, bit for bit") {
  // The vectorised loops (in place and not, vector bodies and remainders: 1001 elements) give
  // exactly float(double(a·x) + double(b·y)), the documented formula; float arithmetic would
  // be off by an ulp in many elements.
  const auto x = random_tensor({1001}, float32, -3, 3, 5);
  const auto y = random_tensor({1001}, float32, -3, 3, 6);
  const double a = 0.9, b = -0.0123;
  const auto out_of_place = check_kernel(
      [&](Tensor p, Tensor q) { return ops::scaled_add(p, q, {.a = a, .b = b}); }, {x, y})[0];
  const auto in_place = check_kernel(
      [&](Tensor p, Tensor q) { return ops::scaled_add_(p, q, {.a = a, .b = b}); }, {x, y})[0];
  const auto xs = x.data<float>(), ys = y.data<float>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(i);
    const auto want =
        static_cast<float>(a * static_cast<double>(xs[i]) + b * static_cast<double>(ys[i]));
    CHECK(out_of_place.data<float>()[i] == want);
    CHECK(in_place.data<float>()[i] == want);
  }
}

TEST_CASE("accumulate_, copy_var_update_, accumulator_scale_, accumulator_zero_") {
  const auto t = tensor({4}, float32, {1, 2, 3, 4});
  const auto x = tensor({4}, float32, {4, 3, 2, 1});
  check_values(
      check_kernel([](Tensor a, Tensor b) { return vu::accumulate_(a, b, 0.5); }, {t, x})[0],
      t.spec(), {3, 3.5, 4, 4.5});
  check_values(
      check_kernel([](Tensor a, Tensor b) { return vu::copy_var_update_(a, b); }, {t, x})[0],
      t.spec(), {4, 3, 2, 1});
  check_values(check_kernel([](Tensor a) { return vu::accumulator_scale_(a, -2.0); }, {t})[0],
               t.spec(), {-2, -4, -6, -8});
  check_values(check_kernel([](Tensor a) { return vu::accumulator_zero_(a); }, {t})[0], t.spec(),
               {0, 0, 0, 0});
  for (DType d : {float32, float16}) {
    const auto a = random_tensor({13, 7}, d, -2, 2, 1), b = random_tensor({13, 7}, d, -2, 2, 2);
    const auto acc =
        check_kernel([](Tensor p, Tensor q) { return vu::accumulate_(p, q, 0.37); }, {a, b})[0];
    // Closed form, to half precision: t + f·x.
    for (std::int64_t i = 0; i < acc.nelms(); ++i)
      CHECK(acc.item(i) == doctest::Approx(a.item(i) + 0.37 * b.item(i)).epsilon(2e-3));
    check_kernel([](Tensor p, Tensor q) { return vu::accumulate_(p, q, 1.0); },
                 {a, random_tensor({7}, d)});
    check_kernel([](Tensor p, Tensor q) { return vu::copy_var_update_(p, q); }, {a, b});
    check_kernel([](Tensor p) { return vu::accumulator_scale_(p, 0.3); }, {a});
    check_kernel([](Tensor p) { return vu::accumulator_zero_(p); }, {a});
  }
}

TEST_CASE("float16 scaled adds round a·x + b·y computed in double once to half, bit for bit") {
  // Blocks of float registers and a float rounded to odd on the way: exactly half(double),
  // never a double rounding through float. 1001 elements cross blocks and worker ranges; the
  // factors make many results land near halfway between two halves.
  auto x = random_tensor({1001}, float16, -3, 3, 7);
  const auto y = random_tensor({1001}, float16, -3, 3, 8);
  auto xs = x.data<half>();
  xs[0] = half(65504.0f); // overflows to infinity
  xs[1] = half(6.0e-8f);  // a subnormal result
  xs[2] = half(std::numeric_limits<float>::quiet_NaN());
  xs[3] = half(-std::numeric_limits<float>::infinity());
  for (const auto& f : {ops::ScaledAddFactors{.a = 1.0, .b = 1.0 / 3},
                        ops::ScaledAddFactors{.a = 1.5, .b = -0.05 / 128},
                        ops::ScaledAddFactors{.a = 1.0 + 1.0 / 4096, .b = 1.0 / 4096}}) {
    CAPTURE(f.a);
    CAPTURE(f.b);
    const auto out =
        check_kernel([&](Tensor p, Tensor q) { return ops::scaled_add(p, q, f); }, {x, y})[0];
    const auto in_place =
        check_kernel([&](Tensor p, Tensor q) { return ops::scaled_add_(p, q, f); }, {x, y})[0];
    const auto ys = y.data<half>();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(i);
      const double xd = static_cast<float>(xs[i]);
      const half want(f.a * xd + f.b * static_cast<double>(static_cast<float>(ys[i])));
      CHECK(out.data<half>()[i].bits() == want.bits());
      CHECK(in_place.data<half>()[i].bits() == want.bits());
    }
  }
}

TEST_CASE("float16 scaled adds just past a halfway point round up, not to even") {
  // x = 1 + k·2^-10 is a half; adding 2^-11 + 2^-40 lands just above the halfway point to the
  // next half, which float cannot tell from the halfway point itself: rounding through float
  // would round half of these down to even.
  HostTensor x({600}, float16), y({600}, float16);
  for (std::int64_t k = 0; k < 600; ++k) {
    x.data<half>()[static_cast<std::size_t>(k)] =
        half(1.0 + std::ldexp(static_cast<double>(k), -10));
    y.data<half>()[static_cast<std::size_t>(k)] = half(1.0f);
  }
  const double b = std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const auto out = check_kernel(
      [&](Tensor p, Tensor q) { return ops::scaled_add_(p, q, {.a = 1.0, .b = b}); }, {x, y})[0];
  for (std::int64_t k = 0; k < 600; ++k) {
    CAPTURE(k);
    const double want = 1.0 + std::ldexp(static_cast<double>(k + 1), -10);
    CHECK(static_cast<double>(static_cast<float>(out.data<half>()[static_cast<std::size_t>(k)])) ==
          want);
  }
}
