// IrRewriter: each edit's result (shapes, call sites, schedule) and, where it computes
// something, its values through the reference evaluator.
#include "gradcheck.hpp"

#include "pxl/transforms/rewrite.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace pxl;
using pxl::testing::random_tensor;
using pxl::testing::ReferenceEvaluator;
using transforms::IrRewriter;
using V = std::vector<Tensor>;

namespace {
void check_same(const HostTensor& got, const HostTensor& want) {
  REQUIRE(got.spec() == want.spec());
  for (std::int64_t i = 0; i < got.nelms(); ++i)
    CHECK(got.item(i) == doctest::Approx(want.item(i)));
}

/// "%7 [(2, 3) float32]", as print_schedule shows a tensor.
std::string shown(const Tensor& t) {
  return "%" + std::to_string(t.index()) + " " + to_string(t.spec());
}

bool has_kind(const Graph& g, OpKind k) {
  const auto ops = g.ops();
  return std::any_of(ops.begin(), ops.end(), [&](const Op& o) { return o.kind() == k; });
}
} // namespace

TEST_CASE("add_output adds an output to a graph and to each of its call sites") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const TensorSpec spec{{2, 3}, float32};
  Graph g = ir.create_graph(
      "g", [](Tensor x) { return ops::exp(x) + 1.0; }, spec);
  const Tensor e = g.ops()[0].output(0); // exp(x), internal to g
  Graph h = ir.create_graph(
      "h", [&](Tensor x) { return ops::call(g, {ops::call(g, {x})[0]})[0]; }, spec);
  // A loop over g is not a call site: it carries only g's first outputs.
  const Op loop = ops::repeat_with_info(g, 2, {variable(HostTensor(spec), "v")}).op();

  IrRewriter rw(ir);
  const auto added = rw.add_output(g, e);
  REQUIRE(g.outputs().size() == 2);
  CHECK(g.outputs()[1] == e);
  const IrView v = rw.view();
  const auto sites = v.call_sites(IrView::id(g));
  REQUIRE(sites.size() == 2);
  REQUIRE(added.size() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    const Op site = v.op(sites[k]);
    CHECK(site.graph() == h);
    REQUIRE(site.num_outputs() == 2);
    CHECK(site.output(1) == added[k]);
    CHECK(added[k].spec() == spec);
    CHECK(added[k].producer() == site);
    // The schedule shows the call's new output.
    CHECK(h.print_schedule().find("-> (" + shown(site.output(0)) + ", " + shown(added[k]) + ")") !=
          std::string::npos);
  }
  CHECK(loop.num_outputs() == 1);

  // Through h's own new outputs (h has no call sites), the values: exp(x) and exp(exp(x) + 1).
  CHECK(rw.add_output(h, added[0]).empty());
  CHECK(rw.add_output(IrView::id(h), IrView::id(added[1])).empty());
  const HostTensor x = random_tensor({2, 3}, 1);
  const auto outs = ReferenceEvaluator(ir).evaluate(h, {x});
  REQUIRE(outs.size() == 3);
  for (std::int64_t i = 0; i < x.nelms(); ++i) {
    CHECK(outs[1].item(i) == doctest::Approx(std::exp(x.item(i))));
    CHECK(outs[2].item(i) == doctest::Approx(std::exp(std::exp(x.item(i)) + 1.0)));
  }

  CHECK_THROWS_WITH_AS(rw.add_output(g, h.inputs()[0]),
                       doctest::Contains("not in graph 'g_subgraph(0)'"), GraphError);
  CHECK_THROWS_WITH_AS(rw.add_output(ir.main_graph(), loop.output(0)),
                       doctest::Contains("the main graph has no outputs"), GraphError);
}

TEST_CASE("clone_op copies an op into another graph, reading new inputs") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph f = ir.create_graph(
      "f", [](Tensor a, Tensor b) { return ops::matmul(a, b); }, TensorSpec{{2, 3}, float32},
      TensorSpec{{3, 4}, float32});
  const Op mm = f.ops()[0];
  Graph h = ir.create_empty_graph("h");
  Tensor p, q;
  {
    auto in_h = h.scope();
    p = graph_input({2, 3}, float32, "p");
    q = graph_input({3, 4}, float32, "q");
  }
  IrRewriter rw(ir);
  const Op c = rw.clone_op(mm, h, V{p, q});
  CHECK(c.kind() == OpKind::MatMul);
  CHECK(c.graph() == h);
  CHECK(c.name() == mm.name());
  CHECK(c.inputs() == V{p, q});
  REQUIRE(c.num_outputs() == 1);
  CHECK(c.output(0).spec() == TensorSpec{{2, 4}, float32});
  CHECK(c.output(0).name() == mm.output(0).name());
  CHECK(c.output(0).id() != mm.output(0).id());
  CHECK(h.print_schedule() == "Graph : h\n  (%" + std::to_string(p.index()) + ", %" +
                                  std::to_string(q.index()) + ") -> () {\n    " + c.debug_name() +
                                  " (" + shown(p) + ", " + shown(q) + ") -> (" +
                                  shown(c.output(0)) + ")\n  }\n");
  {
    auto in_h = h.scope();
    graph_output(c.output(0));
  }
  const HostTensor a = random_tensor({2, 3}, 2), b = random_tensor({3, 4}, 3);
  ReferenceEvaluator ev(ir);
  check_same(ev.evaluate(h, {a, b})[0], ev.evaluate(f, {a, b})[0]);

  CHECK_THROWS_WITH_AS(rw.clone_op(mm, h, V{p}), doctest::Contains("has 2 inputs, got 1"),
                       GraphError);
  CHECK_THROWS_WITH_AS(rw.clone_op(mm, h, V{p, p}), doctest::Contains("another shape"), ShapeError);
  CHECK_THROWS_WITH_AS(rw.clone_op(mm, h, f.inputs()),
                       doctest::Contains("is not a tensor of graph 'h'"), GraphError);
}

