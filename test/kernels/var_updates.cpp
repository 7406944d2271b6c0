// In-place updates (output aliases input 0), scaled_add, the moving averages and adam_updater.
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

TEST_CASE("accumulate_moving_average_ and _square_: f·t + (1 − f)·x and f·t + (1 − f)·x²") {
  const auto t = tensor({4}, float32, {1, 2, 3, 4});
  const auto x = tensor({4}, float32, {4, 3, 2, 1});
  const auto average = [](double f) {
    return [f](Tensor a, Tensor b) { return vu::accumulate_moving_average_(a, b, f); };
  };
  const auto square = [](double f) {
    return [f](Tensor a, Tensor b) { return vu::accumulate_moving_average_square_(a, b, f); };
  };
  check_values(check_kernel(average(0.5), {t, x})[0], t.spec(), {2.5, 2.5, 2.5, 2.5});
  check_values(check_kernel(square(0.5), {t, x})[0], t.spec(), {8.5, 5.5, 3.5, 2.5});
  check_values(check_kernel(average(0.0), {t, x})[0], t.spec(), {4, 3, 2, 1});
  check_values(check_kernel(square(1.0), {t, x})[0], t.spec(), {1, 2, 3, 4});
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    const auto a = random_tensor({13, 7}, d, -2, 2, 1), b = random_tensor({13, 7}, d, -2, 2, 2);
    const auto avg = check_kernel(average(0.9), {a, b})[0];
    const auto sq = check_kernel(square(0.999), {a, b})[0];
    // Closed forms, to half precision.
    for (std::int64_t i = 0; i < a.nelms(); ++i) {
      CHECK(avg.item(i) ==
            doctest::Approx(0.9 * a.item(i) + 0.1 * b.item(i)).epsilon(2e-3).scale(1e-3));
      CHECK(sq.item(i) ==
            doctest::Approx(0.999 * a.item(i) + 0.001 * b.item(i) * b.item(i)).epsilon(2e-3));
    }
    // x broadcast to t's shape.
    check_kernel(average(0.25), {a, random_tensor({7}, d, -2, 2, 3)});
    check_kernel(square(0.25), {a, random_tensor({13, 1}, d, -2, 2, 4)});
  }
}

TEST_CASE("moving averages round f·t + (1 − f)·x(²) computed in double once, bit for bit") {
  // As the scaled adds: 1001 elements cross vector bodies, remainders, blocks and worker ranges.
  const double f = 0.999;
  for (const bool squared : {false, true}) {
    CAPTURE(squared);
    const auto op = [&](Tensor a, Tensor b) {
      return squared ? vu::accumulate_moving_average_square_(a, b, f)
                     : vu::accumulate_moving_average_(a, b, f);
    };
    const auto term = [&](double x) { return (1.0 - f) * (squared ? x * x : x); };
    const auto t32 = random_tensor({1001}, float32, -3, 3, 5);
    const auto x32 = random_tensor({1001}, float32, -3, 3, 6);
    const auto out32 = check_kernel(op, {t32, x32})[0];
    for (std::int64_t i = 0; i < t32.nelms(); ++i) {
      CAPTURE(i);
      CHECK(out32.data<float>()[static_cast<std::size_t>(i)] ==
            static_cast<float>(f * t32.item(i) + term(x32.item(i))));
    }
    const auto t16 = random_tensor({1001}, float16, -3, 3, 7);
    const auto x16 = random_tensor({1001}, float16, -3, 3, 8);
    const auto out16 = check_kernel(op, {t16, x16})[0];
    for (std::int64_t i = 0; i < t16.nelms(); ++i) {
      CAPTURE(i);
      CHECK(out16.data<half>()[static_cast<std::size_t>(i)].bits() ==
            half(f * t16.item(i) + term(x16.item(i))).bits());
    }
  }
}

