// IrHold (what a Session keeps of its Ir): the freeze on changes, and storage that outlives
// the Ir. IrView: ids, spans and handles.
#include "../../lib/ir/ir_hold.hpp"
#include "pxl/pxl.hpp"
#include "pxl/transforms/autodiff.hpp"
#include "pxl/transforms/rewrite.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <optional>

using namespace pxl;
using pxl::detail::IrHold;

namespace {
/// An Ir with a subgraph `g(x) = x * 2` called once from the main graph.
struct Built {
  Ir ir;
  Graph g;
  Tensor x_main; ///< a variable of the main graph
  Op call;
};

std::unique_ptr<Built> build() {
  auto b = std::make_unique<Built>();
  auto main = b->ir.main_graph().scope();
  b->g = b->ir.create_graph(
      "g", [](Tensor x) { return x * 2.0; }, TensorSpec{{2}, float32});
  b->x_main = variable(HostTensor({1.f, 2.f}), "x");
  b->call = ops::call_with_info(b->g, {b->x_main}).op();
  return b;
}

/// Each change a Session must not see, named as its error names it.
std::vector<std::pair<std::string, std::function<void(Built&)>>> changes() {
  return {
      {"Ir::set_replication_factor", [](Built& b) { b.ir.set_replication_factor(2); }},
      {"Ir::set_num_host_transfers", [](Built& b) { b.ir.set_num_host_transfers(3); }},
      {"Add: adding an op to graph 'main_graph'",
       [](Built& b) {
         auto s = b.ir.main_graph().scope();
         (void)(b.x_main + b.x_main);
       }},
      {"Ir::create_empty_graph", [](Built& b) { b.ir.create_empty_graph("h"); }},
      {"Ir::create_graph",
       [](Built& b) {
         b.ir.create_graph(
             "h", [](Tensor t) { return t; }, TensorSpec{{1}, int32});
       }},
      {"h2d_stream: adding stream",
       [](Built& b) {
         auto s = b.ir.main_graph().scope();
         h2d_stream({2}, float32, "in");
       }},
      {"d2h_stream: adding stream",
       [](Built& b) {
         auto s = b.ir.main_graph().scope();
         d2h_stream({2}, float32, "out");
       }},
      {"graph_input: adding an input to graph 'g_subgraph(0)'",
       [](Built& b) {
         auto s = b.g.scope();
         graph_input({2}, float32);
       }},
      {"graph_output: adding an output to graph 'g_subgraph(0)'",
       [](Built& b) {
         auto s = b.g.scope();
         graph_output(b.g.inputs()[0]);
       }},
      {"variable: adding variable 'v'",
       [](Built& b) {
         auto s = b.ir.main_graph().scope();
         variable(HostTensor({1.f}), "v");
       }},
      {"constant: adding constant 'c'",
       [](Built& b) {
         auto s = b.g.scope();
         constant(HostTensor({1.f}), "c");
       }},
      {"autodiff: differentiating graph 'g_subgraph(0)'",
       [](Built& b) { transforms::autodiff(b.g); }},
      {"IrRewriter::add_output",
       [](Built& b) { transforms::IrRewriter(b.ir).add_output(b.g, b.g.inputs()[0]); }},
      {"IrRewriter::clone_op",
       [](Built& b) {
         const Op op = b.g.ops().back();
         const std::vector<Tensor> ins = op.inputs();
         transforms::IrRewriter(b.ir).clone_op(op, b.g, ins);
       }},
      {"IrRewriter::replace_uses",
       [](Built& b) {
         transforms::IrRewriter(b.ir).replace_uses(b.g.outputs()[0], b.g.inputs()[0]);
       }},
      {"IrRewriter::inline_call",
       [](Built& b) { transforms::IrRewriter(b.ir).inline_call(b.call); }},
  };
}
} // namespace

TEST_CASE("while an IrHold lives, every change to its Ir throws, naming the change") {
  for (const auto& entry : changes()) {
    const auto& what = entry.first;
    const auto& change = entry.second;
    CAPTURE(what);
    auto b = build();
    const auto ops_before = IrView(b->ir).num_ops();
    {
      IrHold hold(b->ir);
      CHECK_THROWS_WITH_AS(change(*b), doctest::Contains(what.c_str()), GraphError);
      CHECK_THROWS_WITH_AS(
          change(*b), doctest::Contains("the Ir is already prepared for a Session"), GraphError);
      CHECK(IrView(b->ir).num_ops() == ops_before); // nothing half-done
      CHECK(b->ir.replication_factor() == 1);
    }
    // The freeze ends with the hold.
    CHECK_NOTHROW(change(*b));
  }
}

