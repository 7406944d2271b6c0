// Reshapes read in place by their readers, and transposes fused into matmuls (the MatMul reads
// its operand transposed instead of a copy): the same results as the reference, for any worker
// count, and never across a write. Updates folded into a matmul: fusion_updates.cpp.
#include "helpers.hpp"
#include "reference.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace pxl;
using test_emu::has_tensor;
using test_emu::pattern;
using test_emu::run_on;

TEST_CASE("A Transpose feeding a MatMul is read in place: reference results on 1-4 workers") {
  struct Case {
    const char* what;
    Shape a, b;  ///< the stored operands
    bool ta, tb; ///< which are transposed before the matmul
    std::vector<std::int64_t> perm_a, perm_b;
  };
  const Case cases[] = {
      {"A^T B", {70, 9}, {70, 130}, true, false, {}, {}},
      {"A B^T", {9, 70}, {130, 70}, false, true, {1, 0}, {}},
      {"A^T B^T", {70, 9}, {130, 70}, true, true, {}, {1, 0}},
      {"batched A^T, broadcast B", {3, 70, 9}, {70, 130}, true, false, {0, 2, 1}, {}},
      {"batched A^T B^T", {2, 70, 9}, {2, 130, 70}, true, true, {0, 2, 1}, {0, 2, 1}},
  };
  for (DType dtype : {float32, float16}) {
    for (const Case& c : cases) {
      CAPTURE(c.what);
      CAPTURE(name(dtype));
      Ir ir;
      HostToDeviceStream sa, sb;
      DeviceToHostStream sy;
      {
        auto in_main = ir.main_graph().scope();
        sa = h2d_stream(c.a, dtype, "a");
        sb = h2d_stream(c.b, dtype, "b");
        Tensor a = ops::host_load(sa), b = ops::host_load(sb);
        if (c.ta)
          a = ops::transpose(a, c.perm_a);
        if (c.tb)
          b = ops::transpose(b, c.perm_b);
        const Tensor y = ops::matmul(a, b);
        sy = d2h_stream(y.shape(), dtype, "y");
        ops::host_store(sy, y);
      }
      const HostTensor a = pattern({c.a, dtype}, 1), b = pattern({c.b, dtype}, 2);
      const auto first = run_on(ir, 1, {{sa, a}, {sb, b}}).at(sy);
      for (unsigned workers = 2; workers <= 4; ++workers)
        CHECK(run_on(ir, workers, {{sa, a}, {sb, b}}).at(sy) == first);
      testing::ReferenceEvaluator ref(ir);
      const auto expected = ref.run({{"a", a}, {"b", b}}).at("y");
      if (dtype == float32)
        CHECK(allclose(first, expected, 1e-5, 1e-5));
      else
        CHECK(allclose(first.astype(float32), expected.astype(float32), 1e-2, 1e-2));
    }
  }
}

