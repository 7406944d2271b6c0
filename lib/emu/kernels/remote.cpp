// Kernels of the Streaming Memory ops: a copy between a tensor and an entry of one of the
// replica's remote buffers. A runtime offset is read by every chunk (the same value: it
// does not change within the step); one out of range is recorded as the run's error, nothing
// is copied, and the run stops after the step (RunErrors).
#include "../compile_context.hpp"
#include "../run_errors.hpp"
#include "common.hpp"

#include <cstring>
#include <string>

namespace pxl::emu::detail {

namespace {

/// Copies between `tensor` and the entry (direction `to_remote`), split in chunks by byte.
StepFn remote_copy(const CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers,
                   std::byte* tensor, bool to_remote) {
  const auto& a = op.attrs_as<RemoteAttrs>();
  PXL_ASSERT(a.buffer < ctx.remote.size());
  const RemoteBlock block = ctx.remote[a.buffer];
  const std::size_t bytes = (to_remote ? op.input(0) : op.output(0)).spec().nbytes();
  const auto* offset =
      a.runtime_offset ? reinterpret_cast<const std::int32_t*>(buffers.inputs.back()) : nullptr;
  RunErrors* errors = ctx.errors;
  const std::int64_t fixed = a.offset, replica = ctx.replica;
  return [=](unsigned w, unsigned nw) {
    const std::int64_t entry = offset ? *offset : fixed;
    if (entry < 0 || entry >= block.entries) {
      if (w == 0 && errors)
        errors->record("offset " + std::to_string(entry) + " (replica " + std::to_string(replica) +
                       ") is out of range for its remote buffer of " +
                       std::to_string(block.entries) + " entries; nothing was " +
                       (to_remote ? "stored" : "loaded"));
      return;
    }
    std::byte* remote = block.base + static_cast<std::size_t>(entry) * block.entry_bytes;
    const auto [b, e] = worker_range(static_cast<std::int64_t>(bytes), w, nw);
    const auto n = static_cast<std::size_t>(e - b);
    if (to_remote)
      std::memcpy(remote + b, tensor + b, n);
    else
      std::memcpy(tensor + b, remote + b, n);
  };
}

} // namespace

StepFn compile_RemoteLoad(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return remote_copy(ctx, op, buffers, buffers.outputs[0], false);
}

/// The same copy: the tensor loaded into is the op's output 0 (its input 0, in place).
StepFn compile_RemoteLoadInplace(CompileContext& ctx, const KernelOp& op,
                                 const OpBuffers& buffers) {
  return compile_RemoteLoad(ctx, op, buffers);
}

StepFn compile_RemoteStore(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return remote_copy(ctx, op, buffers, buffers.inputs[0], true);
}

// A graph's code is not data the emulator holds: loading it computes nothing.
StepFn compile_RemoteCodeLoad(CompileContext&, const KernelOp&, const OpBuffers&) {
  return [](unsigned, unsigned) {};
}

} // namespace pxl::emu::detail
