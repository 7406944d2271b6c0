// Inlined calls: expanded at the call site on the caller's buffers, with the same results as
// outlined calls, code paid per call site, and autodiff keeping the choice.
#include "helpers.hpp"

#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using test_emu::iota;

namespace {
/// f(x) = (x * 2 + 1) * 3 on a (64, 64) input, applied twice through one subgraph, both
/// calls outlined or both inlined.
struct Twice {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;

  explicit Twice(bool inline_graph) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({64, 64}, float32, "x");
    y = d2h_stream({64, 64}, float32, "y");
    auto xt = ops::host_load(x);
    Graph g = ir.create_graph([](Tensor t) { return (t * 2.0 + 1.0) * 3.0; }, xt);
    const ops::CallOptions how{.inline_graph = inline_graph};
    ops::host_store(y, ops::call(g, {ops::call(g, {xt}, {}, how)[0]}, {}, how)[0]);
  }
};

HostTensor run_once(Ir& ir, unsigned workers, const StreamInputs& inputs,
                    const DeviceToHostStream& out) {
  Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  auto attached = s.attach();
  return s.run(inputs).at(out);
}
} // namespace

TEST_CASE("CallOptions: calls are outlined unless asked; the flag is in CallAttrs") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Graph g = ir.create_graph([](Tensor t) { return t + 1.0; }, TensorSpec{{2}, float32});
  auto x = constant(HostTensor({1.f, 2.f}), "x");
  const auto outlined = ops::call_with_info(g, {x});
  const auto inlined = ops::call_with_info(g, {x}, {}, {.inline_graph = true});
  CHECK_FALSE(outlined.op().attrs_as<CallAttrs>().inline_graph);
  CHECK(inlined.op().attrs_as<CallAttrs>().inline_graph);
  CHECK(inlined.op().attrs_as<CallAttrs>() == CallAttrs{g.index(), 1, true});
  // Both print alike: inlining is a compilation choice, not a different op.
  CHECK(outlined.op().kind() == inlined.op().kind());
}

TEST_CASE("Memory: a subgraph called twice costs less code outlined than inlined twice") {
  Twice outlined(false), inlined(true);
  Session a_session(outlined.ir), b_session(inlined.ir);
  const auto a = a_session.memory_report(), b = b_session.memory_report();
  REQUIRE(a.ipus.size() == 1);
  REQUIRE(b.ipus.size() == 1);
  // Outlined: main has host_load, 2 calls, host_store; the subgraph's 3 ops once.
  CHECK(a.ipus[0].steps == 7);
  // Inlined: host_load, 3 ops per call site, host_store; no call ops, no argument copies.
  CHECK(b.ipus[0].steps == 8);
  // The same codelets either way; the inlined ops' vertex state and control code twice.
  CHECK(a.ipus[0].vertex_code == b.ipus[0].vertex_code);
  CHECK(a.ipus[0].vertex_state < b.ipus[0].vertex_state);
  CHECK(a.ipus[0].always_live() < b.ipus[0].always_live());
  // The subgraph's constants exist once either way.
  CHECK(a.ipus[0].constants == b.ipus[0].constants);
  // Inlined, the intermediates share the caller's arena by liveness; no argument buffers.
  CHECK(b.ipus[0].not_always_live_peak <= 3 * 64 * 64 * 4);
}

TEST_CASE("Inlined and outlined calls give bitwise equal results on 1-4 workers") {
  Twice outlined(false), inlined(true);
  const HostTensor x = iota({64, 64}, -2000.f);
  const HostTensor expected = run_once(outlined.ir, 1, {{outlined.x, x}}, outlined.y);
  CHECK(expected.data<float>()[1] == doctest::Approx(((-1999.0 * 2 + 1) * 3 * 2 + 1) * 3));
  for (unsigned workers : {1u, 2u, 3u, 4u}) {
    CAPTURE(workers);
    CHECK(run_once(inlined.ir, workers, {{inlined.x, x}}, inlined.y) == expected);
    CHECK(run_once(outlined.ir, workers, {{outlined.x, x}}, outlined.y) == expected);
  }
}

