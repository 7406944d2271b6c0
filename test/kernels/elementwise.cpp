// Element-wise kernels (unary, binary with broadcasting, comparisons, logic, where) against
// hand-computed values and the reference evaluator.
#include "harness.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <span>

using namespace pxl;
using namespace pxl::testing;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

struct UnaryCase {
  const char* name;
  Unary f;
  double lo, hi;
};

const std::vector<UnaryCase> float_cases = {
    {"negate", [](const Tensor& t) { return ops::negate(t); }, -3, 3},
    {"abs", [](const Tensor& t) { return ops::abs(t); }, -3, 3},
    {"exp", [](const Tensor& t) { return ops::exp(t); }, -5, 5},
    {"log", [](const Tensor& t) { return ops::log(t); }, 0.01, 10},
    {"sqrt", [](const Tensor& t) { return ops::sqrt(t); }, 0, 10},
    {"tanh", [](const Tensor& t) { return ops::tanh(t); }, -4, 4},
    {"sigmoid", [](const Tensor& t) { return ops::sigmoid(t); }, -8, 8},
    {"relu", [](const Tensor& t) { return ops::relu(t); }, -3, 3},
    // Beyond about -4 the reference's 1 + tanh and 1 + erf cancel in double; the tail is
    // checked against the closed form below.
    {"gelu", [](const Tensor& t) { return ops::gelu(t); }, -4, 6},
    {"geluerf", [](const Tensor& t) { return ops::geluerf(t); }, -4, 6},
    {"floor", [](const Tensor& t) { return ops::floor(t); }, -3, 3},
    {"ceil", [](const Tensor& t) { return ops::ceil(t); }, -3, 3},
    {"log2", [](const Tensor& t) { return ops::log2(t); }, 0.01, 10},
    {"swish", [](const Tensor& t) { return ops::swish(t); }, -8, 8},
    {"identity", [](const Tensor& t) { return ops::identity(t); }, -3, 3},
    {"detach", [](const Tensor& t) { return ops::detach(t); }, -3, 3},
    // In place: the kernel writes the input's buffer (the harness aliases it).
    {"relu_", [](const Tensor& t) { return ops::relu_(t); }, -3, 3},
    {"gelu_", [](const Tensor& t) { return ops::gelu_(t); }, -4, 6},
    {"geluerf_", [](const Tensor& t) { return ops::geluerf_(t); }, -4, 6},
    {"exp_", [](const Tensor& t) { return ops::exp_(t); }, -5, 5},
    {"swish_", [](const Tensor& t) { return ops::swish_(t); }, -8, 8},
    {"detach_", [](const Tensor& t) { return ops::detach_(t); }, -3, 3},
};

} // namespace

TEST_CASE("unary float kernels match the reference for float32 and float16, any worker count") {
  for (const auto& c : float_cases)
    for (DType d : {float32, float16})
      for (const Shape& shape : {Shape{}, Shape{7}, Shape{13, 5}, Shape{2, 3, 4}}) {
        CAPTURE(std::string(c.name));
        CAPTURE(d);
        CAPTURE(to_string(shape));
        check_kernel([&](Tensor x) { return c.f(x); }, {random_tensor(shape, d, c.lo, c.hi)});
      }
}

TEST_CASE("unary kernels: hand-computed values") {
  const auto x = tensor({5}, float32, {-2.0, -0.5, 0.0, 0.5, 2.0});
  check_values(check_kernel([](Tensor t) { return ops::relu(t); }, {x})[0], x.spec(),
               {0, 0, 0, 0.5, 2});
  check_values(check_kernel([](Tensor t) { return ops::abs(t); }, {x})[0], x.spec(),
               {2, 0.5, 0, 0.5, 2});
  check_values(check_kernel([](Tensor t) { return ops::sigmoid(t); }, {x})[0], x.spec(),
               {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5, 1 / (1 + std::exp(-0.5)),
                1 / (1 + std::exp(-2.0))});
  // gelu(x) = 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
  const auto gelu = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  check_values(check_kernel([](Tensor t) { return ops::gelu(t); }, {x})[0], x.spec(),
               {gelu(-2), gelu(-0.5), 0, gelu(0.5), gelu(2)});
  const auto gelu_erf = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  check_values(check_kernel([](Tensor t) { return ops::geluerf(t); }, {x})[0], x.spec(),
               {gelu_erf(-2), gelu_erf(-0.5), 0, gelu_erf(0.5), gelu_erf(2)});
  // The in-place forms, on the input's own buffer.
  check_values(check_kernel([](Tensor t) { return ops::relu_(t); }, {x})[0], x.spec(),
               {0, 0, 0, 0.5, 2});
  check_values(check_kernel([](Tensor t) { return ops::exp_(t); }, {x})[0], x.spec(),
               {std::exp(-2.0), std::exp(-0.5), 1, std::exp(0.5), std::exp(2.0)});
  check_values(check_kernel([](Tensor t) { return ops::swish_(t); }, {x})[0], x.spec(),
               {-2 / (1 + std::exp(2.0)), -0.5 / (1 + std::exp(0.5)), 0, 0.5 / (1 + std::exp(-0.5)),
                2 / (1 + std::exp(-2.0))});
  check_values(check_kernel([](Tensor t) { return ops::gelu_(t); }, {x})[0], x.spec(),
               {gelu(-2), gelu(-0.5), 0, gelu(0.5), gelu(2)});
  check_values(check_kernel([](Tensor t) { return ops::geluerf_(t); }, {x})[0], x.spec(),
               {gelu_erf(-2), gelu_erf(-0.5), 0, gelu_erf(0.5), gelu_erf(2)});
}

