// float8 on the device: the pow2-scaled casts against the host conversions, the pow2-scaled
// products against their definition, the ops that move float8, and every error.
#include "op_test.hpp"

#include "pxl/core/fp8_utils.hpp"
#include "pxl/ops/conv.hpp"
#include "pxl/ops/matmul.hpp"
#include "pxl/pxl.hpp"

#include <cmath>
#include <string>

using namespace pxl;
using namespace pxl::testing;
using doctest::Contains;

namespace test_ops_float8 {

HostTensor scalar_i32(std::int32_t v) { return HostTensor(std::vector<std::int32_t>{v}, {}); }

/// Runs `build` (which returns one tensor from variables it makes) in a Session of `workers`
/// workers, with the int32 variable `scale` set to `s`; returns the result.
template <typename Build>
HostTensor run_scaled(Build build, std::int32_t s, unsigned workers) {
  Ir ir;
  DeviceToHostStream out;
  Tensor scale;
  {
    auto in_main = ir.main_graph().scope();
    scale = variable(scalar_i32(0), "log2_scale");
    const Tensor y = build(scale);
    out = d2h_stream(y.shape(), y.dtype(), "out");
    ops::host_store(out, y);
  }
  Session session(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  session.write_variable_data(scale, scalar_i32(s));
  auto attached = session.attach();
  return session.run().at(out);
}

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.spec() == b.spec() && std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin());
}

/// Float8 data of `shape` from small whole numbers and halves (`pattern`), which every product
/// and sum below holds exactly in float32 and float16.
HostTensor small_values(Shape shape, DType d, int salt) {
  HostTensor t(std::move(shape), float32);
  for (std::int64_t i = 0; i < t.nelms(); ++i)
    t.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(((i * 7 + salt) % 9) - 4) / 2;
  return host_pow2scale_cast_to_fp8(t, d);
}

} // namespace test_ops_float8

using test_ops_float8::run_scaled;
using test_ops_float8::same_bytes;
using test_ops_float8::scalar_i32;

TEST_CASE("pow2scale_cast_to_fp8 / _from_fp8 on the device give the host conversions' bytes, on "
          "1-4 workers") {
  // Values across both formats' ranges, their overflow, zeros, a NaN and ties.
  std::vector<float> xs;
  for (int i = -40; i <= 40; ++i)
    xs.push_back(std::ldexp(1.0f + static_cast<float>(i % 8) / 16.0f, i / 3) * (i % 2 ? -1 : 1));
  xs.push_back(1e9f);
  xs.push_back(-0.0f);
  xs.push_back(std::nanf(""));
  const HostTensor x32(xs, {static_cast<std::int64_t>(xs.size())});
  for (const DType src : {float32, float16})
    for (const DType d : {float8_143, float8_152})
      for (const int s : {-31, -3, 0, 2, 31}) {
        CAPTURE(name(src));
        CAPTURE(name(d));
        CAPTURE(s);
        const HostTensor x = x32.astype(src);
        const HostTensor want = host_pow2scale_cast_to_fp8(x, d, s);
        for (const unsigned workers : {1u, 2u, 3u, 4u}) {
          const HostTensor got = run_scaled(
              [&](const Tensor& scale) {
                return ops::pow2scale_cast_to_fp8(variable(x, "x"), scale, d);
              },
              s, workers);
          CHECK(same_bytes(got, want));
        }
        for (const DType to : {float32, float16}) {
          const HostTensor back_want = host_pow2scale_cast_from_fp8(want, to, -s);
          const HostTensor back = run_scaled(
              [&](const Tensor& scale) {
                return ops::pow2scale_cast_from_fp8(variable(want, "q"), ops::negate(scale), to);
              },
              s, 3);
          CHECK(same_bytes(back, back_want));
        }
      }
}

TEST_CASE("a log2_scale outside [-32, 32) stops the run with an error naming it") {
  const HostTensor x({1.0f, 2.0f}, {2});
  for (const int s : {-32, 31}) // the ends of the range
    CHECK_NOTHROW(run_scaled(
        [&](const Tensor& scale) {
          return ops::pow2scale_cast_to_fp8(variable(x, "x"), scale, float8_152);
        },
        s, 1));
  for (const int s : {-33, 32, 1000}) {
    CAPTURE(s);
    const std::string message = "log2_scale is " + std::to_string(s) + ", outside [-32, 32)";
    CHECK_THROWS_WITH(run_scaled(
                          [&](const Tensor& scale) {
                            return ops::pow2scale_cast_to_fp8(variable(x, "x"), scale, float8_143);
                          },
                          s, 2),
                      Contains(message.c_str()));
  }
  const HostTensor q = host_pow2scale_cast_to_fp8(x, float8_152);
  CHECK_THROWS_WITH(run_scaled(
                        [&](const Tensor& scale) {
                          return ops::matmul_pow2scaled(variable(q.reshaped({1, 2}), "a"),
                                                        variable(q.reshaped({2, 1}), "b"), scale);
                        },
                        40, 1),
                    Contains("log2_scale is 40, outside [-32, 32)"));
}