TEST_CASE("Inlined calls keep call semantics for by-ref, written and passed-through inputs") {
  // step(a by-ref, b, c): a += b; c += b (c is by value: the caller's tensor must not change);
  // returns (a * 2, c, b): b is passed straight through.
  for (bool inline_graph : {false, true}) {
    CAPTURE(inline_graph);
    Ir ir;
    Tensor v, u;
    DeviceToHostStream o1, o2, o3, o4;
    {
      auto in_main = ir.main_graph().scope();
      Graph g = ir.create_empty_graph("step");
      {
        auto in_g = g.scope();
        auto a = graph_input({2}, float32, "a", /*by_ref=*/true);
        auto b = graph_input({2}, float32, "b");
        auto c = graph_input({2}, float32, "c");
        ops::add_(a, b);
        ops::add_(c, b);
        graph_output(a * 2.0);
        graph_output(c);
        graph_output(b);
      }
      v = variable(HostTensor({1.f, 2.f}, {2}), "v");
      u = variable(HostTensor({5.f, 6.f}, {2}), "u");
      auto k = constant(HostTensor({10.f, 20.f}, {2}), "k");
      const ops::CallOptions how{.inline_graph = inline_graph};
      o1 = d2h_stream({2}, float32, "o1");
      o2 = d2h_stream({2}, float32, "o2");
      o3 = d2h_stream({2}, float32, "o3");
      o4 = d2h_stream({2}, float32, "o4");
      auto first = ops::call(g, {v, k, u}, {}, how);
      ops::host_store(o1, first[0]);
      // The pass-through output is a fresh tensor: writing u later must not change it.
      auto passed = ops::call(g, {v, u, u}, {}, how)[2];
      ops::add_(u, k);
      ops::host_store(o2, passed);
      ops::host_store(o3, first[1]);
      // The same caller tensor bound by reference and by value: the by-value input is a copy.
      ops::host_store(o4, ops::call(g, {u, u, k}, {}, how)[1]);
    }
    Session s(ir, "ipu_model", {.workers = 2});
    auto attached = s.attach();
    const auto out = s.run();
    CHECK(out.at(o1) == HostTensor({22.f, 44.f}, {2}));
    CHECK(out.at(o2) == HostTensor({5.f, 6.f}, {2}));
    CHECK(out.at(o3) == HostTensor({15.f, 26.f}, {2}));
    CHECK(out.at(o4) == HostTensor({25.f, 46.f}, {2}));
    // v: (1,2) + k, then + u; u only changes by the add_ in main and the last call.
    CHECK(s.get_tensor_data(v) == HostTensor({16.f, 28.f}, {2}));
    CHECK(s.get_tensor_data(u) == HostTensor({30.f, 52.f}, {2}));
  }
}

TEST_CASE("Inlined graphs may call graphs inlined or outlined, and host streams inside run") {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y, z;
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({3}, float32, "x");
    y = d2h_stream({3}, float32, "y");
    z = d2h_stream({3}, float32, "z");
    Graph leaf = ir.create_graph([](Tensor t) { return t * t; }, TensorSpec{{3}, float32});
    Graph mid = ir.create_graph(
        [&](Tensor t) {
          auto a = ops::call(leaf, {t}, {}, {.inline_graph = true})[0];
          auto b = ops::call(leaf, {a})[0];
          ops::host_store(z, a);
          return b + ops::host_load(x);
        },
        TensorSpec{{3}, float32});
    auto c = constant(HostTensor({1.f, 2.f, 3.f}), "c");
    ops::host_store(y, ops::call(mid, {c}, {}, {.inline_graph = true})[0]);
  }
  Session s(ir, "ipu_model", {.workers = 3, .oversubscribe = true});
  CHECK(s.expected_inputs() == std::vector<HostToDeviceStream>{x});
  CHECK(s.create_host_outputs().size() == 2);
  auto attached = s.attach();
  const auto out = s.run({{x, HostTensor({0.5f, 0.25f, 0.f})}});
  CHECK(out.at(y) == HostTensor({1.5f, 16.25f, 81.f}));
  CHECK(out.at(z) == HostTensor({1.f, 4.f, 9.f}));
}

