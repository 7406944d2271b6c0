// The cost model against closed forms, Session::profile, the trace and the memory report's
// JSON.
#include "helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

using namespace pxl;
using emu::StepInfo;
using emu::StepKind;
using test_emu::kernel_step;
using test_emu::MatMulProgram;

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

/// A temporary file name, removed at the end of the scope.
struct TempPath {
  std::filesystem::path path;
  explicit TempPath(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             (name + "." + std::to_string(::getpid()) + ".json")) {}
  ~TempPath() { std::filesystem::remove(path); }
};

} // namespace

TEST_CASE("cost model: an AMP step is the cheapest plan of its product over the tiles") {
  const emu::Target t = emu::ipu2();
  // (64, 256) @ (256, 128), float32.
  const std::int64_t m = 64, k = 256, n = 128;
  const auto mm = emu::estimate(test_emu::matmul_step(m, k, n), t);
  // No plan beats every tile at the AMP's full rate, plus one vertex's fixed cycles.
  CHECK(mm.compute >= ceil_div(m * k * n, t.tiles_per_ipu * 16) + t.amp_vertex_cycles);
  // Nor is it worse than a plan written out by hand: the 64 rows over 64 tiles and the 128
  // columns over 16, the contraction whole (1,024 tiles), each tile multiplying 1 x 256 by
  // 256 x 8 (128 cycles at 16 MACs a cycle, and the vertex's) after receiving 256 + 2,048
  // float32 at 4 bytes a cycle, in one superstep.
  const std::int64_t by_hand = ceil_div(8 * 256, 16) + t.amp_vertex_cycles +
                               ceil_div((256 + 2048) * 4, t.exchange_bytes_per_cycle) +
                               t.sync_cycles;
  CHECK(mm.total() <= by_hand);
  CHECK(mm.host == 0);
  // A large float16 matmul reaches 50-100% of the float16 peak, its exchange included. Its
  // fastest parallel plan would hold about 1 MB of operand blocks and partials on each tile,
  // more than a tile has: within PopLibs' default 0.6 of a tile it runs in serial passes.
  const std::int64_t big = 4096;
  const auto f16 = emu::estimate(test_emu::matmul_step(big, big, big, float16), t);
  const double peak_cycles = static_cast<double>(big * big * big) / (t.tiles_per_ipu * 64.0);
  CHECK(peak_cycles / static_cast<double>(f16.total()) >= 0.5);
  CHECK(peak_cycles / static_cast<double>(f16.total()) <= 1.0);
  // float32's AMP runs at a quarter of float16's rate and exchanges twice the bytes: the same
  // product takes 2.5-4 times as long.
  const auto f32 = emu::estimate(test_emu::matmul_step(big, big, big, float32), t);
  CHECK(static_cast<double>(f32.total()) / static_cast<double>(f16.total()) >= 2.5);
  CHECK(static_cast<double>(f32.total()) / static_cast<double>(f16.total()) <= 4.0);
}