TEST_CASE("matmul_pow2scaled: the float8 product times 2^log2_scale, as float16") {
  using test_ops_float8::small_values;
  for (const DType da : {float8_143, float8_152})
    for (const DType db : {float8_143, float8_152})
      for (const int s : {-2, 0, 3}) {
        CAPTURE(name(da));
        CAPTURE(name(db));
        CAPTURE(s);
        const HostTensor a = small_values({2, 3, 5}, da, 1), b = small_values({5, 4}, db, 2);
        // The definition, in double: every value here is exact.
        HostTensor want({2, 3, 4}, float16);
        for (std::int64_t bt = 0; bt < 2; ++bt)
          for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = 0; j < 4; ++j) {
              double sum = 0;
              for (std::int64_t k = 0; k < 5; ++k)
                sum += a.item((bt * 3 + i) * 5 + k) * b.item(k * 4 + j);
              ref::store(want, (bt * 3 + i) * 4 + j, std::ldexp(sum, s));
            }
        for (const unsigned workers : {1u, 4u}) {
          const HostTensor got = run_scaled(
              [&](const Tensor& scale) {
                return ops::matmul_pow2scaled(variable(a, "a"), variable(b, "b"), scale);
              },
              s, workers);
          CHECK(same_bytes(got, want));
        }
      }
  // Rounded once to float16: 1 + 2^-12 (a sum float16 cannot hold) becomes 1.
  HostTensor a =
      host_pow2scale_cast_to_fp8(HostTensor({1.0f, std::ldexp(1.0f, -6)}, {1, 2}), float8_152);
  HostTensor b =
      host_pow2scale_cast_to_fp8(HostTensor({1.0f, std::ldexp(1.0f, -6)}, {2, 1}), float8_152);
  const HostTensor one = run_scaled(
      [&](const Tensor& scale) {
        return ops::matmul_pow2scaled(variable(a, "a"), variable(b, "b"), scale);
      },
      0, 2);
  CHECK(one.item(0) == 1.0);
}

TEST_CASE("conv_pow2scaled and conv_transpose_pow2scaled: the float8 convolutions times "
          "2^log2_scale, as float16") {
  using test_ops_float8::small_values;
  const HostTensor x = small_values({2, 2, 5, 4}, float8_143, 3);
  const HostTensor w = small_values({3, 2, 2, 3}, float8_152, 4);
  const HostTensor wt = small_values({2, 3, 2, 3}, float8_143, 5);
  const ops::ConvOptions conv_options{.stride = {1, 2}, .padding = {1, 0, 0, 1}};
  const ops::ConvTransposeOptions transpose_options{.stride = {2, 1}, .output_padding = {1, 0}};
  for (const int s : {-1, 2}) {
    CAPTURE(s);
    // The float32 convolutions of the widened operands, scaled: exact for these values.
    const auto widened = [&](const HostTensor& t, int scale) {
      return host_pow2scale_cast_from_fp8(t, float32, scale);
    };
    const HostTensor conv_want =
        evaluate1([&](std::vector<Tensor> t) { return ops::conv(t[0], t[1], conv_options); },
                  {widened(x, s), widened(w, 0)})
            .astype(float16);
    const HostTensor transpose_want =
        evaluate1(
            [&](std::vector<Tensor> t) {
              return ops::conv_transpose(t[0], t[1], transpose_options);
            },
            {widened(x, s), widened(wt, 0)})
            .astype(float16);
    for (const unsigned workers : {1u, 3u}) {
      CHECK(same_bytes(run_scaled(
                           [&](const Tensor& scale) {
                             return ops::conv_pow2scaled(variable(x, "x"), variable(w, "w"), scale,
                                                         conv_options);
                           },
                           s, workers),
                       conv_want));
      CHECK(same_bytes(run_scaled(
                           [&](const Tensor& scale) {
                             return ops::conv_transpose_pow2scaled(
                                 variable(x, "x"), variable(wt, "w"), scale, transpose_options);
                           },
                           s, workers),
                       transpose_want));
    }
  }
}