TEST_CASE("gelu keeps full relative precision far in the negative tail") {
  // The reference's 1 + tanh(u) cancels here, so compare with the closed form instead.
  const std::vector<double> xs = {-5.0, -7.0, -9.0};
  const auto x = tensor({3}, float32, xs);
  const auto g = check_kernel(make_case([](Tensor t) { return ops::gelu(t); }, {x}), 0, false)[0];
  const auto e =
      check_kernel(make_case([](Tensor t) { return ops::geluerf(t); }, {x}), 0, false)[0];
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const long double v = xs[i];
    const long double u = std::sqrt(2.0L / M_PI) * (v + 0.044715L * v * v * v);
    const long double gelu = v / (1.0L + std::exp(-2.0L * u));
    const long double gelu_erf = 0.5L * v * std::erfc(-v / std::sqrt(2.0L));
    CHECK(std::fabs(g.item(static_cast<std::int64_t>(i)) - gelu) <= 1e-6 * std::fabs(gelu));
    CHECK(std::fabs(e.item(static_cast<std::int64_t>(i)) - gelu_erf) <= 1e-6 * std::fabs(gelu_erf));
  }
}

TEST_CASE(
    "gelu on long tensors: reference in the body, closed form in the tail, any worker count") {
  // Long and of odd length, so every worker count splits inside the vectorised loop and leaves
  // remainders of every size.
  check_kernel([](Tensor t) { return ops::gelu(t); }, {random_tensor({1001}, float32, -4, 6, 7)});
  check_kernel([](Tensor t) { return ops::gelu(t); }, {random_tensor({333}, float16, -4, 6, 8)});
  const auto x = random_tensor({1001}, float32, -12, -4, 9);
  const auto g = check_kernel(make_case([](Tensor t) { return ops::gelu(t); }, {x}), 0, false)[0];
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const long double v = x.item(i);
    const long double u = std::sqrt(2.0L / M_PI) * (v + 0.044715L * v * v * v);
    const long double want = v / (1.0L + std::exp(-2.0L * u));
    CAPTURE(i);
    // Below about -9.4 the result is a float subnormal (or zero): absolute error of half the
    // smallest subnormal from rounding alone.
    CHECK(std::fabs(g.item(i) - want) <= 1e-6 * std::fabs(want) + std::ldexp(1.0, -150));
  }
}

TEST_CASE("gelu at the extremes: signed zeros, infinities and NaN") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto x = tensor({7}, float32, {0.0, -0.0, inf, -inf, nan, 3e38, -3e38});
  const auto g = check_kernel(make_case([](Tensor t) { return ops::gelu(t); }, {x}), 0, false)[0];
  CHECK(g.item(0) == 0.0);
  CHECK(std::signbit(g.item(1)));
  CHECK(g.item(2) == inf);
  CHECK(std::isnan(g.item(3))); // -inf / (1 + inf), as the formula gives
  CHECK(std::isnan(g.item(4)));
  CHECK(g.item(5) == doctest::Approx(3e38));
  CHECK(g.item(6) == 0.0);
  CHECK(std::signbit(g.item(6)));
}

/// gelu'(x) for the tanh form in long double, in the form without cancellation.
long double gelu_derivative(long double v) {
  const long double k = std::sqrt(2.0L / M_PI), c = 0.044715L;
  const long double u = k * (v + c * v * v * v), du = k * (1.0L + 3.0L * c * v * v);
  const long double e = std::exp(-2.0L * u), s = 1.0L / (1.0L + e);
  return s + 2.0L * v * du * e * s * s;
}

