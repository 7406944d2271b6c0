// Drives one emulator kernel directly, without a Session: owns the op's buffers, runs the
// compiled step for a given number of workers and compares against the reference evaluator.
#pragma once

#include "../../lib/emu/compile_context.hpp"
#include "../../lib/emu/kernel.hpp"
#include "op_test.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

namespace pxl::testing {

/// The op under test: the last op of a graph traced over `inputs`' specs by `fn`.
struct KernelCase {
  Ir ir;
  Graph graph;
  Op op;
  std::vector<HostTensor> inputs; ///< one per graph input
};

/// Calls `fn` with the tensors of `v` as separate arguments (up to four), or with `v`.
template <typename Fn>
auto apply_tensors(Fn& fn, const std::vector<Tensor>& v) {
  if constexpr (std::is_invocable_v<Fn&, const std::vector<Tensor>&>)
    return fn(v);
  else if constexpr (std::is_invocable_v<Fn&>)
    return fn();
  else if constexpr (std::is_invocable_v<Fn&, Tensor>)
    return fn(v.at(0));
  else if constexpr (std::is_invocable_v<Fn&, Tensor, Tensor>)
    return fn(v.at(0), v.at(1));
  else if constexpr (std::is_invocable_v<Fn&, Tensor, Tensor, Tensor>)
    return fn(v.at(0), v.at(1), v.at(2));
  else
    return fn(v.at(0), v.at(1), v.at(2), v.at(3));
}

template <typename Fn>
KernelCase make_case(Fn fn, std::vector<HostTensor> inputs) {
  KernelCase c;
  c.graph = c.ir.create_graph(
      "under_test", [&](const std::vector<Tensor>& v) { return apply_tensors(fn, v); },
      specs_of(inputs));
  const auto ops = c.graph.ops();
  REQUIRE(!ops.empty());
  c.op = ops.back();
  c.inputs = std::move(inputs);
  return c;
}

/// The value fed to an op input: a graph input's host tensor or a constant's data.
inline HostTensor input_value(const KernelCase& c, const Tensor& t) {
  const auto graph_inputs = c.graph.inputs();
  for (std::size_t i = 0; i < graph_inputs.size(); ++i)
    if (graph_inputs[i] == t)
      return c.inputs[i];
  const HostTensor* data = IrView(c.ir).data(IrView::id(t));
  REQUIRE(data != nullptr);
  return *data;
}

/// Outputs of the op's kernel run with `workers` workers, one after the other on this thread
/// or (`threaded`) on one thread each. Outputs start filled with a byte pattern so elements
/// a kernel fails to write show up.
inline std::vector<HostTensor> run_kernel(const KernelCase& c, unsigned workers,
                                          bool threaded = false) {
  using namespace pxl::emu::detail;
  std::vector<HostTensor> ins, outs;
  for (const auto& t : c.op.inputs())
    ins.push_back(input_value(c, t));
  const bool inplace = is_inplace(c.op.kind());
  for (std::size_t k = 0; k < c.op.num_outputs(); ++k) {
    HostTensor o(c.op.output(k).spec());
    if (o.dtype() != bool_ && o.nbytes() > 0) // an empty tensor has no data pointer
      std::memset(o.bytes().data(), 0xA5, o.nbytes());
    outs.push_back(std::move(o));
  }
  OpBuffers buffers;
  for (auto& t : ins)
    buffers.inputs.push_back(t.bytes().data());
  for (auto& t : outs)
    buffers.outputs.push_back(t.bytes().data());
  if (inplace)
    buffers.outputs[0] = buffers.inputs[0];
  // Compute kernels only read the number of workers from the context (to size per-worker
  // scratch at bind time): as many as the largest worker count the tests use.
  CompileContext ctx{std::max(workers, 4u), {}, {}};
  const IrView view(c.ir);
  const StepFn step = kernel_table[static_cast<std::size_t>(c.op.kind())](
      ctx, KernelOp(view, IrView::id(c.op)), buffers);
  if (threaded) {
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w)
      pool.emplace_back([&, w] { step(w, workers); });
    for (auto& t : pool)
      t.join();
  } else {
    for (unsigned w = 0; w < workers; ++w)
      step(w, workers);
  }
  if (inplace)
    outs[0] = ins[0];
  return outs;
}

