// Dropout, shaped dropout and the random generators: pure functions of the seed and the element
// index.
#include "harness.hpp"

#include "core/random.hpp"
#include "pxl/ops/nn.hpp"
#include "pxl/ops/random.hpp"

#include <cmath>

using namespace pxl;
using namespace pxl::testing;

TEST_CASE("dropout keeps element i iff random_uniform01(seed, i) >= p, scaled by 1/(1-p)") {
  const auto x = HostTensor::full({13, 7}, float32, 2.0);
  const auto y = check_kernel([](Tensor t, Tensor s) { return ops::dropout(t, s, 0.25); },
                              {x, seed(11, 22)})[0];
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const bool keep = pxl::detail::random_uniform01(11, 22, static_cast<std::uint64_t>(i)) >= 0.25f;
    CHECK(y.item(i) == (keep ? static_cast<double>(static_cast<float>(2.0 / 0.75)) : 0.0));
    kept += keep;
  }
  CHECK(kept > 0);
  CHECK(kept < y.nelms());
  check_kernel([](Tensor t, Tensor s) { return ops::dropout(t, s, 0.5); },
               {random_tensor({7, 3}, float16), seed(1, 2)});
}

TEST_CASE("shaped_dropout draws one decision per mask element, broadcast to the input") {
  const auto x = HostTensor::full({4, 9, 5}, float32, 2.0);
  const auto y = check_kernel(
      [](Tensor t, Tensor s) {
        return ops::shaped_dropout(t, s, {4, 1, 5}, 0.4);
      },
      {x, seed(3, 8)})[0];
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < y.nelms(); ++i) {
    const auto m = static_cast<std::uint64_t>(i / 45 * 5 + i % 5); // (a, b, c) -> (a, 0, c)
    const bool keep = pxl::detail::random_uniform01(3, 8, m) >= 0.4;
    CHECK(y.item(i) == (keep ? static_cast<double>(static_cast<float>(2.0 / 0.6)) : 0.0));
    kept += keep;
  }
  CHECK(kept > 0);
  CHECK(kept < y.nelms());
  for (const Shape& shape : {Shape{}, Shape{9, 1}, Shape{1, 9, 5}, Shape{4, 9, 5}, Shape{5}})
    for (DType d : {float32, float16}) {
      CAPTURE(d);
      check_kernel([shape](Tensor t, Tensor s) { return ops::shaped_dropout(t, s, shape, 0.5); },
                   {random_tensor({4, 9, 5}, d), seed(1, 2)});
    }
}

TEST_CASE("random_uniform and random_normal match the reference and their definition") {
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    const auto u = check_kernel(
        [d](Tensor s) {
          return ops::random_uniform(s, {13, 7}, -1.0, 3.0, d);
        },
        {seed(5, 6)})[0];
    check_kernel([d](Tensor s) { return ops::random_normal(s, {7}, 1.0, 0.5, d); }, {seed(5, 6)});
    if (d == float32)
      for (std::int64_t i = 0; i < u.nelms(); ++i)
        CHECK(u.item(i) == static_cast<float>(
                               -1.0 + 4.0 * pxl::detail::random_uniform01(5, 6, std::uint64_t(i))));
  }
  const auto z = check_kernel([](Tensor s) { return ops::random_normal(s, {3}); }, {seed(7, 8)})[0];
  CHECK(z.item(2) == pxl::detail::random_standard_normal(7, 8, 2));
}

TEST_CASE("split_random_seed") {
  const auto outs =
      check_kernel([](Tensor s) { return ops::split_random_seed(s, 3); }, {seed(9, 10)});
  REQUIRE(outs.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(outs[k].data<std::uint32_t>()[0] == pxl::detail::split_seed_word(9, 10, k, 0));
    CHECK(outs[k].data<std::uint32_t>()[1] == pxl::detail::split_seed_word(9, 10, k, 1));
  }
}

TEST_CASE("random_uniform with low == high and random_normal with stddev 0 are constants") {
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    CHECK(check_kernel(
              [d](Tensor s) {
                return ops::random_uniform(s, {13, 7}, 1.5, 1.5, d);
              },
              {seed(3, 4)})[0] == HostTensor::full({13, 7}, d, 1.5));
    CHECK(check_kernel(
              [d](Tensor s) {
                return ops::random_normal(s, {13, 7}, -2.0, 0.0, d);
              },
              {seed(3, 4)})[0] == HostTensor::full({13, 7}, d, -2.0));
  }
}