TEST_CASE("cost model: copies, host transfers, collectives and round trips in closed form") {
  const emu::Target t = emu::ipu2();
  // A copy of 1 MiB: both its reads and writes cross tiles, 4 bytes per tile per cycle.
  StepInfo copy;
  copy.kind = StepKind::copy;
  copy.bytes_read = copy.bytes_written = 1 << 20;
  const auto c = emu::estimate(copy, t);
  CHECK(c.exchange == ceil_div(2 << 20, 4 * t.tiles_per_ipu));
  CHECK(c.compute == 0);
  CHECK(c.sync == t.sync_cycles);
  // A host load of 1 MB over the 16 GB/s link: 62.5 us.
  const auto load = emu::estimate(kernel_step(OpKind::HostLoad, 0, 0, 1'000'000), t);
  CHECK(load.host == static_cast<std::int64_t>(std::ceil(1e6 / 16e9 * t.clock_hz)));
  CHECK(emu::round_trip_cycles(t) == static_cast<std::int64_t>(std::ceil(50e-6 * 1.33e9)));
  // An all-reduce over 4 replicas sends 2 (R-1)/R of its bytes over the IPU-Links.
  const std::int64_t bytes = 4 << 20;
  const auto ar =
      emu::estimate(kernel_step(OpKind::ReplicatedAllReduce, bytes / 4, bytes, bytes), t, 4);
  CHECK(ar.exchange ==
        static_cast<std::int64_t>(std::ceil(2.0 * bytes * 3 / 4 / 27.2e9 * t.clock_hz)));
  CHECK(emu::estimate(kernel_step(OpKind::ReplicatedAllReduce, bytes / 4, bytes, bytes), t, 1)
            .exchange == 0);
  // Element-wise work stays where its data is; a transpose exchanges its input.
  CHECK(emu::estimate(kernel_step(OpKind::Add, 1 << 16, 2 << 18, 1 << 18), t).exchange == 0);
  CHECK(emu::estimate(kernel_step(OpKind::Transpose, 1 << 16, 1 << 18, 1 << 18), t).exchange > 0);
  // Transcendental functions take more vector instructions than additions.
  CHECK(emu::estimate(kernel_step(OpKind::Exp, 1 << 20, 4 << 20, 4 << 20), t).compute >
        emu::estimate(kernel_step(OpKind::Add, 1 << 20, 8 << 20, 4 << 20), t).compute);
}

TEST_CASE("Session::profile: every executed step and a round trip per run; deterministic") {
  std::vector<emu::Profile> profiles;
  for (const unsigned workers : {1u, 2u}) {
    MatMulProgram p;
    Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true, .profile = true});
    auto attached = s.attach();
    for (int run = 0; run < 3; ++run)
      s.run({{p.x, HostTensor::full({8, 64}, float32, 1.0)}});
    profiles.push_back(s.profile());
  }
  const emu::Profile& p = profiles[0];
  CHECK(p.runs == 3);
  CHECK(p.target == "ipu2");
  // Per run: the loop, the step's host load, call, matmul (its ReLU fused in), host store (and
  // copies).
  CHECK(p.steps >= 3 * 5);
  CHECK(p.total.host >= 3 * emu::round_trip_cycles(emu::ipu2()));
  CHECK(p.total.compute > 0);
  CHECK(p.seconds() == doctest::Approx(static_cast<double>(p.total.total()) / 1.33e9));
  REQUIRE(p.ipus.size() == 1);
  CHECK(p.ipus[0].cycles.total() + 3 * emu::round_trip_cycles(emu::ipu2()) == p.total.total());
  std::int64_t by_kind = 0;
  for (const auto& line : p.op_kinds)
    by_kind += line.cycles.total();
  CHECK(by_kind == p.ipus[0].cycles.total());
  CHECK(std::ranges::any_of(p.op_kinds, [](const auto& l) { return l.name == "MatMul"; }));
  CHECK(!p.top_ops.empty());
  CHECK(p.summary().find("Estimated device time on ipu2") != std::string::npos);
  // Workers change nothing.
  CHECK(profiles[1].total == p.total);
  CHECK(profiles[1].steps == p.steps);

  // Without SessionOptions::profile there is nothing to report.
  MatMulProgram q;
  Session plain(q.ir);
  CHECK_THROWS_WITH_AS(plain.profile(), doctest::Contains("SessionOptions{.profile = true}"),
                       SessionError);
  CHECK_THROWS_AS(plain.write_trace("unused.json"), SessionError);
}

TEST_CASE("Session::profile: a device loop saves the host round trips of separate runs") {
  auto per_step = [](std::int64_t steps_per_run, std::int64_t runs) {
    MatMulProgram p(steps_per_run);
    Session s(p.ir, "ipu_model", {.profile = true});
    auto attached = s.attach();
    for (std::int64_t r = 0; r < runs; ++r)
      s.run({{p.x, HostTensor::full(steps_per_run > 1 ? Shape{steps_per_run, 8, 64} : Shape{8, 64},
                                    float32, 1.0)}});
    return s.profile().seconds() / static_cast<double>(steps_per_run * runs);
  };
  const double one = per_step(1, 20), loop = per_step(20, 1);
  CHECK(one / loop >= 1.2);
}

