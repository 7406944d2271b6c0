// Conditionals on the emulator: each replica runs the branch its own condition chooses, in
// lockstep with the others; bitwise equal to the replicated reference for any worker count.
#include "helpers.hpp"
#include "replicated_reference.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace pxl;
using doctest::Contains;

namespace {
const TensorSpec f8{{8}, float32};
const TensorSpec scalar{{}, float32};

/// Runs `ir` on the emulator with 1, 2 and 4 workers and checks each run's outputs equal the
/// replicated reference's, bitwise. Returns the reference's outputs.
std::map<std::string, HostTensor>
check_against_reference(Ir& ir, const std::vector<HostToDeviceStream>& inputs,
                        const std::vector<HostTensor>& data,
                        const std::vector<DeviceToHostStream>& outputs) {
  std::map<std::string, HostTensor> by_name;
  StreamInputs feed;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    by_name.emplace(inputs[i].name(), data[i]);
    feed.emplace(inputs[i], data[i]);
  }
  const auto expected = testing::run_replicated(ir, by_name);
  for (const unsigned workers : {1u, 2u, 4u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    const auto out = s.run(feed);
    for (const auto& y : outputs)
      CHECK(out.at(y) == expected.at(y.name()));
  }
  return expected;
}

/// Replica r's element of an array shaped [transfers, replicas, *shape].
float at(const HostTensor& a, std::int64_t transfer, std::int64_t replica, std::int64_t replicas,
         std::int64_t elements, std::int64_t i) {
  return a.data<float>()[static_cast<std::size_t>((transfer * replicas + replica) * elements + i)];
}
} // namespace

TEST_CASE("conditional: each replica takes the branch its own condition chooses") {
  // Per transfer: x = load; if sum(x) > 0 then { w += x; y = w * x } else { y = x - 1 }.
  // w is a variable the then-branch updates by reference, so each replica's w follows its own
  // branches, and the second transfer sees the first's update.
  constexpr std::int64_t replicas = 4, transfers = 2;
  Ir ir(replicas);
  HostToDeviceStream x;
  DeviceToHostStream y;
  Graph accumulate = ir.create_empty_graph("accumulate");
  {
    auto scope = accumulate.scope();
    auto xi = graph_input(f8, "x");
    auto w = graph_input(f8, "w", /*by_ref=*/true);
    ops::add_(w, xi);
    graph_output(w * xi);
  }
  Graph decrement = ir.create_graph(
      "decrement", [](Tensor xi) { return xi - 1.0; }, f8);
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream(f8.shape, float32, "x");
    y = d2h_stream(f8.shape, float32, "y");
    auto w = variable(HostTensor::full(f8.shape, float32, 0.5), "w");
    Graph step = ir.create_empty_graph("step");
    {
      auto scope = step.scope();
      auto wi = graph_input(f8, "w", /*by_ref=*/true);
      auto xi = ops::host_load(x);
      auto positive = ops::greater(ops::sum(xi), constant(HostTensor::scalar(0.f)));
      ops::host_store(y, ops::conditional(positive, accumulate, decrement, {xi, wi}, {xi})[0]);
    }
    ops::repeat(step, transfers, {w});
    ir.set_num_host_transfers(transfers);
  }
  // Replicas 0 and 2 positive in both transfers, replica 1 negative in both, replica 3
  // negative then positive.
  HostTensor data({transfers, replicas, 8}, float32);
  auto d = data.data<float>();
  for (std::int64_t t = 0; t < transfers; ++t)
    for (std::int64_t r = 0; r < replicas; ++r) {
      const bool positive = r % 2 == 0 || (r == 3 && t == 1);
      for (std::int64_t i = 0; i < 8; ++i)
        d[static_cast<std::size_t>((t * replicas + r) * 8 + i)] =
            (positive ? 1.f : -1.f) * (0.25f + static_cast<float>(i + r + t));
    }
  const auto expected = check_against_reference(ir, {x}, {data}, {y});
  // Closed form for the first element of each replica.
  const HostTensor& out = expected.at("y");
  auto xv = [&](std::int64_t t, std::int64_t r) { return at(data, t, r, replicas, 8, 0); };
  auto yv = [&](std::int64_t t, std::int64_t r) { return at(out, t, r, replicas, 8, 0); };
  CHECK(yv(0, 0) == (0.5f + xv(0, 0)) * xv(0, 0));
  CHECK(yv(1, 0) == (0.5f + xv(0, 0) + xv(1, 0)) * xv(1, 0));
  CHECK(yv(0, 1) == xv(0, 1) - 1.f);
  CHECK(yv(1, 1) == xv(1, 1) - 1.f);
  CHECK(yv(0, 3) == xv(0, 3) - 1.f);
  CHECK(yv(1, 3) == (0.5f + xv(1, 3)) * xv(1, 3)); // w untouched by the first transfer's branch
}

