#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

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
    b = ops::exp(a);
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
