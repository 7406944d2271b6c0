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

namespace test_ipu_all_reduce {

/// x_i, a (2, 3) stream loaded on IPU i of `ipus`, on 2 replicas; y_i, from IPU i, is the
/// all-reduce across the IPUs (the variant's forward) of every x_j.
struct IpuAllReduce {
  Ir ir{2};
  std::vector<HostToDeviceStream> xs;
  std::vector<DeviceToHostStream> ys;

  IpuAllReduce(std::int64_t ipus, CollectiveOperator op, DType dtype,
               AllReduceVariant variant = AllReduceVariant::none) {
    auto in_main = ir.main_graph().scope();
    std::vector<Tensor> loaded;
    for (std::int64_t i = 0; i < ipus; ++i) {
      auto on = ipu(i);
      xs.push_back(h2d_stream({2, 3}, dtype, "x" + std::to_string(i)));
      loaded.push_back(ops::host_load(xs.back()));
    }
    const auto reduce = variant == AllReduceVariant::identical_inputs
                            ? ops::collectives::all_reduce_identical_inputs
                        : variant == AllReduceVariant::identical_grad_inputs
                            ? ops::collectives::all_reduce_identical_grad_inputs
                            : ops::collectives::all_reduce;
    const std::vector<Tensor> reduced = reduce(loaded, std::nullopt, op);
    for (std::int64_t i = 0; i < ipus; ++i) {
      auto on = ipu(i);
      REQUIRE(reduced[static_cast<std::size_t>(i)].ipu() == i);
      ys.push_back(d2h_stream({2, 3}, dtype, "y" + std::to_string(i)));
      ops::host_store(ys.back(), reduced[static_cast<std::size_t>(i)]);
    }
  }
};

/// Replica-major data of 2 replicas of (2, 3) for IPU `i`: distinct per IPU and replica.
HostTensor ipu_data(std::int64_t i, DType dtype) {
  HostTensor t({2, 2, 3}, float32);
  auto d = t.data<float>();
  for (std::size_t k = 0; k < d.size(); ++k)
    d[k] = static_cast<float>(static_cast<int>((k * 37 + static_cast<std::size_t>(i) * 11) % 23) -
                              11) /
           (dtype == int32 ? 1.f : 7.f);
  return t.astype(dtype);
}

/// y_i of every IPU, run on `workers` workers.
std::vector<HostTensor> run_ipu_all_reduce(IpuAllReduce& p, DType dtype, unsigned workers) {
  Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  auto attached = s.attach();
  StreamInputs feeds;
  for (std::size_t i = 0; i < p.xs.size(); ++i)
    feeds.emplace(p.xs[i], ipu_data(static_cast<std::int64_t>(i), dtype));
  const auto out = s.run(feeds);
  std::vector<HostTensor> ys;
  for (const auto& y : p.ys)
    ys.push_back(out.at(y));
  return ys;
}

} // namespace test_ipu_all_reduce

TEST_CASE("all_reduce across IPUs: every IPU gets the reduction in input order, per replica") {
  using namespace test_ipu_all_reduce;
  struct Case {
    CollectiveOperator op;
    DType dtype;
  };
  for (const Case c :
       {Case{CollectiveOperator::add, float32}, Case{CollectiveOperator::mean, float32},
        Case{CollectiveOperator::max, float16}, Case{CollectiveOperator::add, int32},
        Case{CollectiveOperator::square_add, float32}}) {
    CAPTURE(static_cast<int>(c.op));
    CAPTURE(name(c.dtype));
    IpuAllReduce p(3, c.op, c.dtype);
    const auto ys = run_ipu_all_reduce(p, c.dtype, 1);
    // The closed form: the three IPUs' values of each replica's element, combined in double in
    // IPU order and rounded once to the dtype.
    std::vector<HostTensor> xs;
    for (std::int64_t i = 0; i < 3; ++i)
      xs.push_back(ipu_data(i, c.dtype).astype(float32));
    HostTensor expected({2, 2, 3}, float32);
    for (std::int64_t e = 0; e < 12; ++e) {
      double acc = 0;
      for (std::int64_t i = 0; i < 3; ++i) {
        const double v = static_cast<double>(HostTensor(xs[static_cast<std::size_t>(i)]).item(e));
        const double x =
            c.dtype == float16
                ? static_cast<double>(static_cast<float>(HostTensor({static_cast<float>(v)}, {1})
                                                             .astype(float16)
                                                             .astype(float32)
                                                             .item(0)))
                : v;
        acc = i == 0 ? (c.op == CollectiveOperator::square_add ? x * x : x)
              : c.op == CollectiveOperator::max        ? std::max(acc, x)
              : c.op == CollectiveOperator::square_add ? acc + x * x
                                                       : acc + x;
      }
      if (c.op == CollectiveOperator::mean)
        acc /= 3;
      expected.data<float>()[static_cast<std::size_t>(e)] = static_cast<float>(acc);
    }
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(ys[i] == expected.astype(c.dtype));
      CHECK(ys[i] == ys[0]);
    }
    // The same bits on any number of workers, and the reference evaluator's result.
    CHECK(run_ipu_all_reduce(p, c.dtype, 3) == ys);
    const auto ref = testing::run_replicated(
        p.ir,
        {{"x0", ipu_data(0, c.dtype)}, {"x1", ipu_data(1, c.dtype)}, {"x2", ipu_data(2, c.dtype)}});
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(ref.at("y" + std::to_string(i)) == ys[i]);
  }
  // identical_inputs: the identity on every IPU; identical_grad_inputs: the all-reduce.
  IpuAllReduce same(2, CollectiveOperator::add, float32, AllReduceVariant::identical_inputs);
  const auto ident = run_ipu_all_reduce(same, float32, 2);
  CHECK(ident[0] == ipu_data(0, float32));
  CHECK(ident[1] == ipu_data(1, float32));
  IpuAllReduce grad_same(2, CollectiveOperator::add, float32,
                         AllReduceVariant::identical_grad_inputs);
  IpuAllReduce plain(2, CollectiveOperator::add, float32);
  CHECK(run_ipu_all_reduce(grad_same, float32, 2) == run_ipu_all_reduce(plain, float32, 2));
}