TEST_CASE("replace_uses redirects the uses that run once the replacement exists") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph f = ir.create_empty_graph("f");
  Tensor x, z, a, c, t, u;
  {
    auto in_f = f.scope();
    x = graph_input({3}, float32, "x");
    z = graph_input({3}, float32, "z");
    a = ops::exp(x);
    c = a + a * 2.0;
    t = ops::tanh(x);
    u = a + t;
    graph_output(c);
    graph_output(u);
    graph_output(a);
  }
  IrRewriter rw(ir);
  // t exists only after c's ops: only u's use of a and the graph output are replaced.
  CHECK(rw.replace_uses(a, t) == 2);
  CHECK(c.producer()->input(0) == a);
  CHECK(u.producer()->input(0) == t);
  CHECK(f.outputs()[2] == t);
  CHECK(f.print_schedule().find("(" + shown(t) + ", " + shown(t) + ") -> (" + shown(u) + ")") !=
        std::string::npos);
  // An input exists from the start: every remaining use is replaced.
  CHECK(rw.replace_uses(a, z) == 2);
  const HostTensor xv = random_tensor({3}, 4), zv = random_tensor({3}, 5);
  const auto outs = ReferenceEvaluator(ir).evaluate(f, {xv, zv});
  for (std::int64_t i = 0; i < 3; ++i) {
    CHECK(outs[0].item(i) == doctest::Approx(3.0 * zv.item(i)));
    CHECK(outs[1].item(i) == doctest::Approx(2.0 * std::tanh(xv.item(i))));
    CHECK(outs[2].item(i) == doctest::Approx(std::tanh(xv.item(i))));
  }

  Tensor other;
  {
    auto in_main = ir.main_graph().scope();
    other = variable(HostTensor({1.f, 2.f, 3.f}), "other");
  }
  CHECK_THROWS_WITH_AS(rw.replace_uses(x, other), doctest::Contains("is in graph 'f'"), GraphError);
  Tensor column;
  {
    auto in_f = f.scope();
    column = x.reshape({3, 1});
  }
  CHECK_THROWS_WITH_AS(rw.replace_uses(x, column), doctest::Contains("differ"), ShapeError);
}

TEST_CASE("inline_call puts the called graph's ops in place of the call, with the same results") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const TensorSpec spec{{2, 2}, float32};
  // x is taken by value and modified in place; w is passed straight through.
  Graph g = ir.create_graph(
      "g",
      [](Tensor x, Tensor w) {
        Tensor y = ops::matmul(x, w);
        x += 1.0;
        return std::make_tuple(y, x, w);
      },
      spec, spec);
  Graph inner = ir.create_graph(
      "inner", [](Tensor x) { return -x; }, spec);
  Graph h = ir.create_graph(
      "h",
      [&](Tensor p, Tensor q) {
        const auto outs = ops::call(g, {p, q});
        // p must not see g's in-place update of its copy of it.
        return std::make_tuple(outs[0] + p, outs[1], outs[2], ops::call(inner, {q})[0]);
      },
      spec, spec);
  const HostTensor pv = random_tensor({2, 2}, 6), qv = random_tensor({2, 2}, 7);
  const auto before = ReferenceEvaluator(ir).evaluate(h, {pv, qv});

  IrRewriter rw(ir);
  const Op call = h.ops()[0];
  REQUIRE(call.kind() == OpKind::Call);
  const auto results = rw.inline_call(call);
  REQUIRE(results.size() == 3);
  for (const auto& r : results) {
    CHECK(r.graph() == h);
    CHECK(r.spec() == spec);
  }
  CHECK(rw.view().call_sites(IrView::id(g)).empty());
  CHECK(h.ops()[0].kind() == OpKind::Identity); // the by-value input's copy
  CHECK(has_kind(h, OpKind::MatMul));
  CHECK(has_kind(h, OpKind::AddInplace));
  CHECK(h.print_schedule().find(call.debug_name()) == std::string::npos);
  CHECK(h.outputs()[1] == results[1]);

  const auto after = ReferenceEvaluator(ir).evaluate(h, {pv, qv});
  REQUIRE(after.size() == before.size());
  for (std::size_t k = 0; k < after.size(); ++k)
    check_same(after[k], before[k]);

  CHECK_THROWS_WITH_AS(rw.inline_call(call), doctest::Contains("no longer scheduled"), GraphError);
}

