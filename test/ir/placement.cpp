// Placement that holds: an op reads tensors of its own IPU only (ops::ipu_copy moves them),
// graphs are called with inputs on the IPUs they were built for, call outputs sit where the
// callee returns them, and autodiff puts every gradient op on its forward op's IPU.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>

using namespace pxl;
using doctest::Contains;

TEST_CASE("An op reading a tensor of another IPU is refused; ipu_copy moves it") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const Tensor a = constant(HostTensor({1.f, 2.f}, {2}), "a");
  auto on1 = ipu(1);
  CHECK_THROWS_WITH_AS(ops::exp(a),
                       Contains("Exp: input 0 'a' [(2,) float32] is on IPU 0 but the op is placed "
                                "on IPU 1 (inputs located on different IPUs: 0 != 1); copy it "
                                "there with ops::ipu_copy(a, 1)"),
                       GraphError);
  const Tensor b = ops::ipu_copy(a, 1);
  CHECK(b.ipu() == 1);
  CHECK(b.producer()->kind() == OpKind::IpuCopy);
  CHECK(ops::exp(b).ipu() == 1);
  // Copied from IPU 1 back to IPU 0, whatever the scope.
  CHECK(ops::ipu_copy(b, 0, 1).ipu() == 0);
  CHECK_THROWS_WITH_AS(ops::ipu_copy(a, 1, 2),
                       Contains("IpuCopy: 'a' [(2,) float32] is on IPU 0, not on the source IPU 2"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::ipu_copy(a, -1), Contains("destination IPU -1"), ValueError);
  CHECK_THROWS_WITH_AS(a + b, Contains("Add: input 0 'a'"), GraphError);
}

TEST_CASE("Graphs are called with inputs on the IPUs they were built for") {
  Ir ir;
  Graph on1;
  {
    auto on_ipu1 = ipu(1);
    on1 = ir.create_graph([](const Tensor& x) { return ops::exp(x); }, TensorSpec{{2}, float32});
  }
  CHECK(on1.inputs()[0].ipu() == 1);
  auto in_main = ir.main_graph().scope();
  const Tensor a = constant(HostTensor({1.f, 2.f}, {2}), "a");
  CHECK_THROWS_WITH_AS(ops::call(on1, {a}),
                       Contains("is on IPU 1 but is bound to 'a' [(2,) float32] on IPU 0; build "
                                "the graph under ipu(0), or copy the tensor with ops::ipu_copy"),
                       GraphError);
  // Called from IPU 0's scope with a copy: the output sits on IPU 1, where the graph returns it.
  const Tensor y = ops::call(on1, {ops::ipu_copy(a, 1)})[0];
  CHECK(y.ipu() == 1);
  CHECK(y.producer()->ipu() == 0);
}

TEST_CASE("Autodiff places each gradient op on the IPU of its forward op") {
  // x (IPU 0) → w0·x → copy to IPU 1 → tanh(·)·w1 → sum.
  Ir ir;
  Graph fwd = ir.create_empty_graph("split");
  {
    auto in_fwd = fwd.scope();
    const Tensor x = graph_input({4}, float32, "x");
    const Tensor w0 = graph_input({4}, float32, "w0");
    Tensor w1;
    {
      auto on1 = ipu(1);
      w1 = graph_input({4}, float32, "w1");
    }
    const Tensor h = ops::ipu_copy(x * w0, 1);
    auto on1 = ipu(1);
    graph_output(ops::sum(ops::tanh(h) * w1));
  }
  const auto info = transforms::autodiff(fwd, {.grads_required = fwd.inputs()});
  const Graph grad = info.graph();
  std::set<std::int64_t> used;
  for (const Op& op : grad.ops()) {
    used.insert(op.ipu());
    // Every op reads its own IPU's tensors, except the copy back.
    if (op.kind() != OpKind::IpuCopy)
      for (const Tensor& t : op.inputs())
        CHECK(t.ipu() == op.ipu());
  }
  CHECK(used == std::set<std::int64_t>{0, 1});
  // The gradients come out where their inputs live.
  const auto outs = grad.outputs();
  REQUIRE(outs.size() == 3);
  CHECK(outs[0].ipu() == 0); // x
  CHECK(outs[1].ipu() == 0); // w0
  CHECK(outs[2].ipu() == 1); // w1
  // The one copy in the gradient takes w0·x's gradient back from IPU 1 to IPU 0.
  int copies = 0;
  for (const Op& op : grad.ops())
    if (op.kind() == OpKind::IpuCopy) {
      ++copies;
      CHECK(op.input(0).ipu() == 1);
      CHECK(op.output(0).ipu() == 0);
    }
  CHECK(copies == 1);
}