TEST_CASE("A matmul reading a transposed operand in place: float16 bitwise the matmul of the "
          "transposed copy, float32 within sgemm's rounding") {
  // The fused kernel reads a transposed operand in place or widens it transposed; the result
  // is compared with the same matmul fed the operands already transposed on the host. A
  // float16 product is widened into the unfused layout before sgemm, so it must be bitwise
  // equal on every CPU. A float32 product hands sgemm the stored layout, and oneDNN sums in an
  // order that depends on it (on AVX2 and AVX-512 alike), so each side lies within
  // gamma_k·(|A||B|) of the exact product, gamma_k = k·u / (1 - k·u), u = 2^-24: the two
  // sides within twice that.
  const auto transposed = [](const HostTensor& t) {
    const std::int64_t r = t.shape()[0], c = t.shape()[1];
    const auto in = t.bytes();
    HostTensor out({c, r}, t.dtype());
    auto o = out.bytes();
    const std::size_t size = size_of(t.dtype());
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < c; ++j)
        std::copy_n(in.data() + static_cast<std::size_t>(i * c + j) * size, size,
                    o.data() + static_cast<std::size_t>(j * r + i) * size);
    return out;
  };
  // The product of a [m, k] by a [k, n], each stored transposed or not, transposes fused into
  // the matmul (`fuse`) or done on the host.
  const auto product = [&](const HostTensor& a, const HostTensor& b, bool ta, bool tb, bool fuse) {
    const HostTensor ha = fuse || !ta ? a : transposed(a);
    const HostTensor hb = fuse || !tb ? b : transposed(b);
    const DType dtype = a.dtype();
    Ir ir;
    HostToDeviceStream sa, sb;
    DeviceToHostStream sy;
    {
      auto in_main = ir.main_graph().scope();
      sa = h2d_stream(ha.shape(), dtype, "a");
      sb = h2d_stream(hb.shape(), dtype, "b");
      Tensor x = ops::host_load(sa), y = ops::host_load(sb);
      if (fuse && ta)
        x = ops::transpose(x);
      if (fuse && tb)
        y = ops::transpose(y);
      const Tensor z = ops::matmul(x, y);
      sy = d2h_stream(z.shape(), dtype, "y");
      ops::host_store(sy, z);
    }
    return run_on(ir, 2, {{sa, ha}, {sb, hb}}).at(sy);
  };
  // |A||B| of the untransposed operands, in double.
  const auto abs_product = [](const HostTensor& a, const HostTensor& b) {
    const auto x = a.data<float>(), y = b.data<float>();
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    std::vector<double> out(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t kk = 0; kk < k; ++kk)
        for (std::int64_t j = 0; j < n; ++j)
          out[static_cast<std::size_t>(i * n + j)] +=
              std::abs(static_cast<double>(x[static_cast<std::size_t>(i * k + kk)]) *
                       y[static_cast<std::size_t>(kk * n + j)]);
    return out;
  };
  // Each of the three paths of a float16 tile (emu/kernels/half_gemm.cpp) with either operand
  // transposed: a short reduction (8: few_k_product), up to 8 rows (1, 7: few_rows_product,
  // reading a transposed B in 8 x 8 blocks) and more (33, 90: sgemm, on operands widened into
  // the unfused layout); one row to more rows and columns than a tile has (90, 200),
  // reductions longer than a tile's side (300) and than oneDNN's k block (784).
  const std::int64_t ms[] = {1, 7, 33, 90}, ks[] = {8, 300, 784}, ns[] = {1, 16, 200};
  for (const DType dtype : {float16, float32})
    for (const std::int64_t m : ms)
      for (const std::int64_t k : ks)
        for (const std::int64_t n : ns)
          for (const bool ta : {false, true})
            for (const bool tb : {false, true}) {
              CAPTURE(name(dtype));
              CAPTURE(m);
              CAPTURE(k);
              CAPTURE(n);
              CAPTURE(ta);
              CAPTURE(tb);
              const HostTensor a = pattern({ta ? Shape{k, m} : Shape{m, k}, dtype}, 3);
              const HostTensor b = pattern({tb ? Shape{n, k} : Shape{k, n}, dtype}, 4);
              const HostTensor fused = product(a, b, ta, tb, true);
              const HostTensor unfused = product(a, b, ta, tb, false);
              if (dtype == float16) {
                CHECK(fused == unfused);
                continue;
              }
              const double u = 0x1p-24, gamma = static_cast<double>(k) * u / (1 - k * u);
              const auto bound = abs_product(ta ? transposed(a) : a, tb ? transposed(b) : b);
              const auto f = fused.data<float>(), g = unfused.data<float>();
              std::size_t outside = 0;
              for (std::size_t i = 0; i < bound.size(); ++i)
                outside += std::abs(static_cast<double>(f[i]) - g[i]) > 2 * gamma * bound[i];
              CHECK(outside == 0);
            }
}

