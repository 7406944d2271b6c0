// Kernels of host_load and host_store (stream elements in and out of device buffers) and of
// print_tensor (a line on the host's standard output).
#include "../compile_context.hpp"
#include "../run_errors.hpp"
#include "common.hpp"

#include <cstring>
#include <iostream>
#include <mutex>

namespace pxl::emu::detail {

namespace {
void copy_share(std::byte* dst, const std::byte* src, std::size_t bytes, unsigned w, unsigned n) {
  const auto [b, e] = worker_range(static_cast<std::int64_t>(bytes), w, n);
  if (e > b)
    std::memcpy(dst + b, src + b, static_cast<std::size_t>(e - b));
}
} // namespace

StepFn compile_HostLoad(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const auto index = op.attrs_as<StreamAttrs>().stream;
  StreamState* s = &ctx.streams[index];
  StreamPort* port = &ctx.ports[index];
  std::byte* dst = buffers.outputs[0];
  RunErrors* errors = ctx.errors;
  return [s, port, dst, errors](unsigned w, unsigned n) {
    if (s->channel) {
      // One worker takes the element from the queue (blocking while it is empty). The run
      // stops after this step when the producer failed (the element is poisoned) or the
      // Session is being destroyed (the queue is closed).
      if (w != 0)
        return;
      SlotQueue& q = s->channel->queue();
      const HostTensor* slot = q.begin_pop();
      if (slot)
        std::memcpy(dst, slot->bytes().data(), s->bytes);
      if ((!slot || q.end_pop()) && errors)
        errors->stop();
      return;
    }
    // Element k mod num_host_transfers: a stream read more often wraps around.
    std::int64_t& pos = port->position[w].value;
    const std::byte* src =
        port->in_array + static_cast<std::size_t>(pos % s->transfers) * s->stride;
    ++pos;
    copy_share(dst, src, s->bytes, w, n);
  };
}

StepFn compile_HostStore(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const auto index = op.attrs_as<StreamAttrs>().stream;
  StreamState* s = &ctx.streams[index];
  StreamPort* port = &ctx.ports[index];
  const std::byte* src = buffers.inputs[0];
  RunErrors* errors = ctx.errors;
  return [s, port, src, errors](unsigned w, unsigned n) {
    if (s->channel) {
      // One worker hands the element over (blocking while the queue is full).
      if (w != 0)
        return;
      if (s->last) { // only the replica's last element is delivered, when the run ends
        std::memcpy(port->last_element.bytes().data(), src, s->bytes);
        port->has_last = true;
        return;
      }
      // The run stops after this step when the consumer has failed or the Session is being
      // destroyed (the queue is closed).
      SlotQueue& q = s->channel->queue();
      HostTensor* slot = q.begin_push();
      if (slot)
        std::memcpy(slot->bytes().data(), src, s->bytes);
      if ((!slot || q.end_push()) && errors)
        errors->stop();
      return;
    }
    std::int64_t& pos = port->position[w].value;
    std::byte* dst = port->out_array + static_cast<std::size_t>(pos % s->transfers) * s->stride;
    ++pos;
    copy_share(dst, src, s->bytes, w, n);
  };
}

StepFn compile_PrintTensor(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs<OpKind::PrintTensor>();
  const std::string title =
      ctx.total_replicas > 1 ? a.title + " (replica " + std::to_string(ctx.replica) + ")" : a.title;
  const TensorSpec spec = op.input(0).spec();
  const std::byte* x = buffers.inputs[0];
  const StepFn copy = copy_step(buffers.outputs[0], x, spec.nelms(), size_of(spec.dtype));
  return [=](unsigned w, unsigned n) {
    copy(w, n);
    if (w != 0)
      return;
    // One worker prints the whole tensor, one line at a time across replicas and sessions.
    HostTensor t(spec.shape, spec.dtype);
    std::memcpy(t.bytes().data(), x, t.bytes().size());
    static std::mutex out;
    const std::lock_guard lock(out);
    std::cout << title << ": " << t << std::endl;
  };
}

} // namespace pxl::emu::detail
