// The emulator's kernel interface: how the planner turns one op into a step of the plan.
#pragma once

#include "pxl/ir/op.hpp"
#include "pxl/ir/op_kind.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace pxl::emu::detail {

/// An in-place update folded into the MatMul computing its operand (the planner's
/// fuse_matmul_updates): the MatMul writes keep·output + scale·product into its output.
struct FusedUpdate {
  double keep = 1.0, scale = 1.0;
};

/// Fixed addresses of an op's tensors, decided by the planner before anything runs. For an
/// in-place op, outputs[0] == inputs[0].
struct OpBuffers {
  std::vector<std::byte*> inputs;
  std::vector<std::byte*> outputs;
  /// Bit k: inputs[k] holds the op's input k transposed over its last two axes (the planner
  /// fused a Transpose into the op; only MatMul accepts this).
  std::uint32_t transposed_inputs = 0;
  /// For a MatMul with an in-place update of outputs[0] fused in.
  std::optional<FusedUpdate> update;
};

/// A compiled step: every worker calls it with its index; it does its share of the work
/// (split by output element, never by reduction index, so results do not depend on the
/// number of workers) and allocates nothing.
using StepFn = std::function<void(unsigned worker, unsigned num_workers)>;

/// Planner state that control kernels (call, repeat, host IO) need; opaque to compute kernels.
struct CompileContext;

/// Contiguous share [begin, end) of `n` items for `worker` of `num_workers`.
inline std::pair<std::int64_t, std::int64_t> worker_range(std::int64_t n, unsigned worker,
                                                          unsigned num_workers) {
  const std::int64_t per = n / num_workers, extra = n % num_workers;
  const std::int64_t w = worker;
  const std::int64_t begin = w * per + std::min(w, extra);
  return {begin, begin + per + (w < extra ? 1 : 0)};
}

// One compile function per op kind; a kind without one fails to link.
#define PXL_X(kind, name)                                                                          \
  StepFn compile_##kind(CompileContext& ctx, const Op& op, const OpBuffers& buffers);
PXL_OP_TABLE(PXL_X)
#undef PXL_X

using CompileFn = StepFn (*)(CompileContext&, const Op&, const OpBuffers&);

/// compile_<Kind> for each OpKind, indexed by the kind.
inline constexpr std::array<CompileFn, num_op_kinds> kernel_table = {
#define PXL_X(kind, name) &compile_##kind,
    PXL_OP_TABLE(PXL_X)
#undef PXL_X
};

} // namespace pxl::emu::detail
