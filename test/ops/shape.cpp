// Shape and data-movement ops: inference, reference results and errors.
#include "reference.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using pxl::testing::ReferenceEvaluator;

TEST_CASE("smoke: reshape and add_ through the reference evaluator") {
  Ir ir;
  Tensor v, r;
  {
    auto in_main = ir.main_graph().scope();
    v = variable(HostTensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), "v");
    r = ops::reshape(v, {4});
    ops::add_(v, constant(HostTensor({10.f, 20.f}, {2})));
  }
  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  CHECK(ev.variable(v) == HostTensor({11.f, 22.f, 13.f, 24.f}, {2, 2}));
  CHECK(r.shape() == Shape{4});
}
