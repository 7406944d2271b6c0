// The plan: outlined calls with by-ref inputs, in-place ops, loops with carried values, memory
// and OOM.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace pxl;

TEST_CASE("A graph called twice runs once per call site; by-ref inputs reach the caller") {
  Ir ir;
  Tensor v;
  DeviceToHostStream o1, o2;
  {
    auto in_main = ir.main_graph().scope();
    Graph g = ir.create_empty_graph("step");
    {
      auto in_g = g.scope();
      auto a = graph_input({2}, float32, "a", /*by_ref=*/true);
      auto b = graph_input({2}, float32, "b");
      ops::add_(a, b);
      graph_output(a * 2.0);
    }
    v = variable(HostTensor({1.f, 2.f}, {2}), "v");
    auto c = constant(HostTensor({10.f, 20.f}, {2}), "c");
    o1 = d2h_stream({2}, float32, "o1");
    o2 = d2h_stream({2}, float32, "o2");
    ops::host_store(o1, ops::call(g, {v, c})[0]);
    ops::host_store(o2, ops::call(g, {v, c})[0]);
  }
  Session s(ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  const auto out = s.run();
  CHECK(out.at(o1) == HostTensor({22.f, 44.f}, {2}));
  CHECK(out.at(o2) == HostTensor({42.f, 84.f}, {2}));
  CHECK(s.get_tensor_data(v) == HostTensor({21.f, 42.f}, {2}));
}

TEST_CASE("A by-ref input every call site binds to one variable works in its buffer") {
  // step(w by-ref, x): w += x; returns w * 2. Looped 3 times over w = v, then called on v
  // again: every site binds v, so the graph updates v in place (no copies, no buffer for w).
  // A second graph is called on v and on u: no binding is shared, so its input is copied.
  auto build = [](Ir& ir, bool second_variable) {
    auto in_main = ir.main_graph().scope();
    Graph step = ir.create_empty_graph("step");
    {
      auto in_g = step.scope();
      auto w = graph_input({64, 64}, float32, "w", /*by_ref=*/true);
      auto x = graph_input({64, 64}, float32, "x");
      ops::add_(w, x);
      graph_output(w * 2.0);
    }
    auto v = variable(test_emu::iota({64, 64}), "v");
    auto u = variable(test_emu::iota({64, 64}, 1.f), "u");
    // No implicit capture: each graph makes its own constant.
    auto ones = [] { return constant(HostTensor(std::vector<float>(64 * 64, 1.f), {64, 64})); };
    Graph loop = ir.create_empty_graph("loop");
    {
      auto in_loop = loop.scope();
      auto w = graph_input({64, 64}, float32, "w", /*by_ref=*/true);
      ops::call(step, {w, ones()});
    }
    ops::repeat(loop, 3, {v});
    ops::host_store(d2h_stream({64, 64}, float32, "y"), ops::call(step, {v, ones()})[0]);
    ops::repeat(loop, 1, {second_variable ? u : v});
    return std::pair{v, u};
  };
  Ir shared_ir, split_ir;
  const auto [v, u] = build(shared_ir, false);
  const auto [v2, u2] = build(split_ir, true);
  Session shared(shared_ir, "ipu_model", {.workers = 2}),
      split(split_ir, "ipu_model", {.workers = 2});
  // "loop"'s input is bound to v everywhere in the first Ir only (step's "w" never is: inside
  // "loop" it is bound to loop's input). In the second, the loop's by-ref input still aliases
  // its argument in the report (aliasZeroCopy), so the device needs no more memory, while the
  // emulator itself copies.
  CHECK(shared.memory_report().ipus[0].not_always_live_peak ==
        split.memory_report().ipus[0].not_always_live_peak);
  auto a1 = shared.attach();
  auto a2 = split.attach();
  const auto y = shared.run().begin()->second, y2 = split.run().begin()->second;
  // v gains 1 four times before y = 2v, then once more (in the first Ir).
  HostTensor want_y = test_emu::iota({64, 64}, 4.f);
  for (auto& e : want_y.data<float>())
    e *= 2.f;
  CHECK(y == want_y);
  CHECK(y2 == want_y);
  CHECK(shared.get_tensor_data(v) == test_emu::iota({64, 64}, 5.f));
  CHECK(split.get_tensor_data(v2) == test_emu::iota({64, 64}, 4.f));
  CHECK(split.get_tensor_data(u2) == test_emu::iota({64, 64}, 2.f));
}

TEST_CASE("repeat carries outputs to inputs, even when an output is an input") {
  Ir ir;
  DeviceToHostStream o;
  {
    auto in_main = ir.main_graph().scope();
    // (a, b) -> (b, a + b): output 0 is input 1 itself.
    auto fib = ir.create_graph(
        [](Tensor a, Tensor b) {
          return std::tuple{b, a + b};
        },
        TensorSpec{{1}, float32}, TensorSpec{{1}, float32});
    auto r =
        ops::repeat(fib, 5, {constant(HostTensor({0.f}, {1})), constant(HostTensor({1.f}, {1}))});
    o = d2h_stream({2}, float32, "o");
    ops::host_store(o, ops::concat({r[0], r[1]}, 0));
  }
  for (unsigned workers : {1u, 3u}) {
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    CHECK(s.run().at(o) == HostTensor({5.f, 8.f}, {2}));
  }
}

namespace {
/// f(x) = (x * 2 + 1) * 3 on a (64, 64) input, applied twice: through one outlined subgraph
/// called twice, or written out twice in the main graph.
Ir twice(bool outlined) {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  auto f = [](Tensor x) { return (x * 2.0 + 1.0) * 3.0; };
  auto x = ops::host_load(h2d_stream({64, 64}, float32, "x"));
  Tensor y;
  if (outlined) {
    Graph g = ir.create_graph(f, x);
    y = ops::call(g, {ops::call(g, {x})[0]})[0];
  } else {
    y = f(f(x));
  }
  ops::host_store(d2h_stream({64, 64}, float32, "y"), y);
  return ir;
}
} // namespace

TEST_CASE("Memory: an outlined graph's code and constants are counted once") {
  Ir outlined_ir = twice(true), inlined_ir = twice(false);
  Session outlined(outlined_ir), inlined(inlined_ir);
  const auto a = outlined.memory_report(), b = inlined.memory_report();
  REQUIRE(a.ipus.size() == 1);
  REQUIRE(b.ipus.size() == 1);
  CHECK(a.ipus[0].always_live() < b.ipus[0].always_live());
  CHECK(a.ipus[0].constants * 2 == b.ipus[0].constants);
  // main: host_load, 2 calls, host_store; subgraph: 3 ops (constants are not ops).
  CHECK(a.ipus[0].steps == 7);
  CHECK(b.ipus[0].steps == 8);
  CHECK(a.ipus[0].code() < b.ipus[0].code());
  // Peak intermediates: liveness lets the 16 KiB buffers share space.
  CHECK(b.ipus[0].not_always_live_peak <= 3 * 64 * 64 * 4);
  CHECK(b.ipus[0].not_always_live_peak >= 2 * 64 * 64 * 4);
  CHECK(a.fits());
  CHECK(a.summary().find("IPU 0:") != std::string::npos);
  CHECK(a.tensors.front().bytes == 64 * 64 * 4);

  // Both compute the same thing.
  auto x = test_emu::iota({64, 64});
  auto r1 = [&] {
    auto att = outlined.attach();
    return outlined.run({{outlined_ir.h2d_streams()[0], x}});
  }();
  auto r2 = [&] {
    auto att = inlined.attach();
    return inlined.run({{inlined_ir.h2d_streams()[0], x}});
  }();
  CHECK(r1.begin()->second == r2.begin()->second);
  CHECK(r1.begin()->second.data<float>()[1] == doctest::Approx(((1 * 2 + 1) * 3 * 2 + 1) * 3));
}

TEST_CASE("A plan larger than the target throws OutOfMemoryError unless allowed") {
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    auto big = variable(HostTensor({256, 256}, float32), "big");
    auto small = variable(HostTensor({4}, float32), "small");
    ops::host_store(d2h_stream({256, 256}, float32, "o"), big * 2.0);
    ops::host_store(d2h_stream({4}, float32, "p"), small + 1.0);
  }
  auto tiny = emu::ipu2();
  tiny.tiles_per_ipu = 4;
  tiny.bytes_per_tile = 64 * 1024;
  CHECK_THROWS_WITH_AS(Session(ir, tiny), doctest::Contains("largest tensors: 'big' 262144 bytes"),
                       OutOfMemoryError);
  CHECK_THROWS_WITH_AS(Session(ir, tiny), doctest::Contains("IPU 0 needs"), OutOfMemoryError);
  CHECK_THROWS_WITH_AS(Session(ir, tiny), doctest::Contains("allow_out_of_memory"),
                       OutOfMemoryError);
  Session s(ir, tiny, {.allow_out_of_memory = true});
  const auto r = s.memory_report();
  CHECK_FALSE(r.fits());
  CHECK(r.ipus[0].capacity == 4 * 64 * 1024);
  CHECK(r.ipus[0].variables == 256 * 256 * 4 + 16);
  CHECK(r.summary().find("OUT OF MEMORY") != std::string::npos);
  auto attached = s.attach(); // it still runs, as the IPU Model does
  CHECK(s.run().size() == 2);
}