namespace {
/// Gradients of y = tanh(tanh(x w) w), with the layer a subgraph called twice (inlined or
/// not) inside the differentiated graph: dx and dw for an all-ones output gradient.
struct GradRun {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream dx, dw;
  int grad_calls = 0;
  bool grad_calls_inlined = true;
  bool grad_calls_outlined = true;

  explicit GradRun(bool inline_graph) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({2, 3}, float32, "x");
    dx = d2h_stream({2, 3}, float32, "dx");
    dw = d2h_stream({3, 3}, float32, "dw");
    const TensorSpec xs{{2, 3}, float32}, ws{{3, 3}, float32};
    Graph layer = ir.create_graph(
        "layer", [](Tensor a, Tensor w) { return ops::tanh(ops::matmul(a, w)); }, xs, ws);
    Graph fwd = ir.create_graph(
        "fwd",
        [&](Tensor a, Tensor w) {
          const ops::CallOptions how{.inline_graph = inline_graph};
          auto h = ops::call(layer, {a, w}, {}, how)[0];
          return ops::call(layer, {h, w}, {}, how)[0];
        },
        xs, ws);
    const auto info = transforms::autodiff(fwd);
    for (const auto& op : info.graph().ops())
      if (op.kind() == OpKind::Call) {
        ++grad_calls;
        const bool inlined = op.template attrs_as<CallAttrs>().inline_graph;
        grad_calls_inlined = grad_calls_inlined && inlined;
        grad_calls_outlined = grad_calls_outlined && !inlined;
      }
    HostTensor w0({3, 3}, float32);
    for (std::size_t i = 0; i < 9; ++i)
      w0.data<float>()[i] = static_cast<float>(i % 4) * 0.25f - 0.3f;
    auto w = variable(w0, "w");
    const auto fwd_call = ops::call_with_info(fwd, {ops::host_load(x), w});
    auto ones = ops::init({2, 3}, float32, "ones") + 1.0;
    const auto grads = ops::call(info.graph(), {ones}, info.inputs_dict(fwd_call));
    ops::host_store(dx, grads[0]);
    ops::host_store(dw, grads[1]);
  }
};
} // namespace

