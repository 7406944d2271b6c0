#include "replica.hpp"
#include "compile_context.hpp"
#include "instance_exchange.hpp"

#include "pxl/core/error.hpp"

#include <cstring>
#include <string>

namespace pxl::emu::detail {

Replica::Replica(const Program& program, const IrView& view, std::span<const StreamState> streams,
                 unsigned num_workers)
    : program_(program), graphs_(program.graphs.size()), ports_(streams.size()) {
  static_ = allocate_aligned(program.static_bytes);
  // Constants are set at compile time, as Poplar does; variables arrive with weights_from_host.
  for (const StaticTensor& s : program.statics)
    if (const HostTensor* data = view.data(s.tensor);
        data && data->nbytes() > 0 && view.kind(s.tensor) == TensorKind::constant)
      std::memcpy(static_.get() + s.offset, data->bytes().data(), data->nbytes());
  // Streaming Memory: every remote buffer, zero until written.
  for (std::uint32_t b = 0; b < view.num_remote_buffers(); ++b) {
    const RemoteBufferId id{b};
    const std::size_t entry = align_up(view.spec(id).nbytes());
    remote_.push_back(allocate_aligned(entry * static_cast<std::size_t>(view.entries(id))));
    remote_blocks_.push_back({remote_.back().get(), entry, view.entries(id)});
  }
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    ports_[i].position.resize(num_workers);
    if (!streams[i].host_to_device)
      ports_[i].last_element = HostTensor(streams[i].spec);
  }
  // Every arena before any step, so that a call step can address its callee's buffers.
  for (const auto& g : program.graphs)
    if (g) {
      for (std::size_t bytes : g->arena_bytes)
        graphs_[g->graph.value].arenas.push_back(allocate_aligned(bytes));
      graphs_[g->graph.value].steps.reserve(g->steps.size());
    }
}

std::vector<std::unique_ptr<Replica>>
make_replicas(const Program& program, const IrView& view, std::span<StreamState> streams,
              unsigned num_workers, std::size_t count, RunErrors* errors,
              InstanceExchange* exchange, std::optional<std::uint64_t> stochastic_rounding) {
  std::vector<std::unique_ptr<Replica>> replicas;
  std::vector<CompileContext> contexts;
  for (std::size_t r = 0; r < count; ++r) {
    replicas.push_back(std::make_unique<Replica>(program, view, streams, num_workers));
    contexts.push_back(
        {num_workers, streams, replicas.back()->ports(), replicas.back()->remote(), errors});
  }
  // The step's buffers in every replica, reused from step to step: a collective's kernel
  // addresses its peers' buffers too.
  std::vector<OpBuffers> buffers(count);
  const std::int64_t offset = exchange ? exchange->offset() : 0;
  for (std::size_t r = 0; r < count; ++r) {
    contexts[r].replica = offset + static_cast<std::int64_t>(r);
    contexts[r].peers = buffers;
    contexts[r].total_replicas =
        exchange ? exchange->total_replicas() : static_cast<std::int64_t>(count);
    contexts[r].replica_offset = offset;
    contexts[r].exchange = exchange;
    contexts[r].stochastic_rounding = stochastic_rounding;
  }
  for (const auto& g : program.graphs)
    if (g)
      for (std::size_t i = 0; i < g->steps.size(); ++i) {
        for (std::size_t r = 0; r < count; ++r)
          replicas[r]->resolve_step(*g, i, buffers[r]);
        for (std::size_t r = 0; r < count; ++r)
          replicas[r]->bind_step(*g, i, view, contexts[r], buffers[r]);
      }
  return replicas;
}

std::byte* Replica::address(TensorId t) const {
  if (const StaticTensor* s = program_.find_static(t))
    return static_.get() + s->offset;
  if (const RemoteVariable* r = program_.find_remote(t)) {
    const RemoteBlock& b = remote_blocks_[r->buffer.value];
    return b.base + static_cast<std::size_t>(r->entry) * b.entry_bytes;
  }
  return nullptr;
}

std::byte* Replica::resolve(const GraphProgram& g, const Slot& s) const {
  if (s.is_static)
    return static_.get() + s.offset;
  // An input or output living in the caller's buffer. No other value of the graph shares an
  // input's place (inputs live throughout); one sharing an output's place and size lives and
  // dies before the output is written, while the call runs, when the caller's result buffer
  // is free too (the caller's values placed over it are dead by then, or not yet born).
  for (const SharedSlot& shared : g.shared)
    if (shared.slot == s)
      return resolve(*g.caller, shared.caller_slot);
  return graphs_[g.graph.value].arenas[static_cast<std::size_t>(s.ipu)].get() + s.offset;
}

void Replica::resolve_step(const GraphProgram& g, std::size_t i, OpBuffers& buffers) const {
  const ProgramStep& step = g.steps[i];
  buffers.inputs.clear();
  buffers.outputs.clear();
  for (const Slot& s : step.inputs)
    buffers.inputs.push_back(resolve(g, s));
  for (const Slot& s : step.outputs)
    buffers.outputs.push_back(resolve(g, s));
}