/// How far a kernel may be from the reference: exact for integers and bools, `rtol` relative
/// for float32, one unit in the last place for float16 (the reference rounds to half too).
inline void check_close(const HostTensor& got, const HostTensor& want, double rtol = 1e-6) {
  REQUIRE(got.spec() == want.spec());
  for (std::int64_t i = 0; i < got.nelms(); ++i) {
    const double g = got.item(i), w = want.item(i);
    CAPTURE(i);
    CAPTURE(g);
    CAPTURE(w);
    if (std::isnan(w)) {
      CHECK(std::isnan(g));
    } else if (g == w) {
      CHECK(true);
    } else if (got.dtype() == float32) {
      CHECK(std::fabs(g - w) <= rtol * std::fabs(w) + 1e-37);
    } else if (got.dtype() == float16) {
      CHECK(std::fabs(g - w) <= std::ldexp(std::fabs(w), -10) + std::ldexp(1.0, -24));
    } else {
      CHECK(g == w);
    }
  }
}

/// Runs the case for 1, 2, 3 and 4 workers: every run must be bitwise identical to the
/// single-worker one, which must match the reference evaluator. Returns the outputs.
inline std::vector<HostTensor> check_kernel(const KernelCase& c, double rtol = 1e-6,
                                            bool compare_reference = true) {
  const auto one = run_kernel(c, 1);
  for (unsigned workers = 2; workers <= 4; ++workers) {
    CAPTURE(workers);
    const auto many = run_kernel(c, workers);
    REQUIRE(many.size() == one.size());
    for (std::size_t k = 0; k < one.size(); ++k)
      CHECK(many[k] == one[k]);
  }
  if (compare_reference) {
    const auto want = ReferenceEvaluator(c.ir).evaluate(c.graph, c.inputs);
    REQUIRE(want.size() <= one.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      CAPTURE(k);
      check_close(one[k], want[k], rtol);
    }
  }
  return one;
}

template <typename Fn>
std::vector<HostTensor> check_kernel(Fn fn, std::vector<HostTensor> inputs, double rtol = 1e-6) {
  return check_kernel(make_case(std::move(fn), std::move(inputs)), rtol);
}

/// Checks that each case's output 0 is bitwise the same on 2, 3 and 4 concurrent threads as
/// on one worker.
inline void check_threads_bitwise(const std::vector<KernelCase>& cases) {
  for (const auto& c : cases) {
    CAPTURE(op_type_name(c.op.kind()));
    const auto one = run_kernel(c, 1);
    for (unsigned w : {2u, 3u, 4u}) {
      CAPTURE(w);
      CHECK(run_kernel(c, w, true)[0] == one[0]);
    }
  }
}

/// Deterministic pseudo-random values in [lo, hi), rounded to `dtype`.
inline HostTensor random_tensor(Shape shape, DType dtype, double lo = -2.0, double hi = 2.0,
                                std::uint64_t salt = 1) {
  HostTensor t(std::move(shape), dtype);
  std::uint64_t s = 0x243f6a8885a308d3ull ^ (salt * 0x9e3779b97f4a7c15ull);
  for (std::int64_t i = 0; i < t.nelms(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;
    ref::store(t, i, lo + (hi - lo) * u);
  }
  return t;
}

/// Calls `check(c, d)` for every case of `cases` in float32 and then float16, the dtype and
/// the case's index captured for the report (the kernel files' geometry loops).
template <typename Case, typename Check>
void for_each_case(const std::vector<Case>& cases, Check check) {
  REQUIRE(!cases.empty()); // a geometry list that lost its cases would check nothing
  for (const DType d : {float32, float16})
    for (std::size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(d);
      CAPTURE(i);
      check(cases[i], d);
    }
}

} // namespace pxl::testing
