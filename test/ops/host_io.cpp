// host_load, host_store and print_tensor: inference, errors, round trips through the reference
// evaluator, and printed lines on the emulator.
#include "reference.hpp"

#include "pxl/session.hpp"
#include "pxl/transforms/autodiff.hpp"

#include <iostream>
#include <sstream>

#include <doctest/doctest.h>

using namespace pxl;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

TEST_CASE("host_load / host_store: inference and op records") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  auto in = h2d_stream({2, 3}, float32, "in");
  auto out = d2h_stream({2, 3}, float32, "out");
  auto x = ops::host_load(in, "x");
  CHECK(x.spec() == TensorSpec{{2, 3}, float32});
  CHECK(x.name() == "x");
  const Op load = *x.producer();
  CHECK(load.kind() == OpKind::HostLoad);
  CHECK(load.num_inputs() == 0);
  CHECK(load.attrs_as<StreamAttrs>().stream == in.index());
  ops::host_store(out, x);
  const Op store = ir.main_graph().ops().back();
  CHECK(store.kind() == OpKind::HostStore);
  CHECK(store.num_outputs() == 0);
  CHECK(store.inputs() == std::vector<Tensor>{x});
  CHECK(store.attrs_as<StreamAttrs>().stream == out.index());

  // Allowed in subgraphs too.
  Graph g = ir.create_graph([&] { ops::host_store(out, ops::host_load(in)); });
  CHECK(g.ops().size() == 2);
}

TEST_CASE("host_load / host_store: errors") {
  Ir other;
  HostToDeviceStream foreign_in;
  DeviceToHostStream foreign_out;
  {
    auto scope = other.main_graph().scope();
    foreign_in = h2d_stream({2}, float32, "foreign_in");
    foreign_out = d2h_stream({2}, float32, "foreign_out");
  }
  Ir ir;
  auto in_main = ir.main_graph().scope();
  auto out = d2h_stream({2, 3}, float32, "out");
  auto x = constant(HostTensor({2, 3}, float32), "x");
  CHECK_THROWS_WITH_AS(ops::host_load(foreign_in),
                       Contains("HostLoad: stream 'foreign_in' belongs to another Ir than the "
                                "current graph 'main_graph'"),
                       GraphError);
  auto y = constant(HostTensor({2}, float32), "y");
  CHECK_THROWS_WITH_AS(ops::host_store(foreign_out, y),
                       Contains("HostStore: stream 'foreign_out' belongs to another Ir"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::host_load(HostToDeviceStream{}),
                       Contains("HostLoad: the HostToDeviceStream handle is empty"), GraphError);
  auto wrong_shape = constant(HostTensor({3, 2}, float32), "wrong_shape");
  CHECK_THROWS_WITH_AS(ops::host_store(out, wrong_shape),
                       Contains("HostStore: stream 'out' carries [(2, 3) float32] but the tensor "
                                "stored is 'wrong_shape' [(3, 2) float32]"),
                       ShapeError);
  auto wrong_dtype = constant(HostTensor({2, 3}, int32), "wrong_dtype");
  CHECK_THROWS_WITH_AS(ops::host_store(out, wrong_dtype),
                       Contains("HostStore: stream 'out' carries [(2, 3) float32] but the tensor "
                                "stored is 'wrong_dtype' [(2, 3) int32]"),
                       DTypeError);
  ops::host_store(out, x);
}

TEST_CASE("reference run: round trip with num_host_transfers 1") {
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    auto in = h2d_stream({2}, float32, "in");
    auto out = d2h_stream({2}, float32, "out");
    ops::host_store(out, ops::host_load(in) * 2.0);
  }
  ReferenceEvaluator ev(ir);
  auto result = ev.run({{"in", HostTensor({1.5f, -3.f})}});
  REQUIRE(result.size() == 1);
  CHECK(result.at("out") == HostTensor({3.f, -6.f}));
  CHECK(ev.run({{"in", HostTensor({4.f, 5.f})}}).at("out") == HostTensor({8.f, 10.f}));

  CHECK_THROWS_WITH_AS(ev.run({}), Contains("missing: 'in'; unexpected: none"), StreamError);
  CHECK_THROWS_WITH_AS(ev.run({{"in", HostTensor({1.f, 2.f})}, {"bogus", HostTensor({1.f})}}),
                       Contains("missing: none; unexpected: 'bogus'"), StreamError);
  CHECK_THROWS_WITH_AS(ev.run({{"in", HostTensor({1.f, 2.f, 3.f})}}),
                       Contains("stream 'in' of [(2,) float32] with num_host_transfers 1 needs an "
                                "array [(2,) float32], got [(3,) float32]"),
                       StreamError);
  CHECK_THROWS_WITH_AS(ev.run({{"in", HostTensor({1, 2})}}), Contains("got [(2,) int32]"),
                       StreamError);
  // Evaluating a graph with a host_load outside `run` has no data to read.
  CHECK_THROWS_WITH_AS(ReferenceEvaluator(ir).evaluate(ir.main_graph()),
                       Contains("HostLoad: stream 'in' has no data"), StreamError);
}

