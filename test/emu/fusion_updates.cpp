// In-place updates of a matmul's product folded into the matmul (w = keep·w + scale·product in
// one step): the reference's results, bitwise alike for any worker count, no buffer for the
// product, and no folding where another reader or a write in between would see the difference.
#include "helpers.hpp"
#include "reference.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace pxl;
using test_emu::has_tensor;
using test_emu::pattern;
using test_emu::run_on;

TEST_CASE("An in-place update of a matmul's product is folded into the matmul") {
  // w = keep·w + scale·(xᵀ g) for scaled_add_, accumulate_ and add_, in float32 and float16
  // (k = 9: a float16 tile's product rounded into w in registers, tiles of 128 and 22 columns):
  // the reference's result (float rounding apart; float16 rounds once, the reference twice),
  // bitwise alike on 1-4 workers, and no buffer for the product.
  enum class Update { scaled_add, accumulate, add };
  for (DType dtype : {float32, float16})
    for (Update kind : {Update::scaled_add, Update::accumulate, Update::add}) {
      CAPTURE(name(dtype));
      CAPTURE(static_cast<int>(kind));
      Ir ir;
      HostToDeviceStream sx, sg;
      Tensor w;
      std::string product_id;
      {
        auto in_main = ir.main_graph().scope();
        sx = h2d_stream({9, 70}, dtype, "x");
        sg = h2d_stream({9, 150}, dtype, "g");
        w = variable(pattern({{70, 150}, dtype}, 6), "w");
        const Tensor p = ops::matmul(ops::transpose(ops::host_load(sx)), ops::host_load(sg));
        product_id = p.id();
        switch (kind) {
        case Update::scaled_add:
          ops::scaled_add_(w, p, {.a = 0.9, .b = -0.05});
          break;
        case Update::accumulate:
          ops::var_updates::accumulate_(w, p, 0.25);
          break;
        case Update::add:
          ops::add_(w, p);
          break;
        }
      }
      const HostTensor x = pattern({{9, 70}, dtype}, 7), g = pattern({{9, 150}, dtype}, 8);
      testing::ReferenceEvaluator ref(ir);
      ref.run({{"x", x}, {"g", g}});
      std::vector<HostTensor> results;
      for (unsigned workers = 1; workers <= 4; ++workers) {
        Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
        if (workers == 1) {
          const auto report = s.memory_report();
          CHECK_FALSE(has_tensor(report, product_id));
          // host_load twice, then the matmul with the update in it.
          CHECK(report.ipus[0].steps == 3);
        }
        auto attached = s.attach();
        s.run({{sx, x}, {sg, g}});
        results.push_back(s.get_tensor_data(w));
      }
      for (std::size_t i = 1; i < results.size(); ++i)
        CHECK(results[i] == results[0]);
      if (dtype == float32)
        CHECK(allclose(results[0], ref.variable(w), 1e-5, 1e-6));
      else
        CHECK(allclose(results[0].astype(float32), ref.variable(w).astype(float32), 2e-3, 2e-3));
    }
}

TEST_CASE("A product scaled by a scalar tensor folds into the update, the scalar read each run") {
  // w += (−lr)·(xᵀ g) with lr streamed in (an optimizer's learning rate held in a tensor), and
  // scaled_add_(w, p·s): the Mul disappears with the product, each run reads the scalar it
  // loads, and results are the reference's (float rounding apart), bitwise alike on 1-4
  // workers.
  for (const bool scaled_add : {false, true}) {
    CAPTURE(scaled_add);
    Ir ir;
    HostToDeviceStream sx, sg, slr;
    Tensor w;
    std::string product_id, scaled_id;
    {
      auto in_main = ir.main_graph().scope();
      sx = h2d_stream({9, 70}, float32, "x");
      sg = h2d_stream({9, 130}, float32, "g");
      slr = h2d_stream({}, float32, "lr");
      w = variable(pattern({{70, 130}, float32}, 6), "w");
      const Tensor p = ops::matmul(ops::transpose(ops::host_load(sx)), ops::host_load(sg));
      const Tensor lr = ops::host_load(slr);
      const Tensor scaled = scaled_add ? p * lr : ops::negate(lr) * p;
      product_id = p.id();
      scaled_id = scaled.id();
      if (scaled_add)
        ops::scaled_add_(w, scaled, {.a = 0.9, .b = -1.0});
      else
        ops::add_(w, scaled);
    }
    const HostTensor x = pattern({{9, 70}, float32}, 7), g = pattern({{9, 130}, float32}, 8);
    const HostTensor rates[] = {HostTensor::full({}, float32, 0.05),
                                HostTensor::full({}, float32, 0.2)};
    testing::ReferenceEvaluator ref(ir);
    std::vector<HostTensor> expected;
    for (const HostTensor& lr : rates) {
      ref.run({{"x", x}, {"g", g}, {"lr", lr}});
      expected.push_back(ref.variable(w));
    }
    std::vector<std::vector<HostTensor>> results;
    for (unsigned workers = 1; workers <= 4; ++workers) {
      Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      if (workers == 1) {
        const auto report = s.memory_report();
        CHECK_FALSE(has_tensor(report, product_id));
        CHECK_FALSE(has_tensor(report, scaled_id));
        // host_load three times, (negate,) then the matmul with the scaled update in it.
        CHECK(report.ipus[0].steps == (scaled_add ? 4 : 5));
      }
      auto attached = s.attach();
      results.emplace_back();
      for (const HostTensor& lr : rates) {
        s.run({{sx, x}, {sg, g}, {slr, lr}});
        results.back().push_back(s.get_tensor_data(w));
      }
    }
    for (std::size_t i = 1; i < results.size(); ++i)
      CHECK(results[i] == results[0]);
    for (std::size_t r = 0; r < 2; ++r)
      CHECK(allclose(results[0][r], expected[r], 1e-5, 1e-6));
  }
}

