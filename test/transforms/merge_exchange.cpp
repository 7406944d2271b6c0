// merge_exchange: the scope leaves the graph, the results and the estimated time as they are;
// outside a graph it is an error.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

namespace test_merge_exchange {

using namespace pxl;

struct Outcome {
  std::vector<OpKind> kinds;
  HostTensor result;
  std::int64_t cycles = 0;
};

/// Loads two tensors and stores their sum and product, the transfers in a merge_exchange
/// scope or not.
Outcome run(bool merged) {
  Ir ir;
  HostToDeviceStream a, b;
  DeviceToHostStream out;
  {
    auto in_main = ir.main_graph().scope();
    a = h2d_stream({8}, float32, "a");
    b = h2d_stream({8}, float32, "b");
    out = d2h_stream({8}, float32, "out");
    Tensor x, y;
    if (merged) {
      auto scope = transforms::merge_exchange();
      CHECK(scope.graph() == ir.main_graph());
      x = ops::host_load(a);
      y = ops::host_load(b);
    } else {
      x = ops::host_load(a);
      y = ops::host_load(b);
    }
    ops::host_store(out, x * y + x);
  }
  Outcome o;
  for (const auto& op : ir.main_graph().ops())
    o.kinds.push_back(op.kind());
  Session session{ir, "ipu_model", {.profile = true}};
  auto attached = session.attach();
  std::vector<float> av(8), bv(8);
  for (std::size_t i = 0; i < 8; ++i) {
    av[i] = static_cast<float>(i) - 3.5F;
    bv[i] = 0.25F * static_cast<float>(i);
  }
  o.result = session.run({{a, HostTensor(av, {8})}, {b, HostTensor(bv, {8})}}).at(out);
  o.cycles = session.profile().total.total();
  return o;
}

TEST_CASE("merge_exchange: the transfers stay separate steps; results and time unchanged") {
  const Outcome plain = run(false);
  const Outcome merged = run(true);
  CHECK(merged.kinds == plain.kinds);
  CHECK(merged.result == plain.result);
  CHECK(merged.cycles == plain.cycles);
  CHECK(plain.cycles > 0);
}

TEST_CASE("merge_exchange needs a current graph") {
  CHECK_THROWS_WITH_AS((void)transforms::merge_exchange(),
                       doctest::Contains("merge_exchange: no current graph"), GraphError);
}

} // namespace test_merge_exchange
