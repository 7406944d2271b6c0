// The emulator's kernel interface: how one op becomes a step bound to a replica's buffers.
#pragma once

#include "kernel_op.hpp"

#include "pxl/ir/op_kind.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace pxl::emu::detail {

/// Fixed addresses of an op's tensors in one replica's memory, decided before anything runs.
/// For an in-place op, outputs[0] == inputs[0].
struct OpBuffers {
  std::vector<std::byte*> inputs;
  std::vector<std::byte*> outputs;
};

/// A compiled step: the Executor calls it once for each of `num_workers` chunks (any count up
/// to CompileContext::num_workers, each on whichever worker claims it); it does that chunk's
/// share of the work (split by output element, never by reduction index, so results do not
/// depend on the split) and allocates nothing.
using StepFn = std::function<void(unsigned worker, unsigned num_workers)>;

/// What a kernel may need beyond its op and buffers (host IO: the replica's stream ports;
/// scratch: the number of workers). Opaque to most kernels.
struct CompileContext;

/// Contiguous share [begin, end) of `n` items for `worker` of `num_workers`.
inline std::pair<std::int64_t, std::int64_t> worker_range(std::int64_t n, unsigned worker,
                                                          unsigned num_workers) {
  const std::int64_t per = n / num_workers, extra = n % num_workers;
  const std::int64_t w = worker;
  const std::int64_t begin = w * per + std::min(w, extra);
  return {begin, begin + per + (w < extra ? 1 : 0)};
}

/// Control ops run a callee's steps; the Executor steps those itself (in lockstep over the
/// replicas), so control ops have argument copies instead of a kernel.
constexpr bool is_control(OpKind k) { return family_of(k) == OpFamily::call; }

// One compile function per op kind with a kernel; a kind without one fails to link.
#define PXL_X(kind, ...)                                                                           \
  StepFn compile_##kind(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers);
PXL_OP_TABLE(PXL_X)
#undef PXL_X

/// Defines compile_<kind> as `other`'s kernel: an in-place form run on the aliased buffer, or
/// a view held as a copy (op_flags::View).
#define PXL_KERNEL_AS(kind, other)                                                                 \
  StepFn compile_##kind(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {       \
    return compile_##other(ctx, op, buffers);                                                      \
  }

using CompileFn = StepFn (*)(CompileContext&, const KernelOp&, const OpBuffers&);

namespace kernel_table_detail {
/// compile_<K>, named inside a generic lambda so that control kinds never odr-use theirs.
template <OpKind K, typename Named>
constexpr CompileFn entry(Named named) {
  if constexpr (is_control(K))
    return nullptr;
  else
    return named(0);
}
} // namespace kernel_table_detail

/// compile_<Kind> for each OpKind, indexed by the kind; null for control kinds.
inline constexpr std::array<CompileFn, num_op_kinds> kernel_table = {
#define PXL_X(kind, ...)                                                                           \
  kernel_table_detail::entry<OpKind::kind>([](auto) { return &compile_##kind; }),
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};

/// What the compiler fused into a step (fusion.hpp): into a MatMul
/// (StepKind::fused_matmul), a Conv or ConvWeightsGrad (StepKind::fused_conv) or an all-reduce
/// (StepKind::fused_all_reduce).
struct StepFusion {
  /// MatMul: bit k, input k arrives transposed over its last two axes (a Transpose read in
  /// place).
  std::uint32_t transposed_inputs = 0;
  /// An in-place update of outputs[0] by the product (a MatMul's or ConvWeightsGrad's) or the
  /// reduced tensor folded in: the output becomes keep·output + scale·product.
  struct Update {
    double keep = 1.0, scale = 1.0;
    /// Whether the product is also scaled by the step's third input, a float32 scalar read
    /// when the step runs (a learning rate held in a tensor).
    bool scaled_by_input = false;
  };
  std::optional<Update> update;
  /// Conv and MatMul: a bias added as the result is written (the step's third input: C_out
  /// values per channel of a Conv's images, N per column of a MatMul's rows), then ReLU when
  /// `relu`; either or both.
  bool bias = false, relu = false;

  bool any() const { return transposed_inputs != 0 || update.has_value() || bias || relu; }
};

/// The fused-matmul step's kernel (kernels/matmul.cpp); compile_MatMul is it with no fusion.
StepFn compile_fused_matmul(CompileContext& ctx, const KernelOp& op, const StepFusion& fusion,
                            const OpBuffers& buffers);
/// The fused-conv step's kernel (kernels/conv.cpp): a Conv with its epilogue (buffers: x, w and
/// the bias when fusion.bias; the result), or a ConvWeightsGrad with its update (buffers: dy, x
/// and the scalar when scaled_by_input; the updated tensor, read and written). Results are
/// bitwise those of the unfused steps.
StepFn compile_fused_conv(CompileContext& ctx, const KernelOp& op, const StepFusion& fusion,
                          const OpBuffers& buffers);
/// The fused all-reduce step's kernel (kernels/collectives.cpp): buffers are the all-reduce's
/// input and the updated tensor (inputs), the updated tensor (output); the update is
/// output = keep·output + scale·all_reduce(input).
StepFn compile_fused_all_reduce(CompileContext& ctx, const KernelOp& op,
                                const StepFusion::Update& update, const OpBuffers& buffers);

} // namespace pxl::emu::detail
