// pxl::emu::estimate: the estimated IPU cycles of a compiled step, from its StepInfo and the
// Target, split as a BSP step is (compute, exchange, sync) plus host transfers.
#pragma once

#include "pxl/emu/step_observer.hpp"
#include "pxl/emu/target.hpp"

#include <cstdint>

namespace pxl::emu {

/// Estimated cycles of one execution of a step on one IPU. Deterministic: a function of the
/// step and the Target only, whatever the host's load or worker count.
struct StepCost {
  std::int64_t compute = 0;  ///< on-tile work
  std::int64_t exchange = 0; ///< moving data between tiles, or over IPU-Links
  std::int64_t sync = 0;     ///< BSP syncs
  std::int64_t host = 0;     ///< host transfers and round trips

  std::int64_t total() const { return compute + exchange + sync + host; }
  StepCost& operator+=(const StepCost& o) {
    compute += o.compute;
    exchange += o.exchange;
    sync += o.sync;
    host += o.host;
    return *this;
  }
  friend bool operator==(const StepCost&, const StepCost&) = default;
};

/// Smallest piece of a tensor the linear tile mapping puts on one tile (Poplar's default
/// mapping spreads a tensor over the tiles in pieces of at least this many bytes).
inline constexpr std::int64_t mapping_grain_bytes = 64;

/// No longer read: AMP steps are planned over the tiles from their shape (StepInfo::amp).
[[deprecated(
    "not used: the cost model plans AMP steps from StepInfo::amp")]] inline constexpr std::int64_t
    matmul_contraction_grain = 64;

/// Tiles a tensor of `bytes` spans under the linear mapping: one per grain, at most every tile.
std::int64_t tiles_spanned(std::int64_t bytes, const Target& target);

/// `target` as the steps and tensors of its tile set `s` see it: that set's tiles only
/// (Target::tiles_of) and no IO tiles of its own; `target` itself without IO tiles.
Target tile_set_target(const Target& target, TileSet s);

/// The cost of one execution of a step that `replicas` replicas ran together, on the tiles of
/// its tile set (StepInfo::tile_set: with Target::io_tiles, the IO tiles or the others):
/// - a matmul or convolution (the AMP units): PopLibs' plan of its product (StepInfo::amp)
///   over the tiles, the cheapest split of its groups and three dims: each tile receives its
///   blocks of the two operands at the exchange's rate, multiplies them at the AMP rate of its
///   dtype (float16 4× float32) plus a vertex's fixed cycles (Target::amp_vertex_cycles), and
///   where the contraction is split, exchanges and adds its float32 partials after a second
///   sync;
/// - reductions (OpCost::tree_reduce): PopLibs' multi-stage reduce, each tile reducing its
///   part of the input, then the partials exchanged and reduced in stages (a sync each) until
///   one value per output remains;
/// - other kernels: their element operations at the vector width of their dtype, barrel-
///   scheduled over the tile's workers, transcendental functions at 4 instructions per
///   vector; kernels that rearrange or combine elements (reductions, shape ops, nn ops)
///   exchange their inputs, element-wise ones work where their data is;
/// - an IpuCopy: its bytes over the IPU-Links between the two IPUs (ipu_copy_bytes_per_second),
///   or an exchange as a copy where both are one IPU;
/// - copies and the argument copies of calls, loops and conditionals (but the arguments
///   passed without a copy, StepInfo::aliased_bytes): an exchange;
/// - collectives: the ring's bytes over IPU-Links ((R−1)/R of the data each way for a
///   reduce-scatter or an all-gather, twice that for an all-reduce, R the replicas of the op's
///   group, StepInfo::group) and the reduction; an
///   all-reduce across the n IPUs of a replica: 2(n−1)/n of one IPU's tensor, every IPU's
///   link at once;
/// - host loads and stores: their bytes over the host link; remote loads and stores: theirs
///   at the Streaming Memory rate (as exchange);
/// - every step one BSP sync, but the transfers that continue a merged exchange
///   (StepInfo::merged_exchange: transforms::merge_exchange) share their first one's.
/// Control steps (call, repeat, conditional) cost only their own copies: the steps they run
/// are estimated on their own.
StepCost estimate(const StepInfo& info, const Target& target, std::int64_t replicas = 1);

/// Whether the step moves data between tiles (an exchange phase): copies and calls that copy
/// something, and kernels other than element-wise ones, which work where their data is.
bool exchanges_between_tiles(const StepInfo& info);

/// Tiles a step works on: those its largest tensor spans (at least one).
std::int64_t step_tiles(const StepInfo& info, const Target& target);

/// Cycles of the host round trip paid once per Session::run.
std::int64_t round_trip_cycles(const Target& target);

} // namespace pxl::emu