TEST_CASE("the freeze lasts until the last hold ends; a moved-from hold does nothing") {
  auto b = build();
  std::optional<IrHold> first(std::in_place, b->ir);
  {
    IrHold second(b->ir);
    first.reset();
    CHECK_THROWS_AS(b->ir.set_num_host_transfers(2), GraphError);
    IrHold moved(std::move(second));
    CHECK(second.ir() == nullptr);
    CHECK_THROWS_AS(b->ir.set_num_host_transfers(2), GraphError);
  }
  CHECK_NOTHROW(b->ir.set_num_host_transfers(2));
  IrHold a(b->ir), c(b->ir);
  a = std::move(c);
  CHECK(a.ir() == &b->ir);
  CHECK_THROWS_AS(b->ir.set_num_host_transfers(2), GraphError);
}

TEST_CASE("a view through a hold stays readable after the Ir is destroyed") {
  auto b = build();
  const Graph g = b->g;
  IrHold hold(b->ir);
  CHECK(hold.ir() == &b->ir);
  Ir moved = std::move(b->ir); // the hold follows the Ir when it moves
  CHECK(hold.ir() == &moved);
  b.reset();
  { Ir gone = std::move(moved); }
  CHECK(hold.ir() == nullptr);
  const IrView v = hold.view();
  REQUIRE(v.num_graphs() == 2);
  CHECK(v.name(IrView::main_graph()) == "main_graph");
  const GraphId gid = IrView::id(g);
  REQUIRE(v.ops(gid).size() == 1); // x * 2: a Mul by a constant
  CHECK(v.kind(v.ops(gid).back()) == OpKind::Mul);
  CHECK(v.spec(v.outputs(gid)[0]) == TensorSpec{{2}, float32});
  const auto& main_ops = v.ops(IrView::main_graph());
  REQUIRE(main_ops.size() == 1);
  CHECK(v.called_graph(main_ops[0]) == gid);
  CHECK(v.call_sites(gid).size() == 1);
  // Handles read the kept storage too, but cannot reach the destroyed Ir.
  CHECK(g.name() == "g_subgraph(0)");
  CHECK(g.print_schedule().find("Mul") != std::string::npos);
  CHECK_THROWS_WITH_AS(g.ir(), doctest::Contains("has been destroyed"), GraphError);
}

TEST_CASE("IrView maps handles to ids and back without allocating") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto in = h2d_stream({2, 3}, float32, "in");
  auto out = d2h_stream({3}, float32, "out");
  Tensor w, x, y;
  {
    auto on1 = pxl::ipu(1);
    w = variable(HostTensor::full({3}, float32, 0.5), "w");
    x = ops::host_load(in);
    y = ops::sum(x, std::vector<std::int64_t>{0}) + w;
    ops::host_store(out, y);
  }
  const IrView v(ir);
  CHECK(v == IrView(ir));
  CHECK(v.owns(x));
  CHECK(v.owns(in));
  CHECK_FALSE(IrView(Ir{}).owns(x));
  const TensorId wid = IrView::id(w);
  CHECK(v.kind(wid) == TensorKind::variable);
  CHECK(v.data(wid) != nullptr);
  CHECK(v.data(IrView::id(x)) == nullptr);
  CHECK(v.kind(IrView::id(x)) == TensorKind::intermediate);
  CHECK(v.id(wid) == "w");
  CHECK(v.tensor(wid) == w);
  CHECK(v.producer(IrView::id(y)).has_value());
  CHECK(v.op(*v.producer(IrView::id(y))) == *y.producer());
  CHECK(v.ipu(IrView::id(y)) == 1);
  CHECK(v.ipu(*v.producer(IrView::id(y))) == 1);
  CHECK(v.graph(IrView::id(y)) == IrView::main_graph());
  CHECK(v.name(IrView::id(in)) == "in");
  CHECK(v.host_to_device(IrView::id(in)));
  CHECK_FALSE(v.host_to_device(IrView::id(out)));
  CHECK(v.h2d_stream(IrView::id(in)) == in);
  CHECK(v.d2h_stream(IrView::id(out)) == out);
  const auto load = v.ops(IrView::main_graph())[0];
  CHECK(v.kind(load) == OpKind::HostLoad);
  CHECK(v.attrs_as<StreamAttrs>(load).stream == in.index());
  CHECK(v.inputs(load).empty());
  CHECK(v.outputs(load).size() == 1);
  CHECK(v.num_streams() == 2);
  CHECK(v.num_host_transfers() == 1);
}

TEST_CASE("Ir ids are unique and survive moves") {
  Ir a, b;
  CHECK(a.id() != b.id());
  const auto id = a.id();
  Ir c = std::move(a);
  CHECK(c.id() == id);
}
