#include "pxl/pxl.hpp"

#include <doctest/doctest.h>
#include <set>
#include <string>

using namespace pxl;

TEST_CASE("graph scopes nest and restore") {
  Ir ir;
  Graph sub = ir.create_empty_graph("sub");
  {
    auto main = ir.main_graph().scope();
    CHECK(current_graph() == ir.main_graph());
    {
      auto in_sub = sub.scope();
      CHECK(current_graph() == sub);
      CHECK(main_graph() == ir.main_graph());
    }
    CHECK(current_graph() == ir.main_graph());
  }
  CHECK_FALSE(has_current_graph());
}

TEST_CASE("a moved-from scope does nothing") {
  Ir ir;
  {
    auto outer = ir.main_graph().scope();
    auto moved = std::move(outer);
    CHECK(current_graph() == ir.main_graph());
  }
  CHECK_FALSE(has_current_graph());
}

TEST_CASE("name scopes prefix tensor ids and op names") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor w;
  Tensor y;
  {
    auto layer = name_scope("layer1");
    auto inner = name_scope("dense");
    w = variable(HostTensor({1.f}, {1}), "weight");
    y = ops::exp(w);
  }
  Tensor z = ops::exp(w);
  CHECK(w.id() == "layer1/dense/weight");
  CHECK(w.name() == "weight");
  CHECK(y.producer()->name() == "layer1/dense/Exp");
  CHECK(z.producer()->name() == "Exp");
}

TEST_CASE("ipu scopes place ops and tensors") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor a = constant(1.0, float32);
  Tensor b;
  {
    auto on1 = ipu(1);
    b = ops::exp(ops::ipu_copy(a, 1));
  }
  CHECK(a.ipu() == 0);
  CHECK(b.ipu() == 1);
  CHECK(b.producer()->ipu() == 1);
  CHECK_THROWS_AS(static_cast<void>(ipu(-1)), ValueError);
}

TEST_CASE("in_sequence orders ops without data dependencies") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor a = constant(1.0, float32);
  Tensor x, y, z, u;
  {
    auto seq = in_sequence();
    x = ops::exp(a);
    y = ops::exp(a);
    {
      auto unordered = in_sequence(false);
      z = ops::exp(a);
    }
    u = ops::exp(a);
  }
  Tensor free = ops::exp(a);
  CHECK(x.producer()->after().empty());
  REQUIRE(y.producer()->after().size() == 1);
  CHECK(y.producer()->after()[0] == *x.producer());
  CHECK(z.producer()->after().empty());
  REQUIRE(u.producer()->after().size() == 1);
  CHECK(u.producer()->after()[0] == *z.producer());
  CHECK(free.producer()->after().empty());
}

TEST_CASE("tensor ids are unique in the Ir: a repeated name gets __t<n>, a subgraph its scope") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const auto w0 = variable(HostTensor({1.f}, {1}), "weight");
  const auto w1 = variable(HostTensor({2.f}, {1}), "weight");
  const auto w2 = constant(HostTensor({3.f}, {1}), "weight");
  CHECK(w0.id() == "weight");
  CHECK(w1.id() == "weight__t1");
  CHECK(w2.id() == "weight__t2");
  // The name stays what the tensor was created with.
  CHECK(w1.name() == "weight");
  CHECK(w2.name() == "weight");
  // A name that looks like a suffixed id is taken as it is, and skipped by later suffixes.
  const auto w3 = variable(HostTensor({4.f}, {1}), "weight__t4");
  const auto w4 = variable(HostTensor({5.f}, {1}), "weight");
  const auto w5 = variable(HostTensor({6.f}, {1}), "weight");
  CHECK(w3.id() == "weight__t4");
  CHECK(w4.id() == "weight__t3");
  CHECK(w5.id() == "weight__t5");
  {
    auto scope = name_scope("layer");
    CHECK(variable(HostTensor({1.f}, {1}), "weight").id() == "layer/weight");
    CHECK(variable(HostTensor({1.f}, {1}), "weight").id() == "layer/weight__t1");
  }
  // Tensors of a subgraph carry its name as their scope, as in PopXL, so a subgraph's
  // "weight" input leaves the main graph's names alone.
  Graph g = ir.create_graph([](Tensor x, Tensor w) { return ops::matmul(x, w); },
                            TensorSpec{{1, 1}, float32}, TensorSpec{{1, 1}, float32});
  const auto ins = g.inputs();
  CHECK(ins[0].id().starts_with(g.name() + "/"));
  CHECK(ins[0].id() != ins[1].id());
  CHECK(g.outputs()[0].id().starts_with(g.name() + "/"));
  Graph h = ir.create_empty_graph("h");
  {
    auto in_h = h.scope();
    CHECK(graph_input({1}, float32, "weight").id() == "h/weight");
    CHECK(graph_input({1}, float32, "weight").id() == "h/weight__t1");
  }
  // Every id of the Ir is distinct.
  std::set<std::string> ids;
  std::size_t count = 0;
  for (const Graph& graph : {ir.main_graph(), g, h})
    for (const Tensor& t : graph.tensors()) {
      ids.insert(t.id());
      ++count;
    }
  CHECK(ids.size() == count);
}