TEST_CASE("Target presets: Bow computes the same cycles 1.85/1.33 times faster") {
  auto profile = [](emu::Target t) {
    MatMulProgram p;
    Session s(p.ir, std::move(t), {.profile = true});
    auto attached = s.attach();
    s.run({{p.x, HostTensor::full({8, 64}, float32, 1.0)}});
    return s.profile();
  };
  const auto ipu2 = profile(emu::ipu2()), bow = profile(emu::bow());
  // The same cycles on the device; the host link and round trip are times, so they take more
  // of Bow's cycles.
  auto device = [](const emu::Profile& p) {
    return p.total.compute + p.total.exchange + p.total.sync;
  };
  CHECK(device(ipu2) == device(bow));
  CHECK(bow.total.host > ipu2.total.host);
  const double ratio = (static_cast<double>(device(ipu2)) / ipu2.clock_hz) /
                       (static_cast<double>(device(bow)) / bow.clock_hz);
  CHECK(ratio == doctest::Approx(1.85 / 1.33));
  // PopART's default IPU Model has 4 tiles: the same matmul spreads over fewer of them.
  CHECK(device(profile(emu::popart_ipu_model())) > device(ipu2));
}

TEST_CASE("Session::write_trace: Chrome trace events that add up to the profile") {
  MatMulProgram p(2);
  Session s(p.ir, "ipu_model", {.workers = 2, .oversubscribe = true, .profile = true});
  auto attached = s.attach();
  s.run({{p.x, HostTensor::full({2, 8, 64}, float32, 1.0)}});
  s.run({{p.x, HostTensor::full({2, 8, 64}, float32, 1.0)}});
  const TempPath trace("pxl_trace");
  s.write_trace(trace.path.string());
  const auto j = read_json(trace.path);
  REQUIRE(j.contains("traceEvents"));
  const auto& events = j["traceEvents"];
  bool ipu_named = false, host_named = false;
  std::int64_t top_level = 0, host_runs = 0;
  std::vector<nlohmann::json> slices;
  for (const auto& e : events) {
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") {
        ipu_named |= e["pid"] == 0 && e["args"]["name"].get<std::string>().starts_with("IPU 0");
        host_named |= e["pid"] == 1 && e["args"]["name"] == "Host (wall clock)";
      }
      continue;
    }
    REQUIRE(e["ph"] == "X");
    CHECK(e["dur"].get<double>() >= 0);
    if (e["pid"] == 1) {
      ++host_runs;
      continue;
    }
    if (e["args"]["depth"] == 0)
      top_level += e["args"]["cycles"].get<std::int64_t>();
    slices.push_back(e);
  }
  CHECK(ipu_named);
  CHECK(host_named);
  CHECK(host_runs == 2);
  CHECK(top_level == s.profile().total.total());
  // The loop's slice encloses the matmul's, which its steps ran.
  const auto loop = std::ranges::find_if(slices, [](const auto& e) {
    return e["name"].template get<std::string>().ends_with("(Loop)");
  });
  const auto mm = std::ranges::find_if(slices, [](const auto& e) {
    return e["name"].template get<std::string>().ends_with("(MatMul)");
  });
  REQUIRE(loop != slices.end());
  REQUIRE(mm != slices.end());
  const double loop_start = (*loop)["ts"], loop_end = loop_start + (*loop)["dur"].get<double>();
  const double mm_start = (*mm)["ts"], mm_end = mm_start + (*mm)["dur"].get<double>();
  CHECK(loop_start <= mm_start);
  CHECK(mm_end <= loop_end + 1e-9);
  CHECK((*mm)["args"]["depth"] == 2); // main -> loop body -> layer
  CHECK_THROWS_AS(s.write_trace("/nonexistent-dir/trace.json"), IoError);
}

