// The IPUs of a replica: their independent steps run together (in waves), with the results and
// observed steps of one step at a time, and overlap in the profile's estimated time.
#include "helpers.hpp"
#include "reference.hpp"
#include "replicated_reference.hpp"

#include "pxl/emu/cost_model.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

using namespace pxl;

namespace test_ipus {

/// An (n, n) float32 matrix of entries in [-0.25, 0.25], different for each `seed`.
HostTensor matrix(std::int64_t n, int seed) {
  HostTensor t({n, n}, float32);
  auto d = t.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>(
               static_cast<int>((i * 7919 + static_cast<std::size_t>(seed) * 104729) % 101) - 50) /
           200.f;
  return t;
}

/// `t` on IPU `ipu` of a program on `ipus` IPUs: copied there when there are two.
Tensor on_ipu(const Tensor& t, std::int64_t ipu, std::int64_t ipus) {
  return ipus > 1 && t.ipu() != ipu ? ops::ipu_copy(t, ipu) : t;
}

/// y = a + b for x, an (n, n) stream: a = `depth` layers tanh(h @ w) from x on IPU 0, b =
/// `depth` layers sigmoid(h @ v) * 0.5 from x on IPU 1 (copied there), copied back to IPU 0.
/// With `interleaved`, the chains' ops alternate in the schedule; otherwise IPU 0's come
/// first. On one IPU (`ipus` = 1), both chains are IPU 0's.
struct TwoChains {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;

  TwoChains(std::int64_t n, int depth, bool interleaved, std::int64_t ipus = 2) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({n, n}, float32, "x");
    y = d2h_stream({n, n}, float32, "y");
    Tensor a = ops::host_load(x), b;
    const std::int64_t second = ipus > 1 ? 1 : 0;
    {
      auto on = ipu(second);
      b = on_ipu(a, second, ipus);
    }
    auto layer_a = [&](int k) {
      auto on = ipu(0);
      a = ops::tanh(ops::matmul(a, variable(matrix(n, k), "w" + std::to_string(k))));
    };
    auto layer_b = [&](int k) {
      auto on = ipu(second);
      b = ops::sigmoid(ops::matmul(b, variable(matrix(n, 100 + k), "v" + std::to_string(k)))) * 0.5;
    };
    for (int k = 0; k < depth; ++k) {
      layer_a(k);
      if (interleaved)
        layer_b(k);
    }
    for (int k = 0; k < depth && !interleaved; ++k)
      layer_b(k);
    auto on0 = ipu(0);
    ops::host_store(y, a + on_ipu(b, 0, ipus));
  }
};

HostTensor chains_input(std::int64_t n) {
  HostTensor x({n, n}, float32);
  auto d = x.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>(i % 17) / 8.f - 1.f;
  return x;
}

/// Every step a run reports: its op (none for a copy), op kind, graph, IPU, timing and replicas.
struct Recorder final : emu::StepObserver {
  struct Event {
    std::optional<OpId> op;
    OpKind kind = OpKind::Identity;
    GraphId graph;
    std::int64_t ipu = 0;
    emu::StepTiming timing;
    std::int64_t replicas = 0;
  };
  std::vector<Event> events;
  void on_step(const emu::StepInfo& info, const emu::StepTiming& timing,
               std::int64_t replicas) override {
    events.push_back({info.op, info.op_kind, info.graph, info.ipu, timing, replicas});
  }
  std::vector<std::uint32_t> ops() const {
    std::vector<std::uint32_t> r;
    for (const Event& e : events)
      r.push_back(e.op ? e.op->value : ~0u);
    return r;
  }
};

/// The indices of `g`'s ops in schedule order: the order of its steps when nothing is fused
/// or inlined.
std::vector<std::uint32_t> schedule(const Graph& g) {
  std::vector<std::uint32_t> r;
  for (const Op& op : g.ops())
    r.push_back(op.index());
  return r;
}