TEST_CASE("reference run: num_host_transfers 3 with a repeat, wrap-around and persistence") {
  Ir ir;
  ir.set_num_host_transfers(3);
  Tensor acc;
  HostToDeviceStream in;
  DeviceToHostStream out, seen;
  {
    auto in_main = ir.main_graph().scope();
    in = h2d_stream({2}, int32, "in");
    out = d2h_stream({2}, int32, "out");
    seen = d2h_stream({2}, int32, "seen");
    acc = variable(HostTensor({0, 0}), "acc");
  }
  // Each iteration: acc += next element; store the running sum and the element loaded.
  Graph step = ir.create_empty_graph("step");
  {
    auto scope = step.scope();
    auto a = graph_input({2}, int32, "a", /*by_ref=*/true);
    auto x = ops::host_load(in);
    ops::host_store(seen, x);
    ops::host_store(out, ops::add_(a, x));
  }
  SUBCASE("three loads per run: one per element") {
    {
      auto in_main = ir.main_graph().scope();
      ops::repeat(step, 3, {acc});
    }
    ReferenceEvaluator ev(ir);
    const HostTensor feed({1, 2, 10, 20, 100, 200}, {3, 2});
    auto r = ev.run({{"in", feed}});
    CHECK(r.at("seen") == feed);
    CHECK(r.at("out") == HostTensor({1, 2, 11, 22, 111, 222}, {3, 2}));
    CHECK(ev.variable(acc) == HostTensor({111, 222}));
    // Variables persist across runs, and each run starts the streams afresh.
    r = ev.run({{"in", feed}});
    CHECK(r.at("out") == HostTensor({112, 224, 122, 244, 222, 444}, {3, 2}));
    CHECK(ev.variable(acc) == HostTensor({222, 444}));
  }
  SUBCASE("four loads per run: the fourth wraps around to element 0") {
    {
      auto in_main = ir.main_graph().scope();
      ops::repeat(step, 4, {acc});
    }
    ReferenceEvaluator ev(ir);
    auto r = ev.run({{"in", HostTensor({1, 2, 10, 20, 100, 200}, {3, 2})}});
    // Loads: e0, e1, e2, e0. Store j lands in element j % 3, so store 3 (the running sum
    // 2·e0 + e1 + e2) overwrites element 0.
    CHECK(r.at("seen") == HostTensor({1, 2, 10, 20, 100, 200}, {3, 2}));
    CHECK(r.at("out") == HostTensor({112, 224, 11, 22, 111, 222}, {3, 2}));
    CHECK(ev.variable(acc) == HostTensor({112, 224}));
  }
  SUBCASE("arrays need the leading num_host_transfers dimension") {
    ReferenceEvaluator ev(ir);
    CHECK_THROWS_WITH_AS(ev.run({{"in", HostTensor({1, 2})}}),
                         Contains("stream 'in' of [(2,) int32] with num_host_transfers 3 needs an "
                                  "array [(3, 2) int32], got [(2,) int32]"),
                         StreamError);
  }
}

namespace {
/// What `f` writes to std::cout.
template <typename F>
std::string captured_stdout(F&& f) {
  std::ostringstream text;
  auto* saved = std::cout.rdbuf(text.rdbuf());
  try {
    f();
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.rdbuf(saved);
  return text.str();
}
} // namespace

TEST_CASE("print_tensor prints each time it runs, in order, and passes its tensor on") {
  Ir ir;
  DeviceToHostStream out;
  {
    auto in_main = ir.main_graph().scope();
    const Tensor x = constant(HostTensor({1.f, 2.f, 3.f}, {3}), "x");
    const Tensor y = ops::print_tensor(x * 2.0, "doubled");
    CHECK(y.spec() == x.spec());
    CHECK(y.producer()->kind() == OpKind::PrintTensor);
    CHECK(y.producer()->attrs<OpKind::PrintTensor>().title == "doubled");
    CHECK(ops::print_tensor(x).producer()->attrs<OpKind::PrintTensor>().title == "x");
    const Tensor z = ops::print_tensor(y + 1.0, "plus one");
    out = d2h_stream({3}, float32, "out");
    ops::host_store(out, z);
    CHECK_THROWS_WITH_AS(ops::print_tensor(Tensor{}),
                         Contains("PrintTensor: the tensor to print: the Tensor handle is empty"),
                         GraphError);
  }
  Session session{ir};
  auto attached = session.attach();
  std::map<DeviceToHostStream, HostTensor> results;
  const auto text = captured_stdout([&] { results = session.run(); });
  CHECK(text == "doubled: HostTensor([2, 4, 6], shape=(3,), dtype=float32)\n"
                "x: HostTensor([1, 2, 3], shape=(3,), dtype=float32)\n"
                "plus one: HostTensor([3, 5, 7], shape=(3,), dtype=float32)\n");
  CHECK(results.at(out) == HostTensor({3.f, 5.f, 7.f}, {3}));
  CHECK(captured_stdout([&] { session.run(); }) == text); // every run prints again
}

TEST_CASE("print_tensor with print_gradient prints the gradient in the backward pass") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Graph f = ir.create_graph(
      "f", [](Tensor x) { return ops::print_tensor(x * x, "square", true); },
      TensorSpec{{2}, float32});
  const auto info = transforms::autodiff(f);
  const HostTensor x({3.f, -1.f}, {2}), g({1.f, 10.f}, {2});
  const auto text = captured_stdout([&] {
    testing::ReferenceEvaluator ev(ir);
    (void)ev.evaluate(f, {x});
    (void)ev.evaluate(info.graph(), {g, x});
  });
  CHECK(text == "square: HostTensor([9, 1], shape=(2,), dtype=float32)\n"
                "grad square: HostTensor([1, 10], shape=(2,), dtype=float32)\n");
}