TEST_CASE("conditional: nested in a branch and in a loop, per replica") {
  // Four iterations over a counter c that starts at the replica's value s:
  //   if c < 2 { if c == 0 { acc += 1 } else { acc += 10 } } else { acc *= 2 };  c += 1
  constexpr std::int64_t replicas = 3;
  Ir ir(replicas);
  HostToDeviceStream start;
  DeviceToHostStream result;
  auto updating = [&](const char* name, auto update) {
    Graph g = ir.create_empty_graph(name);
    auto scope = g.scope();
    auto acc = graph_input(scalar, "acc", /*by_ref=*/true);
    update(acc);
    return g;
  };
  Graph add_one =
      updating("add_one", [](Tensor acc) { ops::add_(acc, constant(HostTensor::scalar(1.f))); });
  Graph add_ten =
      updating("add_ten", [](Tensor acc) { ops::add_(acc, constant(HostTensor::scalar(10.f))); });
  Graph twice =
      updating("twice", [](Tensor acc) { ops::mul_(acc, constant(HostTensor::scalar(2.f))); });
  Graph small = ir.create_empty_graph("small");
  {
    auto scope = small.scope();
    auto acc = graph_input(scalar, "acc", /*by_ref=*/true);
    auto c = graph_input(scalar, "c");
    auto zero = ops::equal(c, constant(HostTensor::scalar(0.f)));
    ops::conditional(zero, add_one, add_ten, {acc}, {acc});
  }
  Graph body = ir.create_empty_graph("body");
  {
    auto scope = body.scope();
    auto c = graph_input(scalar, "c", /*by_ref=*/true);
    auto acc = graph_input(scalar, "acc", /*by_ref=*/true);
    auto below_two = ops::less(c, constant(HostTensor::scalar(2.f)));
    ops::conditional(below_two, small, twice, {acc, c}, {acc});
    ops::add_(c, constant(HostTensor::scalar(1.f)));
  }
  {
    auto in_main = ir.main_graph().scope();
    start = h2d_stream({}, float32, "start");
    result = d2h_stream({}, float32, "acc");
    auto c = variable(HostTensor::scalar(0.f), "c");
    auto acc = variable(HostTensor::scalar(0.f), "acc");
    ops::var_updates::copy_var_update_(c, ops::host_load(start));
    ops::repeat(body, 4, {c, acc});
    ops::host_store(result, acc);
  }
  const auto expected =
      check_against_reference(ir, {start}, {HostTensor({0.f, 1.f, 5.f}, {replicas})}, {result});
  // s = 0: c = 0, 1, 2, 3: +1, +10, ×2, ×2 = 44. s = 1: +10, ×2, ×2, ×2 = 80. s = 5: 0.
  CHECK(expected.at("acc") == HostTensor({44.f, 80.f, 0.f}, {replicas}));
}

