// Module: tracing build into a graph, sub-module naming, inlining, outlining, lists, errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using addons::Linear;
using Keys = std::vector<std::string>;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_module {

struct Net : addons::Module<Net> {
  PXL_SUBMODULE(Linear, fc1, 512);
  PXL_SUBMODULE(Linear, fc2, 512);
  PXL_SUBMODULE(Linear, fc3, 512);
  PXL_SUBMODULE(Linear, fc4, 10);
  Tensor build(Tensor x) {
    x = x.reshape({x.shape()[0], -1});
    x = ops::gelu(fc1(x));
    x = ops::gelu(fc2(x));
    x = ops::gelu(fc3(x));
    return fc4(x);
  }
};

// The tutorial's NetOutlined: fc2 and fc3 share one Linear graph, called with two parameter
// sets.
struct NetOutlined : addons::Module<NetOutlined> {
  PXL_SUBMODULE(Linear, fc1, 512);
  PXL_SUBMODULE(Linear, fc4, 10);
  Tensor build(Tensor x) {
    x = x.reshape({x.shape()[0], -1});
    x = ops::gelu(fc1(x));
    auto [facts, graph] = Linear(512).create_graph(x);
    auto fc2 = add_variable_inputs("fc2", facts);
    x = ops::gelu(graph.bind(fc2).call({x})[0]);
    auto fc3 = add_variable_inputs("fc3", facts);
    x = ops::gelu(graph.bind(fc3).call({x})[0]);
    return fc4(x);
  }
};

struct Stack : addons::Module<Stack> {
  PXL_SUBMODULE(addons::ModuleList<Linear>, layers, 3, Linear(4, /*bias=*/false));
  Tensor build(Tensor x) {
    for (auto& layer : layers)
      x = layer(x);
    return x;
  }
};

// Two outputs, a plain-value argument and a by-ref variable.
struct Counter : addons::Module<Counter> {
  std::tuple<Tensor, Tensor> build(Tensor x, double scale) {
    auto count = add_variable_input("count", addons::init::zeros({}), float32, /*by_ref=*/true);
    ops::add_(count, constant(1.0, float32));
    return {x * scale, x + scale};
  }
};

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> r;
  for (const auto& op : g.ops()) {
    const auto n = op.debug_name();
    r.push_back(n.substr(0, n.find('.')));
  }
  return r;
}

TEST_CASE("Net's variables are named after its members: fc1.weight ... fc4.bias") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = Net{}.create_graph(TensorSpec{{2, 28, 28}, float32});
  const Keys expected{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                      "fc3.weight", "fc3.bias", "fc4.weight", "fc4.bias"};
  CHECK(facts.keys_flat() == expected);
  CHECK(fwd.args().keys_flat() == expected);
  CHECK(facts.at("fc1.weight").spec() == TensorSpec{{784, 512}, float32});
  CHECK(facts.at("fc4.bias").spec() == TensorSpec{{10}, float32});
  CHECK(facts.at("fc1.weight").initializer.description == "truncated_normal(mean=0, std=0.02)");
  CHECK(fwd.graph().name() == "Net_subgraph(0)");
  // The image is the only positional input; the variables follow it as named inputs.
  REQUIRE(fwd.graph().inputs().size() == 9);
  CHECK(fwd.positional_inputs() == std::vector<Tensor>{fwd.graph().inputs()[0]});
  CHECK(fwd.args().at("fc1.weight") == fwd.graph().inputs()[1]);
  // Inlined: the sub-modules' ops sit in Net's graph under their name scopes.
  CHECK(fwd.args().at("fc2.weight").id() == fwd.graph().name() + "/fc2/weight");
  CHECK(fwd.graph().called_graphs().empty());
  CHECK(fwd.graph().outputs()[0].shape() == Shape{2, 10});
}

