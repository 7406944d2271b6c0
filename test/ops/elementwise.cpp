// Element-wise ops: shape/dtype inference with broadcasting, values through the reference
// evaluator against closed forms, and every error.
#include "op_test.hpp"
#include "pxl/transforms/autodiff.hpp"

#include <limits>
#include <numbers>

using namespace pxl;
using namespace pxl::testing;
using V = std::vector<double>;
using T = std::vector<Tensor>;

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();
} // namespace

TEST_CASE("unary ops keep the spec; isnan gives bool, cast its target") {
  ScratchGraph s;
  for (DType d : {float32, float16}) {
    const Tensor x = s.input({2, 3}, d);
    // A copy: spec() refers into the Ir's storage, which creating an op may move.
    const TensorSpec spec = x.spec();
    for (auto f : {ops::exp, ops::log, ops::sqrt, ops::tanh, ops::sigmoid, ops::relu, ops::gelu,
                   ops::geluerf, ops::negate, ops::abs, ops::identity, ops::detach})
      CHECK(f(x).spec() == spec);
    CHECK(ops::isnan(x).spec() == TensorSpec{{2, 3}, bool_});
  }
  const Tensor i = s.input({4}, int32);
  CHECK(ops::negate(i).spec() == TensorSpec{{4}, int32});
  CHECK(ops::abs(i).spec() == TensorSpec{{4}, int32});
  CHECK(ops::cast(i, float16).spec() == TensorSpec{{4}, float16});
  const Op cast = *ops::cast(i, bool_).producer();
  CHECK(cast.kind() == OpKind::Cast);
  CHECK(cast.attrs_as<CastAttrs>().to == bool_);
  CHECK(ops::logical_not(s.input({}, bool_)).spec() == TensorSpec{{}, bool_});
}

TEST_CASE("binary ops broadcast like NumPy") {
  ScratchGraph s;
  const Tensor a = s.input({2, 3});
  CHECK((a + s.input({3})).shape() == Shape{2, 3});
  CHECK((a * s.input({})).shape() == Shape{2, 3});
  CHECK(ops::sub(s.input({4, 1, 3}), s.input({2, 1})).shape() == Shape{4, 2, 3});
  CHECK(ops::maximum(s.input({1, 5}), s.input({7, 1})).shape() == Shape{7, 5});
  CHECK(ops::equal(a, s.input({2, 1})).spec() == TensorSpec{{2, 3}, bool_});
  CHECK(ops::greater(s.input({3}, int32), s.input({}, int32)).spec() == TensorSpec{{3}, bool_});
  CHECK(ops::logical_or(s.input({2, 1}, bool_), s.input({1, 4}, bool_)).spec() ==
        TensorSpec{{2, 4}, bool_});
  CHECK(ops::where(s.input({3, 1}, bool_), s.input({1, 2}, float16), s.input({}, float16)).spec() ==
        TensorSpec{{3, 2}, float16});
  CHECK(ops::pow(a, 2.0).spec() == TensorSpec{{2, 3}, float32});
  CHECK((a / 2.0).producer()->kind() == OpKind::Div);
}

