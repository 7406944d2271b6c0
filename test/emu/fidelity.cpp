// The cost model and memory plan against what real IPUs do: start tiles rotated as PopART's,
// PopLibs' multi-stage reductions and split matmuls, grouped collectives over their own ring,
// and IPU-Link copies at the links' bandwidth.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

using namespace pxl;

namespace test_fidelity {

using test_emu::kernel_step;

std::int64_t cycles_at(double bytes, double bytes_per_second, const emu::Target& t) {
  return static_cast<std::int64_t>(std::ceil(bytes / bytes_per_second * t.clock_hz));
}

/// The cycles of `cost` in microseconds on `t`.
double micros(const emu::StepCost& cost, const emu::Target& t) {
  return static_cast<double>(cost.total()) / t.clock_hz * 1e6;
}

TEST_CASE("Memory: 12,000 float32 variables of 16 elements fit on one IPU") {
  // 750 KiB of 64-byte variables: with every tensor mapped from tile 0 they would need
  // 768,000 bytes of its 638,976; rotated as PopART's LinearMapper, each starts on the tile
  // after the one before, at most ceil(12,000 / 1,472) = 9 to a tile.
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    Tensor first;
    for (int i = 0; i < 12000; ++i) {
      auto v = variable(HostTensor::full({16}, float32, 1.0), "v" + std::to_string(i));
      if (i == 0)
        first = v;
    }
    ops::host_store(d2h_stream({16}, float32, "y"), first * 2.0);
  }
  Session s(ir);
  const auto m = s.memory_report().ipus[0];
  CHECK(m.variables == 12000 * 64);
  CHECK(m.fits());
  CHECK(m.max_tile < m.tile_capacity / 10);
  CHECK(m.max_tile >= 9 * 64); // the most loaded tile holds 9 variables
}

TEST_CASE("Memory: 2,500 compiled steps spread their code over the tiles") {
  // Each step's control code and vertex state (64 + 6 x 32 bytes) on its one tile: from tile
  // 0 every time, 2,500 steps would need 640,000 bytes of tile 0; rotated, at most
  // ceil(2,500 / 1,472) = 2 steps' code to a tile.
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    Tensor x = variable(HostTensor::full({16}, float32, 1.0), "x");
    for (int i = 0; i < 2500; ++i)
      x = x * 1.0;
    ops::host_store(d2h_stream({16}, float32, "y"), x);
  }
  Session s(ir);
  const auto m = s.memory_report().ipus[0];
  const emu::Target t = emu::ipu2();
  CHECK(m.steps >= 2500);
  CHECK(m.control_code >= 2500 * t.control_code_bytes);
  CHECK(m.fits());
  CHECK(m.max_tile < m.tile_capacity / 10);
}

TEST_CASE("Memory: a tile still overflows when the IPU's total fits") {
  // 4 tiles of 64 KiB, no code: 'big' leaves 32 bytes free on each tile; the next tensor,
  // 64 bytes, lands on one tile (rotated past big's 4, back to tile 0) and overflows it while
  // the IPU's 256 KiB hold both.
  const auto target = test_emu::four_small_tiles(0);
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    variable(HostTensor({4 * (64 * 1024 - 32) / 4}, float32), "big");
    variable(HostTensor({16}, float32), "small");
  }
  Session s(ir, target, {.allow_out_of_memory = true});
  const auto m = s.memory_report().ipus[0];
  CHECK(m.total() <= m.capacity);
  CHECK(m.max_tile == 64 * 1024 - 32 + 64);
  CHECK_FALSE(s.memory_report().fits());
  CHECK_THROWS_WITH_AS(Session(ir, target),
                       doctest::Contains("the most loaded tile of IPU 0 needs 65568 bytes of "
                                         "its 65536"),
                       OutOfMemoryError);
}