/// On `ipus` IPUs, two chains of `depth` layers tanh(h @ w) of (n, n) variables, one per IPU
/// (both on IPU 0 for one IPU), their sum stored to a variable: device work only, no streams.
struct Balanced {
  Ir ir;

  Balanced(std::int64_t ipus, std::int64_t n, int depth) {
    auto in_main = ir.main_graph().scope();
    std::vector<Tensor> chains;
    for (std::int64_t c = 0; c < 2; ++c) {
      auto on = ipu(ipus > 1 ? c : 0);
      Tensor h = variable(matrix(n, static_cast<int>(c)), "x" + std::to_string(c));
      for (int k = 0; k < depth; ++k)
        h = ops::tanh(ops::matmul(h, variable(matrix(n, k + 10 * static_cast<int>(c)),
                                              "w" + std::to_string(c) + "_" + std::to_string(k))));
      chains.push_back(h);
    }
    auto on0 = ipu(0);
    auto sum = variable(HostTensor({n, n}, float32), "sum");
    ops::var_updates::copy_var_update_(sum, chains[0] + on_ipu(chains[1], 0, ipus));
  }
};

emu::Profile profile_of(Ir& ir, unsigned workers, int runs = 2) {
  Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true, .profile = true});
  auto attached = s.attach();
  for (int r = 0; r < runs; ++r)
    s.run();
  return s.profile();
}

TEST_CASE("Two IPUs' chains give bitwise the same results on 1, 2 and 3 workers") {
  constexpr std::int64_t n = 24;
  const HostTensor x = chains_input(n);
  for (const bool interleaved : {true, false}) {
    CAPTURE(interleaved);
    TwoChains p(n, 4, interleaved);
    std::vector<HostTensor> results;
    for (const unsigned workers : {1u, 2u, 3u}) {
      Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      auto attached = s.attach();
      for (int run = 0; run < 2; ++run) // the second run reuses every buffer
        results.push_back(s.run({{p.x, x}}).at(p.y));
      // Each IPU holds its own chain's variables.
      const auto memory = s.memory_report();
      REQUIRE(memory.ipus.size() == 2);
      CHECK(memory.ipus[0].variables == 4 * n * n * 4);
      CHECK(memory.ipus[1].variables == 4 * n * n * 4);
    }
    for (std::size_t i = 1; i < results.size(); ++i)
      CHECK(results[i] == results[0]);
    testing::ReferenceEvaluator ref(p.ir);
    CHECK(allclose(results[0], ref.run({{"x", x}}).at("y"), 1e-5, 1e-6));
    // The same chains on one IPU, step by step: bitwise the same.
    TwoChains one(n, 4, interleaved, 1);
    Session s(one.ir, "ipu_model", {.workers = 2, .oversubscribe = true});
    auto attached = s.attach();
    CHECK(s.run({{one.x, x}}).at(one.y) == results[0]);
  }
}

TEST_CASE("An observer sees every step of two IPUs once, in program order") {
  constexpr std::int64_t n = 16;
  for (const bool interleaved : {true, false}) {
    CAPTURE(interleaved);
    TwoChains p(n, 3, interleaved);
    const std::vector<std::uint32_t> expected = schedule(p.ir.main_graph());
    for (const unsigned workers : {1u, 2u, 3u}) {
      CAPTURE(workers);
      Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      auto attached = s.attach();
      Recorder rec;
      s.run({{p.x, chains_input(n)}}, &rec);
      CHECK(rec.ops() == expected);
      for (const auto& e : rec.events) {
        CHECK(e.timing.start <= e.timing.end);
        CHECK(e.timing.depth == 0);
        CHECK(e.replicas == 1);
      }
    }
  }
}