TEST_CASE("unary math in float32 matches closed forms") {
  const V x = {-2, -0.5, 0, 0.5, 1, 3};
  auto run = [&](auto f, DType d = float32) {
    return evaluate1([f](T t) { return f(t[0]); }, {tensor({6}, d, x)});
  };
  const TensorSpec spec{{6}, float32};
  check_values(run(ops::negate), spec, {2, 0.5, 0, -0.5, -1, -3});
  check_values(run(ops::abs), spec, {2, 0.5, 0, 0.5, 1, 3});
  check_values(run(ops::relu), spec, {0, 0, 0, 0.5, 1, 3});
  check_values(run(ops::exp), spec,
               {0.1353352832, 0.6065306597, 1, 1.6487212707, 2.7182818285, 20.0855369232});
  check_values(run(ops::tanh), spec,
               {-0.9640275801, -0.4621171573, 0, 0.4621171573, 0.7615941560, 0.9950547537});
  check_values(run(ops::sigmoid), spec,
               {0.1192029220, 0.3775406688, 0.5, 0.6224593312, 0.7310585786, 0.9525741268});
  // Tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  check_values(run(ops::gelu), spec,
               {-0.0454023059, -0.1542859902, 0, 0.3457140098, 0.8411919906, 2.9963626079});
  // Exact: 0.5 x (1 + erf(x / sqrt 2)).
  check_values(run(ops::geluerf), spec,
               {-0.0455002639, -0.1542687694, 0, 0.3457312306, 0.8413447461, 2.9959503059});
  const auto pos = tensor({4}, float32, {0.25, 1, 4, 100});
  check_values(evaluate1([](T t) { return ops::sqrt(t[0]); }, {pos}), {{4}, float32},
               {0.5, 1, 2, 10});
  check_values(evaluate1([](T t) { return ops::log(t[0]); }, {pos}), {{4}, float32},
               {-1.3862943611, 0, 1.3862943611, 4.6051701860});
}

TEST_CASE("unary math at the edges: log 0, sqrt of a negative, NaN through relu") {
  const auto x = tensor({3}, float32, {0, -1, NAN});
  check_values(evaluate1([](T t) { return ops::log(t[0]); }, {x}), {{3}, float32},
               {-inf, NAN, NAN});
  check_values(evaluate1([](T t) { return ops::sqrt(t[0]); }, {x}), {{3}, float32}, {0, NAN, NAN});
  check_values(evaluate1([](T t) { return ops::relu(t[0]); }, {x}), {{3}, float32}, {0, 0, NAN});
  check_values(evaluate1([](T t) { return ops::isnan(t[0]); }, {x}), {{3}, bool_}, {0, 0, 1});
}

TEST_CASE("floor, ceil, log2, swish, isinf, isfinite: closed forms, signed zeros, inf and NaN") {
  const auto x = tensor({8}, float32, {-1.5, -0.5, -0.0, 0.25, 2.0, inf, -inf, NAN});
  check_values(evaluate1([](T t) { return ops::floor(t[0]); }, {x}), {{8}, float32},
               {-2, -1, -0.0, 0, 2, inf, -inf, NAN});
  check_values(evaluate1([](T t) { return ops::ceil(t[0]); }, {x}), {{8}, float32},
               {-1, -0.0, -0.0, 1, 2, inf, -inf, NAN});
  check_values(evaluate1([](T t) { return ops::isinf(t[0]); }, {x}), {{8}, bool_},
               {0, 0, 0, 0, 0, 1, 1, 0});
  check_values(evaluate1([](T t) { return ops::isfinite(t[0]); }, {x}), {{8}, bool_},
               {1, 1, 1, 1, 1, 0, 0, 0});
  const auto p = tensor({4}, float32, {0.25, 1, 8, 10});
  check_values(evaluate1([](T t) { return ops::log2(t[0]); }, {p}), {{4}, float32},
               {-2, 0, 3, 3.3219280949});
  const auto s = tensor({5}, float32, {-2, 0, 1.5, -inf, inf});
  check_values(evaluate1([](T t) { return ops::swish(t[0]); }, {s}), {{5}, float32},
               {-2 / (1 + std::exp(2.0)), 0, 1.5 / (1 + std::exp(-1.5)), -0.0, inf});
  check_values(evaluate1([](T t) { return ops::clamp(t[0], -1, 1); }, {s}), {{5}, float32},
               {-1, 0, 1, -1, 1});
}

