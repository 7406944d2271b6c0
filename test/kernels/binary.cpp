// Element-wise binary kernels with broadcasting, comparisons, logic and where.
#include "harness.hpp"

#include <functional>
#include <limits>

using namespace pxl;
using namespace pxl::testing;

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

TEST_CASE("where broadcasts all three operands for every dtype") {
  for (DType d : {float32, float16, int32, bool_}) {
    CAPTURE(d);
    const auto cond = random_tensor({13, 1}, float32, -1, 1, 3);
    HostTensor c(cond.shape(), bool_);
    for (std::int64_t i = 0; i < c.nelms(); ++i)
      ref::store(c, i, cond.item(i) > 0);
    check_kernel([](Tensor k, Tensor x, Tensor y) { return ops::where(k, x, y); },
                 {c, random_tensor({1, 7}, d, -5, 5, 4), random_tensor({13, 7}, d, -5, 5, 5)});
  }
}