TEST_CASE("No folding through a Mul whose scalar changes before the update or whose result "
          "is read again") {
  for (const bool scalar_written : {true, false}) {
    CAPTURE(scalar_written);
    Ir ir;
    HostToDeviceStream sx, slr;
    Tensor w;
    std::string scaled_id;
    {
      auto in_main = ir.main_graph().scope();
      sx = h2d_stream({70, 70}, float32, "x");
      slr = h2d_stream({}, float32, "lr");
      w = variable(pattern({{70, 70}, float32}, 9), "w");
      const Tensor x = ops::host_load(sx);
      Tensor lr = ops::host_load(slr);
      const Tensor scaled = ops::matmul(x, x) * lr;
      scaled_id = scaled.id();
      if (scalar_written)
        ops::scaled_add_(lr, lr); // lr doubles after the Mul read it
      else
        ops::host_store(d2h_stream({70, 70}, float32, "scaled"), scaled);
      ops::add_(w, scaled);
    }
    const HostTensor x = pattern({{70, 70}, float32}, 10);
    const HostTensor lr = HostTensor::full({}, float32, 0.125);
    testing::ReferenceEvaluator ref(ir);
    const auto want = ref.run({{"x", x}, {"lr", lr}});
    for (unsigned workers : {1u, 3u}) {
      Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      CHECK(has_tensor(s.memory_report(), scaled_id));
      auto attached = s.attach();
      const auto out = s.run({{sx, x}, {slr, lr}});
      CHECK(allclose(s.get_tensor_data(w), ref.variable(w), 1e-5, 1e-6));
      for (const auto& [stream, array] : out)
        CHECK(allclose(array, want.at(stream.name()), 1e-5, 1e-6));
    }
  }
}

TEST_CASE("No update folding when the product is read again, its operands change, or w is one") {
  enum class Case { product_stored, operand_written, w_is_operand, broadcast };
  for (Case c :
       {Case::product_stored, Case::operand_written, Case::w_is_operand, Case::broadcast}) {
    CAPTURE(static_cast<int>(c));
    // Several sgemm tiles (64 rows, 128 columns each): a tile writing w while another still
    // reads it as an operand would show.
    constexpr std::int64_t n = 130;
    Ir ir;
    HostToDeviceStream sx;
    Tensor w;
    {
      auto in_main = ir.main_graph().scope();
      sx = h2d_stream({n, n}, float32, "x");
      w = variable(pattern({{n, n}, float32}, 9), "w");
      Tensor x = ops::host_load(sx);
      switch (c) {
      case Case::product_stored: {
        const Tensor p = ops::matmul(x, x);
        ops::scaled_add_(w, p, {.b = -0.5});
        ops::host_store(d2h_stream({n, n}, float32, "p"), p);
        break;
      }
      case Case::operand_written: {
        const Tensor p = ops::matmul(x, x);
        ops::scaled_add_(x, x); // x doubles after the product was taken
        ops::scaled_add_(w, p, {.b = -0.5});
        break;
      }
      case Case::w_is_operand:
        ops::scaled_add_(w, ops::matmul(w, x), {.b = -0.5});
        break;
      case Case::broadcast: // a [1, n] product added to every row of w
        ops::scaled_add_(w, ops::matmul(ops::slice(x, {0}, {1}, {0}), x), {.b = -0.5});
        break;
      }
    }
    const HostTensor x = pattern({{n, n}, float32}, 10);
    testing::ReferenceEvaluator ref(ir);
    const auto want = ref.run({{"x", x}});
    for (unsigned workers : {1u, 3u}) {
      Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      auto attached = s.attach();
      const auto out = s.run({{sx, x}});
      CHECK(allclose(s.get_tensor_data(w), ref.variable(w), 1e-5, 1e-6));
      for (const auto& [stream, array] : out)
        CHECK(allclose(array, want.at(stream.name()), 1e-5, 1e-6));
    }
  }
}
