// float16 stochastic rounding (SessionOptions::stochastic_rounding): updates far below a
// weight's spacing move it as float32 would on average, where rounding to nearest loses them;
// the bits are reproducible from the seed and the same for any worker count.
#include "helpers.hpp"

#include "emu/kernels/stochastic_rounding.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace pxl;

namespace test_stochastic_rounding {

constexpr std::int64_t weights = 1000;

/// 1000 float16 weights of 1.0, each given +1e-4 (`scaled_add_` of ones) `updates` times:
/// as many runs of one update, or one run of a device loop of them (`loop`).
HostTensor updated(const SessionOptions& options, int updates, bool loop) {
  Ir ir;
  Tensor w;
  {
    auto in_main = ir.main_graph().scope();
    w = variable(HostTensor::full({weights}, float16, 1.0), "w");
    const Tensor ones = constant(HostTensor::full({weights}, float16, 1.0), "ones");
    if (loop) {
      Graph body = ir.create_empty_graph("update");
      {
        auto in_body = body.scope();
        const Tensor wi = graph_input({weights}, float16, "w", /*by_ref=*/true);
        const Tensor g = graph_input({weights}, float16, "g");
        ops::scaled_add_(wi, g, {.b = 1e-4});
      }
      ops::repeat(body, updates, {w, ones});
    } else {
      ops::scaled_add_(w, ones, {.b = 1e-4});
    }
  }
  Session s(ir, "ipu_model", options);
  auto attached = s.attach();
  for (int r = 0; r < (loop ? 1 : updates); ++r)
    s.run({});
  return s.get_tensor_data(w);
}

double mean(const HostTensor& t) {
  const HostTensor f = t.astype(float32);
  double sum = 0;
  for (const float v : f.data<float>())
    sum += v;
  return sum / static_cast<double>(f.nelms());
}

} // namespace test_stochastic_rounding

using namespace test_stochastic_rounding;

TEST_CASE("Stochastic rounding moves a float16 weight by updates below its spacing, on average") {
  // Near 1.0 halves are 2^-10 (~9.8e-4) apart: rounding to nearest drops every +1e-4, so the
  // weights stay 1.0. Stochastically each update steps up with probability ~0.1, and after
  // 1000 updates the mean is 1.1 (float32's result): each weight's count of steps is about
  // Binomial(1000, 0.1), a standard deviation of 9.3e-3 per weight and 3e-4 over the mean of
  // 1000, so 2.5e-3 is 8 of them.
  const HostTensor nearest = updated({.workers = 1}, 1000, false);
  CHECK(nearest == HostTensor::full({weights}, float16, 1.0));
  for (const bool loop : {false, true}) {
    CAPTURE(loop);
    const HostTensor sr = updated(
        {.workers = 1, .stochastic_rounding = true, .stochastic_rounding_seed = 7}, 1000, loop);
    CHECK(mean(sr) == doctest::Approx(1.1).epsilon(2.5e-3 / 1.1));
    // Every weight moved, and by whole spacings around 0.1.
    const HostTensor f = sr.astype(float32);
    for (const float v : f.data<float>()) {
      REQUIRE(v > 1.05f);
      REQUIRE(v < 1.15f);
    }
  }
}

TEST_CASE("Stochastic rounding is reproducible from its seed and bitwise alike on 1-4 workers") {
  const SessionOptions base{.stochastic_rounding = true, .stochastic_rounding_seed = 11};
  SessionOptions one = base;
  one.workers = 1;
  const HostTensor first = updated(one, 50, false);
  for (unsigned workers = 1; workers <= 4; ++workers) {
    CAPTURE(workers);
    SessionOptions o = base;
    o.workers = workers;
    o.oversubscribe = true;
    CHECK(updated(o, 50, false) == first);
  }
  // Another seed draws other bits.
  SessionOptions other = one;
  other.stochastic_rounding_seed = 12;
  CHECK_FALSE(updated(other, 50, false) == first);
}