TEST_CASE("fmod and %: the remainder with the dividend's sign, for floats and int32") {
  const auto a = tensor({6}, float32, {5.5, -5.5, 5.5, -5.5, 3, 1});
  const auto b = tensor({6}, float32, {2, 2, -2, -2, 0, inf});
  check_values(evaluate1([](T t) { return t[0] % t[1]; }, {a, b}), {{6}, float32},
               {1.5, -1.5, 1.5, -1.5, NAN, 1});
  check_values(evaluate1([](T t) { return t[0] % 4.0; }, {tensor({2}, float32, {9, -9})}),
               {{2}, float32}, {1, -1});
  check_values(evaluate1([](T t) { return 7.0 % t[0]; }, {tensor({2}, float32, {4, -4})}),
               {{2}, float32}, {3, 3});
  const auto ia = tensor({5}, int32, {7, -7, 7, std::numeric_limits<std::int32_t>::min(), 7});
  const auto ib = tensor({5}, int32, {3, 3, -3, -1, 0});
  check_values(evaluate1([](T t) { return ops::fmod(t[0], t[1]); }, {ia, ib}), {{5}, int32},
               {1, -1, 1, 0, 0});
  ScratchGraph s;
  CHECK_THROWS_WITH_AS(ops::fmod(s.input({2}, bool_), s.input({2}, bool_)),
                       doctest::Contains("Fmod: arithmetic on bool tensor"), DTypeError);
  CHECK_THROWS_WITH_AS(s.input({2}) % s.input({3}), doctest::Contains("Fmod"), ShapeError);
  CHECK_THROWS_WITH_AS(s.input({2}) % s.input({2}, int32),
                       doctest::Contains("Fmod: operands must have the same dtype"), DTypeError);
}

TEST_CASE("increment_mod and increment_mod_: (t + increment) % modulus, in place for the second") {
  const auto x = tensor({5}, float32, {0, 1, 2, -4, 2.5});
  check_values(evaluate1([](T t) { return ops::increment_mod(t[0], 1, 3); }, {x}), {{5}, float32},
               {1, 2, 0, -0.0, 0.5});
  // In place: a later reader of t sees the update.
  check_values(evaluate1(
                   [](T t) {
                     ops::increment_mod_(t[0], 1, 3);
                     return ops::identity(t[0]);
                   },
                   {x}),
               {{5}, float32}, {1, 2, 0, -0.0, 0.5});
  const auto counters = tensor({4}, int32, {0, 6, -7, 2147483647});
  check_values(evaluate1([](T t) { return ops::increment_mod(t[0], 1, 7); }, {counters}),
               {{4}, int32}, {1, 0, -6, 2}); // exactly: 2^31 % 7, with no wrap-around
  ScratchGraph s;
  const Tensor f = s.input({2});
  const Tensor i = s.input({2}, int32);
  CHECK(ops::increment_mod_(f, 1, 2).spec() == f.spec());
  CHECK_THROWS_WITH_AS(ops::increment_mod(f, 1, 0),
                       doctest::Contains("IncrementMod: the modulus of"), ValueError);
  CHECK_THROWS_WITH_AS(ops::increment_mod_(i, 0.5, 4),
                       doctest::Contains("IncrementModInplace: the increment of int32 tensor"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::increment_mod(i, 1, 1e10),
                       doctest::Contains("must be a whole number in int32's range"), ValueError);
  CHECK_THROWS_WITH_AS(ops::increment_mod(s.input({2}, bool_), 1, 2),
                       doctest::Contains("IncrementMod: expected a float32, float16 or int32"),
                       DTypeError);
}

TEST_CASE("unary math in float16 rounds the exact value once") {
  const V x = {-1, 0.5, 2};
  const auto in = tensor({3}, float16, x);
  // Expected values rounded to float16 (11 significant bits): tolerance half an ulp.
  check_values(evaluate1([](T t) { return ops::exp(t[0]); }, {in}), {{3}, float16},
               {0.3679, 1.6487, 7.3891}, 1e-3);
  check_values(evaluate1([](T t) { return ops::gelu(t[0]); }, {in}), {{3}, float16},
               {-0.1588, 0.3457, 1.9546}, 1e-3);
  check_values(evaluate1([](T t) { return ops::negate(t[0]); }, {in}), {{3}, float16},
               {1, -0.5, -2}, 0);
  check_values(evaluate1([](T t) { return ops::exp(t[0]); }, {tensor({1}, float16, {12})}),
               {{1}, float16}, {inf}); // e^12 > 65504, the largest float16
}

TEST_CASE("every float unary op in float16 is the closed form of the float16 input, rounded") {
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&);
    double (*closed_form)(double);
  };
  const Case cases[] = {
      {"exp", ops::exp, [](double x) { return std::exp(x); }},
      {"log", ops::log, [](double x) { return std::log(x); }},
      {"sqrt", ops::sqrt, [](double x) { return std::sqrt(x); }},
      {"tanh", ops::tanh, [](double x) { return std::tanh(x); }},
      {"sigmoid", ops::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"relu", ops::relu, [](double x) { return x > 0 ? x : 0.0; }},
      {"gelu", ops::gelu,
       [](double x) {
         return 0.5 * x *
                (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
       }},
      {"geluerf", ops::geluerf,
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }},
      {"abs", ops::abs, [](double x) { return std::fabs(x); }},
      {"negate", ops::negate, [](double x) { return -x; }},
      {"floor", ops::floor, [](double x) { return std::floor(x); }},
      {"ceil", ops::ceil, [](double x) { return std::ceil(x); }},
      {"log2", ops::log2, [](double x) { return std::log2(x); }},
      {"swish", ops::swish, [](double x) { return x / (1 + std::exp(-x)); }},
  };
  // Positive inputs, so log and sqrt are defined; 0.1 and 3.3 are not float16 values and get
  // rounded on the way in.
  const auto in = tensor({4}, float16, {0.1, 0.75, 1.5, 3.3});
  for (const Case& c : cases) {
    CAPTURE(c.name);
    V want;
    for (double x : values(in))
      want.push_back(static_cast<double>(static_cast<half>(c.closed_form(x))));
    check_values(evaluate1([&](T t) { return c.op(t[0]); }, {in}), {{4}, float16}, want, 0);
  }
}