TEST_CASE("IPU-local steps of two IPUs run in one phase; on one IPU, one step per phase") {
  // The observer times a step by the phase it ran in: steps that ran together share a timing.
  auto observe = [](std::int64_t ipus) {
    TwoChains p(16, 3, /*interleaved=*/false, ipus);
    Session s(p.ir, "ipu_model", {.workers = 2, .oversubscribe = true});
    auto attached = s.attach();
    Recorder rec;
    s.run({{p.x, chains_input(16)}}, &rec);
    return rec.events;
  };
  // The chains' layers: matmul, tanh on IPU 0; matmul, sigmoid, mul on IPU 1.
  std::vector<emu::StepTiming> zero, one;
  for (const auto& e : observe(2))
    if (e.kind == OpKind::MatMul || e.kind == OpKind::Tanh || e.kind == OpKind::Sigmoid ||
        e.kind == OpKind::Mul)
      (e.ipu == 0 ? zero : one).push_back(e.timing);
  REQUIRE(zero.size() == 2 * 3);
  REQUIRE(one.size() == 3 * 3);
  // Phase k runs IPU 0's k-th step with IPU 1's; IPU 1's last three run alone.
  for (std::size_t k = 0; k < one.size(); ++k) {
    CAPTURE(k);
    if (k < zero.size()) {
      CHECK(zero[k].start == one[k].start);
      CHECK(zero[k].end == one[k].end);
    }
    if (k > 0)
      CHECK(one[k].start > one[k - 1].start);
  }
  const auto single = observe(1);
  for (std::size_t k = 1; k < single.size(); ++k)
    CHECK(single[k].timing.start > single[k - 1].timing.start);
}

TEST_CASE("A loop and a conditional over two IPUs' work, per replica") {
  // Per replica: a = x, b = x on IPU 1; three times { a = tanh(a @ a) / 2; b = sigmoid(b @ b)
  // - 1/4 }; then if flag { a = 2 a + 1; b = 3 b } else { a = a - 1; b = b * b }; y = a + b.
  constexpr std::int64_t replicas = 2, n = 8;
  const TensorSpec spec{{n, n}, float32};
  Ir ir(replicas);
  // A graph of inputs a (IPU 0) and b (IPU 1) returning fa(a) and fb(b) on their IPUs.
  auto two_ipu_graph = [&](const char* name, auto fa, auto fb) {
    Graph g = ir.create_empty_graph(name);
    auto scope = g.scope();
    const Tensor a = graph_input(spec, "a");
    Tensor b;
    {
      auto on1 = ipu(1);
      b = graph_input(spec, "b");
    }
    graph_output(fa(a));
    auto on1 = ipu(1);
    graph_output(fb(b));
    return g;
  };
  Graph body = two_ipu_graph(
      "body", [](Tensor a) { return ops::tanh(ops::matmul(a, a)) * 0.5; },
      [](Tensor b) { return ops::sigmoid(ops::matmul(b, b)) - 0.25; });
  Graph then_branch = two_ipu_graph(
      "then", [](Tensor a) { return a * 2.0 + 1.0; }, [](Tensor b) { return b * 3.0; });
  Graph else_branch = two_ipu_graph(
      "else", [](Tensor a) { return a - 1.0; }, [](Tensor b) { return b * b; });
  HostToDeviceStream x, flag;
  DeviceToHostStream y;
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream(spec.shape, float32, "x");
    flag = h2d_stream({}, bool_, "flag");
    y = d2h_stream(spec.shape, float32, "y");
    const Tensor xa = ops::host_load(x);
    const Tensor xb = ops::ipu_copy(xa, 1);
    const auto looped = ops::repeat(body, 3, {xa, xb});
    const auto chosen =
        ops::conditional(ops::host_load(flag), then_branch, else_branch, looped, looped);
    ops::host_store(y, chosen[0] + ops::ipu_copy(chosen[1], 0));
  }
  HostTensor xs({replicas, n, n}, float32);
  auto d = xs.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>(static_cast<int>(i % 23) - 11) / 16.f;
  const HostTensor flags({true, false}, {replicas});
  const auto expected = testing::run_replicated(ir, {{"x", xs}, {"flag", flags}}).at("y");
  std::vector<HostTensor> results;
  for (const unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    Recorder rec;
    results.push_back(s.run({{x, xs}, {flag, flags}}, &rec).at(y));
    CHECK(allclose(results.back(), expected, 1e-5, 1e-6));
    // The body's steps three times on both replicas; each branch's once, on its replica.
    std::int64_t in_body = 0, in_branches = 0;
    for (const auto& e : rec.events) {
      if (e.graph == IrView::id(body)) {
        ++in_body;
        CHECK(e.replicas == replicas);
      }
      if (e.graph == IrView::id(then_branch) || e.graph == IrView::id(else_branch)) {
        ++in_branches;
        CHECK(e.replicas == 1);
      }
    }
    CHECK(in_body == 3 * 6); // matmul, tanh, mul on IPU 0; matmul, sigmoid, sub on IPU 1
    CHECK(in_branches == 3 + 2);
  }
  CHECK(results[1] == results[0]);
  CHECK(results[2] == results[0]);
}