TEST_CASE("NetOutlined calls one Linear graph twice, with fc2 and fc3 variables") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = NetOutlined{}.create_graph(TensorSpec{{2, 28, 28}, float32});
  CHECK(facts.keys_flat() == Keys{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
                                  "fc3.bias", "fc4.weight", "fc4.bias"});
  CHECK(op_types(fwd.graph()) ==
        Keys{"Reshape", "MatMul", "Add", "Gelu", "Call", "Gelu", "Call", "Gelu", "MatMul", "Add"});
  const auto called = fwd.graph().called_graphs();
  REQUIRE(called.size() == 1);
  CHECK(called[0].name() == "Linear_subgraph(0)");
  CHECK(op_types(called[0]) == Keys{"MatMul", "Add"});
  const auto schedule = fwd.print_schedule();
  CHECK(schedule.find("fc2.weight=%") != std::string::npos);
  std::size_t calls = 0;
  for (std::size_t p = 0; (p = schedule.find("calls Linear_subgraph(0)", p)) != std::string::npos;
       ++p)
    ++calls;
  CHECK(calls == 2);
}

TEST_CASE("call_module outlines a named sub-module; with a GraphCache calls share a graph") {
  struct Outlined : addons::Module<Outlined> {
    PXL_SUBMODULE(Linear, a, 3);
    PXL_SUBMODULE(Linear, b, 3);
    addons::GraphCache* cache = nullptr;
    Tensor build(Tensor x) {
      x = addons::call_module(cache, a, x)[0];
      return addons::call_module(cache, b, x)[0];
    }
  };
  Ir ir;
  auto main = ir.main_graph().scope();
  Outlined plain;
  auto [facts, fwd] = plain.create_graph(TensorSpec{{1, 3}, float32});
  CHECK(facts.keys_flat() == Keys{"a.weight", "a.bias", "b.weight", "b.bias"});
  CHECK(fwd.graph().called_graphs().size() == 2); // a and b are different module objects

  // One module object called twice through a cache: one graph.
  struct Twice : addons::Module<Twice> {
    PXL_SUBMODULE(Linear, shared, 3);
    addons::GraphCache cache;
    Tensor build(Tensor x) {
      x = addons::call_module(cache, shared, x)[0];
      return addons::call_module(cache, shared, x)[0];
    }
  };
  Twice twice;
  auto [facts2, fwd2] = twice.create_graph(TensorSpec{{1, 3}, float32});
  CHECK(fwd2.graph().called_graphs().size() == 1);
  CHECK(twice.cache.size() == 1);
  CHECK(twice.cache.hits() == 1);
  // One module object: both calls use the same variables.
  CHECK(facts2.keys_flat() == Keys{"shared.weight", "shared.bias"});
  const auto ops = fwd2.graph().ops();
  CHECK(ops[0].input(1) == fwd2.args().at("shared.weight"));
  CHECK(ops[1].input(1) == fwd2.args().at("shared.weight"));
}

TEST_CASE("GraphCache reuses a module's graph when specs match, not otherwise") {
  Ir ir;
  auto main = ir.main_graph().scope();
  addons::GraphCache cache;
  Linear lin(4);
  auto [f1, g1] = cache.create_graph(lin, TensorSpec{{2, 3}, float32});
  auto [f2, g2] = cache.create_graph(lin, TensorSpec{{2, 3}, float32});
  auto [f3, g3] = cache.create_graph(lin, TensorSpec{{5, 3}, float32});
  Linear other(4);
  auto [f4, g4] = cache.create_graph(other, TensorSpec{{2, 3}, float32});
  CHECK(g1.graph() == g2.graph());
  CHECK(f2.keys_flat() == Keys{"weight", "bias"});
  CHECK(g1.graph() != g3.graph());
  CHECK(g1.graph() != g4.graph());
  CHECK(cache.size() == 3);
  CHECK(cache.hits() == 1);
}

TEST_CASE("ModuleList names its elements by index") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Stack stack;
  CHECK(stack.layers.size() == 3);
  CHECK(stack.layers[1].name() == "layers.1");
  auto [facts, fwd] = stack.create_graph(TensorSpec{{2, 4}, float32});
  CHECK(facts.keys_flat() == Keys{"layers.0.weight", "layers.1.weight", "layers.2.weight"});
  CHECK(fwd.args().at("layers.2.weight").id() == fwd.graph().name() + "/layers/2/weight");
  CHECK_THROWS_WITH_AS(stack.layers[3],
                       doctest::Contains("ModuleList 'layers': index 3 out of "
                                         "range for 3 modules"),
                       ValueError);
  stack.layers.push_back(Linear(2));
  CHECK(stack.layers[3].name() == "layers.3");
}