TEST_CASE("A 4 TiB tensor is an OutOfMemoryError naming it and its IPU, before any allocation") {
  constexpr std::int64_t tib4 = std::int64_t{1} << 42;
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    auto huge = ops::init({tib4 / 4}, float32, "huge");
    ops::host_store(d2h_stream({1}, float32, "o"), ops::slice(huge, {0}, {1}));
  }
  CHECK_THROWS_WITH_AS(Session(ir, emu::ipu2()), doctest::Contains("IPU 0 needs"),
                       OutOfMemoryError);
  CHECK_THROWS_WITH_AS(Session(ir, emu::ipu2()),
                       doctest::Contains("largest tensors: 'huge' 4398046511104 bytes"),
                       OutOfMemoryError);
}

TEST_CASE("A plan the host cannot hold is an OutOfMemoryError even when allowed") {
  // 2^60 bytes: beyond any host's address space, whatever its overcommit policy.
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    auto huge = ops::init({std::int64_t{1} << 58}, float32, "huge");
    ops::host_store(d2h_stream({1}, float32, "o"), ops::slice(huge, {0}, {1}));
  }
  CHECK_THROWS_WITH_AS(Session(ir, emu::ipu2(), {.allow_out_of_memory = true}),
                       doctest::Contains("the host cannot allocate"), OutOfMemoryError);
}