TEST_CASE("int32 negate and abs") {
  const auto x = tensor({3}, int32, {-7, 0, 5});
  check_values(evaluate1([](T t) { return ops::negate(t[0]); }, {x}), {{3}, int32}, {7, 0, -5});
  check_values(evaluate1([](T t) { return ops::abs(t[0]); }, {x}), {{3}, int32}, {7, 0, 5});
}

TEST_CASE("binary arithmetic broadcasts values") {
  // a (2, 3) = [[1, 2, 3], [4, 5, 6]]; b (3,) = [10, 20, 30]; c (2, 1) = [[2], [-1]]
  const auto a = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  const auto b = tensor({3}, float32, {10, 20, 30});
  const auto c = tensor({2, 1}, float32, {2, -1});
  const TensorSpec spec{{2, 3}, float32};
  check_values(evaluate1([](T t) { return t[0] + t[1]; }, {a, b}), spec, {11, 22, 33, 14, 25, 36});
  check_values(evaluate1([](T t) { return t[1] - t[0]; }, {a, b}), spec, {9, 18, 27, 6, 15, 24});
  check_values(evaluate1([](T t) { return t[0] * t[1]; }, {a, c}), spec, {2, 4, 6, -4, -5, -6});
  check_values(evaluate1([](T t) { return t[0] / t[1]; }, {a, c}), spec, {0.5, 1, 1.5, -4, -5, -6});
  check_values(evaluate1([](T t) { return ops::maximum(t[0], t[1]); }, {a, c}), spec,
               {2, 2, 3, 4, 5, 6});
  // (2, 1) against (3,) gives (2, 3).
  check_values(evaluate1([](T t) { return t[0] + t[1]; }, {c, b}), spec, {12, 22, 32, 9, 19, 29});
}