TEST_CASE("gelu_grad is the gradient times gelu's derivative, to float rounding, tails included") {
  // Odd lengths: every worker count splits inside the vectorised loop and float16 blocks.
  check_kernel(
      [](Tensor x, Tensor g) { return ops::gelu_grad(x, g); },
      {random_tensor({1001}, float32, -4, 6, 11), random_tensor({1001}, float32, -2, 2, 12)});
  check_kernel(
      [](Tensor x, Tensor g) { return ops::gelu_grad(x, g); },
      {random_tensor({1333}, float16, -4, 6, 13), random_tensor({1333}, float16, -2, 2, 14)}, 1e-3);
  // Far in the negative tail, where the reference's 1 + tanh(u) cancels: the closed form.
  const auto x = random_tensor({1001}, float32, -12, 3, 15);
  const auto g = random_tensor({1001}, float32, -2, 2, 16);
  const auto d = check_kernel(
      make_case([](Tensor a, Tensor b) { return ops::gelu_grad(a, b); }, {x, g}), 0, false)[0];
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    const long double want = g.item(i) * gelu_derivative(x.item(i));
    CAPTURE(i);
    CHECK(std::fabs(d.item(i) - want) <= 1e-6 * std::fabs(want) + std::ldexp(1.0, -150));
  }
}

TEST_CASE("gelu_grad at the extremes: the limits at infinity, NaN stays NaN") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto x = tensor({7}, float32, {0.0, -0.0, inf, -inf, nan, 3e38, -3e38});
  const auto g = tensor({7}, float32, {2.0, 2.0, 3.0, 3.0, 1.0, -1.0, 1.0});
  const auto d = check_kernel(
      make_case([](Tensor a, Tensor b) { return ops::gelu_grad(a, b); }, {x, g}), 0, false)[0];
  CHECK(d.item(0) == 1.0); // gelu'(0) = 1/2
  CHECK(d.item(1) == 1.0);
  CHECK(d.item(2) == 3.0);
  CHECK(d.item(3) == 0.0);
  CHECK(std::isnan(d.item(4)));
  CHECK(d.item(5) == -1.0);
  CHECK(d.item(6) == 0.0);
}

TEST_CASE("tanh_grad is g(1 - y²), to float rounding where 1 - y² cancels") {
  check_kernel(
      [](Tensor y, Tensor g) { return ops::tanh_grad(y, g); },
      {random_tensor({1001}, float32, -1, 1, 21), random_tensor({1001}, float32, -2, 2, 22)});
  check_kernel(
      [](Tensor y, Tensor g) { return ops::tanh_grad(y, g); },
      {random_tensor({1333}, float16, -1, 1, 23), random_tensor({1333}, float16, -2, 2, 24)}, 1e-3);
  // y near ±1 (tanh of |x| > 4), where 1 - y² computed in float keeps few of its bits.
  const auto y = tensor({6}, float32, {0.9999f, -0.9999f, 0.99999994f, -1.0, 0.5, 0.0});
  const auto g = tensor({6}, float32, {3.0, -2.0, 1.0, 5.0, 2.0, -0.0});
  const auto d = check_kernel(
      make_case([](Tensor a, Tensor b) { return ops::tanh_grad(a, b); }, {y, g}), 0, false)[0];
  for (std::int64_t i = 0; i < 5; ++i) {
    const long double v = y.item(i), want = g.item(i) * (1.0L - v) * (1.0L + v);
    CAPTURE(i);
    CHECK(std::fabs(d.item(i) - want) <= 0x1p-23 * std::fabs(want)); // one ulp
  }
  CHECK(d.item(3) == 0.0);
  CHECK(d.item(5) == 0.0);
  CHECK(std::signbit(d.item(5)));
}

TEST_CASE("relu and isnan see NaN") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto x = tensor({4}, float32, {nan, -1.0, 1.0, -0.0});
  const auto r = check_kernel([](Tensor t) { return ops::relu(t); }, {x})[0];
  CHECK(std::isnan(r.item(0)));
  CHECK(!std::signbit(r.item(3)));
  const auto n = check_kernel([](Tensor t) { return ops::isnan(t); }, {x})[0];
  check_values(n, {{4}, bool_}, {1, 0, 0, 0});
  check_kernel([](Tensor t) { return ops::isnan(t); }, {x.astype(float16)});
}

TEST_CASE("int32 negate and abs wrap instead of overflowing") {
  const auto x = tensor({5}, int32, {-7, 0, 5, 2147483647, -2147483648.0});
  check_values(check_kernel([](Tensor t) { return ops::negate(t); }, {x})[0], x.spec(),
               {7, 0, -5, -2147483647, -2147483648.0});
  check_values(check_kernel([](Tensor t) { return ops::abs(t); }, {x})[0], x.spec(),
               {7, 0, 5, 2147483647, -2147483648.0});
}

TEST_CASE("logical_not") {
  const auto x = tensor({3}, bool_, {1, 0, 1});
  check_values(check_kernel([](Tensor t) { return ops::logical_not(t); }, {x})[0], x.spec(),
               {0, 1, 0});
}

