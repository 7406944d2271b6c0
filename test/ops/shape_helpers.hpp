// Helpers of the shape ops' tests (test/ops/shape*.cpp), shared so that the files of one unity
// batch do not define them twice.
#pragma once

#include "op_test.hpp"
#include "reference.hpp"

#include <numeric>
#include <vector>

namespace pxl::test_ops_shape {

/// 0, 1, 2, ... in `shape`, as `dtype`.
inline HostTensor iota(Shape shape, DType dtype = float32) {
  std::vector<float> v(static_cast<std::size_t>(nelms(shape)));
  std::iota(v.begin(), v.end(), 0.f);
  return HostTensor(v, std::move(shape)).astype(dtype);
}

/// Builds a subgraph of one input of `spec` with `fn` and evaluates it on `x`.
template <typename Fn>
std::vector<HostTensor> eval1(const HostTensor& x, Fn fn) {
  Ir ir;
  Graph g = ir.create_graph(fn, x.spec());
  testing::ReferenceEvaluator ev(ir);
  return ev.evaluate(g, {x});
}

/// An empty subgraph "g", current for the fixture's lifetime: room for graph inputs.
struct Fixture {
  Ir ir;
  Graph g = ir.create_empty_graph("g");
  GraphScope scope = g.scope();
};

} // namespace pxl::test_ops_shape