TEST_CASE("Profile: the IPUs of a replica overlap in estimated time; one IPU's is its work") {
  constexpr std::int64_t n = 32;
  constexpr int depth = 16, runs = 2;
  Balanced two(2, n, depth), one(1, n, depth);
  const emu::Profile p2 = profile_of(two.ir, 2, runs), p1 = profile_of(one.ir, 2, runs);
  // One IPU: every step after the other, as the sum of their costs.
  CHECK(p1.elapsed_cycles == p1.total.total());
  CHECK(p1.seconds() == static_cast<double>(p1.total.total()) / p1.clock_hz);
  CHECK(p1.summary().find("the IPUs overlap") == std::string::npos);
  // Two: each IPU's chain at the same time, the copy and the update after both. The host
  // round trips of the runs overlap nothing.
  const std::int64_t trips = runs * emu::round_trip_cycles(emu::ipu2());
  const std::int64_t work = p2.total.total() - trips, elapsed = p2.elapsed_cycles - trips;
  CHECK(static_cast<double>(elapsed) < 0.6 * static_cast<double>(work));
  CHECK(2 * elapsed >= work);
  CHECK(p2.seconds() == static_cast<double>(p2.elapsed_cycles) / p2.clock_hz);
  CHECK(p2.summary().find("x the elapsed time as the IPUs overlap") != std::string::npos);
  // The same computation either way; two IPUs add the copy between them.
  CHECK(p2.total.compute == p1.total.compute);
  CHECK(p2.total.exchange > p1.total.exchange);
  // Estimates, not timings: the workers change nothing.
  const emu::Profile p2_alone = profile_of(two.ir, 1, runs);
  CHECK(p2_alone.elapsed_cycles == p2.elapsed_cycles);
  CHECK(p2_alone.total == p2.total);
}

TEST_CASE("emu::estimate: a run's elapsed time is the profile's, the IPUs overlapping") {
  constexpr std::int64_t n = 32;
  Balanced two(2, n, 16);
  emu::Target t = emu::ipu2();
  t.ipus = 2;
  const emu::IrEstimate e = emu::estimate(two.ir, t);
  const emu::Profile p = profile_of(two.ir, 2, 1);
  CHECK(e.run == p.total);
  CHECK(e.elapsed_cycles == p.elapsed_cycles);
  CHECK(e.elapsed_cycles < e.run.total());
  CHECK(e.seconds() == static_cast<double>(e.elapsed_cycles) / t.clock_hz);
  // One IPU: the work itself.
  Balanced one(1, n, 16);
  const emu::IrEstimate e1 = emu::estimate(one.ir, emu::ipu2());
  CHECK(e1.elapsed_cycles == e1.run.total());
}