TEST_CASE("cast between every pair of dtypes matches the reference") {
  const auto base = tensor({7}, float32, {-3.75, -1.5, -0.0, 0.0, 0.25, 2.5, 100.0});
  const std::vector<DType> device = {float32, float16, int32, bool_, uint32,
                                     uint8,   int8,    int16, uint16};
  for (DType from : device)
    for (DType to : device) {
      CAPTURE(from);
      CAPTURE(to);
      HostTensor x =
          from == uint32 ? tensor({7}, uint32, {0, 1, 2, 3, 4, 5, 70000}) : base.astype(from);
      check_kernel([to](Tensor t) { return ops::cast(t, to); }, {x});
    }
  check_values(check_kernel([](Tensor t) { return ops::cast(t, int32); }, {base})[0], {{7}, int32},
               {-3, -1, 0, 0, 0, 2, 100});
}

TEST_CASE("casts to and from int8, int16 and uint16: wrap, saturate and round as convert_element") {
  const auto i = tensor({5}, int32, {-1, 200, -129, 70000, 32767});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, int8); }, {i})[0], {{5}, int8},
               {-1, -56, 127, 112, -1});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, int16); }, {i})[0], {{5}, int16},
               {-1, 200, -129, 4464, 32767});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, uint16); }, {i})[0], {{5}, uint16},
               {65535, 200, 65407, 4464, 32767});
  const auto f = tensor({6}, float32, {NAN, 1e10, -1e10, -128.9, 127.9, 65535.5});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, int8); }, {f})[0], {{6}, int8},
               {0, 127, -128, -128, 127, 127});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, uint16); }, {f})[0], {{6}, uint16},
               {0, 65535, 0, 0, 127, 65535});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, int16); }, {f})[0], {{6}, int16},
               {0, 32767, -32768, -128, 127, 32767});
  // uint16 → float16 rounds to nearest: 65535 is beyond float16's 65504, so inf; 2049 → 2048.
  const auto u = tensor({3}, uint16, {65535, 2049, 7});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, float16); }, {u})[0], {{3}, float16},
               {INFINITY, 2048, 7});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, int8); }, {u})[0], {{3}, int8},
               {-1, 1, 7});
  // Long enough for several chunks of the kernel's staging buffer on every worker count.
  check_kernel([](Tensor t) { return ops::cast(t, int16); },
               {random_tensor({3, 1000}, float32, -40000, 40000, 5)});
  check_kernel([](Tensor t) { return ops::cast(t, float32); },
               {random_tensor({7, 333}, int8, -128, 128, 6)});
}

TEST_CASE("float → integer casts saturate and send NaN to 0, in kernel and reference alike") {
  const double inf = INFINITY;
  const auto x = tensor(
      {10}, float32, {NAN, inf, -inf, 3e9, -3e9, 2147483520.0, -2147483648.0, -0.9, 255.9, 1e20});
  for (DType from : {float32, float16})
    for (DType to : {int32, uint32, uint8, bool_, float16}) {
      CAPTURE(from);
      CAPTURE(to);
      check_kernel([to](Tensor t) { return ops::cast(t, to); }, {x.astype(from)});
    }
  const double lo = -2147483648.0, hi = 2147483647.0;
  check_values(check_kernel([](Tensor t) { return ops::cast(t, int32); }, {x})[0], {{10}, int32},
               {0, hi, lo, hi, lo, 2147483520.0, lo, 0, 255, hi});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, uint32); }, {x})[0], {{10}, uint32},
               {0, 4294967295.0, 0, 3e9, 0, 2147483520.0, 0, 0, 255, 4294967295.0});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, uint8); }, {x})[0], {{10}, uint8},
               {0, 255, 0, 255, 0, 255, 0, 0, 255, 255});
  // float16 holds at most 65504: 3e9 was +inf there, and saturates as such.
  check_values(check_kernel([](Tensor t) { return ops::cast(t, int32); }, {x.astype(float16)})[0],
               {{10}, int32}, {0, hi, lo, hi, lo, hi, lo, 0, 255, hi});
  // Integer → integer wraps modulo 2^bits, as C++ and NumPy convert.
  const auto i = tensor({4}, int32, {-1, 256, -2147483648.0, 7});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, uint8); }, {i})[0], {{4}, uint8},
               {255, 0, 0, 7});
  check_values(check_kernel([](Tensor t) { return ops::cast(t, uint32); }, {i})[0], {{4}, uint32},
               {4294967295.0, 256, 2147483648.0, 7});
}