TEST_CASE("float8 moves through streams, reshapes, transposes, slices and concat") {
  const HostTensor q = host_pow2scale_cast_to_fp8(
      HostTensor({1.0f, -2.0f, 0.5f, 3.0f, -0.25f, 6.0f}, {2, 3}), float8_143);
  Ir ir;
  HostToDeviceStream in;
  DeviceToHostStream out;
  {
    auto in_main = ir.main_graph().scope();
    in = h2d_stream({2, 3}, float8_143, "in");
    const Tensor t = ops::host_load(in);
    const Tensor moved =
        ops::concat({ops::transpose(t).reshape({6}), ops::slice(t.reshape({6}), {0}, {2})}, 0);
    out = d2h_stream(moved.shape(), float8_143, "out");
    ops::host_store(out, moved);
  }
  Session session(ir, "ipu_model", {.workers = 2});
  auto attached = session.attach();
  const HostTensor got = session.run({{in, q}}).at(out);
  const auto* src = reinterpret_cast<const std::uint8_t*>(q.bytes().data());
  const auto* dst = reinterpret_cast<const std::uint8_t*>(got.bytes().data());
  const int order[] = {0, 3, 1, 4, 2, 5, 0, 1};
  for (int i = 0; i < 8; ++i)
    CHECK(dst[i] == src[order[i]]);
}

TEST_CASE("float8 errors name the op, what was expected and what was found") {
  ScratchGraph s;
  const Tensor q = s.input({2, 3}, float8_143), q2 = s.input({3, 2}, float8_152);
  const Tensor f = s.input({2, 3}), scale = s.input({}, int32);
  CHECK_THROWS_WITH_AS(ops::cast(q, float32), Contains("Cast: cannot cast"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::cast(f, float8_152), Contains("ops::pow2scale_cast_to_fp8"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(q + q, Contains("Add: input 0"), DTypeError);
  CHECK_THROWS_WITH_AS(q + q, Contains("float8 is storage on the device"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::matmul(q, q2), Contains("MatMul"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::pow2scale_cast_to_fp8(f, scale, float16),
                       Contains("Pow2ScaleThenCast: dtype must be float8_143 or float8_152, got "
                                "float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::pow2scale_cast_to_fp8(s.input({2}, int32), scale, float8_143),
                       Contains("expected a float32 or float16 tensor"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::pow2scale_cast_to_fp8(f, s.input({}, float32), float8_143),
                       Contains("log2_scale must be an int32 tensor"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::pow2scale_cast_to_fp8(f, s.input({1}, int32), float8_143),
                       Contains("log2_scale must be a scalar tensor"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::pow2scale_cast_from_fp8(q, scale, int32),
                       Contains("CastThenPow2Scale: dtype must be float32 or float16, got int32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::pow2scale_cast_from_fp8(f, scale, float32),
                       Contains("the input must be float8_143 or float8_152"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::matmul_pow2scaled(f, q2, scale),
                       Contains("matmul_pow2scaled: lhs must be float8_143 or float8_152"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::matmul_pow2scaled(q, q, scale),
                       Contains("matmul_pow2scaled: contraction dimensions differ"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::conv_pow2scaled(s.input({1, 2, 4, 4}, float8_143),
                                            s.input({3, 4, 1, 1}, float8_143), scale),
                       Contains("conv_pow2scaled: the weight"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::conv_transpose_pow2scaled(s.input({1, 2, 4, 4}, float8_143),
                                                      s.input({2, 3, 1, 1}, float16), scale),
                       Contains("conv_transpose_pow2scaled: the weight must be float8"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::conv_pow2scaled(s.input({1, 2, 4, 4}, float8_143),
                                            s.input({3, 2, 1, 1}, float8_143), scale,
                                            {.partials_type = float16}),
                       Contains("conv_pow2scaled: partials_type must be float32 (pxl computes "
                                "float8 products in float32), got float16"),
                       DTypeError);
  // A failed check adds nothing to the graph.
  CHECK(s.graph.ops().empty());
}

TEST_CASE("autodiff through a float8 op is refused, naming it") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const Graph g = ir.create_graph(
      "fp8",
      [](Tensor x, Tensor scale) {
        return ops::pow2scale_cast_from_fp8(ops::pow2scale_cast_to_fp8(x, scale, float8_143), scale,
                                            float32);
      },
      TensorSpec{{2}, float32}, TensorSpec{{}, int32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(g), Contains("CastThenPow2Scale"), GraphError);
}