TEST_CASE("all_reduce across IPUs: the gradients of the three variants, in closed form") {
  using namespace test_ipu_all_reduce;
  // Loss Σ_i <w_i, y_i>: plain add gives dx_j = Σ_i w_i, mean (Σ_i w_i) / 2, identical inputs
  // (y_i = x_i forward) Σ_i w_i too, identical grad inputs dx_j = w_j.
  struct Case {
    AllReduceVariant variant;
    CollectiveOperator op;
  };
  for (const Case c : {Case{AllReduceVariant::none, CollectiveOperator::add},
                       Case{AllReduceVariant::none, CollectiveOperator::mean},
                       Case{AllReduceVariant::identical_inputs, CollectiveOperator::add},
                       Case{AllReduceVariant::identical_grad_inputs, CollectiveOperator::add}}) {
    CAPTURE(static_cast<int>(c.variant));
    Ir ir;
    HostToDeviceStream x0, x1, w0, w1;
    DeviceToHostStream dx0, dx1;
    {
      auto main = ir.main_graph().scope();
      Graph fwd = ir.create_graph(
          "f",
          [&](Tensor a, Tensor b) {
            const auto reduce = c.variant == AllReduceVariant::identical_inputs
                                    ? ops::collectives::all_reduce_identical_inputs
                                : c.variant == AllReduceVariant::identical_grad_inputs
                                    ? ops::collectives::all_reduce_identical_grad_inputs
                                    : ops::collectives::all_reduce;
            return reduce({a, ops::ipu_copy(b, 1)}, std::vector<std::int64_t>{0, 1}, c.op);
          },
          TensorSpec{{3}, float32}, TensorSpec{{3}, float32});
      const auto info = transforms::autodiff(fwd);
      x0 = h2d_stream({3}, float32, "x0");
      x1 = h2d_stream({3}, float32, "x1");
      w0 = h2d_stream({3}, float32, "w0");
      const auto call = ops::call_with_info(fwd, {ops::host_load(x0), ops::host_load(x1)});
      Tensor loaded_w1;
      {
        auto on = ipu(1); // the gradient of y_1 lives where y_1 does
        w1 = h2d_stream({3}, float32, "w1");
        loaded_w1 = ops::host_load(w1);
      }
      const auto dx =
          ops::call(info.graph(), {ops::host_load(w0), loaded_w1}, info.inputs_dict(call));
      dx0 = d2h_stream({3}, float32, "dx0");
      dx1 = d2h_stream({3}, float32, "dx1");
      ops::host_store(dx0, dx[0]);
      ops::host_store(dx1, dx[1]);
    }
    Session s(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
    auto attached = s.attach();
    const HostTensor wa({0.5f, -1.25f, 3.f}, {3}), wb({0.25f, 2.f, -0.75f}, {3});
    const auto out = s.run({{x0, HostTensor({1.f, 2.f, 3.f}, {3})},
                            {x1, HostTensor({4.f, 5.f, 6.f}, {3})},
                            {w0, wa},
                            {w1, wb}});
    HostTensor sum({3}, float32);
    for (std::int64_t i = 0; i < 3; ++i)
      sum.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(
          (wa.item(i) + wb.item(i)) / (c.op == CollectiveOperator::mean ? 2.0 : 1.0));
    const bool identity = c.variant == AllReduceVariant::identical_grad_inputs;
    CHECK(out.at(dx0) == (identity ? wa : sum));
    CHECK(out.at(dx1) == (identity ? wb : sum));
  }
}

TEST_CASE("all_reduce across IPUs is priced as a ring over the IPU-Links of the IPUs it spans") {
  using namespace test_ipu_all_reduce;
  struct Spans final : emu::StepObserver {
    std::map<OpKind, emu::StepInfo> steps;
    void on_step(const emu::StepInfo& info, const emu::StepTiming&, std::int64_t) override {
      steps[info.op_kind] = info;
    }
  };
  IpuAllReduce p(3, CollectiveOperator::add, float32);
  Session s(p.ir, "ipu_model", {.workers = 1});
  auto attached = s.attach();
  StreamInputs feeds;
  for (std::size_t i = 0; i < 3; ++i)
    feeds.emplace(p.xs[i], ipu_data(static_cast<std::int64_t>(i), float32));
  Spans spans;
  s.run(feeds, &spans);
  const emu::StepInfo& reduce = spans.steps.at(OpKind::AllReduce);
  CHECK(reduce.ipus == 3);
  CHECK(reduce.flops == 2 * 6); // two additions per element
  CHECK(spans.steps.at(OpKind::HostLoad).ipus == 1);
  // Each IPU sends 2 (n - 1) / n of its 24 bytes over its own link at once: 32 bytes.
  const emu::Target target;
  const double seconds = 32.0 / target.ipu_link_bytes_per_second;
  CHECK(emu::estimate(reduce, target).exchange ==
        std::llround(std::ceil(seconds * target.clock_hz)));
}

} // namespace test_ipus