TEST_CASE("tanh: full float precision from tiny to huge arguments; inf, NaN and -0") {
  const std::vector<double> xs = {1e-30, -1e-20, 3e-8, -5e-4, 9.99e-4, 1e-3,  -1.0001e-3,
                                  0.3,   -0.7,   2.0,  -9.0,  19.0,    -400., 1e30};
  // 41 elements: the vector loop and its remainder both run, on every worker split.
  std::vector<double> values;
  for (int r = 0; values.size() < 41; ++r)
    for (double x : xs)
      if (values.size() < 41)
        values.push_back(x * (r % 2 == 0 ? 1 : -1));
  const auto x = tensor({41}, float32, values);
  const auto y = check_kernel([](Tensor t) { return ops::tanh(t); }, {x})[0];
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    CAPTURE(x.item(i));
    // Correctly rounded float is within half an ulp (2^-24 relative); allow one ulp.
    const long double want = std::tanh(static_cast<long double>(x.item(i)));
    CHECK(std::fabs(static_cast<long double>(y.item(i)) - want) <=
          std::ldexp(std::fabs(want), -23));
  }
  const float inf = std::numeric_limits<float>::infinity();
  const auto special =
      tensor({4}, float32, {inf, -inf, std::numeric_limits<double>::quiet_NaN(), -0.0});
  const auto s = check_kernel([](Tensor t) { return ops::tanh(t); }, {special})[0];
  CHECK(s.item(0) == 1.0);
  CHECK(s.item(1) == -1.0);
  CHECK(std::isnan(s.item(2)));
  CHECK(s.item(3) == 0.0);
  CHECK(std::signbit(s.item(3)));
}

namespace {

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

struct BinaryCase {
  const char* name;
  Binary f;
  double lo, hi;
  bool int32_too;
};

const std::vector<BinaryCase> cases = {
    {"add", [](const Tensor& a, const Tensor& b) { return ops::add(a, b); }, -3, 3, true},
    {"sub", [](const Tensor& a, const Tensor& b) { return ops::sub(a, b); }, -3, 3, true},
    {"mul", [](const Tensor& a, const Tensor& b) { return ops::mul(a, b); }, -3, 3, true},
    {"div", [](const Tensor& a, const Tensor& b) { return ops::div(a, b); }, 0.5, 4, true},
    {"pow", [](const Tensor& a, const Tensor& b) { return ops::pow(a, b); }, 0.1, 3, false},
    {"fmod", [](const Tensor& a, const Tensor& b) { return ops::fmod(a, b); }, -3, 3, true},
    {"maximum", [](const Tensor& a, const Tensor& b) { return ops::maximum(a, b); }, -3, 3, true},
    {"equal", [](const Tensor& a, const Tensor& b) { return ops::equal(a, b); }, -2, 2, true},
    {"greater", [](const Tensor& a, const Tensor& b) { return ops::greater(a, b); }, -2, 2, true},
};

/// Operand shape pairs: same shape, scalars, row/column broadcasts, odd sizes, both sides
/// broadcast, and ranks that differ.
const std::vector<std::pair<Shape, Shape>> shape_pairs = {
    {{7}, {7}},
    {{13, 5}, {13, 5}},
    {{}, {13, 5}},
    {{13, 5}, {}},
    {{13, 5}, {5}},
    {{13, 1}, {13, 5}},
    {{13, 1}, {1, 7}},
    {{3, 1, 5}, {4, 1}},
    {{2, 3, 4}, {3, 1}},
    {{1}, {7}},
    {{2, 1, 3, 1}, {1, 5, 1, 7}},
};

} // namespace

TEST_CASE("exp: correctly rounded over the float range, subnormal results, inf, 0 and NaN") {
  // Arguments from the largest float's overflow down through subnormal results (below
  // -87.3) to underflow (below -103.97); 41 elements: the vector loop and its remainder.
  const std::vector<double> xs = {88.72,  88.73,  89.0,  1e30,  -87.0, -90.0, -100.0,
                                  -103.9, -104.0, -1e30, 1e-30, -3e-8, 0.5,   -20.25};
  std::vector<double> values;
  for (int r = 0; values.size() < 41; ++r)
    for (double x : xs)
      if (values.size() < 41)
        values.push_back(r == 0 ? x : x * (1.0 - 1e-3 * r));
  const auto x = tensor({41}, float32, values);
  const auto y = check_kernel([](Tensor t) { return ops::exp(t); }, {x})[0];
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    CAPTURE(x.item(i));
    const long double want = std::exp(static_cast<long double>(x.item(i)));
    const float rounded = static_cast<float>(want); // correctly rounded (inf, 0, subnormal)
    CHECK(static_cast<float>(y.item(i)) == rounded);
  }
  const float inf = std::numeric_limits<float>::infinity();
  const auto special =
      tensor({4}, float32, {inf, -inf, std::numeric_limits<double>::quiet_NaN(), -0.0});
  const auto s = check_kernel([](Tensor t) { return ops::exp(t); }, {special})[0];
  CHECK(s.item(0) == inf);
  CHECK(s.item(1) == 0.0);
  CHECK(std::isnan(s.item(2)));
  CHECK(s.item(3) == 1.0);
}

TEST_CASE("binary kernels broadcast like NumPy and match the reference for every dtype") {
  for (const auto& c : cases)
    for (DType d : {float32, float16, int32}) {
      if (d == int32 && !c.int32_too)
        continue;
      for (const auto& shapes : shape_pairs) {
        const auto& sa = shapes.first;
        const auto& sb = shapes.second;
        CAPTURE(std::string(c.name));
        CAPTURE(d);
        CAPTURE(to_string(sa));
        CAPTURE(to_string(sb));
        const double scale = d == int32 ? 10.0 : 1.0;
        auto a = random_tensor(sa, d, c.lo * scale, c.hi * scale, 1);
        auto b = random_tensor(sb, d, c.lo * scale, c.hi * scale, 2);
        check_kernel([&](Tensor x, Tensor y) { return c.f(x, y); }, {a, b});
      }
    }
}