TEST_CASE("Session::write_memory_report: the report as JSON") {
  MatMulProgram p;
  Session s(p.ir);
  const TempPath file("pxl_memory");
  s.write_memory_report(file.path.string());
  const auto j = read_json(file.path);
  const auto report = s.memory_report();
  REQUIRE(j["ipus"].size() == 1);
  CHECK(j["ipus"][0]["total"] == report.ipus[0].total());
  CHECK(j["ipus"][0]["variables"] == 64 * 32 * 4);
  CHECK(j["tensors"].size() == report.tensors.size());
  CHECK(j["tensors"][0]["bytes"] == report.tensors[0].bytes);
  CHECK_THROWS_AS(s.write_memory_report("/nonexistent-dir/memory.json"), IoError);
}

TEST_CASE("Target presets: IPU21 runs the same cycles at its own clock") {
  const emu::Target ipu21 = emu::ipu21(), ipu2 = emu::ipu2();
  CHECK(ipu21.name == "ipu21");
  CHECK(ipu21.tiles_per_ipu == ipu2.tiles_per_ipu);
  CHECK(ipu21.clock_hz > ipu2.clock_hz);
  CHECK(ipu21.clock_hz < emu::bow().clock_hz);
  // 280 TFLOPS of float16: 1,472 tiles x 64 MACs x 2 flops per cycle.
  CHECK(static_cast<double>(ipu21.tiles_per_ipu * ipu21.fp16_macs_per_tile_cycle * 2) *
            ipu21.clock_hz ==
        doctest::Approx(280e12).epsilon(0.001));
}

TEST_CASE("Target presets by name: each preset's own name, and a clear error for others") {
  for (const emu::Target& t : {emu::ipu2(), emu::bow(), emu::ipu21(), emu::popart_ipu_model()}) {
    CAPTURE(t.name);
    const emu::Target named = emu::target_named(t.name);
    CHECK(named.name == t.name);
    CHECK(named.clock_hz == t.clock_hz);
    CHECK(named.tiles_per_ipu == t.tiles_per_ipu);
  }
  CHECK_THROWS_WITH_AS(emu::target_named("tpu"),
                       "no IPU target named 'tpu': expected ipu2, bow, ipu21 or popart_ipu_model",
                       ValueError);
  CHECK_THROWS_AS(emu::target_named(""), ValueError);
  CHECK(emu::target_preset_names() == "ipu2, bow, ipu21 or popart_ipu_model");
}

TEST_CASE("Memory: code by category in closed form") {
  // host_load, exp, host_store of 64 float32 (256 bytes: 4 tiles of a 64-byte grain) on a
  // 16-tile IPU: three steps over 4 tiles each; exp runs vertices and works in place, the
  // host transfers are stream copies (no vertices) that exchange.
  auto target = emu::ipu2();
  target.tiles_per_ipu = 16;
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    ops::host_store(d2h_stream({64}, float32, "y"),
                    ops::exp(ops::host_load(h2d_stream({64}, float32, "x"))));
  }
  const auto m = Session(ir, target).memory_report().ipus[0];
  constexpr std::int64_t steps = 3, tiles = 4;
  CHECK(m.steps == steps);
  CHECK(m.vertex_code == tiles * target.vertex_code_bytes); // exp's codelet
  CHECK(m.vertex_state == tiles * target.workers_per_tile * target.vertex_state_bytes);
  CHECK(m.control_code == steps * tiles * target.control_code_bytes);
  CHECK(m.exchange_code == 2 * tiles * target.exchange_code_bytes);
  CHECK(m.code() == m.vertex_code + m.vertex_state + m.control_code + m.exchange_code);
  // Each step's code on its own 4 tiles (start tiles 0, 4 and 8, rotated as PopART's), exp's
  // codelet with exp: the most loaded tile is one of exp's, with at most the shares of the
  // two values live at once (64 bytes each), not every step's code on tile 0.
  const std::int64_t exp_tile = target.vertex_code_bytes +
                                target.workers_per_tile * target.vertex_state_bytes +
                                target.control_code_bytes;
  CHECK(m.max_tile >= exp_tile);
  CHECK(m.max_tile <= exp_tile + 2 * 64);
  std::int64_t counted = 0;
  for (std::int64_t n : m.tile_histogram)
    counted += n;
  CHECK(m.tile_histogram.size() == 10);
  CHECK(counted == 16);
  CHECK(m.tile_histogram[0] == 16); // every tile well under a tenth of its 624 KiB
  CHECK(m.tile_mean * 16 <= m.total());
  CHECK(m.tile_mean * 16 >= m.always_live());
}