TEST_CASE("emu::estimate: a pipelined loop's iterations overlap, as in the profile, for any "
          "trip count") {
  // Each iteration: a chain on IPU 0, its result copied to IPU 1 and a chain there. IPU 0
  // starts the next iteration while IPU 1 works on this one's, so the estimate replays the
  // iterations until they repeat in phase and adds the rest at once.
  constexpr std::int64_t n = 32;
  const auto program = [&](std::int64_t trips) {
    auto ir = std::make_unique<Ir>();
    auto in_main = ir->main_graph().scope();
    Tensor a = [&] {
      auto on = ipu(0);
      return variable(matrix(n, 1), "a");
    }();
    Tensor b = [&] {
      auto on = ipu(1);
      return variable(matrix(n, 2), "b");
    }();
    Graph body = ir->create_empty_graph("body");
    {
      auto scope = body.scope();
      Tensor x = graph_input(a.spec(), "a", /*by_ref=*/true);
      Tensor h = x;
      for (int k = 0; k < 6; ++k)
        h = ops::tanh(ops::matmul(h, x));
      ops::var_updates::copy_var_update_(x, h);
      auto on = ipu(1);
      Tensor y = graph_input(b.spec(), "b", /*by_ref=*/true);
      Tensor g = ops::ipu_copy(h, 1);
      for (int k = 0; k < 3; ++k)
        g = ops::sigmoid(ops::matmul(g, y));
      ops::var_updates::copy_var_update_(y, g);
    }
    ops::repeat(body, trips, {a, b});
    return ir;
  };
  emu::Target t = emu::ipu2();
  t.ipus = 2;
  std::int64_t per_trip = 0, work_per_trip = 0;
  for (const std::int64_t trips : {1, 2, 3, 40}) {
    CAPTURE(trips);
    const auto ir = program(trips);
    const emu::IrEstimate e = emu::estimate(*ir, t);
    const emu::Profile p = profile_of(*ir, 1, 1);
    CHECK(e.run == p.total);
    CHECK(e.elapsed_cycles == p.elapsed_cycles);
    CHECK((e.elapsed_cycles < e.run.total()) == (trips > 1)); // one iteration overlaps nothing
    if (trips == 2) {
      per_trip = e.elapsed_cycles;
      work_per_trip = e.run.total();
    }
    if (trips == 3) {
      per_trip = e.elapsed_cycles - per_trip;
      work_per_trip = e.run.total() - work_per_trip;
    }
  }
  CHECK(per_trip < work_per_trip);
  // In the steady state an iteration takes IPU 0's chain, less than the whole iteration's work.
  const auto ir = program(1000);
  const emu::IrEstimate e = emu::estimate(*ir, t);
  CHECK(e.elapsed_cycles - emu::estimate(*program(3), t).elapsed_cycles == 997 * per_trip);
}

TEST_CASE("Session::write_trace: the two IPUs' steps overlap on their tracks") {
  Balanced p(2, 32, 4);
  Session s(p.ir, "ipu_model", {.workers = 2, .oversubscribe = true, .profile = true});
  auto attached = s.attach();
  s.run();
  const auto path = std::filesystem::temp_directory_path() /
                    ("pxl_ipus_trace." + std::to_string(::getpid()) + ".json");
  s.write_trace(path.string());
  std::ifstream in(path);
  REQUIRE(in);
  const auto trace = nlohmann::json::parse(in);
  in.close();
  std::filesystem::remove(path);
  // By IPU: the [start, end) of each MatMul.
  std::vector<std::pair<double, double>> matmuls[2];
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["name"].get<std::string>().ends_with("(MatMul)")) {
      const auto pid = e["pid"].get<std::size_t>();
      REQUIRE(pid < 2);
      const double ts = e["ts"].get<double>();
      matmuls[pid].emplace_back(ts, ts + e["dur"].get<double>());
    }
  REQUIRE(matmuls[0].size() == 4);
  REQUIRE(matmuls[1].size() == 4);
  // Both chains start together, after the run's round trip, and run side by side.
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(matmuls[0][k].first == matmuls[1][k].first);
    CHECK(matmuls[0][k].first < matmuls[1][k].second);
    CHECK(matmuls[1][k].first < matmuls[0][k].second);
  }
}

} // namespace test_ipus