TEST_CASE("round_half_stochastic: the two neighbours, in proportion; halves, NaN and overflow "
          "round to nearest") {
  using emu::detail::element_bits;
  using emu::detail::round_half_stochastic;
  // Each value a quarter of the way from the lower half to the upper in magnitude (normal
  // halves, where the spacing at 1 is 2^-10, and subnormal ones, 2^-24 apart), either sign:
  // away from zero a quarter of the time.
  for (const double lower : {1.0, -1.0, 0x1p-20, -0x1p-20}) {
    const double spacing = std::abs(lower) >= 0x1p-14 ? std::abs(lower) * 0x1p-10 : 0x1p-24;
    const double upper = lower + std::copysign(spacing, lower);
    const double d = lower + std::copysign(spacing / 4, lower);
    CAPTURE(d);
    int up = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      const auto f =
          static_cast<double>(static_cast<float>(round_half_stochastic(d, element_bits(12345, i))));
      REQUIRE((f == lower || f == upper));
      up += f == upper;
    }
    // Binomial(20000, 0.25): standard deviation 61; 400 is over 6 of them.
    CHECK(std::abs(up - n / 4) < 400);
    // The smallest bits keep the lower magnitude, the largest take the upper.
    CHECK(static_cast<double>(static_cast<float>(round_half_stochastic(d, 0))) == lower);
    CHECK(static_cast<double>(static_cast<float>(round_half_stochastic(d, ~std::uint32_t{0}))) ==
          upper);
  }
  // Below the smallest subnormal: 0 or 2^-24, the sign kept.
  CHECK(round_half_stochastic(-0x1p-27, 0).bits() == 0x8000u);
  CHECK(round_half_stochastic(-0x1p-27, ~std::uint32_t{0}).bits() == 0x8001u);
  CHECK(static_cast<float>(round_half_stochastic(1.5, ~std::uint32_t{0})) == 1.5f);
  CHECK(std::isnan(static_cast<float>(round_half_stochastic(std::nan(""), 0))));
  CHECK(std::isinf(static_cast<float>(round_half_stochastic(1e6, 0))));
  // Between the largest half and infinity's threshold: to nearest (the largest half).
  CHECK(static_cast<float>(round_half_stochastic(65510.0, ~std::uint32_t{0})) == 65504.0f);
  CHECK(static_cast<float>(round_half_stochastic(65504.0, ~std::uint32_t{0})) == 65504.0f);
}

TEST_CASE("stochastic_half_values: eight lanes at a time, bitwise stochastic_half_value") {
  using emu::detail::element_bits;
  using emu::detail::stochastic_half_value;
  // Every range: normal and subnormal halves, below the smallest subnormal, past the largest
  // half, on it, infinities, NaN, signed zeros; 1001 values, so the scalar tail runs too.
  std::vector<float> in;
  for (int i = 0; in.size() < 1001; ++i) {
    const double magnitude = std::ldexp(1.0 + (i % 97) / 97.0, i % 50 - 32);
    in.push_back(static_cast<float>(i % 2 ? -magnitude : magnitude));
    if (i % 100 == 0)
      for (const float special :
           {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 1e9f, std::numeric_limits<float>::infinity(),
            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
            0x1p-25f, 0x1p-14f})
        in.push_back(special);
  }
  in.resize(1001);
  std::vector<float> out(in.size());
  const std::uint32_t word = 0xc0ffee, index0 = 4000000000U; // the index wraps past 2^32
  emu::detail::stochastic_half_values(in.data(), out.data(), static_cast<std::int64_t>(in.size()),
                                      word, index0);
  for (std::size_t j = 0; j < in.size(); ++j) {
    CAPTURE(in[j]);
    const float expected =
        stochastic_half_value(in[j], element_bits(word, index0 + static_cast<std::uint32_t>(j)));
    REQUIRE(std::bit_cast<std::uint32_t>(out[j]) == std::bit_cast<std::uint32_t>(expected));
    // and it is a half's value
    REQUIRE((std::isnan(out[j]) || static_cast<float>(half(out[j])) == out[j]));
  }
}
