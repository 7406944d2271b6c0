// call, repeat and CallSiteInfo: binding, inference, reference results and every user error.
#include "reference.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

namespace {
const TensorSpec f2{{2}, float32};

/// Contains for a message built at run time.
Contains has(const std::string& s) { return Contains(doctest::String(s.c_str())); }

/// A hand-built graph "abc" with inputs a [(2,) f32], b [(2,) f32], c [(3,) int32] and one
/// output a + b.
Graph make_abc(Ir& ir) {
  Graph g = ir.create_empty_graph("abc");
  auto scope = g.scope();
  auto a = graph_input({2}, float32, "a");
  auto b = graph_input({2}, float32, "b");
  graph_input({3}, int32, "c");
  graph_output(a + b);
  return g;
}

/// make_abc's graph, and in the main graph (whose scope it holds) constants for its inputs:
/// pa and pb [(2,) f32], pc [(3,) int32].
struct AbcCallSite {
  Ir ir;
  Graph g = make_abc(ir);
  const std::vector<Tensor> gi = g.inputs();
  GraphScope in_main = ir.main_graph().scope();
  Tensor pa = constant(HostTensor({1.f, 2.f}), "pa");
  Tensor pb = constant(HostTensor({3.f, 4.f}), "pb");
  Tensor pc = constant(HostTensor({1, 2, 3}), "pc");
};
} // namespace

TEST_CASE("call: outputs take the graph outputs' specs; values through the reference") {
  Ir ir;
  Graph g = ir.create_graph(
      [](Tensor x, Tensor y) {
        return std::vector<Tensor>{x * y, ops::reshape(x, {1, 2})};
      },
      f2, f2);
  Tensor v, w;
  std::vector<Tensor> outs;
  {
    auto in_main = ir.main_graph().scope();
    v = constant(HostTensor({2.f, 3.f}), "v");
    w = constant(HostTensor({5.f, -1.f}), "w");
    outs = ops::call(g, {v, w});
    REQUIRE(outs.size() == 2);
    CHECK(outs[0].spec() == f2);
    CHECK(outs[1].spec() == TensorSpec{{1, 2}, float32});
    const Op op = *outs[0].producer();
    CHECK(op.kind() == OpKind::Call);
    CHECK(op.attrs_as<CallAttrs>().graph == g.index());
    CHECK(op.called_graph() == g);
    CHECK(ir.main_graph().called_graphs() == std::vector<Graph>{g});
  }
  Graph outer = ir.create_graph(
      [&](Tensor x) {
        return ops::call(g, {x, x})[0];
      },
      f2); // nested call in a subgraph
  ReferenceEvaluator ev(ir);
  CHECK(ev.evaluate(outer, {HostTensor({3.f, -2.f})})[0] == HostTensor({9.f, 4.f}));
  CHECK(ev.evaluate(g, {HostTensor({2.f, 3.f}), HostTensor({5.f, -1.f})})[0] ==
        HostTensor({10.f, -3.f}));
}

TEST_CASE("call: CallOptions::inline_graph is recorded on the op and changes nothing else") {
  Ir ir;
  Graph g = ir.create_graph(
      "g", [](Tensor x, Tensor y) { return x * y; }, f2, f2);
  Tensor v;
  CallSiteInfo plain, inlined, positional;
  {
    auto in_main = ir.main_graph().scope();
    v = constant(HostTensor({2.f, 3.f}), "v");
    plain = ops::call_with_info(g, {v, v});
    inlined = ops::call_with_info(g, {v}, {{g.inputs()[1], v}}, {.inline_graph = true});
    positional = ops::call_with_info(g, {v, v}, {}, ops::CallOptions{});
    CHECK(ops::call(g, {v, v}, {}, {.inline_graph = true})[0].spec() == f2);
  }
  CHECK(plain.op().attrs_as<CallAttrs>() == CallAttrs{g.index(), 1, false});
  CHECK(positional.op().attrs_as<CallAttrs>() == CallAttrs{g.index(), 1, false});
  CHECK(inlined.op().attrs_as<CallAttrs>() == CallAttrs{g.index(), 1, true});
  CHECK(inlined.op().kind() == OpKind::Call);
  CHECK(inlined.called_graph() == g);
  CHECK(inlined.inputs() == plain.inputs());
  // Same values through the reference evaluator.
  Graph outer = ir.create_graph(
      [&](Tensor x) {
        return ops::call(g, {x, x}, {}, {.inline_graph = true})[0];
      },
      f2);
  ReferenceEvaluator ev(ir);
  CHECK(ev.evaluate(outer, {HostTensor({3.f, -2.f})})[0] == HostTensor({9.f, 4.f}));
  // Binding errors are those of an outlined call.
  auto in_main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(ops::call(g, {v}, {}, {.inline_graph = true}),
                       Contains("Call: missing inputs of graph"), GraphError);
}