TEST_CASE("A matmul with float16 partials reads transposed operands in place and takes no "
          "epilogue: bitwise the reference on 1-4 workers") {
  const ops::MatMulOptions o{.partials_type = float16};
  const HostTensor a = pattern({{40, 9}, float16}, 5), b = pattern({{11, 40}, float16}, 6);
  const HostTensor bias = pattern({{11}, float16}, 7);
  Ir ir;
  HostToDeviceStream sa, sb, sbias;
  DeviceToHostStream sy, sz;
  {
    auto in_main = ir.main_graph().scope();
    sa = h2d_stream(a.shape(), float16, "a");
    sb = h2d_stream(b.shape(), float16, "b");
    sbias = h2d_stream(bias.shape(), float16, "bias");
    // Aᵀ Bᵀ read in place, then a bias and ReLU that a float32-partials product would fold.
    const Tensor y =
        ops::matmul(ops::transpose(ops::host_load(sa)), ops::transpose(ops::host_load(sb)), o);
    const Tensor z = ops::relu(y + ops::host_load(sbias));
    sy = d2h_stream(y.shape(), float16, "y");
    sz = d2h_stream(z.shape(), float16, "z");
    ops::host_store(sy, y);
    ops::host_store(sz, z);
  }
  const StreamInputs in{{sa, a}, {sb, b}, {sbias, bias}};
  testing::ReferenceEvaluator ref(ir);
  const auto expected = ref.run({{"a", a}, {"b", b}, {"bias", bias}});
  for (unsigned workers = 1; workers <= 4; ++workers) {
    CAPTURE(workers);
    const auto out = run_on(ir, workers, in);
    CHECK(out.at(sy) == expected.at("y"));
    CHECK(out.at(sz) == expected.at("z"));
  }
}

TEST_CASE("A fused Transpose costs neither code nor memory; one with other readers stays") {
  auto build = [](Ir& ir, bool store_transposed) -> std::string {
    auto in_main = ir.main_graph().scope();
    auto x = h2d_stream({256, 64}, float32, "x");
    auto w = variable(pattern({{256, 32}, float32}, 3), "w");
    const Tensor xt = ops::transpose(ops::host_load(x));
    ops::host_store(d2h_stream({64, 32}, float32, "y"), ops::matmul(xt, w));
    if (store_transposed)
      ops::host_store(d2h_stream({64, 256}, float32, "xt_out"), xt);
    return xt.id();
  };
  Ir fused_ir, kept_ir;
  const std::string fused_xt = build(fused_ir, false), kept_xt = build(kept_ir, true);
  const auto fused = Session(fused_ir).memory_report();
  const auto kept = Session(kept_ir).memory_report();
  // host_load, matmul, host_store: the Transpose is gone.
  CHECK(fused.ipus[0].steps == 3);
  CHECK_FALSE(has_tensor(fused, fused_xt));
  // Its other reader keeps the Transpose (host_load, transpose, matmul, 2 host_stores).
  CHECK(kept.ipus[0].steps == 5);
  CHECK(fused.ipus[0].code() < kept.ipus[0].code());
  CHECK(has_tensor(kept, kept_xt));
  CHECK(fused.ipus[0].not_always_live_peak < kept.ipus[0].not_always_live_peak);
}

TEST_CASE("No fusion across a write: the matmul sees the values the Transpose saw") {
  // x is loaded, transposed, then changed in place (directly, through its transpose, or by a
  // by-ref call) before the matmul reads the transpose.
  enum class Write { source, transposed, by_ref_call };
  for (Write write : {Write::source, Write::transposed, Write::by_ref_call}) {
    CAPTURE(static_cast<int>(write));
    Ir ir;
    HostToDeviceStream sx;
    DeviceToHostStream sy;
    {
      auto in_main = ir.main_graph().scope();
      Graph bump = ir.create_empty_graph("bump");
      {
        auto in_g = bump.scope();
        auto t = graph_input({6, 5}, float32, "t", /*by_ref=*/true);
        ops::scaled_add_(t, t, {.b = 2.0});
      }
      sx = h2d_stream({6, 5}, float32, "x");
      sy = d2h_stream({5, 4}, float32, "y");
      auto w = variable(pattern({{6, 4}, float32}, 4), "w");
      Tensor x = ops::host_load(sx);
      Tensor xt = ops::transpose(x);
      switch (write) {
      case Write::source:
        ops::scaled_add_(x, x, {.b = 2.0});
        break;
      case Write::transposed:
        ops::scaled_add_(xt, xt, {.b = 2.0});
        break;
      case Write::by_ref_call:
        ops::call(bump, {x});
        break;
      }
      ops::host_store(sy, ops::matmul(xt, w));
    }
    const HostTensor x = pattern({{6, 5}, float32}, 5);
    testing::ReferenceEvaluator ref(ir);
    const auto expected = ref.run({{"x", x}}).at("y");
    for (unsigned workers : {1u, 3u})
      CHECK(allclose(run_on(ir, workers, {{sx, x}}).at(sy), expected, 1e-5, 1e-6));
  }
}