TEST_CASE("cost model: a reduction of 1M floats to a scalar is PopLibs' multi-stage reduce") {
  const emu::Target t = emu::ipu2();
  const std::int64_t n = 1 << 20;
  const auto c = emu::estimate(kernel_step(OpKind::ReduceSum, n, 4 * n, 4), t);
  // Stage 1: every tile reduces its ceil(2^20 / 1,472) = 713 values, 2 a vector, 6 workers:
  // ceil(357 / 6) x 6 = 360 cycles. Then 1,472 partials, 92, 6 and 1: three more stages,
  // each a sync, a little work and an exchange.
  CHECK(c.compute >= 360);
  CHECK(c.compute < 360 + 3 * 60);
  CHECK(c.sync == 4 * t.sync_cycles);
  CHECK(micros(c, t) < 2.0); // a few hundred cycles: not the 395 us of one tile's work
  // ReduceLogSumExp's first stage takes 4 instructions a vector.
  const auto lse = emu::estimate(kernel_step(OpKind::ReduceLogSumExp, n, 4 * n, 4), t);
  CHECK(lse.compute >= 4 * 357 / 6 * 6);
  CHECK(lse.sync == c.sync);
  // float16 values: 4 to a vector in the first stage.
  const auto half = emu::estimate(kernel_step(OpKind::ReduceSum, n, 2 * n, 2, float16), t);
  CHECK(half.compute < c.compute);
  // Nothing to reduce (as many outputs as inputs): one pass on the output's tiles.
  const auto same = emu::estimate(kernel_step(OpKind::ReduceSum, n, 4 * n, 4 * n), t);
  CHECK(same.sync == t.sync_cycles);
  CHECK(same.compute == 360);
}

TEST_CASE("cost model: a small-output matmul splits its contraction over the IPU's tiles") {
  // 16 x 16384 x 16, float32: 256 outputs. The plan splits the contraction over the tiles, so
  // that every tile's AMP works, and the partials are exchanged and added after a second sync.
  const emu::Target t = emu::ipu2();
  const std::int64_t m = 16, k = 16384, n = 16;
  const auto c = emu::estimate(test_emu::matmul_step(m, k, n), t);
  CHECK(c.sync == 2 * t.sync_cycles);
  const double peak = static_cast<double>(m * k * n) / (1472.0 * 16);
  CHECK(peak / static_cast<double>(c.total()) > 0.1); // was 0.9% on the output's 16 tiles
  // An outer product (a contraction of 16) has nothing to split: one superstep.
  const auto outer = emu::estimate(test_emu::matmul_step(1024, 16, 1024), t);
  CHECK(outer.sync == t.sync_cycles);
}

TEST_CASE("cost model: float16 partials halve the partials' exchange; a smaller memory "
          "proportion makes a slower plan") {
  const emu::Target t = emu::ipu2();
  // A float16 product whose plan splits its contraction (the partials cross the exchange).
  const auto cycles = [&](const ops::MatMulOptions& o, const Shape& x, const Shape& w) {
    Ir ir;
    auto in_main = ir.main_graph().scope();
    ops::host_store(
        d2h_stream({}, float16, "y"),
        ops::sum(ops::matmul(ops::init(x, float16, "x"), ops::init(w, float16, "w"), o)));
    const emu::IrEstimate e = emu::estimate(ir, t);
    const auto line = std::ranges::find(e.op_kinds, "MatMul", &emu::ProfileLine::name);
    REQUIRE(line != e.op_kinds.end());
    return line->cycles.total();
  };
  const Shape x{16, 16384}, w{16384, 16};
  CHECK(cycles({.partials_type = float16}, x, w) < cycles({}, x, w));
  // The same through the step's AmpShape: only the partials' exchange and additions change.
  auto step = test_emu::matmul_step(16, 16384, 16, float16);
  const auto f32 = emu::estimate(step, t);
  step.amp->partials_bytes = 2;
  const auto f16 = emu::estimate(step, t);
  CHECK(f16.exchange < f32.exchange);
  CHECK(f16.sync == f32.sync);
  // 2048³: PopLibs' default 0.6 of a tile leaves the fastest plan; 1% forces smaller blocks.
  const Shape big{2048, 2048};
  CHECK(cycles({.available_memory_proportion = 0.01}, big, big) > cycles({}, big, big));
  CHECK(cycles({.available_memory_proportion = 1.0}, big, big) == cycles({}, big, big));
  // A convolution's proportion likewise: a 3x3 layer of ResNet-50's third stage at a
  // micro-batch of 20, as its published configuration plans it (0.15; 160,276 cycles) and at
  // PopLibs' default (142,839).
  const auto conv_cycles = [&](std::optional<double> proportion,
                               std::optional<DType> partials = std::nullopt) {
    Ir ir;
    auto in_main = ir.main_graph().scope();
    const Tensor y = ops::conv(ops::init({20, 256, 28, 28}, float16, "x"),
                               ops::init({256, 256, 3, 3}, float16, "w"),
                               {.padding = {1, 1, 1, 1},
                                .available_memory_proportion = proportion,
                                .partials_type = partials});
    ops::host_store(d2h_stream({}, float16, "y"), ops::sum(y));
    const emu::IrEstimate e = emu::estimate(ir, t);
    const auto line = std::ranges::find(e.op_kinds, "Conv", &emu::ProfileLine::name);
    REQUIRE(line != e.op_kinds.end());
    return line->cycles.total();
  };
  CHECK(conv_cycles(0.15) > conv_cycles(std::nullopt));
  // Its float16 partials cross the exchange at 2 bytes where its plan splits the channels.
  CHECK(conv_cycles(std::nullopt, float16) < conv_cycles(std::nullopt));
}