TEST_CASE("adam_updater: m / (sqrt(v) + eps) + wd·w in float32, float16 and mixed dtypes") {
  const double eps = 1e-3;
  const auto m = tensor({4}, float32, {0.5, -1, 0, 2});
  const auto v = tensor({4}, float32, {0.25, 4, 1, 0});
  const auto w = tensor({4}, float32, {1, -2, 3, -4});
  check_values(
      check_kernel([&](Tensor a, Tensor b) { return vu::adam_updater(a, b, {.epsilon = eps}); },
                   {m, v})[0],
      m.spec(), {0.5 / (0.5 + eps), -1 / (2 + eps), 0, 2 / eps});
  check_values(check_kernel(
                   [&](Tensor a, Tensor b, Tensor c) {
                     return vu::adam_updater(a, b,
                                             {.weight = c, .weight_decay = 0.5, .epsilon = eps});
                   },
                   {m, v, w})[0],
               m.spec(), {0.5 / (0.5 + eps) + 0.5, -1 / (2 + eps) - 1, 1.5, 2 / eps - 2}, 1e-5);

  // Every mix of dtypes, 1001 elements: the reference, and 1-4 workers bitwise. Weights of the
  // moments' sign, so that the relative comparison does not meet a cancellation.
  for (const DType dm : {float32, float16})
    for (const DType dv : {float32, float16})
      for (const DType dw : {float32, float16}) {
        CAPTURE(dm);
        CAPTURE(dv);
        CAPTURE(dw);
        const auto m_ = random_tensor({1001}, dm, 0.01, 2, 9);
        const auto v_ = random_tensor({1001}, dv, 0.001, 4, 10);
        const auto w_ = random_tensor({1001}, dw, 0, 3, 11);
        const auto plain = check_kernel(
            [](Tensor a, Tensor b) { return vu::adam_updater(a, b, {.epsilon = 1e-8}); },
            {m_, v_})[0];
        CHECK(plain.dtype() == dm);
        const auto decayed = check_kernel(
            [](Tensor a, Tensor b, Tensor c) {
              return vu::adam_updater(a, b, {.weight = c, .weight_decay = 0.01});
            },
            {m_, v_, w_})[0];
        CHECK(decayed.dtype() == dw);
        // A weight without a decay sets the dtype only.
        const auto typed = check_kernel(
            [](Tensor a, Tensor b, Tensor c) { return vu::adam_updater(a, b, {.weight = c}); },
            {m_, v_, w_})[0];
        CHECK(typed.dtype() == dw);
        for (std::int64_t i = 0; i < m_.nelms(); ++i)
          CHECK(typed.item(i) == doctest::Approx(plain.item(i)).epsilon(1e-3));
      }

  // float32 without bias correction is exactly m / (sqrt(v) + eps) in float arithmetic, and
  // signs of both kinds cancel to within float rounding of the terms.
  const auto m32 = random_tensor({1001}, float32, -2, 2, 12);
  const auto v32 = random_tensor({1001}, float32, 0, 4, 13);
  const auto w32 = random_tensor({1001}, float32, -3, 3, 14);
  const auto u = check_kernel(
      [](Tensor a, Tensor b) { return vu::adam_updater(a, b, {.epsilon = 1e-8}); }, {m32, v32})[0];
  const auto ud = check_kernel(
      [](Tensor a, Tensor b, Tensor c) {
        return vu::adam_updater(a, b, {.weight = c, .weight_decay = 0.3, .epsilon = 1e-8});
      },
      {m32, v32, w32}, 1.0)[0];
  for (std::size_t i = 0; i < 1001; ++i) {
    CAPTURE(i);
    const float mi = m32.data<float>()[i], vi = v32.data<float>()[i];
    const float q = mi / (std::sqrt(vi) + 1e-8f);
    CHECK(u.data<float>()[i] == q);
    const double want = static_cast<double>(q) + 0.3 * w32.data<float>()[i];
    CHECK(std::abs(ud.data<float>()[i] - want) <=
          1e-6 * (std::abs(q) + std::abs(0.3 * w32.data<float>()[i])));
  }
}

