// MatMul through oneDNN: shapes, broadcasting of batch axes, float16, tiling and threads.
#include "harness.hpp"

#include "pxl/ops/matmul.hpp"

#include <algorithm>
#include <optional>

using namespace pxl;
using namespace pxl::testing;

namespace {
auto matmul = [](Tensor a, Tensor b) { return ops::matmul(a, b); };
}

TEST_CASE("matmul: hand-computed values") {
  const auto a = tensor({2, 3}, float32, {1, 2, 3, 4, 5, 6});
  const auto b = tensor({3, 2}, float32, {7, 8, 9, 10, 11, 12});
  check_values(check_kernel(matmul, {a, b})[0], {{2, 2}, float32}, {58, 64, 139, 154});
  const auto v = tensor({3}, float32, {1, 0, -1});
  check_values(check_kernel(matmul, {a, v})[0], {{2}, float32}, {-2, -2});
  check_values(check_kernel(matmul, {v, b})[0], {{2}, float32}, {-4, -4});
}

TEST_CASE("matmul matches the reference over shapes, batch broadcasting and dtypes") {
  // Positive operands keep the dot products free of cancellation, so float32 accumulation in
  // any order stays within 1e-6 of the double reference.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7, 13}, {13, 5}},     {{13}, {13, 7}},        {{7, 13}, {13}},
      {{130, 70}, {70, 300}}, {{3, 7, 5}, {5, 4}},    {{2, 1, 7, 5}, {3, 5, 13}},
      {{4, 5}, {2, 3, 5, 6}}, {{8, 784}, {784, 257}}, {{1, 1}, {1, 1}},
      {{100, 8}, {8, 300}},
  };
  for (DType d : {float32, float16})
    for (const auto& pair : shapes) {
      const auto& sa = pair.first;
      const auto& sb = pair.second;
      CAPTURE(d);
      CAPTURE(to_string(sa));
      CAPTURE(to_string(sb));
      const double tol = d == float32 ? 1e-6 : 0;
      check_kernel(matmul, {random_tensor(sa, d, 0, 1, 1), random_tensor(sb, d, 0, 1, 2)}, tol);
    }
}

TEST_CASE("matmul is bitwise identical when run on concurrent threads") {
  // float16 products of up to 8 rows take their own kernel, larger ones sgemm.
  for (const auto& [dtype, rows] : {std::pair{float32, 200}, std::pair{float16, 200},
                                    std::pair{float16, 8}, std::pair{float16, 3}}) {
    const DType d = dtype; // named copies: clang 14 lambdas (CAPTURE) cannot use bindings
    const std::int64_t m = rows;
    CAPTURE(d);
    CAPTURE(m);
    const auto c = make_case(
        matmul, {random_tensor({m, 300}, d, -1, 1, 1), random_tensor({300, 260}, d, -1, 1, 2)});
    const auto one = run_kernel(c, 1);
    for (unsigned w : {2u, 3u, 4u}) {
      CAPTURE(w);
      CHECK(run_kernel(c, w, true)[0] == one[0]);
    }
  }
}

TEST_CASE("matmul with an empty contraction axis gives zeros") {
  for (const DType d : {float32, float16})
    for (const std::int64_t m : {3, 30}) {
      CAPTURE(d);
      CAPTURE(m);
      const auto c = make_case(matmul, {HostTensor({m, 0}, d), HostTensor({0, 20}, d)});
      const auto out = check_kernel(c)[0];
      check_values(out, {{m, 20}, d}, std::vector<double>(static_cast<std::size_t>(m * 20), 0.0));
    }
}

TEST_CASE("matmul with float16 partials is bitwise the reference's accumulation on 1-4 workers") {
  // Runs of 16 products summed in float, then added into a float16 accumulator: contractions
  // shorter than, equal to and past one run, batches, 1-d operands and a float32 result.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7, 15}, {15, 5}},
      {{7, 16}, {16, 5}},
      {{7, 17}, {17, 5}},
      {{3, 7, 48}, {48, 4}},
      {{300}, {300, 9}},
      {{8, 5}, {5, 260}},
      {{2, 1, 7, 40}, {3, 40, 6}},
      // more rows and columns than a tile has: 2 x 2 tiles
      {{70, 100}, {100, 140}},
  };
  for (const DType out : {float16, float32})
    for (const auto& pair : shapes) {
      const Shape sa = pair.first, sb = pair.second;
      CAPTURE(out);
      CAPTURE(to_string(sa));
      CAPTURE(to_string(sb));
      const ops::MatMulOptions o{.partials_type = float16, .output_type = out};
      check_kernel([o](Tensor a, Tensor b) { return ops::matmul(a, b, o); },
                   {random_tensor(sa, float16, -1, 1, 3), random_tensor(sb, float16, -1, 1, 4)}, 0);
    }
}

TEST_CASE("matmul partials and output type: closed forms") {
  // 16 products of 128 make 2048; each later run of 16 products of 1/16 adds 1, and
  // float16's spacing at 2048 is 2. A float16 accumulator rounds 2048 + 1 back to 2048 (ties
  // to even) at every run; float32 partials keep the sum and round it once.
  const auto run = [](std::int64_t k, std::optional<DType> partials, std::optional<DType> out) {
    std::vector<double> av(static_cast<std::size_t>(k), 0.0625);
    std::fill_n(av.begin(), 16, 128.0);
    const ops::MatMulOptions o{.partials_type = partials, .output_type = out};
    return check_kernel([o](Tensor a, Tensor b) { return ops::matmul(a, b, o); },
                        {tensor({1, k}, float16, av),
                         tensor({k, 1}, float16, std::vector<double>(std::size_t(k), 1.0))})[0];
  };
  check_values(run(48, std::nullopt, std::nullopt), {{1, 1}, float16}, {2050}, 0);
  check_values(run(48, float16, std::nullopt), {{1, 1}, float16}, {2048}, 0);
  check_values(run(48, float16, float32), {{1, 1}, float32}, {2048}, 0);
  check_values(run(32, float32, float32), {{1, 1}, float32}, {2049}, 0);
  check_values(run(32, float32, float16), {{1, 1}, float16}, {2048}, 0);
}