TEST_CASE("A Reshape is read in place by its readers: no step, no buffer, same results") {
  auto build = [](Ir& ir, bool write_source) -> std::string {
    auto in_main = ir.main_graph().scope();
    auto x = h2d_stream({4, 8, 16}, float32, "x");
    auto w = variable(pattern({{16, 16}, float32}, 3), "w");
    const Tensor loaded = ops::host_load(x);
    const Tensor rows = ops::reshape(loaded, {32, 16});
    // A write to the reshaped tensor's source before its readers keeps the Reshape.
    if (write_source)
      ops::scaled_add_(loaded, loaded, {.b = 2.0});
    // A chain of reshapes and an element-wise reader as well as a matmul.
    const Tensor y = ops::matmul(rows, w) + ops::reshape(ops::reshape(rows, {512}), {32, 16});
    ops::host_store(d2h_stream({32, 16}, float32, "y"), y);
    return rows.id();
  };
  Ir fused_ir, kept_ir;
  const std::string fused_rows = build(fused_ir, false), kept_rows = build(kept_ir, true);
  const auto fused = Session(fused_ir).memory_report();
  const auto kept = Session(kept_ir).memory_report();
  CHECK_FALSE(has_tensor(fused, fused_rows));
  CHECK(has_tensor(kept, kept_rows));
  CHECK(fused.ipus[0].steps < kept.ipus[0].steps);
  const HostTensor x = pattern({{4, 8, 16}, float32}, 5);
  testing::ReferenceEvaluator ref(fused_ir);
  const auto expected = ref.run({{"x", x}}).at("y");
  for (unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    const auto sx = fused_ir.h2d_streams()[0];
    const auto sy = fused_ir.d2h_streams()[0];
    CHECK(allclose(run_on(fused_ir, workers, {{sx, x}}).at(sy), expected, 1e-5, 1e-6));
  }
}

TEST_CASE("No reshape read in place across a write, or by a step that writes it") {
  // x is loaded and reshaped, then changed in place directly, through its reshape, or by the
  // reader itself, before the reshape is read.
  enum class Write { source, reshaped, by_reader };
  for (Write write : {Write::source, Write::reshaped, Write::by_reader}) {
    CAPTURE(static_cast<int>(write));
    Ir ir;
    HostToDeviceStream sx;
    DeviceToHostStream sy, sz;
    {
      auto in_main = ir.main_graph().scope();
      sx = h2d_stream({6, 5}, float32, "x");
      sy = d2h_stream({30}, float32, "y");
      sz = d2h_stream({6, 5}, float32, "z");
      Tensor x = ops::host_load(sx);
      Tensor flat = ops::reshape(x, {30});
      switch (write) {
      case Write::source:
        ops::scaled_add_(x, x, {.b = 2.0});
        break;
      case Write::reshaped:
        ops::scaled_add_(flat, flat, {.b = 2.0});
        break;
      case Write::by_reader: // x += reshape(x) read back as (6, 5)
        ops::scaled_add_(x, ops::reshape(flat, {6, 5}), {.b = 3.0});
        break;
      }
      ops::host_store(sy, flat * 2.0);
      ops::host_store(sz, x);
    }
    const HostTensor x = pattern({{6, 5}, float32}, 5);
    testing::ReferenceEvaluator ref(ir);
    const auto expected = ref.run({{"x", x}});
    for (unsigned workers : {1u, 3u}) {
      const auto got = run_on(ir, workers, {{sx, x}});
      CHECK(allclose(got.at(sy), expected.at("y"), 1e-6, 1e-6));
      CHECK(allclose(got.at(sz), expected.at("z"), 1e-6, 1e-6));
    }
  }
}
