// Compiled kernel steps allocate nothing when they run: every buffer, including per-worker
// scratch, is sized when the plan is compiled. Counts this thread's heap allocations through a
// replaced global operator new.
#include "harness.hpp"

#include "../support/allocation_counter.hpp"

#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/matmul.hpp"

#include <cstdlib>
#include <new>

using namespace pxl;
using namespace pxl::testing;
using namespace pxl::emu::detail;

namespace {

/// Heap allocations made by running the compiled step of `c`'s op for 1, 2 and 3 workers (on
/// this thread, one worker after the other), after compiling it for 3 workers.
long allocations_while_running(const KernelCase& c) {
  std::vector<HostTensor> ins, outs;
  for (const auto& t : c.op.inputs())
    ins.push_back(input_value(c, t));
  for (std::size_t k = 0; k < c.op.num_outputs(); ++k)
    outs.emplace_back(c.op.output(k).spec());
  OpBuffers buffers;
  for (auto& t : ins)
    buffers.inputs.push_back(t.bytes().data());
  for (auto& t : outs)
    buffers.outputs.push_back(t.bytes().data());
  CompileContext ctx{3, {}, {}};
  const IrView view(c.ir);
  const StepFn step = kernel_table[static_cast<std::size_t>(c.op.kind())](
      ctx, KernelOp(view, IrView::id(c.op)), buffers);
  const long before = thread_allocations;
  for (unsigned nw = 1; nw <= 3; ++nw)
    for (unsigned w = 0; w < nw; ++w)
      step(w, nw);
  return thread_allocations - before;
}

auto matmul = [](Tensor a, Tensor b) { return ops::matmul(a, b); };

} // namespace

TEST_CASE("matmul steps allocate nothing at run time, float32 and float16 (scratch at plan time)") {
  // oneDNN generates its sgemm kernels on the first call in the process: warm it up on a
  // small float32 product first.
  (void)allocations_while_running(make_case(
      matmul, {random_tensor({3, 5}, float32, 0, 1, 1), random_tensor({5, 4}, float32, 0, 1, 2)}));
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    // 3 x 5 tiles of up to 64 x 128: every worker count gets several, of several sizes. A
    // reduction of 20, past the float16 kernels' few-k path (16), so that float16 tiles take
    // the path with the most scratch: both operands widened for sgemm.
    // Positive operands: no cancellation, so float32 stays within 1e-6 of the reference.
    const auto c = make_case(
        matmul, {random_tensor({2, 150, 20}, d, 0, 1, 1), random_tensor({20, 600}, d, 0, 1, 2)});
    CHECK(allocations_while_running(c) == 0);
    // and the results are still right
    check_kernel(c);
  }
}

TEST_CASE("gelu steps allocate nothing at run time") {
  for (DType d : {float32, float16}) {
    CAPTURE(d);
    const auto c =
        make_case([](Tensor t) { return ops::gelu(t); }, {random_tensor({1001}, d, -6, 6, 3)});
    CHECK(allocations_while_running(c) == 0);
  }
}