TEST_CASE("float32 division follows IEEE: x/0 is infinite, 0/0 NaN") {
  const auto a = tensor({3}, float32, {1, -1, 0});
  const auto z = tensor({}, float32, {0});
  check_values(evaluate1([](T t) { return t[0] / t[1]; }, {a, z}), {{3}, float32},
               {inf, -inf, NAN});
}

TEST_CASE("int32 arithmetic; division truncates toward zero and x/0 is 0") {
  const auto a = tensor({6}, int32, {7, -7, 7, -7, 5, 0});
  const auto b = tensor({6}, int32, {2, 2, -2, -2, 0, 0});
  const TensorSpec spec{{6}, int32};
  check_values(evaluate1([](T t) { return t[0] / t[1]; }, {a, b}), spec, {3, -3, -3, 3, 0, 0});
  check_values(evaluate1([](T t) { return t[0] + t[1]; }, {a, b}), spec, {9, -5, 5, -9, 5, 0});
  check_values(evaluate1([](T t) { return t[0] - t[1]; }, {a, b}), spec, {5, -9, 9, -5, 5, 0});
  check_values(evaluate1([](T t) { return t[0] * t[1]; }, {a, b}), spec, {14, -14, -14, 14, 0, 0});
  check_values(evaluate1([](T t) { return ops::maximum(t[0], t[1]); }, {a, b}), spec,
               {7, 2, 7, -2, 5, 0});
}

TEST_CASE("int32 arithmetic wraps around on overflow") {
  const auto a = tensor({3}, int32, {2147483647, -2147483647 - 1.0, 65536});
  const auto b = tensor({3}, int32, {1, 1, 65537});
  const TensorSpec spec{{3}, int32};
  // 65536 * 65537 = 2^32 + 2^16, which wraps to 2^16.
  check_values(evaluate1([](T t) { return t[0] + t[1]; }, {a, b}), spec,
               {-2147483648.0, -2147483647, 131073}, 0);
  check_values(evaluate1([](T t) { return t[0] * t[1]; }, {a, b}), spec,
               {2147483647, -2147483648.0, 65536}, 0);
  check_values(evaluate1([](T t) { return t[0] - t[1]; }, {b, a}), spec,
               {-2147483646, -2147483647, 1}, 0);
}

TEST_CASE("float16 arithmetic rounds each result to float16") {
  const auto a = tensor({3}, float16, {2048, 0.1, 1});
  const auto b = tensor({3}, float16, {1, 0.2, 3});
  // 2049 is not a float16 (ulp 2 above 2048): ties to even give 2048.
  check_values(evaluate1([](T t) { return t[0] + t[1]; }, {a, b}), {{3}, float16},
               {2048,
                static_cast<double>(static_cast<half>(static_cast<double>(half(0.1)) +
                                                      static_cast<double>(half(0.2)))),
                4},
               0);
  check_values(evaluate1([](T t) { return t[0] / t[1]; }, {a, b}), {{3}, float16},
               {2048,
                static_cast<double>(static_cast<half>(static_cast<double>(half(0.1)) /
                                                      static_cast<double>(half(0.2)))),
                static_cast<double>(half(1.0 / 3.0))},
               0);
}

TEST_CASE("pow follows std::pow, NaN included") {
  const auto a = tensor({5}, float32, {2, 9, -8, -8, 0});
  const auto e = tensor({5}, float32, {10, 0.5, 2, 1.0 / 3.0, -1});
  check_values(evaluate1([](T t) { return ops::pow(t[0], t[1]); }, {a, e}), {{5}, float32},
               {1024, 3, 64, NAN, inf});
  check_values(evaluate1([](T t) { return ops::pow(t[0], 2.0); }, {a}), {{5}, float32},
               {4, 81, 64, 64, 0});
}