TEST_CASE("binary kernels: hand-computed values") {
  const auto a = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  const auto row = tensor({3}, float32, {10, 20, 30});
  const auto col = tensor({2, 1}, float32, {100, 200});
  check_values(check_kernel([](Tensor x, Tensor y) { return x + y; }, {a, row})[0],
               {{2, 3}, float32}, {11, 22, 33, 14, 25, 36});
  check_values(check_kernel([](Tensor x, Tensor y) { return x * y; }, {a, col})[0],
               {{2, 3}, float32}, {100, 200, 300, 800, 1000, 1200});
  check_values(check_kernel([](Tensor x, Tensor y) { return x - y; }, {col, row})[0],
               {{2, 3}, float32}, {90, 80, 70, 190, 180, 170});
  check_values(check_kernel([](Tensor x) { return ops::pow(x, 2.0); }, {a})[0], {{2, 3}, float32},
               {1, 4, 9, 16, 25, 36});
}

TEST_CASE("fmod: the dividend's sign; x % 0 is NaN for floats and 0 for int32, as the reference") {
  const auto a = tensor({5}, float32, {5.5, -5.5, 5.5, 3, -0.0});
  const auto b = tensor({5}, float32, {2, 2, -2, 0, 1});
  const auto r = check_kernel([](Tensor x, Tensor y) { return x % y; }, {a, b})[0];
  CHECK(r.item(0) == 1.5);
  CHECK(r.item(1) == -1.5);
  CHECK(r.item(2) == 1.5);
  CHECK(std::isnan(r.item(3)));
  CHECK(std::signbit(r.item(4)));
  const auto ia = tensor({5}, int32, {7, -7, 7, std::numeric_limits<std::int32_t>::min(), 7});
  const auto ib = tensor({5}, int32, {3, 3, -3, -1, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::fmod(x, y); }, {ia, ib})[0],
               {{5}, int32}, {1, -1, 1, 0, 0});
}

TEST_CASE("isinf and isfinite classify infinities, NaN and the largest values") {
  const float big = std::numeric_limits<float>::max();
  const float inf = std::numeric_limits<float>::infinity();
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    const auto x = tensor({6}, float32, {0.0, -big, inf, -inf, NAN, 1.0}).astype(d);
    // float16 rounds ±FLT_MAX to ±inf.
    const double big_is_inf = d == float16 ? 1 : 0;
    check_values(check_kernel([](Tensor t) { return ops::isinf(t); }, {x})[0], {{6}, bool_},
                 {0, big_is_inf, 1, 1, 0, 0});
    check_values(check_kernel([](Tensor t) { return ops::isfinite(t); }, {x})[0], {{6}, bool_},
                 {1, 1 - big_is_inf, 0, 0, 0, 1});
  }
}

TEST_CASE("int32 division truncates toward zero and division by zero gives 0") {
  const auto a = tensor({5}, int32, {7, -7, 7, -7, 5});
  const auto b = tensor({5}, int32, {2, 2, -2, -2, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::div(x, y); }, {a, b})[0],
               {{5}, int32}, {3, -3, -3, 3, 0});
}

TEST_CASE("int32 add and mul wrap around") {
  // The reference's double → int32 conversion of an overflowed value is undefined, so these
  // are checked against two's complement by hand only.
  const auto a = tensor({2}, int32, {2147483647, 65536});
  const auto b = tensor({2}, int32, {1, 65536});
  const auto add = make_case([](Tensor x, Tensor y) { return x + y; }, {a, b});
  check_values(check_kernel(add, 0, false)[0], {{2}, int32}, {-2147483648.0, 131072});
  const auto mul = make_case([](Tensor x, Tensor y) { return x * y; }, {a, b});
  check_values(check_kernel(mul, 0, false)[0], {{2}, int32}, {2147483647, 0});
  const auto c = tensor({1}, int32, {-2147483648.0});
  const auto d = tensor({1}, int32, {-1});
  const auto div = make_case([](Tensor x, Tensor y) { return ops::div(x, y); }, {c, d});
  check_values(check_kernel(div, 0, false)[0], {{1}, int32}, {-2147483648.0});
}

