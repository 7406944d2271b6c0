#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

using namespace pxl;

TEST_CASE("an Ir starts with an empty main graph") {
  Ir ir;
  CHECK(ir.main_graph().is_main());
  CHECK(ir.main_graph().name() == "main_graph");
  CHECK(ir.graphs().size() == 1);
  CHECK(ir.num_host_transfers() == 1);
  CHECK(ir.replication_factor() == 1);
  ir.set_num_host_transfers(4);
  CHECK(ir.num_host_transfers() == 4);
  CHECK_THROWS_WITH_AS(ir.set_num_host_transfers(0), doctest::Contains("expected a count >= 1"),
                       ValueError);
  CHECK_THROWS_AS(Ir(0), ValueError);
}

TEST_CASE("create_graph traces specs and tensors into inputs, in order") {
  Ir ir;
  Graph g = ir.create_graph(
      "Linear", [](Tensor x, Tensor w, double scale) { return ops::matmul(x, w) * scale; },
      TensorSpec{{2, 4}, float32}, TensorSpec{{4, 3}, float32}, 0.5);
  CHECK(g.name() == "Linear_subgraph(0)");
  REQUIRE(g.inputs().size() == 2);
  CHECK(g.inputs()[0].shape() == Shape{2, 4});
  CHECK(g.inputs()[1].shape() == Shape{4, 3});
  REQUIRE(g.outputs().size() == 1);
  CHECK(g.outputs()[0].shape() == Shape{2, 3});
  CHECK(ir.create_graph(
              "Linear", [](Tensor x) { return x; }, TensorSpec{{1}, float32})
            .name() == "Linear_subgraph(1)");
  CHECK(ir.create_graph([](Tensor x) { return x; }, TensorSpec{{1}, float32}).name() ==
        "subgraph_subgraph(0)");
}

TEST_CASE("create_graph accepts tensors, vectors and returns tuples or nothing") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor v = variable(HostTensor({1.f, 2.f}, {2}), "v");
  Graph pair = ir.create_graph(
      [](Tensor a, std::vector<Tensor> bs) {
        return std::tuple{a + bs[0], a * bs[1]};
      },
      v, std::vector<TensorSpec>{{{2}, float32}, {{2}, float32}});
  CHECK(pair.inputs().size() == 3);
  CHECK(pair.outputs().size() == 2);
  Graph none = ir.create_graph([](Tensor) {}, v);
  CHECK(none.outputs().empty());
  // The traced graph's inputs are new tensors of the subgraph, not the variable itself.
  CHECK(pair.inputs()[0] != v);
  CHECK(pair.contains(pair.inputs()[0]));
  CHECK_FALSE(pair.contains(v));
}

TEST_CASE("create_empty_graph is filled by hand") {
  Ir ir;
  Graph g = ir.create_empty_graph("adder");
  {
    auto in_g = g.scope();
    Tensor a = graph_input({3}, float32, "a");
    Tensor b = graph_input({3}, float32, "b", /*by_ref=*/true);
    graph_output(a + b);
  }
  CHECK(g.name() == "adder");
  CHECK(g.inputs()[0].name() == "a");
  CHECK_FALSE(g.input_is_by_ref(0));
  CHECK(g.input_is_by_ref(1));
  CHECK_THROWS_AS(g.input_is_by_ref(2), ValueError);
  CHECK(g.ops().size() == 1);
  CHECK(g.ops()[0].kind() == OpKind::Add);
}

TEST_CASE("variables, constants and streams") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor w = variable(HostTensor({1.f, 2.f}, {2}), "w");
  Tensor h = variable(HostTensor({1.f, 2.f}, {2}), float16, "h");
  Tensor c = constant(2.0, int32);
  CHECK(w.is_variable());
  CHECK(h.dtype() == float16);
  CHECK(c.is_constant());
  CHECK(c.shape().empty());
  CHECK(ir.main_graph().variables().size() == 2);
  CHECK(ir.main_graph().constants().size() == 1);
  auto in = h2d_stream({2, 3}, float32, "in");
  auto out = d2h_stream({2}, int32, "out");
  CHECK(in.name() == "in");
  CHECK(in.shape() == Shape{2, 3});
  CHECK(out.dtype() == int32);
  CHECK(ir.h2d_streams().size() == 1);
  CHECK(ir.d2h_streams().size() == 1);
  CHECK_THROWS_WITH_AS(h2d_stream({1}, float32, "in"), doctest::Contains("'in' already exists"),
                       ValueError);
}

TEST_CASE("Ir moves keep handles valid") {
  Ir a;
  Graph g = a.create_empty_graph("g");
  Ir b = std::move(a);
  CHECK(&g.ir() == &b);
  CHECK(g.name() == "g");
}

TEST_CASE("graph_input_for: a subgraph's input that main-graph call sites bind to a variable") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const Tensor counter = variable(HostTensor::scalar(0.0f), "counter");
  const Tensor step = variable(HostTensor::scalar(1.5f), "step");
  Graph body = ir.create_empty_graph("body");
  Tensor c;
  {
    auto in_body = body.scope();
    const Tensor by = graph_input(TensorSpec{{}, float32}, "by");
    c = graph_input_for(counter);
    ops::add_(c, by);
  }
  CHECK(body.inputs().size() == 2);
  CHECK(body.input_is_by_ref(1));
  CHECK(c.name() == "counter");
  CHECK(c.spec() == counter.spec());
  // The call binds only what it knows of; the counter is bound to its variable.
  const CallSiteInfo loop = ops::repeat_with_info(body, 10, {step});
  CHECK(loop.parent_input(1) == counter);
  // Bound explicitly, the binding given wins.
  const Tensor other = variable(HostTensor::scalar(100.0f), "other");
  CHECK(ops::call_with_info(body, {step}, {{c, other}}).parent_input(1) == other);

  // A call site in another subgraph must bind it: the error names the variable.
  Graph outer = ir.create_empty_graph("outer");
  {
    auto in_outer = outer.scope();
    const Tensor by = graph_input(TensorSpec{{}, float32}, "by");
    CHECK_THROWS_WITH_AS(ops::call(body, {by}),
                         doctest::Contains("bound by default to main-graph variable 'counter'"),
                         GraphError);
    CHECK_THROWS_WITH_AS((void)graph_input_for(by),
                         doctest::Contains("graph_input_for: expected an on-chip variable of the "
                                           "main graph"),
                         GraphError);
  }
  CHECK_THROWS_WITH_AS((void)graph_input_for(counter),
                       doctest::Contains("graph_input_for: the current graph is the main graph"),
                       GraphError);

  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  session.run({});
  CHECK(session.get_tensor_data(counter) == HostTensor::scalar(15.0f));
  CHECK(session.get_tensor_data(other) == HostTensor::scalar(101.5f));
}