TEST_CASE("build may take plain values and return tuples; by_ref variables") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = Counter{}.create_graph(TensorSpec{{3}, float32}, 2.0);
  CHECK(facts.at("count").by_ref);
  CHECK(fwd.graph().outputs().size() == 2);
  CHECK(fwd.graph().input_is_by_ref(1));
  CHECK(fwd.graph().name() == "Counter_subgraph(0)");
}

TEST_CASE("Module errors") {
  CHECK_THROWS_AS(Linear(2).create_graph(TensorSpec{{1, 2}, float32}), GraphError); // no graph
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(addons::add_variable_input("w", addons::init::zeros({2})),
                       doctest::Contains("add_variable_input('w'): no module is being traced"),
                       GraphError);
  CHECK_THROWS_WITH_AS(addons::add_variable_inputs("fc2", {}),
                       doctest::Contains("add_variable_inputs('fc2'): no module is being traced"),
                       GraphError);

  struct Twice : addons::Module<Twice> {
    Tensor build(Tensor x) {
      add_variable_input("w", addons::init::zeros({2}));
      add_variable_input("w", addons::init::zeros({2}));
      return x;
    }
  };
  CHECK_THROWS_WITH_AS(Twice{}.create_graph(TensorSpec{{2}, float32}),
                       doctest::Contains("a variable named 'w' was already added"), ValueError);

  struct BadName : addons::Module<BadName> {
    Tensor build(Tensor x) {
      add_variable_input("my weight", addons::init::zeros({2}));
      return x;
    }
  };
  CHECK_THROWS_WITH_AS(BadName{}.create_graph(TensorSpec{{2}, float32}),
                       doctest::Contains("malformed key 'my weight'"), ValueError);

  struct Unnamed : addons::Module<Unnamed> {
    Linear lin{2};
    Tensor build(Tensor x) { return addons::call_module(lin, x)[0]; }
  };
  CHECK_THROWS_WITH_AS(Unnamed{}.create_graph(TensorSpec{{1, 2}, float32}),
                       doctest::Contains("call_module: the Linear module has no name"), ValueError);

  CHECK_THROWS_WITH_AS(Linear(2).create_graph(TensorSpec{{}, float32}),
                       doctest::Contains("Linear: expected an input of rank >= 1"), ShapeError);
  // A failed trace leaves no trace state behind.
  CHECK_THROWS_AS(addons::add_variable_input("w", addons::init::zeros({2})), GraphError);
}

TEST_CASE("nested sub-modules compose their names, inlined or outlined") {
  struct Block : addons::Module<Block> {
    PXL_SUBMODULE(Linear, inner, 3);
    PXL_SUBMODULE(Linear, outlined, 3);
    Tensor build(Tensor x) { return addons::call_module(outlined, inner(x))[0]; }
  };
  struct Model : addons::Module<Model> {
    PXL_SUBMODULE(Block, body);
    PXL_SUBMODULE(addons::ModuleList<Block>, blocks, 2, Block());
    Tensor build(Tensor x) {
      x = body(x);
      for (auto& b : blocks)
        x = b(x);
      return x;
    }
  };
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = Model{}.create_graph(TensorSpec{{1, 3}, float32});
  CHECK(facts.keys() == Keys{"body", "blocks"});
  CHECK(facts.sub("body").keys_flat() ==
        Keys{"inner.weight", "inner.bias", "outlined.weight", "outlined.bias"});
  CHECK(facts.sub("blocks").keys() == Keys{"0", "1"});
  CHECK(facts.is_leaf("blocks.1.outlined.bias"));
  CHECK(facts.size_flat() == 12);
  CHECK(fwd.args().at("body.inner.weight").id() == fwd.graph().name() + "/body/inner/weight");
  CHECK(fwd.args().at("blocks.1.outlined.weight").id() ==
        fwd.graph().name() + "/blocks/1/outlined/weight");
  CHECK(fwd.graph().called_graphs().size() == 3);
}

} // namespace test_module
