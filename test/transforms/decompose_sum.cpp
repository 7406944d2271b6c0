// decompose_sum: pxl's gradient sums are already two-input additions; the graph, its results
// and the frozen Ir.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <cmath>

namespace test_decompose_sum {

using namespace pxl;

std::vector<OpKind> kinds_of(const Graph& g) {
  std::vector<OpKind> kinds;
  for (const auto& op : g.ops())
    kinds.push_back(op.kind());
  return kinds;
}

TEST_CASE("decompose_sum: the gradient of a tensor used four times is a chain of two-input "
          "adds, left as it is") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Graph f = ir.create_graph(
      "f", [](Tensor x) { return x * x + ops::sin(x) + ops::exp(x); }, TensorSpec{{4}, float32});
  const auto info = transforms::autodiff(f);
  const Graph grad = info.graph();
  const auto before = kinds_of(grad);
  std::size_t adds = 0;
  for (const auto& op : grad.ops())
    if (op.kind() == OpKind::Add) {
      ++adds;
      CHECK(op.num_inputs() == 2);
    }
  // x·x contributes twice, sin and exp once each: three additions join four contributions.
  CHECK(adds >= 3);
  CHECK(transforms::decompose_sum(grad) == grad);
  CHECK(kinds_of(grad) == before);

  // The gradient is still 2x + cos x + exp x.
  const std::vector<float> xs{-1.5F, 0.0F, 0.5F, 2.0F};
  const CallSiteInfo call = ops::call_with_info(f, {constant(HostTensor(xs, {4}))});
  const Tensor dx =
      ops::call(grad, {constant(HostTensor::full({4}, float32, 1.0))}, info.inputs_dict(call))[0];
  const auto out = d2h_stream({4}, float32, "dx");
  ops::host_store(out, dx);
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const HostTensor got = session.run().at(out);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    CHECK(got.item(static_cast<std::int64_t>(i)) ==
          doctest::Approx(2 * x + std::cos(x) + std::exp(x)).epsilon(1e-5));
  }
  CHECK_THROWS_WITH_AS(
      transforms::decompose_sum(grad),
      doctest::Contains("decompose_sum: decomposing the sums of graph 'f_subgraph(0)_grad'"),
      GraphError);
}

} // namespace test_decompose_sum
