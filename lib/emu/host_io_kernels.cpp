// Kernels of host_load and host_store: stream elements in and out of device buffers.
#include "compile_context.hpp"

#include <cstring>

namespace pxl::emu::detail {

namespace {
void copy_share(std::byte* dst, const std::byte* src, std::size_t bytes, unsigned w, unsigned n) {
  const auto [b, e] = worker_range(static_cast<std::int64_t>(bytes), w, n);
  if (e > b)
    std::memcpy(dst + b, src + b, static_cast<std::size_t>(e - b));
}
} // namespace

StepFn compile_HostLoad(CompileContext& ctx, const Op& op, const OpBuffers& buffers) {
  StreamState* s = &ctx.streams[op.attrs_as<StreamAttrs>().stream];
  std::byte* dst = buffers.outputs[0];
  return [s, dst](unsigned w, unsigned n) {
    if (s->channel) {
      // One worker takes the element from the queue (blocking while it is empty).
      if (w != 0)
        return;
      SlotQueue& q = s->channel->queue();
      if (const HostTensor* slot = q.begin_pop()) {
        std::memcpy(dst, slot->bytes().data(), s->bytes);
        q.end_pop();
      }
      return;
    }
    // Element k mod num_host_transfers: a stream read more often wraps around.
    std::int64_t& pos = s->position[w].value;
    const std::byte* src = s->in_array + static_cast<std::size_t>(pos % s->transfers) * s->stride;
    ++pos;
    copy_share(dst, src, s->bytes, w, n);
  };
}

StepFn compile_HostStore(CompileContext& ctx, const Op& op, const OpBuffers& buffers) {
  StreamState* s = &ctx.streams[op.attrs_as<StreamAttrs>().stream];
  const std::byte* src = buffers.inputs[0];
  return [s, src](unsigned w, unsigned n) {
    if (s->channel) {
      // One worker hands the element over (blocking while the queue is full).
      if (w != 0)
        return;
      if (s->last) { // only the replica's last element is delivered, when its run ends
        std::memcpy(s->last_element.bytes().data(), src, s->bytes);
        s->has_last = true;
        return;
      }
      SlotQueue& q = s->channel->queue();
      if (HostTensor* slot = q.begin_push()) {
        std::memcpy(slot->bytes().data(), src, s->bytes);
        q.end_push();
      }
      return;
    }
    std::int64_t& pos = s->position[w].value;
    std::byte* dst = s->out_array + static_cast<std::size_t>(pos % s->transfers) * s->stride;
    ++pos;
    copy_share(dst, src, s->bytes, w, n);
  };
}

} // namespace pxl::emu::detail