TEST_CASE("emu::estimate: a matmul's rows shared by its weights are planned as one product") {
  // [8, 128, 64] @ [64, 256], the weights shared by the batch, as [1024, 64] @ [64, 256]: the
  // same MACs on the same operands, so the same plan. Likewise an input shared by a batch of
  // weights, [128, 64] @ [8, 64, 256], as [128, 64] @ [64, 2048].
  const auto matmul_cycles = [](const Shape& x, const Shape& w) {
    Ir ir;
    auto in_main = ir.main_graph().scope();
    ops::host_store(d2h_stream({}, float32, "y"),
                    ops::sum(ops::matmul(ops::init(x, float32, "x"), ops::init(w, float32, "w"))));
    const emu::IrEstimate e = emu::estimate(ir, emu::ipu2());
    const auto line = std::ranges::find(e.op_kinds, "MatMul", &emu::ProfileLine::name);
    REQUIRE(line != e.op_kinds.end());
    return line->cycles;
  };
  CHECK(matmul_cycles({8, 128, 64}, {64, 256}) == matmul_cycles({1024, 64}, {64, 256}));
  CHECK(matmul_cycles({128, 64}, {8, 64, 256}) == matmul_cycles({128, 64}, {64, 2048}));
}

TEST_CASE("cost model: a grouped all-reduce costs its own group's ring") {
  const emu::Target t = emu::ipu2();
  const std::int64_t bytes = 4 << 20;
  auto step = kernel_step(OpKind::ReplicatedAllReduce, bytes / 4, bytes, bytes);
  const auto all = emu::estimate(step, t, 8);
  step.group = 4;
  const auto half = emu::estimate(step, t, 8);
  CHECK(all.exchange == cycles_at(2.0 * bytes * 7 / 8, 27.2e9, t));
  CHECK(half.exchange == cycles_at(2.0 * bytes * 3 / 4, 27.2e9, t));
  step.group = 8;
  CHECK(emu::estimate(step, t, 8) == all);
  // A group of one replica sends nothing.
  step.group = 1;
  CHECK(emu::estimate(step, t, 8).exchange == 0);
}

TEST_CASE("Session::profile: a grouped all-reduce is priced over its group") {
  // 4 replicas, groups of 2: the ring sends 2 x 1/2 of the 1 MiB, not 2 x 3/4.
  auto all_reduce_exchange = [](std::int64_t group_size) {
    Ir ir(4);
    {
      auto in_main = ir.main_graph().scope();
      auto x = variable(HostTensor::full({1 << 18}, float32, 1.0), "x");
      auto y = ops::collectives::replicated_all_reduce(x, CollectiveOperator::add,
                                                       ir.replica_grouping(1, group_size));
      ops::host_store(d2h_stream({4}, float32, "y"), ops::slice(y, {0}, {4}));
    }
    Session s(ir, "ipu_model", {.profile = true});
    auto attached = s.attach();
    s.run({});
    for (const auto& line : s.profile().op_kinds)
      if (line.name == "ReplicatedAllReduce")
        return line.cycles.exchange;
    return std::int64_t{-1};
  };
  const emu::Target t = emu::ipu2();
  CHECK(all_reduce_exchange(2) == cycles_at(2.0 * (1 << 20) / 2, 27.2e9, t));
  CHECK(all_reduce_exchange(4) == cycles_at(2.0 * (1 << 20) * 3 / 4, 27.2e9, t));
}