TEST_CASE("int32 division's undefined cases have NumPy's values, in kernel and reference alike") {
  // x / 0 is 0 (NumPy's floor_divide: 0 with a warning) and INT32_MIN / -1 wraps to INT32_MIN.
  const double lo = -2147483648.0, hi = 2147483647.0;
  const auto a = tensor({7}, int32, {lo, lo, 5, -5, 0, hi, lo});
  const auto b = tensor({7}, int32, {-1, 0, 0, 0, 0, -1, 1});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::div(x, y); }, {a, b})[0],
               {{7}, int32}, {lo, 0, 0, 0, 0, -hi, lo});
  // Broadcast divisors take the same path.
  const auto zero = tensor({}, int32, {0});
  const auto minus_one = tensor({1}, int32, {-1});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::div(x, y); }, {a, zero})[0],
               {{7}, int32}, {0, 0, 0, 0, 0, 0, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::div(x, y); }, {a, minus_one})[0],
               {{7}, int32}, {lo, lo, -5, 5, 0, -hi, lo});
}

TEST_CASE("maximum propagates NaN") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto a = tensor({3}, float32, {nan, 1, 2});
  const auto b = tensor({3}, float32, {1, nan, 3});
  const auto m = check_kernel([](Tensor x, Tensor y) { return ops::maximum(x, y); }, {a, b})[0];
  CHECK(std::isnan(m.item(0)));
  CHECK(std::isnan(m.item(1)));
  CHECK(m.item(2) == 3);
}

TEST_CASE("equal, greater, and, or, where") {
  const auto a = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  const auto b = tensor({3}, float32, {1, 5, 2});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::equal(x, y); }, {a, b})[0],
               {{2, 3}, bool_}, {1, 0, 0, 0, 1, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::greater(x, y); }, {a, b})[0],
               {{2, 3}, bool_}, {0, 0, 1, 1, 0, 1});
  const auto p = tensor({2, 2}, bool_, {1, 1, 0, 0});
  const auto q = tensor({2}, bool_, {1, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::logical_and(x, y); }, {p, q})[0],
               {{2, 2}, bool_}, {1, 0, 0, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::logical_or(x, y); }, {p, q})[0],
               {{2, 2}, bool_}, {1, 1, 1, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::equal(x, y); }, {p, q})[0],
               {{2, 2}, bool_}, {1, 0, 0, 1});
  const auto cond = tensor({2, 1}, bool_, {1, 0});
  check_values(check_kernel([](Tensor c, Tensor x, Tensor y) { return ops::where(c, x, y); },
                            {cond, a, b})[0],
               {{2, 3}, float32}, {1, 2, 3, 1, 5, 2});
}

TEST_CASE("minimum, the comparisons, sign and clip at NaN, ties and signed zeros") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto a = tensor({5}, float32, {1, nan, 2, -0.0, 3});
  const auto b = tensor({5}, float32, {2, 1, nan, 0.0, 3});
  const auto mins = check_kernel([](Tensor x, Tensor y) { return ops::minimum(x, y); }, {a, b})[0];
  CHECK(mins.item(0) == 1.0);
  CHECK(std::isnan(mins.item(1)));
  CHECK(std::isnan(mins.item(2)));
  CHECK(mins.item(4) == 3.0);
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::not_equal(x, y); }, {a, b})[0],
               {{5}, bool_}, {1, 1, 1, 0, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::less(x, y); }, {a, b})[0],
               {{5}, bool_}, {1, 0, 0, 0, 0});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::less_equal(x, y); }, {a, b})[0],
               {{5}, bool_}, {1, 0, 0, 1, 1});
  check_values(check_kernel([](Tensor x, Tensor y) { return ops::greater_equal(x, y); }, {a, b})[0],
               {{5}, bool_}, {0, 0, 0, 1, 1});
  const auto signs = check_kernel([](Tensor x) { return ops::sign(x); }, {a})[0];
  CHECK(signs.item(0) == 1.0);
  CHECK(std::isnan(signs.item(1)));
  CHECK(std::signbit(signs.data<float>()[3]));
  check_values(
      check_kernel([](Tensor x) { return ops::sign(x); }, {tensor({3}, int32, {-7, 0, 9})})[0],
      {{3}, int32}, {-1, 0, 1});
  const auto clipped = check_kernel([](Tensor x) { return ops::clip(x, 0.5, 2.5); }, {a})[0];
  CHECK(clipped.item(0) == 1.0);
  CHECK(std::isnan(clipped.item(1)));
  CHECK(clipped.item(2) == 2.0);
  CHECK(clipped.item(3) == 0.5);
  CHECK(clipped.item(4) == 2.5);
  for (DType d : {float32, float16})
    for (auto f : {ops::erf, ops::sin, ops::cos})
      check_kernel([f](Tensor x) { return f(x); }, {random_tensor({9, 7}, d, -6, 6, 3)});
}

