// pxl::emu::StepInfo and StepObserver: what each step of a compiled program is (and whether it
// may run beside other IPUs' steps), and a hook that sees every step a run executes.
#pragma once

#include "pxl/core/dtype.hpp"
#include "pxl/ir/op_kind.hpp"
#include "pxl/ir/view.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace pxl::emu {

/// How the emulator executes a step.
enum class StepKind : std::uint8_t {
  kernel,           ///< one op's kernel
  fused_matmul,     ///< a MatMul with transposes read in place and/or an in-place update folded in
  fused_all_reduce, ///< an all-reduce with the in-place update of its result folded in
  /// a Conv with its bias and/or ReLU applied as it writes each image, or a ConvWeightsGrad
  /// with the in-place update of its result folded in
  fused_conv,
  copy,        ///< a buffer copy the compiler added (inlined-call boundaries)
  call,        ///< an outlined call: arguments in, the callee's steps, results out
  repeat,      ///< a loop over an outlined body
  conditional, ///< each replica runs one of two outlined branches, as its condition says
};

/// A step of the AMP units (MatMul, Conv, ConvTranspose, ConvWeightsGrad) as the product of
/// three dims that PopLibs plans over the tiles: `groups` independent products (a matmul's
/// batch, a convolution's groups), each over `extent` (a matmul: m, n, k; a convolution: the
/// images' output positions N·H·W, the output-side channels per group, the input-side channels
/// per group × the kernel's taps). `elements[i]` is the tensor over the two dims other than i
/// (a matmul: B, A, the output), in elements: operands broadcast over the batch count once,
/// a convolution's input its own size. `contracted` is the dim summed over; the output is
/// `elements[contracted]`. `operands` is the operands' dtype (the AMP's rate),
/// `partials_bytes` the size of a partial sum (4, or 2 for a matmul's float16 partials), and
/// `available_memory_proportion` the share of a tile's memory the plan may give the operands'
/// blocks and the partials (ops::MatMulOptions).
struct AmpShape {
  std::int64_t groups = 1;
  std::array<std::int64_t, 3> extent{1, 1, 1};
  std::array<std::int64_t, 3> elements{1, 1, 1};
  int contracted = 2;
  DType operands = DType::float32;
  std::int64_t partials_bytes = 4;
  double available_memory_proportion = 0.6;
  friend bool operator==(const AmpShape&, const AmpShape&) = default;
};

/// A compiled step, fixed at compile time. Byte and flop counts are per replica.
struct StepInfo {
  StepKind kind = StepKind::kernel;
  /// The op the step executes (for a fused step, the op it was fused into: the MatMul, Conv or
  /// ConvWeightsGrad, placed at its update's or epilogue's position); none for a copy.
  std::optional<OpId> op;
  OpKind op_kind = OpKind::Identity; ///< meaningful when `op` is set
  GraphId graph;                     ///< the graph whose program holds the step
  std::int64_t ipu = 0;
  /// The IPUs whose memory the step touches: 2 for an IpuCopy between two IPUs, one per input
  /// for an AllReduce across IPUs, else 1.
  std::int64_t ipus = 1;
  std::int64_t bytes_read = 0;
  std::int64_t bytes_written = 0;
  /// Floating-point operations (a multiply-add counts two); element operations for
  /// non-arithmetic kernels; 0 for copies. For call, repeat and conditional: the arguments'
  /// copies only, the callee's steps are reported on their own.
  std::int64_t flops = 0;
  /// Element type of the step's first output (a matmul's operands share it).
  DType dtype = DType::float32;
  std::optional<GraphId> callee;      ///< call and repeat; a conditional's then-branch
  std::optional<GraphId> else_callee; ///< a conditional's else-branch
  std::int64_t trips = 1;             ///< repeat: iterations
  /// Call and repeat: the bytes of bytes_read passed without a copy, the callee's input
  /// aliasing the argument (a variable bound by reference at every call site, or PopXL's
  /// aliasZeroCopy where the caller's value may be shared).
  std::int64_t aliased_bytes = 0;
  /// Collectives between replicas: the replicas of the op's replica group (its ring), 0 for
  /// every replica that ran the step.
  std::int64_t group = 0;
  /// AMP steps (and fused ones): the product's shape, which the cost model plans over the
  /// tiles. A step without it is priced as a matrix-vector product.
  std::optional<AmpShape> amp;
  /// The tile set of its IPU the step runs on (its op's; the compute tiles for copies).
  TileSet tile_set = TileSet::compute;
  /// The step touches tensors of both tile sets of its IPU (an io_tile_copy, or an op reading
  /// a tensor of the other set through the copy PopART inserts): it waits for both.
  bool spans_tile_sets = false;
  /// A host or Streaming Memory transfer that continues the step before it in one
  /// merge_exchange scope (IrView::exchange_group): one exchange, whose sync the first pays.
  bool merged_exchange = false;
};

/// Whether a step touches the memory of its own IPU (StepInfo::ipu) in its own replica only:
/// a kernel, a fused matmul or conv, or a compiler's copy. Steps of different IPUs that are all
/// IPU-local are independent (an op reads and writes only tensors of its IPU), so the emulator
/// runs consecutive ones of different IPUs at the same time and the profiler lets them overlap.
/// Not IPU-local: an IpuCopy (two IPUs), a collective (other replicas), a host transfer or
/// print (a stream's order, the host's output), a remote load or store (Streaming Memory), and
/// calls, loops and conditionals (their callee's steps, on any IPU).
constexpr bool is_ipu_local(const StepInfo& info) {
  switch (info.kind) {
  case StepKind::copy:
    return true;
  case StepKind::kernel:
  case StepKind::fused_matmul:
  case StepKind::fused_conv:
    break;
  case StepKind::fused_all_reduce:
  case StepKind::call:
  case StepKind::repeat:
  case StepKind::conditional:
    return false;
  }
  const OpFamily family = family_of(info.op_kind);
  return info.op_kind != OpKind::IpuCopy && family != OpFamily::collectives &&
         family != OpFamily::host_io && family != OpFamily::remote;
}

/// Host timing of one executed step: from the start of the step on every replica to the
/// completion of its last piece of work (for IPU-local steps run together with other IPUs',
/// the start and completion of the work they ran with).
struct StepTiming {
  std::chrono::steady_clock::time_point start, end;
  /// Calls, loops and branches enclosing the step (0 in the main graph).
  std::size_t depth = 0;
};

/// Sees every step a run executes, in program order (a callee's steps before the call step
/// that encloses them completes; a loop body's steps once per iteration; a conditional's
/// then-branch steps before its else-branch steps), also where IPU-local steps of different
/// IPUs ran at the same time (is_ipu_local). Called on one emulator worker at a time, while no
/// step runs, so an observer needs no locking of its own but should be quick; it must not call
/// back into the Session. Without an observer a run pays nothing for this.
class StepObserver {
public:
  virtual ~StepObserver() = default;
  /// `replicas` replicas executed the step together (inside a conditional's branch, those whose
  /// condition chose it; a step no replica executed is not reported). Called on whichever emulator
  /// worker completed the step, one step at a time, in program order. If it throws, the observer is
  /// not called again in that run, the run goes on to its end and then throws the exception.
  virtual void on_step(const StepInfo& info, const StepTiming& timing, std::int64_t replicas) = 0;
};

} // namespace pxl::emu