TEST_CASE("accumulate_square_ and accumulate_mean_: the formula in double, rounded once") {
  const auto t = tensor({4}, float32, {1, 2, 3, 4});
  const auto x = tensor({4}, float32, {-2, 0.5, 0, 3});
  check_values(
      check_kernel([](Tensor a, Tensor b) { return vu::accumulate_square_(a, b, 0.5); }, {t, x})[0],
      t.spec(), {3, 2.125, 3, 8.5});
  // Step 3: three values averaged so far, the fourth weighs 1/4.
  check_values(
      check_kernel([](Tensor a, Tensor b) { return vu::accumulate_mean_(a, b, 3.0); }, {t, x})[0],
      t.spec(), {0.25, 1.625, 2.25, 3.75});
  check_values(
      check_kernel([](Tensor a, Tensor b, Tensor s) { return vu::accumulate_mean_(a, b, s); },
                   {t, x, tensor({}, float16, {3})})[0],
      t.spec(), {0.25, 1.625, 2.25, 3.75});
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    const auto a = random_tensor({13, 77}, d, -2, 2, 1);
    const auto b = random_tensor({77}, d, -2, 2, 2);
    check_kernel([](Tensor p, Tensor q) { return vu::accumulate_square_(p, q, -0.3); }, {a, b});
    const auto by_value =
        check_kernel([](Tensor p, Tensor q) { return vu::accumulate_mean_(p, q, 6.0); }, {a, b});
    const auto by_tensor =
        check_kernel([](Tensor p, Tensor q, Tensor s) { return vu::accumulate_mean_(p, q, s); },
                     {a, b, tensor({1}, float32, {6})});
    // The step read at run time gives the constant step's bits.
    CHECK(by_tensor[0] == by_value[0]);
  }
}

TEST_CASE("sparse_accumulate_: repeated indices sum, out-of-range ones are skipped") {
  const auto t = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  const auto x = tensor({2, 4}, float32, {10, 20, 30, 40, 50, 60, 70, 80});
  const HostTensor idx(std::vector<std::int32_t>{2, 0, 2, 3}, {4});
  check_values(check_kernel([](Tensor a, Tensor b,
                               Tensor i) { return vu::sparse_accumulate_(a, b, i, 1, 0.5); },
                            {t, x, idx})[0],
               t.spec(), {11, 2, 23, 34, 5, 66});
  for (DType d : {float32, float16})
    for (std::int64_t axis : {0, 1, 2}) {
      CAPTURE(d);
      CAPTURE(axis);
      const auto target = random_tensor({5, 6, 7}, d, -2, 2, 3);
      Shape xs = target.shape();
      xs[static_cast<std::size_t>(axis)] = 4;
      xs.insert(xs.begin() + axis, 2);
      const auto indices = random_tensor({2, 4}, int32, -1, 8, 4);
      check_kernel([axis](Tensor a, Tensor b,
                          Tensor i) { return vu::sparse_accumulate_(a, b, i, axis, -1.5); },
                   {target, random_tensor(xs, d, -2, 2, 5), indices});
    }
}

TEST_CASE("adam_var_update: t -= lr·min(sqrt(r1), max_norm)/sqrt(r2)·x, ratio 1 at a zero") {
  const auto w = tensor({2}, float32, {3, 4});
  const auto x = tensor({2}, float32, {1, -2});
  const auto run = [&](double r1, double r2, double max_norm) {
    return check_kernel(
        [max_norm](Tensor a, Tensor b, Tensor p, Tensor q) {
          return vu::adam_var_update(a, b, p, q, 0.5, max_norm);
        },
        {w, x, tensor({}, float32, {r1}), tensor({1}, float16, {r2})})[0];
  };
  check_values(run(25, 4, 100), w.spec(), {3 - 0.5 * 2.5, 4 + 2 * 0.5 * 2.5});
  check_values(run(25, 4, 1), w.spec(), {3 - 0.25, 4 + 0.5}); // min(5, 1) / 2
  check_values(run(0, 4, 1), w.spec(), {2.5, 5});
  check_values(run(25, 0, 1), w.spec(), {2.5, 5});
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    check_kernel([](Tensor a, Tensor b, Tensor p,
                    Tensor q) { return vu::adam_var_update(a, b, p, q, 1e-2, 3.0); },
                 {random_tensor({9, 31}, d, -2, 2, 6), random_tensor({31}, d, -2, 2, 7),
                  tensor({}, float32, {7.5}), tensor({}, float32, {0.3})});
  }
}

TEST_CASE("lamb_updater without a time step is adam_updater's term") {
  const auto m = random_tensor({101}, float32, -2, 2, 8);
  const auto v = random_tensor({101}, float32, 0, 4, 9);
  const auto lamb = check_kernel(
      [](Tensor a, Tensor b) { return vu::lamb_updater(a, b, {.epsilon = 1e-6}); }, {m, v})[0];
  const auto adam = check_kernel(
      [](Tensor a, Tensor b) { return vu::adam_updater(a, b, {.epsilon = 1e-6}); }, {m, v})[0];
  CHECK(lamb == adam);
}