TEST_CASE("Plans beyond 2^62 bytes in all are refused before their sizes are summed") {
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    for (const char* name : {"a", "b"}) {
      auto t = ops::init({std::int64_t{1} << 60}, float32, name); // 2^62 bytes each
      ops::host_store(d2h_stream({1}, float32, name), ops::slice(t, {0}, {1}));
    }
  }
  CHECK_THROWS_WITH_AS(Session(ir, emu::ipu2(), {.allow_out_of_memory = true}),
                       doctest::Contains("need more than 2^62 bytes"), OutOfMemoryError);
  CHECK_THROWS_WITH_AS(Session(ir, emu::ipu2()),
                       doctest::Contains("(1152921504606846976,) float32"), OutOfMemoryError);
}

TEST_CASE("Memory per tile: small tensors spread over the tiles from rotating start tiles") {
  // A 4-tile IPU of 64 KiB tiles: 'big' (240 KiB) spreads evenly, 60 KiB per tile; each small
  // variable fills less than a 64-byte grain, so the linear mapping puts it on one tile, the
  // tile after the previous tensor's (PopART's LinearMapper). 120 of them, 30 to a tile, fit;
  // from tile 0 every time they would overflow it (120 x 64 bytes on top of 60 KiB).
  const auto target = test_emu::four_small_tiles(1);
  auto build = [](Ir& ir, int smalls) {
    auto in_main = ir.main_graph().scope();
    auto big = variable(HostTensor({4 * 15 * 1024}, float32), "big");
    auto out = d2h_stream({4}, float32, "o");
    Tensor acc = ops::slice(big, {0}, {4});
    for (int i = 0; i < smalls; ++i)
      acc = acc + variable(HostTensor({4}, float32), "s" + std::to_string(i));
    ops::host_store(out, acc);
  };
  Ir few;
  build(few, 2);
  const auto fits = Session(few, target).memory_report().ipus[0];
  CHECK(fits.tile_capacity == 64 * 1024);
  CHECK(fits.max_tile >= 60 * 1024);       // big's share
  CHECK(fits.max_tile < fits.total() / 2); // spread, not all on one tile
  Ir many;
  build(many, 120);
  Session s(many, target);
  const auto r = s.memory_report().ipus[0];
  CHECK(r.max_tile >= 60 * 1024 + 30 * 64);
  CHECK(r.max_tile <= r.tile_capacity);
  CHECK(s.memory_report().fits());
  CHECK(s.memory_report().summary().find("most loaded tile") != std::string::npos);
}

