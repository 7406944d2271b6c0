// The IR's user-facing errors: each names the thing at fault and what was expected.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

using namespace pxl;

TEST_CASE("an op needs a current graph") {
  Ir ir;
  Tensor x;
  {
    auto s = ir.main_graph().scope();
    x = constant(1.0, float32);
  }
  CHECK_FALSE(has_current_graph());
  CHECK_THROWS_WITH_AS(ops::exp(x), doctest::Contains("Exp: no current graph"), GraphError);
  CHECK_THROWS_WITH_AS(current_graph(), doctest::Contains("no current graph"), GraphError);
}

TEST_CASE("a tensor of another graph cannot be used") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor v = variable(HostTensor({1.f}, {1}), "v");
  Graph g = ir.create_empty_graph("sub");
  auto in_g = g.scope();
  Tensor x = graph_input({1}, float32, "x");
  CHECK_THROWS_WITH_AS(x + v,
                       doctest::Contains("'v' [(1,) float32] is in graph 'main_graph', not in "
                                         "the current graph 'sub'"),
                       GraphError);
}

TEST_CASE("a tensor of another Ir cannot be used") {
  Ir ir, other;
  Tensor v;
  {
    auto main = ir.main_graph().scope();
    v = variable(HostTensor({1.f}, {1}), "v");
  }
  auto other_main = other.main_graph().scope();
  CHECK_THROWS_WITH_AS(ops::exp(v), doctest::Contains("belongs to another Ir"), GraphError);
}

TEST_CASE("graph scopes of two Irs cannot nest") {
  Ir a, b;
  auto sa = a.main_graph().scope();
  CHECK_THROWS_WITH_AS(static_cast<void>(b.main_graph().scope()),
                       doctest::Contains("inside a graph of another Ir"), GraphError);
}

TEST_CASE("variables live in the main graph only") {
  Ir ir;
  Graph g = ir.create_empty_graph("sub");
  auto in_g = g.scope();
  CHECK_THROWS_WITH_AS(variable(HostTensor({1.f}, {1}), "w"),
                       doctest::Contains("variables live in the main graph only"), GraphError);
}

TEST_CASE("the main graph has no inputs or outputs") {
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(graph_input({1}, float32), doctest::Contains("main graph takes no inputs"),
                       GraphError);
  Tensor c = constant(1.0, float32);
  CHECK_THROWS_WITH_AS(graph_output(c), doctest::Contains("main graph has no outputs"), GraphError);
}

TEST_CASE("graph_output needs a tensor of the current graph") {
  Ir ir;
  Tensor c;
  {
    auto main = ir.main_graph().scope();
    c = constant(1.0, float32, "c");
  }
  Graph g = ir.create_empty_graph("sub");
  auto in_g = g.scope();
  CHECK_THROWS_WITH_AS(graph_output(c), doctest::Contains("is not in the current graph 'sub'"),
                       GraphError);
}

TEST_CASE("shape and dtype mismatches show both operands") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor a = constant(HostTensor({1.f, 2.f, 3.f}, {3}), "a");
  Tensor b = constant(HostTensor({1.f, 2.f}, {2}), "b");
  Tensor i = constant(HostTensor(std::vector<std::int32_t>{1, 2, 3}, {3}), "i");
  CHECK_THROWS_WITH_AS(a + b, doctest::Contains("Add: shapes (3,) and (2,) do not broadcast"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(a * i, doctest::Contains("'a' [(3,) float32] and 'i' [(3,) int32]"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::exp(i), doctest::Contains("Exp: expected a float32 or float16"),
                       DTypeError);
  Tensor m = constant(HostTensor(Shape{2, 3}, float32), "m");
  CHECK_THROWS_WITH_AS(ops::matmul(m, m), doctest::Contains("contraction dimensions differ"),
                       ShapeError);
}

TEST_CASE("sizes: a shape whose count or bytes overflow is a ShapeError naming the thing") {
  constexpr std::int64_t big = std::int64_t{1} << 62;
  CHECK_THROWS_WITH_AS((TensorSpec{{big, 4}, float32}.nelms()),
                       doctest::Contains("shape (4611686018427387904, 4) has more elements"),
                       ShapeError);
  CHECK_THROWS_WITH_AS((TensorSpec{{big}, float32}.nbytes()),
                       doctest::Contains("has more bytes than a 64-bit count can hold"),
                       ShapeError);
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(h2d_stream({big, 4}, float32, "images"),
                       doctest::Contains("h2d_stream 'images': shape (4611686018427387904, 4)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(d2h_stream({big}, int32, "out"),
                       doctest::Contains("d2h_stream 'out': shape (4611686018427387904,) of int32 "
                                         "has more bytes"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(h2d_stream({2, -3}, float32, "neg"),
                       doctest::Contains("h2d_stream 'neg': shape (2, -3) has a negative "
                                         "dimension (-3)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::init({big, big}, float32, "buf"),
                       doctest::Contains("Init: output 'buf': shape (4611686018427387904, "
                                         "4611686018427387904) has more elements"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::init({big}, float16), doctest::Contains("of float16 has more bytes"),
                       ShapeError);
  // A variable's data is a HostTensor, which refuses the shape before the variable exists.
  CHECK_THROWS_WITH_AS(variable(HostTensor(Shape{big, 4}, float32), "w"),
                       doctest::Contains("HostTensor: shape (4611686018427387904, 4)"), ShapeError);
  CHECK(ir.main_graph().variables().empty());
  CHECK(ir.main_graph().ops().empty());
  // The empty shapes are fine, however large the other dimensions.
  CHECK(ops::init({big, big, 0}, float32).nelms() == 0);
  CHECK_THROWS_WITH_AS(ir.create_graph([](Tensor x) { return x; }, TensorSpec{{big, big}, float32}),
                       doctest::Contains("graph_input"), ShapeError);
}