TEST_CASE("conditional: an observer sees a branch's steps with the replicas that ran them") {
  struct Recorder final : emu::StepObserver {
    std::vector<std::pair<emu::StepInfo, std::int64_t>> events;
    void on_step(const emu::StepInfo& info, const emu::StepTiming&, std::int64_t n) override {
      events.emplace_back(info, n);
    }
  } rec;
  Ir ir(2);
  HostToDeviceStream flag;
  DeviceToHostStream y;
  Graph neg = ir.create_graph(
      "neg", [](Tensor t) { return -t; }, f8);
  Graph exp = ir.create_graph(
      "exp", [](Tensor t) { return ops::exp(ops::exp(t)); }, f8);
  Op cond;
  {
    auto in_main = ir.main_graph().scope();
    flag = h2d_stream({}, bool_, "flag");
    y = d2h_stream(f8.shape, float32, "y");
    auto x = constant(HostTensor::full(f8.shape, float32, 1.0), "x");
    auto info = ops::conditional_with_info(ops::host_load(flag), neg, exp, {x}, {x});
    cond = info.op();
    ops::host_store(y, info.outputs()[0]);
  }
  Session s(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
  auto attached = s.attach();
  auto count = [&](OpKind k) {
    std::vector<std::int64_t> replicas;
    for (const auto& [info, n] : rec.events)
      if (info.op && info.op_kind == k)
        replicas.push_back(n);
    return replicas;
  };
  // Replica 0 negates, replica 1 takes exp twice.
  s.run({{flag, HostTensor({true, false}, {2})}}, &rec);
  CHECK(count(OpKind::Negate) == std::vector<std::int64_t>{1});
  CHECK(count(OpKind::Exp) == std::vector<std::int64_t>{1, 1});
  CHECK(count(OpKind::Conditional) == std::vector<std::int64_t>{2});
  const auto it = std::ranges::find_if(
      rec.events, [](const auto& e) { return e.first.kind == emu::StepKind::conditional; });
  REQUIRE(it != rec.events.end());
  CHECK(it->first.callee == IrView::id(neg));
  CHECK(it->first.else_callee == IrView::id(exp));
  CHECK(it->first.op == IrView::id(cond));
  // Both negate: the else-branch's steps ran nowhere and are not reported.
  rec.events.clear();
  const auto out = s.run({{flag, HostTensor({true, true}, {2})}}, &rec);
  CHECK(count(OpKind::Negate) == std::vector<std::int64_t>{2});
  CHECK(count(OpKind::Exp).empty());
  CHECK(out.at(y) == HostTensor::full({2, 8}, float32, -1.0));
}

TEST_CASE("conditional: the memory peak is the larger branch's, not their sum") {
  // Each branch keeps a (256, 256) float32 intermediate live: one branch runs at a time.
  const TensorSpec big{{256, 256}, float32};
  auto peak = [&](bool conditional) {
    Ir ir;
    Graph a = ir.create_graph(
        "a", [](Tensor t) { return ops::exp(t) * t; }, big);
    Graph b = ir.create_graph(
        "b", [](Tensor t) { return ops::tanh(t) + t; }, big);
    {
      auto in_main = ir.main_graph().scope();
      auto x = variable(HostTensor(big), "x");
      auto yes = constant(HostTensor::scalar(true), "yes");
      if (conditional) {
        ops::var_updates::copy_var_update_(x, ops::conditional(yes, a, b, {x}, {x})[0]);
      } else {
        ops::var_updates::copy_var_update_(x, ops::call(a, {x})[0]);
        ops::var_updates::copy_var_update_(x, ops::call(b, {x})[0]);
      }
    }
    Session s(ir, "ipu_model");
    return s.memory_report().ipus[0].not_always_live_peak;
  };
  const auto one_branch = peak(true), sequential = peak(false);
  CHECK(one_branch > 256 * 256 * 4);
  CHECK(one_branch <= sequential);
}

TEST_CASE("conditional: a branch with host streams or collectives is refused, naming them") {
  // The message of the GraphError a Session over a conditional on `make_branch`'s graph throws.
  auto refused = [](auto make_branch) {
    Ir ir(2);
    const Graph branch = make_branch(ir);
    const Graph plain = ir.create_graph(
        "plain", [](Tensor t) { return t * 2.0; }, f8);
    {
      auto in_main = ir.main_graph().scope();
      auto t = constant(HostTensor(f8), "t");
      ops::conditional(constant(HostTensor::scalar(true)), plain, branch, {t}, {t});
    }
    try {
      Session s(ir, "ipu_model");
    } catch (const GraphError& e) {
      return std::pair{std::string(e.what()), branch.name()};
    }
    return std::pair{std::string(), branch.name()};
  };
  const auto load = refused([](Ir& ir) {
    Graph g = ir.create_empty_graph("loads");
    HostToDeviceStream x;
    {
      auto in_main = ir.main_graph().scope();
      x = h2d_stream(f8.shape, float32, "x");
    }
    auto scope = g.scope();
    graph_output(graph_input(f8, "t") + ops::host_load(x));
    return g;
  });
  CHECK(load.first.find("runs graph '" + load.second + "' in a branch, and it contains HostLoad") !=
        std::string::npos);
  CHECK(load.first.find("cannot use host streams or collectives") != std::string::npos);
  // A collective two calls down.
  std::string reduces;
  const auto reduce = refused([&](Ir& ir) {
    Graph inner = ir.create_graph(
        "reduces", [](Tensor t) { return ops::collectives::replicated_all_reduce(t); }, f8);
    reduces = inner.name();
    return ir.create_graph(
        "calls", [&](Tensor t) { return ops::call(inner, {t})[0]; }, f8);
  });
  CHECK(reduce.first.find("runs graph '" + reduces +
                          "' in a branch, and it contains "
                          "ReplicatedAllReduce") != std::string::npos);
  CHECK(reduce.first.find("move ReplicatedAllReduce out of the conditional") != std::string::npos);
}