TEST_CASE("Memory report: the liveness curve of the main graph, its peak step and live intervals") {
  // load x; a = exp(x); b = a * 2; c = sum(b); store c. Two (256, 256) tensors are live at the
  // Exp (x and a) and at the Mul (a and b): the curve peaks first at the Exp.
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    auto x = ops::host_load(h2d_stream({256, 256}, float32, "x"));
    auto a = ops::exp(x);
    auto b = a * 2.0;
    ops::host_store(d2h_stream({}, float32, "c"), ops::sum(b));
  }
  Session s(ir);
  const auto r = s.memory_report();
  const auto& m = r.ipus[0];
  REQUIRE(!m.liveness.empty());
  CHECK(*std::max_element(m.liveness.begin(), m.liveness.end()) == m.not_always_live_peak);
  CHECK(m.liveness[static_cast<std::size_t>(m.peak_step)] == m.not_always_live_peak);
  CHECK(m.peak_step_op.find("Exp") != std::string::npos);
  CHECK(m.not_always_live_peak == 2 * 256 * 256 * 4);
  CHECK(m.liveness[static_cast<std::size_t>(m.peak_step) + 1] == m.not_always_live_peak);
  CHECK(m.liveness.back() == 0); // nothing is returned from the main graph
  CHECK(r.summary().find("at step " + std::to_string(m.peak_step)) != std::string::npos);
  for (const auto& t : r.tensors) {
    CAPTURE(t.id);
    if (t.always_live) {
      CHECK(t.first_step == -1);
      CHECK(t.last_step == -1);
    } else {
      CHECK(t.first_step >= 0);
      CHECK(t.first_step <= t.last_step);
      CHECK(t.last_step < static_cast<std::int64_t>(m.liveness.size()));
    }
  }
  // The exp's output is made at its step and last read by the Mul, the step after.
  const auto exp_out = std::ranges::find_if(
      r.tensors, [](const auto& t) { return t.id.find("Exp") != std::string::npos; });
  REQUIRE(exp_out != r.tensors.end());
  CHECK(exp_out->last_step == exp_out->first_step + 1);
}

TEST_CASE("in-place element-wise ops and dynamic_update_ write the buffer later readers see; "
          "views read before the change hold the old values") {
  Ir ir;
  Tensor w;
  DeviceToHostStream o1, o2, o3;
  {
    auto in_main = ir.main_graph().scope();
    w = variable(HostTensor({-1.f, 0.5f, 2.f, -3.f}, {2, 2}), "w");
    o1 = d2h_stream({2, 2}, float32, "o1");
    ops::host_store(o1, ops::transpose_(w)); // read before w changes
    ops::relu_(w);
    const Tensor at = constant(HostTensor(std::vector<std::int32_t>{1}, {1}), "at");
    ops::dynamic_update_(w, at, constant(HostTensor({7.f, 8.f}, {1, 2}), "row"), {0});
    o2 = d2h_stream({2, 2}, float32, "o2");
    ops::host_store(o2, ops::exp_(ops::identity(w))); // exp of a copy: w stays
    o3 = d2h_stream({4}, float32, "o3");
    ops::host_store(o3, ops::flatten_(w));
  }
  const HostTensor now({0.f, 0.5f, 7.f, 8.f}, {2, 2}); // relu, then row 1 replaced
  std::vector<float> e;
  for (const float v : {0.f, 0.5f, 7.f, 8.f})
    e.push_back(static_cast<float>(std::exp(double{v})));
  for (const unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers});
    auto attached = s.attach();
    const auto out = s.run();
    CHECK(out.at(o1) == HostTensor({-1.f, 2.f, 0.5f, -3.f}, {2, 2}));
    CHECK(out.at(o2) == HostTensor(e, {2, 2}));
    CHECK(out.at(o3) == now.reshaped({4}));
    CHECK(s.get_tensor_data(w) == now);
  }
}