void Replica::bind_step(const GraphProgram& g, std::size_t i, const IrView& view,
                        CompileContext& ctx, const OpBuffers& buffers) {
  const ProgramStep& step = g.steps[i];
  auto& steps = graphs_[g.graph.value].steps;
  PXL_ASSERT(steps.size() == i);
  BoundStep bound;
  ctx.before_step = nullptr;
  switch (step.info.kind) {
  case StepKind::copy: {
    auto copy = std::make_shared<CopyList>();
    copy->add(buffers.outputs[0], buffers.inputs[0], step.inputs[0].bytes);
    bound.run = [copy](unsigned w, unsigned n) { copy->run(w, n); };
    break;
  }
  case StepKind::call:
  case StepKind::repeat:
    bound.call = bind_call(g, step, view);
    break;
  case StepKind::conditional: {
    auto b = std::make_unique<BranchCopies>();
    b->condition = buffers.inputs[0];
    bind_copies(b->then_copies, g, step, *step.callee, 1, view);
    bind_copies(b->else_copies, g, step, *step.else_callee, 1 + step.callee->inputs.size(), view);
    bound.branches = std::move(b);
    break;
  }
  case StepKind::fused_matmul:
    bound.run = compile_fused_matmul(ctx, KernelOp(view, *step.info.op), step.fusion, buffers);
    break;
  case StepKind::fused_conv:
    bound.run = compile_fused_conv(ctx, KernelOp(view, *step.info.op), step.fusion, buffers);
    break;
  case StepKind::fused_all_reduce:
    bound.run =
        compile_fused_all_reduce(ctx, KernelOp(view, *step.info.op), *step.fusion.update, buffers);
    break;
  case StepKind::kernel: {
    const CompileFn compile = kernel_table[static_cast<std::size_t>(step.info.op_kind)];
    PXL_ASSERT(compile != nullptr);
    bound.run = compile(ctx, KernelOp(view, *step.info.op), buffers);
    break;
  }
  }
  bound.before = std::move(ctx.before_step);
  steps.push_back(std::move(bound));
}

void Replica::bind_copies(CallCopies& c, const GraphProgram& g, const ProgramStep& step,
                          const GraphProgram& callee, std::size_t first_input,
                          const IrView& view) const {
  for (std::size_t i = 0; i < callee.inputs.size(); ++i) {
    std::byte* arg = resolve(g, step.inputs[first_input + i]);
    std::byte* param = resolve(callee, callee.inputs[i]);
    c.in.add(param, arg, callee.inputs[i].bytes);
    if (view.input_is_by_ref(callee.graph, i))
      c.back.add(arg, param, callee.inputs[i].bytes);
  }
  // A differentiated callee may return activations the step does not take.
  for (std::size_t i = 0; i < step.outputs.size(); ++i)
    c.out.add(resolve(g, step.outputs[i]), resolve(callee, callee.outputs[i]),
              callee.outputs[i].bytes);
}

namespace {
bool overlaps(const std::byte* a, std::size_t na, const std::byte* b, std::size_t nb) {
  return a < b + nb && b < a + na;
}
} // namespace

std::unique_ptr<const CallCopies> Replica::bind_call(const GraphProgram& g, const ProgramStep& step,
                                                     const IrView& view) const {
  const GraphProgram& callee = *step.callee;
  auto c = std::make_unique<CallCopies>();
  bind_copies(*c, g, step, callee, 0, view);
  if (step.info.kind != StepKind::repeat)
    return c;
  std::vector<std::byte*> callee_in, callee_out;
  for (const Slot& s : callee.inputs)
    callee_in.push_back(resolve(callee, s));
  for (const Slot& s : callee.outputs)
    callee_out.push_back(resolve(callee, s));
  // Loop-carried values: iteration k-1's outputs are iteration k's first inputs (the loop's
  // outputs only: a differentiated body also returns activations, which are not carried). An
  // output may be an input itself (or alias one in place); copying in sequence could then read
  // a value already overwritten, so such loops go through a staging buffer.
  const std::size_t carried = step.outputs.size();
  bool staged = false;
  for (std::size_t i = 0; i < carried; ++i)
    for (std::size_t j = 0; j < carried; ++j)
      if (i != j &&
          overlaps(callee_out[i], callee.outputs[i].bytes, callee_in[j], callee.inputs[j].bytes))
        staged = true;
  if (!staged) {
    for (std::size_t i = 0; i < carried; ++i)
      c->carry.add(callee_in[i], callee_out[i], callee.outputs[i].bytes);
    return c;
  }
  std::size_t total = 0;
  for (std::size_t i = 0; i < carried; ++i)
    total += align_up(callee.outputs[i].bytes);
  c->staging = allocate_aligned(total);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < carried; ++i) {
    c->carry.add(c->staging.get() + offset, callee_out[i], callee.outputs[i].bytes);
    c->unstage.add(callee_in[i], c->staging.get() + offset, callee.outputs[i].bytes);
    offset += align_up(callee.outputs[i].bytes);
  }
  return c;
}

} // namespace pxl::emu::detail