TEST_CASE_FIXTURE(AbcCallSite, "call: inputs_dict binds the remaining inputs in graph order") {
  auto info = ops::call_with_info(g, {pa}, {{gi[2], pc}, {gi[1], pb}});
  CHECK(info.inputs() == std::vector<Tensor>{pa, pb, pc});
  auto info2 = ops::call_with_info(g, {}, {{gi[2], pc}, {gi[0], pa}, {gi[1], pb}});
  CHECK(info2.inputs() == std::vector<Tensor>{pa, pb, pc});
  CHECK(info2.outputs()[0].spec() == f2);
}

TEST_CASE("call: binding errors list the graph's inputs") {
  Ir ir;
  Graph g = make_abc(ir);
  const auto gi = g.inputs();
  Graph other = ir.create_graph([](Tensor x) { return x; }, f2);
  Ir ir2;
  Graph foreign = ir2.create_graph([](Tensor x) { return x; }, f2);
  auto in_main = ir.main_graph().scope();
  auto pa = constant(HostTensor({1.f, 2.f}), "pa");
  auto pc = constant(HostTensor({1, 2, 3}), "pc");
  auto p3 = constant(HostTensor({1.f, 2.f, 3.f}), "p3");
  auto pi = constant(HostTensor({1, 2}), "pi");

  CHECK_THROWS_WITH_AS(ops::call(g, {pa, pa, pc, pc}),
                       Contains("Call: graph 'abc' takes 3 inputs but 4 positional inputs were "
                                "given\n  0: 'a' [(2,) float32] <- (missing)"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::call(g, {pa, pa}, {{other.inputs()[0], pc}}),
                       has("inputs_dict key '" + other.inputs()[0].id() +
                           "' [(2,) float32] is not an input of graph 'abc'"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::call(g, {pa, pa}, {{gi[1], pa}, {gi[2], pc}}),
                       Contains("input 'b' [(2,) float32] of graph 'abc' is bound twice, to "
                                "'pa' [(2,) float32] and to 'pa'"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::call(g, {pa}, {{gi[2], pc}, {gi[2], pc}}),
                       Contains("'c' [(3,) int32] of graph 'abc' is bound twice"), GraphError);
  CHECK_THROWS_WITH_AS(ops::call(g, {pa}),
                       Contains("missing inputs of graph 'abc': 'b' [(2,) float32], 'c' [(3,) "
                                "int32]\n  0: 'a' [(2,) float32] <- 'pa' [(2,) float32]\n  1: 'b' "
                                "[(2,) float32] <- (missing)"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::call(g, {pa, p3, pc}),
                       Contains("input 'b' [(2,) float32] of graph 'abc' is bound to 'p3' [(3,) "
                                "float32] of another shape"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::call(g, {pa, pi, pc}),
                       Contains("input 'b' [(2,) float32] of graph 'abc' is bound to 'pi' [(2,) "
                                "int32] of another dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::call(g, {pa, other.inputs()[0], pc}),
                       has("Call: input 1 '" + other.inputs()[0].id() + "' [(2,) float32]"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::call(ir.main_graph(), {}), Contains("cannot call the main graph"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::call(foreign, {pa}), Contains("belongs to another Ir"), GraphError);
}

TEST_CASE("call: recursion is refused, direct or indirect") {
  Ir ir;
  Graph g1 = ir.create_empty_graph("g1");
  {
    auto scope = g1.scope();
    auto x = graph_input({2}, float32, "x");
    CHECK_THROWS_WITH_AS(ops::call(g1, {x}),
                         Contains("Call: graph 'g1' cannot be called from graph 'g1': that would "
                                  "be recursion"),
                         GraphError);
    graph_output(x);
  }
  Graph g2 = ir.create_graph([&](Tensor x) { return ops::call(g1, {x})[0]; }, f2);
  auto scope = g1.scope();
  CHECK_THROWS_WITH_AS(ops::call(g2, {g1.inputs()[0]}),
                       has("graph '" + g2.name() + "' cannot be called from graph 'g1'"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::repeat(g2, 2, {g1.inputs()[0]}), Contains("Loop: graph"), GraphError);
}

TEST_CASE_FIXTURE(AbcCallSite, "CallSiteInfo maps graph tensors to parent tensors and back") {
  auto info = ops::call_with_info(g, {pa, pb}, {{gi[2], pc}});
  CHECK(info.called_graph() == g);
  CHECK(info.op().kind() == OpKind::Call);
  CHECK(info.graph_to_parent(gi[1]) == pb);
  CHECK(info.graph_to_parent(g.outputs()[0]) == info.outputs()[0]);
  CHECK(info.parent_to_graph(pc) == gi[2]);
  CHECK(info.parent_to_graph(info.parent_output(0)) == g.outputs()[0]);
  CHECK(info.parent_input(0) == pa);
  const InputsDict expected{{gi[0], pa}, {gi[1], pb}, {gi[2], pc}};
  CHECK(info.inputs_dict() == expected);
  // The same parent tensor bound twice maps to its first graph input.
  auto info2 = ops::call_with_info(g, {pa, pa, pc});
  CHECK(info2.parent_to_graph(pa) == gi[0]);

  auto stray = constant(HostTensor({0.f, 0.f}), "stray");
  CHECK_THROWS_WITH_AS(info.parent_to_graph(stray),
                       Contains("'stray' [(2,) float32] is neither an input nor an output of "
                                "call site Call."),
                       GraphError);
  CHECK_THROWS_WITH_AS(info.graph_to_parent(pa),
                       Contains("'pa' [(2,) float32] is neither an input nor an output of "
                                "graph 'abc'"),
                       GraphError);
  auto plain = pa + pb;
  CHECK_THROWS_WITH_AS(CallSiteInfo(*plain.producer()), Contains("does not call a graph"),
                       GraphError);
}

TEST_CASE("repeat: loop-carried x <- x + 1, five times") {
  Ir ir;
  Graph inc = ir.create_graph([](Tensor x) { return x + 1.0; }, f2);
  Graph mac = ir.create_graph([](Tensor x, Tensor y) { return x * 2.0 + y; }, f2, f2);
  Tensor v;
  std::vector<Tensor> r;
  {
    auto in_main = ir.main_graph().scope();
    auto x = constant(HostTensor({0.f, 10.f}), "x");
    auto info = ops::repeat_with_info(inc, 5, {x});
    CHECK(info.op().kind() == OpKind::Repeat);
    CHECK(info.op().attrs_as<CallAttrs>() == CallAttrs{inc.index(), 5});
    CHECK(info.outputs()[0].spec() == f2);
    v = variable(HostTensor({0.f, 0.f}), "v");
    r = ops::repeat(inc, 5, {x});
    r.push_back(ops::repeat(mac, 3, {x}, {{mac.inputs()[1], constant(HostTensor({1.f, 1.f}))}})[0]);
    ops::var_updates::copy_var_update_(v, r[0]);
  }
  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  CHECK(ev.variable(v) == HostTensor({5.f, 15.f}));
  // x -> 2x + 1 three times: 0 -> 1 -> 3 -> 7; 10 -> 21 -> 43 -> 87.
  Graph probe = ir.create_graph(
      [&](Tensor x, Tensor y) {
        return ops::repeat(mac, 3, {x, y})[0];
      },
      f2, f2);
  CHECK(ev.evaluate(probe, {HostTensor({0.f, 10.f}), HostTensor({1.f, 1.f})})[0] ==
        HostTensor({7.f, 87.f}));
}

TEST_CASE("repeat: errors") {
  Ir ir;
  Graph inc = ir.create_graph([](Tensor x) { return x + 1.0; }, f2);
  Graph two_out = ir.create_graph([](Tensor x) { return std::vector<Tensor>{x, x}; }, f2);
  Graph reshaping = ir.create_graph([](Tensor x) { return ops::reshape(x, {1, 2}); }, f2);
  Graph casting = ir.create_graph([](Tensor x) { return ops::cast(x, int32); }, f2);
  auto in_main = ir.main_graph().scope();
  auto x = constant(HostTensor({0.f, 1.f}), "x");
  CHECK_THROWS_WITH_AS(ops::repeat(inc, 0, {x}), Contains("Loop: repeat count must be >= 1, got 0"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::repeat(two_out, 2, {x}), Contains("has 2 outputs but only 1 inputs"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::repeat(reshaping, 2, {x}),
                       has("output 0 '" + reshaping.outputs()[0].id() +
                           "' [(1, 2) float32] of graph '" + reshaping.name() +
                           "' is carried into input 0"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::repeat(casting, 2, {x}), Contains("shapes and dtypes must be equal"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::repeat(inc, 2, {}), Contains("Loop: missing inputs of graph"),
                       GraphError);
}

TEST_CASE("by-ref inputs: in-place updates inside reach the parent; others are copies") {
  Ir ir;
  auto make = [&](bool by_ref, const char* name) {
    Graph g = ir.create_empty_graph(name);
    auto scope = g.scope();
    auto acc = graph_input({2}, float32, "acc", by_ref);
    auto x = graph_input({2}, float32, "x");
    ops::add_(acc, x);
    return g;
  };
  Graph by_ref = make(true, "by_ref");
  Graph by_value = make(false, "by_value");
  CHECK(by_ref.input_is_by_ref(0));
  CHECK_FALSE(by_value.input_is_by_ref(0));
  Tensor a, b, c;
  {
    auto in_main = ir.main_graph().scope();
    a = variable(HostTensor({1.f, 2.f}), "a");
    b = variable(HostTensor({1.f, 2.f}), "b");
    c = variable(HostTensor({1.f, 2.f}), "c");
    auto x = constant(HostTensor({10.f, 100.f}), "x");
    ops::call(by_ref, {a, x});
    ops::call(by_value, {b, x});
    ops::repeat(by_ref, 3, {c, x});
  }
  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  CHECK(ev.variable(a) == HostTensor({11.f, 102.f}));
  CHECK(ev.variable(b) == HostTensor({1.f, 2.f}));
  CHECK(ev.variable(c) == HostTensor({31.f, 302.f}));
}

TEST_CASE("conditional: the branch the condition chooses, with each branch's own inputs") {
  Ir ir;
  // then: (x, y) -> x * y; else: z -> z - 1 (one input fewer).
  Graph mul = ir.create_graph(
      "mul", [](Tensor x, Tensor y) { return x * y; }, f2, f2);
  Graph dec = ir.create_graph(
      "dec", [](Tensor z) { return z - 1.0; }, f2);
  Graph probe = ir.create_graph(
      "probe",
      [&](Tensor c, Tensor x, Tensor y) {
        const auto info = ops::conditional_with_info(c, mul, dec, {x, y}, {x});
        CHECK(info.op().kind() == OpKind::Conditional);
        CHECK(info.op().attrs<OpKind::Conditional>() ==
              ConditionalAttrs{mul.index(), dec.index(), 2});
        CHECK(info.condition() == c);
        CHECK(info.then_graph() == mul);
        CHECK(info.else_graph() == dec);
        CHECK(info.then_inputs() == std::vector<Tensor>{x, y});
        CHECK(info.else_inputs() == std::vector<Tensor>{x});
        CHECK(info.op().called_graphs() == std::vector<Graph>{mul, dec});
        CHECK_FALSE(info.op().called_graph().has_value());
        return info.outputs()[0];
      },
      TensorSpec{{}, bool_}, f2, f2);
  CHECK(probe.called_graphs() == std::vector<Graph>{mul, dec});
  ReferenceEvaluator ev(ir);
  const HostTensor x({2.f, 3.f}), y({5.f, 7.f});
  CHECK(ev.evaluate(probe, {HostTensor::scalar(true), x, y})[0] == HostTensor({10.f, 21.f}));
  CHECK(ev.evaluate(probe, {HostTensor::scalar(false), x, y})[0] == HostTensor({1.f, 2.f}));
}

TEST_CASE("conditional: a by-ref input changes in the parent only when its branch runs") {
  Ir ir;
  Graph bump = ir.create_empty_graph("bump");
  {
    auto scope = bump.scope();
    auto counter = graph_input({2}, float32, "counter", /*by_ref=*/true);
    ops::add_(counter, constant(HostTensor({1.f, 1.f})));
    graph_output(counter * 2.0);
  }
  Graph keep = ir.create_graph(
      "keep", [](Tensor t) { return t * 0.0; }, f2);
  Tensor counter, out;
  DeviceToHostStream y;
  HostToDeviceStream take;
  {
    auto in_main = ir.main_graph().scope();
    counter = variable(HostTensor({0.f, 10.f}), "counter");
    take = h2d_stream({}, bool_, "take");
    out = ops::conditional(ops::host_load(take), bump, keep, {counter}, {counter})[0];
    y = d2h_stream({2}, float32, "y");
    ops::host_store(y, out);
  }
  ReferenceEvaluator ev(ir);
  auto run = [&](bool t) { return ev.run({{"take", HostTensor::scalar(t)}}).at("y"); };
  CHECK(run(true) == HostTensor({2.f, 22.f}));
  CHECK(ev.variable(counter) == HostTensor({1.f, 11.f}));
  CHECK(run(false) == HostTensor({0.f, 0.f}));
  CHECK(ev.variable(counter) == HostTensor({1.f, 11.f}));
  CHECK(run(true) == HostTensor({4.f, 24.f}));
  CHECK(ev.variable(counter) == HostTensor({2.f, 12.f}));
}

TEST_CASE("conditional: errors name the condition, the branches and what differs") {
  Ir ir;
  Graph inc = ir.create_graph(
      "inc", [](Tensor x) { return x + 1.0; }, f2);
  Graph two = ir.create_graph(
      "two",
      [](Tensor x) {
        return std::vector<Tensor>{x, x};
      },
      f2);
  Graph wide = ir.create_graph(
      "wide",
      [](Tensor x) {
        return ops::reshape(x, {1, 2});
      },
      f2);
  Graph ints = ir.create_graph(
      "ints", [](Tensor x) { return ops::cast(x, int32); }, f2);
  auto in_main = ir.main_graph().scope();
  auto x = constant(HostTensor({0.f, 1.f}), "x");
  auto yes = constant(HostTensor::scalar(true), "yes");
  auto two_flags = constant(HostTensor({true, false}, {2}), "flags");
  CHECK_THROWS_WITH_AS(ops::conditional(Tensor(), inc, inc, {x}, {x}),
                       Contains("If: the condition: the Tensor handle is empty"), GraphError);
  CHECK_THROWS_WITH_AS(ops::conditional(x, inc, inc, {x}, {x}),
                       has("If: the condition must be a bool_ tensor of one element, got '" +
                           x.id() + "' [(2,) float32]"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::conditional(two_flags, inc, inc, {x}, {x}),
                       Contains("must be a bool_ tensor of one element"), DTypeError);
  CHECK_THROWS_WITH_AS(
      ops::conditional(yes, inc, two, {x}, {x}),
      has("the then-branch '" + inc.name() + "' returns 1 outputs but the else-branch"),
      GraphError);
  CHECK_THROWS_WITH_AS(ops::conditional(yes, inc, wide, {x}, {x}), Contains("If: output 0 is"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::conditional(yes, inc, ints, {x}, {x}),
                       Contains("both branches must return equal shapes and dtypes"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::conditional(yes, inc, inc, {x}, {}),
                       Contains("If: missing inputs of graph"), GraphError);
  CHECK_THROWS_WITH_AS(ops::conditional(yes, ir.main_graph(), inc, {}, {x}),
                       Contains("cannot call the main graph"), GraphError);
}