TEST_CASE("Autodiff through inlined calls: the gradient calls are inlined, results equal") {
  GradRun outlined(false), inlined(true);
  CHECK(inlined.grad_calls == 2);
  CHECK(outlined.grad_calls == 2);
  CHECK(inlined.grad_calls_inlined);
  CHECK(outlined.grad_calls_outlined);
  const HostTensor x = iota({2, 3}, -3.f);
  for (unsigned workers : {1u, 2u, 3u, 4u}) {
    CAPTURE(workers);
    Session a(outlined.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    Session b(inlined.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto att_a = a.attach();
    auto att_b = b.attach();
    const auto ra = a.run({{outlined.x, x}});
    const auto rb = b.run({{inlined.x, x}});
    CHECK(ra.at(outlined.dx) == rb.at(inlined.dx));
    CHECK(ra.at(outlined.dw) == rb.at(inlined.dw));
  }
}

TEST_CASE("A graph called once works on its caller's buffers, with call semantics kept") {
  // Each graph has one call site, so its inputs that may share the argument and its outputs
  // live in the caller's buffers (no copies): the results must be the inlined calls', run
  // twice with new inputs, on 1 and 3 workers. read(x) reads its input, which the caller uses
  // again; scratch(c) writes its by-value input, once with the caller using it again (it must
  // not change) and once with the argument dead after the call; bump(a by-ref) writes the
  // caller's tensor; pass(b) returns its input, a fresh tensor the caller then changes;
  // outer(x) calls inner(x) once, and both make large temporaries.
  auto build = [](Ir& ir, bool inline_graph, HostToDeviceStream& sx,
                  std::vector<DeviceToHostStream>& outs) {
    auto in_main = ir.main_graph().scope();
    const ops::CallOptions how{.inline_graph = inline_graph};
    sx = h2d_stream({64, 64}, float32, "x");
    const Tensor x = ops::host_load(sx);
    auto out = [&](const Tensor& t) {
      outs.push_back(d2h_stream(t.shape(), t.dtype(), "o" + std::to_string(outs.size())));
      ops::host_store(outs.back(), t);
    };
    Graph read = ir.create_graph([](Tensor t) { return t * 2.0 + 1.0; }, x);
    auto scratch_graph = [&](const std::string& name) {
      Graph g = ir.create_empty_graph(name);
      auto in_g = g.scope();
      Tensor c = graph_input({64, 64}, float32, "c");
      ops::add_(c, c);
      graph_output(ops::exp(c * 0.01));
      return g;
    };
    Graph bump = ir.create_empty_graph("bump");
    {
      auto in_g = bump.scope();
      Tensor a = graph_input({64, 64}, float32, "a", /*by_ref=*/true);
      ops::scaled_add_(a, a, {.a = 1.0, .b = 0.5});
    }
    Graph pass = ir.create_empty_graph("pass");
    {
      auto in_g = pass.scope();
      graph_output(graph_input({64, 64}, float32, "b"));
    }
    Graph inner = ir.create_graph([](Tensor t) { return ops::tanh(t * 0.1) * (t + 3.0); }, x);
    Graph outer = ir.create_empty_graph("outer");
    {
      auto in_g = outer.scope();
      Tensor t = graph_input({64, 64}, float32, "t");
      Tensor big = ops::matmul(t, t) * 0.001;
      graph_output(ops::call(inner, {big + t}, {}, how)[0] - big);
    }
    const Tensor r = ops::call(read, {x}, {}, how)[0];
    out(r + x);
    Tensor kept = x * 1.0;
    out(ops::call(scratch_graph("scratch_kept"), {kept}, {}, how)[0]);
    out(kept);
    out(ops::call(scratch_graph("scratch_dead"), {x * 3.0}, {}, how)[0]);
    Tensor a = x + 0.0;
    ops::call(bump, {a}, {}, how);
    out(a);
    Tensor b = x - 1.0;
    const Tensor passed = ops::call(pass, {b}, {}, how)[0];
    ops::add_(b, b);
    out(passed);
    out(b);
    out(ops::call(outer, {x}, {}, how)[0]);
  };
  std::vector<std::vector<HostTensor>> results[2]; // [inlined][workers][output]
  for (const bool inline_graph : {false, true}) {
    Ir ir;
    HostToDeviceStream sx;
    std::vector<DeviceToHostStream> outs;
    build(ir, inline_graph, sx, outs);
    for (unsigned workers : {1u, 3u}) {
      Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      auto attached = s.attach();
      std::vector<HostTensor> got;
      for (int run = 0; run < 2; ++run) {
        HostTensor x = iota({64, 64});
        for (float& v : x.data<float>())
          v = v * 0.001f - static_cast<float>(run);
        const auto out = s.run({{sx, x}});
        for (const auto& o : outs)
          got.push_back(out.at(o));
        // Spot checks against the formulas: the caller's tensors are unchanged or changed as
        // the calls say.
        const auto xs = x.data<float>();
        CHECK(got[got.size() - 6].data<float>()[5] == xs[5]);              // kept
        CHECK(got[got.size() - 4].data<float>()[7] == xs[7] * 1.5f);       // a, bumped
        CHECK(got[got.size() - 3].data<float>()[9] == xs[9] - 1.0f);       // passed
        CHECK(got[got.size() - 2].data<float>()[9] == 2 * (xs[9] - 1.0f)); // b, doubled after
      }
      results[inline_graph].push_back(std::move(got));
    }
  }
  for (std::size_t w = 0; w < 2; ++w)
    for (std::size_t k = 0; k < results[0][w].size(); ++k) {
      CAPTURE(w);
      CAPTURE(k);
      CHECK(results[0][w][k] == results[1][w][k]);
      CHECK(results[0][w][k] == results[0][0][k]);
    }
}