TEST_CASE("Memory: a tile histogram shows the tiles a large tensor fills") {
  // 4 tiles of 64 KiB; a 200 KiB variable fills 50 KiB of each: every tile lands in the
  // eighth tenth (70-80%) once code is added.
  auto target = emu::ipu2();
  target.tiles_per_ipu = 4;
  target.bytes_per_tile = 64 * 1024;
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    auto w = variable(HostTensor({50 * 1024}, float32), "w");
    ops::host_store(d2h_stream({4}, float32, "y"), ops::slice(w, {0}, {4}));
  }
  const auto m = Session(ir, target).memory_report().ipus[0];
  CHECK(m.tile_histogram[7] + m.tile_histogram[8] == 4);
  CHECK(m.tile_mean >= 50 * 1024);
  CHECK(m.max_tile >= m.tile_mean);
  const auto json = nlohmann::json::parse(Session(ir, target).memory_report().to_json());
  CHECK(json["ipus"][0]["tile_histogram"].size() == 10);
  CHECK(json["ipus"][0]["vertex_code"] == m.vertex_code);
  CHECK(json["ipus"][0]["code"] == m.code());
}

TEST_CASE("Memory: an outlined call's input aliases its argument where that is safe") {
  // g(t) = t * 2 (does not write t) or g(t) = (t += t) (writes it); called on a (256, 256)
  // intermediate that the caller reads again afterwards. Only the reading callee can share
  // the caller's buffer (aliasZeroCopy): the writing one needs its own copy.
  const TensorSpec spec{{256, 256}, float32};
  const std::int64_t bytes = 256 * 256 * 4;
  struct Observed : emu::StepObserver {
    std::int64_t aliased = -1;
    void on_step(const emu::StepInfo& info, const emu::StepTiming&, std::int64_t) override {
      if (info.kind == emu::StepKind::call)
        aliased = info.aliased_bytes;
    }
  };
  auto run = [&](bool writes) {
    Ir ir;
    Graph g = ir.create_graph(
        "g",
        [writes](Tensor t) {
          if (writes)
            return ops::add_(t, t) * 1.0;
          return t * 2.0;
        },
        spec);
    auto in_main = ir.main_graph().scope();
    auto x = ops::host_load(h2d_stream(spec.shape, float32, "x")) + 1.0;
    auto y = ops::call(g, {x})[0];
    ops::host_store(d2h_stream(spec.shape, float32, "y"), y + x); // x is read after the call
    Session s(ir, "ipu_model", {.profile = true});
    auto attached = s.attach();
    Observed o;
    s.run({{s.expected_inputs()[0], HostTensor(spec)}}, &o);
    return std::pair{s.memory_report().ipus[0].not_always_live_peak, o.aliased};
  };
  const auto [reading_peak, reading_aliased] = run(false);
  const auto [writing_peak, writing_aliased] = run(true);
  CHECK(reading_aliased == bytes);
  CHECK(writing_aliased == 0);
  CHECK(writing_peak - reading_peak == bytes);
  // A copy that is not made costs no exchange.
  emu::StepInfo call;
  call.kind = StepKind::call;
  call.bytes_read = bytes;
  call.bytes_written = bytes;
  const auto copied = emu::estimate(call, emu::ipu2());
  call.aliased_bytes = bytes;
  CHECK(emu::estimate(call, emu::ipu2()).exchange < copied.exchange);
}