TEST_CASE("where broadcasts all three operands for every dtype") {
  for (DType d : {float32, float16, int32, bool_, uint32, uint8, int8, int16, uint16}) {
    CAPTURE(d);
    const auto cond = random_tensor({13, 1}, float32, -1, 1, 3);
    HostTensor c(cond.shape(), bool_);
    for (std::int64_t i = 0; i < c.nelms(); ++i)
      ref::store(c, i, cond.item(i) > 0);
    check_kernel([](Tensor k, Tensor x, Tensor y) { return ops::where(k, x, y); },
                 {c, random_tensor({1, 7}, d, -5, 5, 4), random_tensor({13, 7}, d, -5, 5, 5)});
    // A mask over the last two axes applied to every batch, with one value on either side
    // (the causal mask of attention scores), and everything contiguous.
    const auto mask = random_tensor({5, 7}, float32, -1, 1, 6);
    HostTensor m(mask.shape(), bool_);
    for (std::int64_t i = 0; i < m.nelms(); ++i)
      ref::store(m, i, mask.item(i) > 0);
    const auto scores = random_tensor({3, 5, 7}, d, -5, 5, 7);
    const auto one = random_tensor({}, d, -5, 5, 8);
    check_kernel([](Tensor k, Tensor x, Tensor y) { return ops::where(k, x, y); },
                 {m, scores, one});
    check_kernel([](Tensor k, Tensor x, Tensor y) { return ops::where(k, x, y); },
                 {m, one, scores});
    check_kernel([](Tensor k, Tensor x, Tensor y) { return ops::where(k, x, y); },
                 {m, random_tensor({5, 7}, d, -5, 5, 9), random_tensor({5, 7}, d, -5, 5, 10)});
  }
}

TEST_CASE("float16 unary kernels and casts are bitwise the per-element float formula") {
  // 1001 elements: whole conversion blocks, a partial one, and worker ranges starting anywhere.
  auto x = random_tensor({1001}, float16, -6, 6, 9);
  auto xs = x.data<half>();
  // Specials: signed zeros, infinities, NaN, the largest half, subnormals.
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            65504.0f,
                            5.96e-8f,
                            -6.1e-5f};
  for (std::size_t i = 0; i < std::size(specials); ++i)
    xs[i * 97] = half(specials[i]);
  const auto same_bits = [](const HostTensor& got, const std::function<float(float)>& f,
                            std::span<const half> in) {
    const auto g = got.data<half>();
    for (std::size_t i = 0; i < in.size(); ++i) {
      CAPTURE(i);
      CHECK(g[i].bits() == half(f(static_cast<float>(in[i]))).bits());
    }
  };
  same_bits(
      check_kernel(make_case([](Tensor t) { return ops::relu(t); }, {x}), 1e-6, false)[0],
      [](float v) { return v != v ? v : (v > 0.0f ? v : 0.0f); }, xs);
  same_bits(
      check_kernel(make_case([](Tensor t) { return ops::negate(t); }, {x}), 1e-6, false)[0],
      [](float v) { return -v; }, xs);
  // gelu, its gradient, tanh and exp: the float16 kernel rounds what the float32 kernel
  // computes.
  const auto widened = x.astype(float32);
  for (const Unary& f : {Unary([](const Tensor& t) { return ops::gelu(t); }),
                         Unary([](const Tensor& t) { return ops::gelu_grad(t, t); }),
                         Unary([](const Tensor& t) { return ops::tanh_grad(t, t); }),
                         Unary([](const Tensor& t) { return ops::tanh(t); }),
                         Unary([](const Tensor& t) { return ops::exp(t); })}) {
    const HostTensor h = check_kernel(make_case(f, {x}), 1e-6, false)[0];
    const HostTensor w = check_kernel(make_case(f, {widened}), 1e-6, false)[0];
    const auto s = w.data<float>();
    for (std::size_t i = 0; i < s.size(); ++i) {
      CAPTURE(i);
      CHECK(h.data<half>()[i].bits() == half(s[i]).bits());
    }
  }
  // Casts: float32 → float16 rounds to nearest, ties to even; float16 → float32 is exact.
  auto f = random_tensor({1001}, float32, -70000, 70000, 10);
  auto fs = f.data<float>();
  for (std::size_t i = 0; i < std::size(specials); ++i)
    fs[i * 89] = specials[i];
  fs[3] = 65519.0f;           // rounds down to 65504
  fs[4] = 65520.0f;           // rounds up to infinity
  fs[5] = 1.0f + 1.0f / 2048; // a tie: to even (1)
  const auto narrowed = check_kernel([](Tensor t) { return ops::cast(t, float16); }, {f})[0];
  for (std::size_t i = 0; i < fs.size(); ++i) {
    CAPTURE(i);
    CHECK(narrowed.data<half>()[i].bits() == half(fs[i]).bits());
  }
  const auto back = check_kernel([](Tensor t) { return ops::cast(t, float32); }, {narrowed})[0];
  for (std::size_t i = 0; i < fs.size(); ++i) {
    CAPTURE(i);
    const float want = static_cast<float>(narrowed.data<half>()[i]);
    const float got = back.data<float>()[i];
    CHECK((got == want || (got != got && want != want)));
  }
}
