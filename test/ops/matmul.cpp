// MatMul: NumPy matmul shapes (1-d promotion, batch broadcasting), values through the reference
// evaluator, and every error.
#include "op_test.hpp"

using namespace pxl;
using namespace pxl::testing;
using V = std::vector<double>;
using T = std::vector<Tensor>;

TEST_CASE("matmul infers NumPy's output shape") {
  ScratchGraph s;
  auto mm = [&](Shape a, Shape b) { return ops::matmul(s.input(a), s.input(b)).shape(); };
  CHECK(mm({2, 3}, {3, 4}) == Shape{2, 4});
  CHECK(mm({3}, {3, 4}) == Shape{4});
  CHECK(mm({2, 3}, {3}) == Shape{2});
  CHECK(mm({3}, {3}) == Shape{});
  CHECK(mm({5, 2, 3}, {3, 4}) == Shape{5, 2, 4});
  CHECK(mm({3}, {5, 3, 4}) == Shape{5, 4});
  CHECK(mm({5, 1, 2, 3}, {4, 3, 2}) == Shape{5, 4, 2, 2});
  CHECK(ops::matmul(s.input({2, 3}, float16), s.input({3, 1}, float16)).spec() ==
        TensorSpec{{2, 1}, float16});
  CHECK(ops::matmul(s.input({1, 1}), s.input({1, 1})).producer()->kind() == OpKind::MatMul);
}

TEST_CASE("matmul of matrices") {
  // [[1, 2, 3], [4, 5, 6]] @ [[1, 0], [0, 1], [2, -1]] = [[7, -1], [16, -1]]
  const auto a = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  const auto b = tensor({3, 2}, float32, {1, 0, 0, 1, 2, -1});
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[1]); }, {a, b}), {{2, 2}, float32},
               {7, -1, 16, -1});
  // b^T a^T = (a b)^T
  const auto bt = tensor({2, 3}, float32, {1, 0, 2, 0, 1, -1});
  const auto at = tensor({3, 2}, float32, {1, 4, 2, 5, 3, 6});
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[1]); }, {bt, at}), {{2, 2}, float32},
               {7, 16, -1, -1});
}

TEST_CASE("matmul with 1-d operands drops the promoted axis") {
  const auto v = tensor({3}, float32, {1, -1, 2});
  const auto m = tensor({3, 2}, float32, {1, 2, 3, 4, 5, 6});
  const auto m2 = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[1]); }, {v, m}), {{2}, float32},
               {8, 10});
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[1]); }, {m2, v}), {{2}, float32},
               {5, 11});
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[1]); }, {v, v}), {{}, float32}, {6});
}

TEST_CASE("matmul broadcasts batch axes") {
  // a: batch (2, 1) of row vectors [1, 2] and [3, 4]; b: batch (3,) of column vectors [1, 0],
  // [0, 1], [1, 1]. The batch axes broadcast to (2, 3).
  const auto a = tensor({2, 1, 1, 2}, float32, {1, 2, 3, 4});
  const auto b = tensor({3, 2, 1}, float32, {1, 0, 0, 1, 1, 1});
  // out[i][j] = a_i . b_j: rows [1, 2, 3] and [3, 4, 7]
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[1]); }, {a, b}),
               {{2, 3, 1, 1}, float32}, {1, 2, 3, 3, 4, 7});
  // One matrix against a batch: the matrix repeats.
  const auto id = tensor({2, 2}, float32, {0, 1, 1, 0}); // swaps columns
  const auto batch = tensor({2, 1, 2}, float32, {1, 2, 3, 4});
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[1]); }, {batch, id}),
               {{2, 1, 2}, float32}, {2, 1, 4, 3});
}

TEST_CASE("matmul in float16 accumulates exactly and rounds once") {
  // 2048 + 1 + 1 = 2050 is a float16, but 2048 + 1 rounds back to 2048 (the ulp there is 2):
  // the reference accumulates in double and rounds the result once.
  const auto a = tensor({1, 3}, float16, {2048, 1, 1});
  const auto b = tensor({3, 1}, float16, {1, 1, 1});
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[1]); }, {a, b}), {{1, 1}, float16},
               {2050}, 0);
  const auto c = tensor({2, 2}, float16, {0.5, 0.25, -1, 2});
  check_values(evaluate1([](T t) { return ops::matmul(t[0], t[0]); }, {c}), {{2, 2}, float16},
               {0, 0.625, -2.5, 3.75}, 0);
}

TEST_CASE("matmul errors name the operands") {
  ScratchGraph s;
  CHECK_THROWS_WITH_AS(ops::matmul(s.input({2, 3}, int32), s.input({3, 2}, int32)),
                       doctest::Contains("MatMul: expected a float32 or float16 tensor"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::matmul(s.input({2, 3}), s.input({3, 2}, float16)),
                       doctest::Contains("MatMul: operands must have the same dtype"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::matmul(s.input({}), s.input({3})),
                       doctest::Contains("MatMul: operands must have rank >= 1"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::matmul(s.input({2, 3}), s.input({4, 2})),
                       doctest::Contains("MatMul: contraction dimensions differ"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::matmul(s.input({3}), s.input({2})),
                       doctest::Contains("has 3 columns but"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::matmul(s.input({2, 1, 3}), s.input({3, 3, 1})),
                       doctest::Contains("MatMul (batch axes): shapes (2,) and (3,) do not "
                                         "broadcast"),
                       ShapeError);
}
