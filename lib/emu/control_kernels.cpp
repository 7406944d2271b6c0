// Kernels of call and repeat: argument copies around an outlined graph's plan.
#include "compile_context.hpp"
#include "copy_list.hpp"

#include "pxl/ir/graph.hpp"

#include <memory>

namespace pxl::emu::detail {

namespace {
struct CallCopies {
  CopyList in, out, back;
};

/// Arguments in, results out, by-ref inputs back to the caller.
CallCopies call_copies(const Op& op, const GraphPlan& callee, const OpBuffers& b) {
  const Graph graph = *op.called_graph();
  CallCopies c;
  for (std::size_t i = 0; i < b.inputs.size(); ++i) {
    c.in.add(callee.inputs[i], b.inputs[i], callee.input_bytes[i]);
    if (graph.input_is_by_ref(i))
      c.back.add(b.inputs[i], callee.inputs[i], callee.input_bytes[i]);
  }
  for (std::size_t i = 0; i < b.outputs.size(); ++i)
    c.out.add(b.outputs[i], callee.outputs[i], callee.output_bytes[i]);
  return c;
}
} // namespace

StepFn compile_Call(CompileContext& ctx, const Op& op, const OpBuffers& buffers) {
  const GraphPlan& callee = ctx.plan_of(op.attrs_as<CallAttrs>().graph);
  auto c = std::make_shared<const CallCopies>(call_copies(op, callee, buffers));
  WorkerPool* pool = &ctx.pool;
  // Run by all workers in lockstep, so the called plan's steps are split too. The caller's
  // loop puts a barrier after the copies out.
  return [c, pool, &callee](unsigned w, unsigned n) {
    c->in.run(w, n);
    pool->barrier();
    run_plan(callee, *pool, w, n);
    c->out.run(w, n);
    c->back.run(w, n);
  };
}

namespace {
struct LoopCopies {
  CallCopies call;
  CopyList carry;       ///< outputs[i] -> inputs[i], or outputs -> staging when staged
  CopyList unstage;     ///< staging -> inputs
  AlignedBytes staging; ///< used when an output shares a buffer with an input
  std::int64_t count = 1;
};

bool overlaps(const std::byte* a, std::size_t na, const std::byte* b, std::size_t nb) {
  return a < b + nb && b < a + na;
}
} // namespace

StepFn compile_Repeat(CompileContext& ctx, const Op& op, const OpBuffers& buffers) {
  const GraphPlan& body = ctx.plan_of(op.attrs_as<CallAttrs>().graph);
  auto c = std::make_shared<LoopCopies>();
  c->call = call_copies(op, body, buffers);
  c->count = op.attrs_as<CallAttrs>().repeat_count;
  const std::size_t carried = body.outputs.size();
  // An output may be an input itself (or alias one in place); copying in sequence could then
  // read a value already overwritten, so such loops go through a staging buffer.
  bool staged = false;
  for (std::size_t i = 0; i < carried; ++i)
    for (std::size_t j = 0; j < carried; ++j)
      if (i != j &&
          overlaps(body.outputs[i], body.output_bytes[i], body.inputs[j], body.input_bytes[j]))
        staged = true;
  if (staged) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < carried; ++i)
      total += align_up(body.output_bytes[i]);
    c->staging = allocate_aligned(total);
    std::size_t offset = 0;
    for (std::size_t i = 0; i < carried; ++i) {
      c->carry.add(c->staging.get() + offset, body.outputs[i], body.output_bytes[i]);
      c->unstage.add(body.inputs[i], c->staging.get() + offset, body.output_bytes[i]);
      offset += align_up(body.output_bytes[i]);
    }
  } else {
    for (std::size_t i = 0; i < carried; ++i)
      c->carry.add(body.inputs[i], body.outputs[i], body.output_bytes[i]);
  }
  WorkerPool* pool = &ctx.pool;
  return [c = std::shared_ptr<const LoopCopies>(c), pool, &body](unsigned w, unsigned n) {
    c->call.in.run(w, n);
    pool->barrier();
    for (std::int64_t k = 0; k < c->count; ++k) {
      if (k > 0) {
        // Loop-carried values: iteration k-1's outputs are iteration k's first inputs.
        c->carry.run(w, n);
        pool->barrier();
        if (!c->unstage.empty()) {
          c->unstage.run(w, n);
          pool->barrier();
        }
      }
      run_plan(body, *pool, w, n);
    }
    c->call.out.run(w, n);
    c->call.back.run(w, n);
  };
}

} // namespace pxl::emu::detail