TEST_CASE("cost model: an IpuCopy crosses the 4 IPU-Links between two IPUs") {
  // Each link 16 GB/s per direction (320 GB/s over 10 links, both ways) at 85%: 1 MiB in
  // 1 MiB / 54.4 GB/s = 19.3 us.
  const emu::Target t = emu::ipu2();
  CHECK(t.ipu_copy_bytes_per_second == 4 * 16e9 * 0.85);
  auto step = kernel_step(OpKind::IpuCopy, 0, 1 << 20, 1 << 20);
  step.ipus = 2;
  const auto c = emu::estimate(step, t);
  CHECK(c.exchange == cycles_at(1 << 20, 54.4e9, t));
  CHECK(micros(c, t) == doctest::Approx(19.3 + 150 / 1.33e3).epsilon(0.01));

  // Between two pipeline stages sharing one IPU it stays on the chip: an exchange, as a copy.
  step.ipus = 1;
  emu::StepInfo copy = step;
  copy.kind = emu::StepKind::copy;
  copy.op.reset();
  const auto on_chip = emu::estimate(step, t);
  CHECK(on_chip.exchange == emu::estimate(copy, t).exchange);
  CHECK(on_chip.exchange < c.exchange);
}

TEST_CASE("emu::estimate: the cycles of a run, loops by their trips, without a Session") {
  test_emu::MatMulProgram p(10);
  const emu::IrEstimate e = emu::estimate(p.ir, emu::ipu2());
  CHECK(e.target == "ipu2");
  CHECK(e.replicas == 1);
  REQUIRE(e.graphs.size() == 3); // main, then layer and step in the order they were made
  CHECK(e.graphs[0].name == p.ir.main_graph().name());
  CHECK(e.graphs[1].name == p.layer.name());
  CHECK(e.run.host >= emu::round_trip_cycles(emu::ipu2()));
  CHECK(e.seconds() == doctest::Approx(static_cast<double>(e.run.total()) / 1.33e9));
  // The step graph's cycles ten times over, with the loop's own and the round trip.
  const auto& step = e.graphs[2];
  CHECK(step.name == "step");
  CHECK(e.run.compute >= 10 * step.cycles.compute);
  CHECK(e.run.total() < 11 * step.cycles.total() + emu::round_trip_cycles(emu::ipu2()));
  // What a Session's profile counts for one run of the same program.
  Session s(p.ir, "ipu_model", {.profile = true});
  auto attached = s.attach();
  s.run({{p.x, HostTensor::full({10, 8, 64}, float32, 1.0)}});
  CHECK(s.profile().total == e.run);
  CHECK(s.memory_report().to_json() == e.memory.to_json());
  // By op kind, each step as often as the run executed it.
  const auto& kinds = s.profile().op_kinds;
  REQUIRE(e.op_kinds.size() == kinds.size());
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    CAPTURE(kinds[k].name);
    CHECK(e.op_kinds[k].name == kinds[k].name);
    CHECK(e.op_kinds[k].executions == kinds[k].executions);
    CHECK(e.op_kinds[k].cycles == kinds[k].cycles);
  }
  CHECK(std::ranges::any_of(e.op_kinds, [](const emu::ProfileLine& l) {
    return l.name == "MatMul" && l.executions == 10;
  }));
}

TEST_CASE("emu::estimate: 40 GiB of tensors, estimated without allocating them") {
  // 40 tensors of 1 GiB, each summed: more than this host's memory, and each more than an
  // IPU's 897 MiB. The estimate compiles and prices them in moments and reports the plan
  // that does not fit, where a Session refuses it.
  Ir ir;
  test_emu::sums_of_large_tensors(ir, 40);
  const auto begun = std::chrono::steady_clock::now();
  const emu::IrEstimate e = emu::estimate(ir, emu::ipu2());
  CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(10));
  CHECK_FALSE(e.memory.fits());
  std::int64_t bytes = 0;
  for (const auto& t : e.memory.tensors)
    bytes += t.bytes;
  CHECK(bytes >= std::int64_t{40} << 30);
  // 40 reductions of 2^28 values over 1,472 tiles: ~91,000 cycles of first stages.
  CHECK(e.run.compute >= 40 * 91000);
  CHECK(e.seconds() < 0.01);
  CHECK_THROWS_AS(Session(ir, emu::ipu2()), OutOfMemoryError);
}

TEST_CASE("emu::estimate: an op on an IPU the target lacks is a SessionError") {
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    auto on_second = ipu(1);
    variable(HostTensor::full({4}, float32, 1.0), "v");
  }
  CHECK_THROWS_WITH_AS(emu::estimate(ir, emu::ipu2()),
                       doctest::Contains("emu::estimate: tensor 'v' is placed on IPU 1 but "
                                         "target 'ipu2' has 1 IPU(s); set Target::ipus"),
                       SessionError);
  auto two = emu::ipu2();
  two.ipus = 2;
  CHECK(emu::estimate(ir, two).memory.ipus.size() == 2);
}

} // namespace test_fidelity
