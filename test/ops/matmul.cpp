// MatMul: NumPy matmul shapes (1-d promotion, batch broadcasting), values through the reference
// evaluator, and every error.
#include "op_test.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/transforms/autodiff.hpp"

#include <cmath>

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

TEST_CASE("matmul options: partials type, output type and memory proportion on the op") {
  ScratchGraph s;
  const auto attrs = [](const Tensor& y) { return y.producer()->attrs<OpKind::MatMul>(); };
  const Tensor a = s.input({2, 3}, float16), b = s.input({3, 4}, float16);
  CHECK(attrs(ops::matmul(a, b)) == MatMulAttrs{float32, 0.6});
  const Tensor y = ops::matmul(
      a, b,
      {.partials_type = float16, .output_type = float32, .available_memory_proportion = 0.15});
  CHECK(y.spec() == TensorSpec{{2, 4}, float32});
  CHECK(attrs(y) == MatMulAttrs{float16, 0.15});
  // The Ir's default reaches float16 products made from now on, never float32 ones, and an
  // op's own option wins.
  s.ir.set_matmul_defaults({.partials_type = float16, .available_memory_proportion = 0.25});
  CHECK(s.ir.matmul_defaults() == MatMulAttrs{float16, 0.25});
  CHECK(attrs(ops::matmul(a, b)) == MatMulAttrs{float16, 0.25});
  CHECK(attrs(ops::matmul(a, b, {.partials_type = float32})).partials_type == float32);
  CHECK(attrs(ops::matmul(s.input({2, 3}), s.input({3, 4}))) == MatMulAttrs{float32, 0.25});
}

TEST_CASE("matmul's gradients accumulate as the product did, in the operands' dtype") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph fwd = ir.create_graph(
      "f",
      [](Tensor x, Tensor w) {
        return ops::matmul(
            x, w,
            {.partials_type = float16, .output_type = float32, .available_memory_proportion = 0.3});
      },
      TensorSpec{{2, 3}, float16}, TensorSpec{{3, 4}, float16});
  const auto info = transforms::autodiff(fwd);
  std::size_t matmuls = 0;
  for (const auto& op : info.graph().ops())
    if (op.kind() == OpKind::MatMul) {
      ++matmuls;
      CHECK(op.attrs<OpKind::MatMul>() == MatMulAttrs{float16, 0.3});
      CHECK(op.output(0).dtype() == float16);
    }
  CHECK(matmuls == 2);
  const auto outputs = info.graph().outputs();
  REQUIRE(outputs.size() == 2);
  CHECK(outputs[0].spec() == TensorSpec{{2, 3}, float16});
  CHECK(outputs[1].spec() == TensorSpec{{3, 4}, float16});
}

TEST_CASE("matmul option errors name the option, what was expected and what was found") {
  ScratchGraph s;
  const Tensor h = s.input({2, 3}, float16), hb = s.input({3, 2}, float16);
  const Tensor f = s.input({2, 3}), fb = s.input({3, 2});
  CHECK_THROWS_WITH_AS(ops::matmul(h, hb, {.partials_type = int32}),
                       doctest::Contains("partials_type must be float32 or float16, got int32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::matmul(f, fb, {.partials_type = float16}),
                       doctest::Contains("float16 partials need float16 operands"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::matmul(f, fb, {.output_type = float16}),
                       doctest::Contains("output_type must be the operands' dtype float32, got "
                                         "float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::matmul(h, hb, {.output_type = int32}),
                       doctest::Contains("output_type must be the operands' dtype float16 or "
                                         "float32, got int32"),
                       DTypeError);
  for (const double p : {0.0, -0.5, 1.5, std::nan("")}) {
    CAPTURE(p);
    CHECK_THROWS_WITH_AS(ops::matmul(f, fb, {.available_memory_proportion = p}),
                         doctest::Contains("available_memory_proportion must be in (0, 1]"),
                         ValueError);
  }
  CHECK_THROWS_WITH_AS(s.ir.set_matmul_defaults({.partials_type = bool_}),
                       doctest::Contains("expected partials_type float32 or float16, got bool"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(s.ir.set_matmul_defaults({.available_memory_proportion = 0}),
                       doctest::Contains("expected available_memory_proportion in (0, 1], got 0"),
                       ValueError);
}