TEST_CASE("maximum propagates NaN from either side") {
  const auto a = tensor({3}, float32, {NAN, 1, 2});
  const auto b = tensor({3}, float32, {0, NAN, 1});
  check_values(evaluate1([](T t) { return ops::maximum(t[0], t[1]); }, {a, b}), {{3}, float32},
               {NAN, NAN, 2});
}

TEST_CASE("comparisons and logic give bool") {
  const auto a = tensor({4}, float32, {1, 2, 3, NAN});
  const auto b = tensor({}, float32, {2});
  check_values(evaluate1([](T t) { return ops::equal(t[0], t[1]); }, {a, b}), {{4}, bool_},
               {0, 1, 0, 0});
  check_values(evaluate1([](T t) { return ops::greater(t[0], t[1]); }, {a, b}), {{4}, bool_},
               {0, 0, 1, 0});
  const auto i = tensor({3}, int32, {-1, 4, 4});
  const auto j = tensor({3}, int32, {-2, 4, 5});
  check_values(evaluate1([](T t) { return ops::greater(t[0], t[1]); }, {i, j}), {{3}, bool_},
               {1, 0, 0});
  check_values(evaluate1([](T t) { return ops::equal(t[0], t[1]); }, {i, j}), {{3}, bool_},
               {0, 1, 0});
  const auto p = tensor({2, 1}, bool_, {1, 0});
  const auto q = tensor({2}, bool_, {1, 0});
  check_values(evaluate1([](T t) { return ops::logical_and(t[0], t[1]); }, {p, q}), {{2, 2}, bool_},
               {1, 0, 0, 0});
  check_values(evaluate1([](T t) { return ops::logical_or(t[0], t[1]); }, {p, q}), {{2, 2}, bool_},
               {1, 1, 1, 0});
  check_values(evaluate1([](T t) { return ops::logical_not(t[0]); }, {q}), {{2}, bool_}, {0, 1});
}

TEST_CASE("where selects element-wise with three-way broadcasting") {
  const auto c = tensor({2, 1}, bool_, {1, 0});
  const auto a = tensor({3}, int32, {1, 2, 3});
  const auto b = tensor({}, int32, {-1});
  check_values(evaluate1([](T t) { return ops::where(t[0], t[1], t[2]); }, {c, a, b}),
               {{2, 3}, int32}, {1, 2, 3, -1, -1, -1});
}

TEST_CASE("cast: floats round to nearest, integers truncate toward zero, bool is x != 0") {
  const auto x = tensor({6}, float32, {2.7, -2.7, 0.5, -0.0, 65519, 1e-8});
  check_values(evaluate1([](T t) { return ops::cast(t[0], int32); }, {x}), {{6}, int32},
               {2, -2, 0, 0, 65519, 0});
  check_values(evaluate1([](T t) { return ops::cast(t[0], bool_); }, {x}), {{6}, bool_},
               {1, 1, 1, 0, 1, 1});
  // 65519 rounds to 65504, the largest float16; 2.7 to the nearest float16 2.69921875.
  check_values(evaluate1([](T t) { return ops::cast(t[0], float16); }, {x}), {{6}, float16},
               {2.69921875, -2.69921875, 0.5, 0, 65504, 0}, 1e-7);
  const auto i = tensor({3}, int32, {-3, 0, 16777217});
  check_values(evaluate1([](T t) { return ops::cast(t[0], float32); }, {i}), {{3}, float32},
               {-3, 0, 16777216}, 0);
  check_values(evaluate1([](T t) { return ops::cast(t[0], bool_); }, {i}), {{3}, bool_}, {1, 0, 1});
  const auto b = tensor({2}, bool_, {1, 0});
  check_values(evaluate1([](T t) { return ops::cast(t[0], float32); }, {b}), {{2}, float32},
               {1, 0});
}