TEST_CASE("inline_call keeps nested calls as call sites; a loop cannot be inlined") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const TensorSpec spec{{3}, float32};
  Graph leaf = ir.create_graph(
      "leaf", [](Tensor x) { return x * 3.0; }, spec);
  Graph mid = ir.create_graph(
      "mid", [&](Tensor x) { return ops::call(leaf, {x})[0] + 1.0; }, spec);
  Tensor v = variable(HostTensor({1.f, 2.f, 3.f}), "v");
  const Op site = ops::call_with_info(mid, {v}).op();
  const Op loop = ops::repeat_with_info(leaf, 2, {v}).op();
  IrRewriter rw(ir);
  const auto results = rw.inline_call(site);
  REQUIRE(results.size() == 1);
  // leaf is now called from mid and, through the copy of mid's call, from the main graph.
  const auto leaf_sites = rw.view().call_sites(IrView::id(leaf));
  REQUIRE(leaf_sites.size() == 2);
  CHECK(rw.view().graph(leaf_sites[1]) == IrView::main_graph());
  const auto main_ops = ir.main_graph().ops();
  CHECK(std::find(main_ops.begin(), main_ops.end(), site) == main_ops.end());
  CHECK_THROWS_WITH_AS(rw.inline_call(loop), doctest::Contains("is not a Call op"), GraphError);
}

TEST_CASE("copy_tensor copies a value before an op changes it in place, or at the end") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor before_update, at_end;
  Graph g = ir.create_graph(
      "g",
      [&](Tensor x) {
        Tensor y = x * 2.0;
        ops::add_(y, x);
        return y;
      },
      TensorSpec{{3}, float32});
  IrRewriter rw(ir);
  const auto sched = g.ops();
  const Op update = sched.back();
  REQUIRE(update.kind() == OpKind::AddInplace);
  before_update = rw.copy_tensor(update.input(0), update);
  at_end = rw.copy_tensor(update.input(0));
  rw.add_output(g, before_update);
  rw.add_output(g, at_end);
  const auto now = g.ops();
  REQUIRE(now.size() == sched.size() + 2);
  CHECK(now[now.size() - 3] == *before_update.producer()); // just before the update
  CHECK(now.back() == *at_end.producer());
  ReferenceEvaluator ev(ir);
  const auto out = ev.evaluate(g, {HostTensor({1.f, 2.f, 3.f}, {3})});
  CHECK(out[1] == HostTensor({2.f, 4.f, 6.f}, {3})); // 2x, before x was added
  CHECK(out[2] == HostTensor({3.f, 6.f, 9.f}, {3})); // 3x, after

  Graph other = ir.create_graph(
      "other", [](Tensor x) { return x + 1.0; }, TensorSpec{{3}, float32});
  CHECK_THROWS_WITH_AS(rw.copy_tensor(update.input(0), other.ops().back()),
                       doctest::Contains("is not scheduled in graph 'g_subgraph(0)'"), GraphError);
  CHECK_THROWS_WITH_AS(rw.copy_tensor(Tensor{}),
                       doctest::Contains("must belong to the rewriter's Ir"), GraphError);
}

TEST_CASE("IrView::input_is_written sees in-place updates, through aliases and nested calls") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph bump = ir.create_empty_graph("bump");
  {
    auto in_bump = bump.scope();
    Tensor t = graph_input({2}, float32, "t", /*by_ref=*/true);
    Tensor r = graph_input({2}, float32, "r", /*by_ref=*/true);
    Tensor u = graph_input({2}, float32, "u");
    ops::add_(ops::mul_(t, u), u); // the second update names the first's result: same buffer
    graph_output(r * 2.0);         // r is by reference but only read
  }
  Graph outer = ir.create_empty_graph("outer");
  {
    auto in_outer = outer.scope();
    Tensor a = graph_input({2}, float32, "a", /*by_ref=*/true);
    Tensor b = graph_input({2}, float32, "b", /*by_ref=*/true);
    Tensor c = graph_input({2}, float32, "c");
    ops::call(bump, {a, b, c});
  }
  const IrView view(ir);
  const auto id = [](const Graph& g) { return IrView::id(g); };
  CHECK(view.input_is_written(id(bump), 0));
  CHECK(!view.input_is_written(id(bump), 1));
  CHECK(!view.input_is_written(id(bump), 2));
  CHECK(view.input_is_written(id(outer), 0));  // through bump's by-ref t
  CHECK(!view.input_is_written(id(outer), 1)); // bump only reads r
  CHECK(!view.input_is_written(id(outer), 2));
}
