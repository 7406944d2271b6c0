// Helpers of the op test suites: a scratch graph to build ops in, tensors from doubles, and
// one-call evaluation of a traced subgraph through the reference evaluator.
#pragma once

#include "ref_util.hpp"
#include "reference.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace pxl::testing {

/// A fresh Ir with a subgraph that is the current graph for the object's lifetime.
struct ScratchGraph {
  Ir ir;
  Graph graph = ir.create_empty_graph("scratch");
  GraphScope scope = graph.scope();

  Tensor input(Shape shape, DType dtype = float32) { return graph_input(std::move(shape), dtype); }
};

/// A tensor of `shape` and `dtype` holding `values` (row-major), each rounded to `dtype`.
inline HostTensor tensor(Shape shape, DType dtype, const std::vector<double>& values) {
  HostTensor t(std::move(shape), dtype);
  REQUIRE(static_cast<std::int64_t>(values.size()) == t.nelms());
  for (std::size_t i = 0; i < values.size(); ++i)
    ref::store(t, static_cast<std::int64_t>(i), values[i]);
  return t;
}

/// The specs of `tensors`, in order: the inputs of a graph traced over them.
inline std::vector<TensorSpec> specs_of(const std::vector<HostTensor>& tensors) {
  std::vector<TensorSpec> specs;
  for (const auto& t : tensors)
    specs.push_back(t.spec());
  return specs;
}

/// Traces `fn` (called with one Tensor per input, as a std::vector<Tensor>) into a subgraph of
/// a fresh Ir over the inputs' specs, and returns its outputs as the reference evaluator
/// computes them.
template <typename Fn>
std::vector<HostTensor> evaluate(Fn&& fn, std::vector<HostTensor> inputs) {
  Ir ir;
  const Graph g = ir.create_graph("under_test", std::forward<Fn>(fn), specs_of(inputs));
  return ReferenceEvaluator(ir).evaluate(g, std::move(inputs));
}

/// The single output of `fn` evaluated on `inputs` (see `evaluate`).
template <typename Fn>
HostTensor evaluate1(Fn&& fn, std::vector<HostTensor> inputs) {
  auto outs = evaluate(std::forward<Fn>(fn), std::move(inputs));
  REQUIRE(outs.size() == 1);
  return outs[0];
}

/// Every element of `t` as a double.
inline std::vector<double> values(const HostTensor& t) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < t.nelms(); ++i)
    v.push_back(t.item(i));
  return v;
}

/// CHECKs the spec of `t`, then every element against `expected`: |got - want| <= tol *
/// max(1, |want|); a NaN expectation wants NaN, an infinite one
/// that same infinity.
inline void check_values(const HostTensor& t, const TensorSpec& spec,
                         const std::vector<double>& expected, double tol = 1e-6) {
  CHECK(t.spec() == spec);
  REQUIRE(static_cast<std::int64_t>(expected.size()) == t.nelms());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double got = t.item(static_cast<std::int64_t>(i)), want = expected[i];
    CAPTURE(i);
    CAPTURE(got);
    CAPTURE(want);
    if (std::isnan(want))
      CHECK(std::isnan(got));
    else if (std::isinf(want))
      CHECK(got == want);
    else
      CHECK(std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want)));
  }
}

/// A uint32[2] seed tensor.
inline HostTensor seed(std::uint32_t s0, std::uint32_t s1) {
  return HostTensor({s0, s1}, Shape{2});
}

} // namespace pxl::testing