TEST_CASE("identity and detach copy every byte") {
  const auto x = tensor({2, 2}, float16, {1.5, -0.25, NAN, 7});
  CHECK(evaluate1([](T t) { return ops::identity(t[0]); }, {x}) == x);
  CHECK(evaluate1([](T t) { return ops::detach(t[0]); }, {x}) == x);
}

TEST_CASE("erf, sin, cos, sign, clip, minimum and the comparisons: specs and errors") {
  ScratchGraph s;
  const Tensor f = s.input({2, 3});
  const Tensor i = s.input({2, 3}, int32);
  const Tensor b = s.input({2, 3}, bool_);
  for (const Tensor& t : {ops::erf(f), ops::sin(f), ops::cos(f), ops::sign(f), ops::clip(f, -1, 1)})
    CHECK(t.spec() == f.spec());
  CHECK(ops::sign(i).dtype() == int32);
  CHECK(ops::minimum(i, i).dtype() == int32);
  for (const Tensor& t : {ops::not_equal(f, f), ops::less(f, f), ops::less_equal(i, i),
                          ops::greater_equal(f, f), ops::not_equal(b, b)})
    CHECK(t.spec() == TensorSpec{{2, 3}, bool_});
  CHECK_THROWS_WITH_AS(ops::erf(i), doctest::Contains("Erf: expected a float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::sign(b),
                       doctest::Contains("Sign: expected a float32, float16 or int32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::clip(i, 0, 1), doctest::Contains("Clip: expected a float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::clip(f, 2, 1),
                       doctest::Contains("Clip: the lower bound 2.000000 must not exceed the upper "
                                         "bound 1.000000"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::less(b, b), doctest::Contains("Less: cannot order bool tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::minimum(b, b), doctest::Contains("Min: arithmetic on bool tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::greater_equal(f, i),
                       doctest::Contains("GreaterOrEqual: operands must have the same dtype"),
                       DTypeError);
}

TEST_CASE("element-wise errors name the op and the operands") {
  ScratchGraph s;
  const Tensor f = s.input({2, 3});
  const Tensor i = s.input({2, 3}, int32);
  const Tensor b = s.input({2, 3}, bool_);
  CHECK_THROWS_WITH_AS(
      ops::exp(i), doctest::Contains("Exp: expected a float32 or float16 tensor, got"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::gelu(b), doctest::Contains("Gelu: expected a float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::gelu_grad(i, i),
                       doctest::Contains("GeluGrad: expected a float32 or float16"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::gelu_grad(f, s.input({2, 3}, float16)),
                       doctest::Contains("GeluGrad: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::gelu_grad(f, s.input({3})),
                       doctest::Contains("must have the shape of the input"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::tanh_grad(b, b),
                       doctest::Contains("TanhGrad: expected a float32 or float16"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::tanh_grad(f, s.input({2, 3}, float16)),
                       doctest::Contains("TanhGrad: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::tanh_grad(f, s.input({3, 2})),
                       doctest::Contains("TanhGrad: the gradient"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::negate(b),
                       doctest::Contains("Neg: expected a float32, float16 or int32 tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::isnan(i), doctest::Contains("IsNaN: expected a float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::isinf(i), doctest::Contains("IsInf: expected a float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::isfinite(b),
                       doctest::Contains("IsFinite: expected a float32 or float16"), DTypeError);
  for (auto op : {ops::floor, ops::ceil, ops::log2, ops::swish})
    CHECK_THROWS_AS(op(i), DTypeError);
  CHECK_THROWS_WITH_AS(ops::floor(i), doctest::Contains("Floor: expected a float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::logical_not(f), doctest::Contains("Not: the operand must be bool"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(f + i, doctest::Contains("Add: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::add(b, b), doctest::Contains("Add: arithmetic on bool tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(f * s.input({2, 4}),
                       doctest::Contains("Mul: shapes (2, 3) and (2, 4) do not broadcast"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::pow(i, i), doctest::Contains("Pow: expected a float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::greater(b, b), doctest::Contains("Greater: cannot order bool"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::logical_and(f, b),
                       doctest::Contains("And: the left operand must be bool"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::logical_or(b, f),
                       doctest::Contains("Or: the right operand must be bool"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::where(f, f, f), doctest::Contains("Where: the condition must be bool"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::where(b, f, i), doctest::Contains("Where: operands must have the same"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::where(b, f, s.input({4})),
                       doctest::Contains("Where: shapes (2, 3) and (4,) do not broadcast"),
                       ShapeError);
}

namespace test_elementwise_inplace {
struct InplaceCase {
  const char* name;
  Tensor (*inplace)(const Tensor&);
  OpKind kind;
  V expected; ///< the closed form at x = (-1.5, 0, 0.5, 2), rounded to 7 places
};
const InplaceCase inplace_cases[] = {
    {"ReluInplace", ops::relu_, OpKind::ReluInplace, {0, 0, 0.5, 2}},
    {"GeluInplace", ops::gelu_, OpKind::GeluInplace, {-0.1004284, 0, 0.345714, 1.9545977}},
    {"GeluErfInplace",
     ops::geluerf_,
     OpKind::GeluErfInplace,
     {-0.1002108, 0, 0.3457312, 1.9544997}},
    {"ExpInplace", ops::exp_, OpKind::ExpInplace, {0.2231302, 1, 1.6487213, 7.3890561}},
    {"SwishInplace", ops::swish_, OpKind::SwishInplace, {-0.2736383, 0, 0.3112297, 1.7615942}},
};

TEST_CASE("relu_, gelu_, geluerf_, exp_, swish_: the input modified in place") {
  for (const auto& c : inplace_cases) {
    CAPTURE(c.name);
    for (DType d : {float32, float16}) {
      const auto x = tensor({4}, d, {-1.5, 0, 0.5, 2});
      // The result, and the input read again afterwards, both hold f(x).
      const auto out = evaluate(
          [&c](T t) {
            const Tensor y = c.inplace(t[0]);
            CHECK(y.producer()->kind() == c.kind);
            CHECK(y.spec() == t[0].spec());
            return T{y, ops::identity(t[0])};
          },
          {x});
      // float16: the closed form rounded once, within half a float16 ulp.
      const double tol = d == float16 ? 1e-3 : 1e-6;
      check_values(out[0], {{4}, d}, c.expected, tol);
      check_values(out[1], {{4}, d}, c.expected, tol);
    }
    {
      ScratchGraph s;
      CHECK_THROWS_WITH_AS(
          c.inplace(s.input({2}, int32)),
          doctest::Contains(
              (std::string(c.name) + ": expected a float32 or float16 tensor, got").c_str()),
          DTypeError);
    }
    // Not differentiable, as PopART's in-place ops: autodiff names the op.
    Ir ir;
    Graph g =
        ir.create_graph([&c](Tensor t) { return c.inplace(t * 1.0); }, TensorSpec{{2}, float32});
    CHECK_THROWS_WITH_AS(transforms::autodiff(g),
                         doctest::Contains(("autodiff: op " + std::string(c.name) + ".").c_str()),
                         GraphError);
  }
}

TEST_CASE("detach_ and rename copy every byte; rename names its copy") {
  const auto x = tensor({3}, float16, {0.1, -2, 65504});
  CHECK(evaluate1([](T t) { return ops::detach_(t[0]); }, {x}) == x);
  CHECK(evaluate1([](T t) { return ops::rename(t[0], "renamed"); }, {x}) == x);
  ScratchGraph s;
  const Tensor f = s.input({2});
  CHECK(ops::detach_(f).spec() == f.spec());
  CHECK(is_view(ops::detach_(f).producer()->kind()));
  const Tensor r = ops::rename(f, "logits");
  CHECK(r.name() == "logits");
  CHECK(r.producer()->kind() == OpKind::Identity);
}
} // namespace test_elementwise_inplace
