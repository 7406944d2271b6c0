// The cost model: a closed-form estimate of each step's IPU cycles (see cost_model.hpp).
#include "pxl/emu/cost_model.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>
#include <vector>

namespace pxl::emu {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 0 ? a : (a + b - 1) / b; }

/// Cycles for `seconds` of transfer at `hz`, at least one when anything moves.
std::int64_t cycles_of(double seconds, double hz) {
  return seconds <= 0 ? 0 : std::max<std::int64_t>(1, std::llround(std::ceil(seconds * hz)));
}

/// Vector instructions per element of an op priced by its element count.
std::int64_t instructions_per_vector(OpCost c) {
  return c == OpCost::local_series || c == OpCost::exchanged_series ||
                 c == OpCost::tree_reduce_series
             ? 4
             : 1;
}

/// Whether a kernel reads its inputs where its output is mapped: element-wise work and
/// updates of a tensor by one of the same shape (and reshapes, which keep the linear mapping).
bool works_in_place(OpCost c) { return c == OpCost::local || c == OpCost::local_series; }

/// Exchange cycles for `bytes` spread over the tiles they span.
std::int64_t exchange_cycles(std::int64_t bytes, const Target& t) {
  if (bytes <= 0)
    return 0;
  return ceil_div(bytes, t.exchange_bytes_per_cycle * tiles_spanned(bytes, t));
}

/// Element operations `ops` at the vector width of `dtype`, over `tiles`, barrel-scheduled:
/// each worker of a tile issues its share of the instructions, one every `workers` cycles.
std::int64_t vector_cycles(std::int64_t ops, DType dtype, std::int64_t tiles, const Target& t,
                           std::int64_t per_vector) {
  if (ops <= 0)
    return 0;
  const std::int64_t width =
      std::max<std::int64_t>(1, t.vector_bytes / static_cast<std::int64_t>(size_of(dtype)));
  const std::int64_t per_tile = ceil_div(ops, tiles);
  const std::int64_t workers = std::max<std::int64_t>(1, t.workers_per_tile);
  const std::int64_t per_worker = ceil_div(ceil_div(per_tile, width) * per_vector, workers);
  return per_worker * workers;
}

/// PopLibs' multi-stage reduction (popops::reduce's plan) of `elems` values of `elem_bytes`
/// each to `out` results: each stage reduces, on every tile the values span, the values of one
/// result it holds (at most the tile's share, at most all of a result's), sends the partials
/// (float32) to the next stage's tiles and syncs, until one value per result remains. The
/// first stage's values are where they were computed; its element operations are at
/// `per_vector` instructions per vector of `dtype`, the later stages' at 1 per float32 vector.
StepCost reduce_in_stages(std::int64_t elems, std::int64_t out, std::int64_t elem_bytes,
                          DType dtype, std::int64_t per_vector, const Target& t) {
  StepCost c;
  out = std::max<std::int64_t>(1, out);
  bool first = true;
  while (elems > out) {
    const std::int64_t tiles = tiles_spanned(elems * elem_bytes, t);
    const std::int64_t fan_in =
        std::max<std::int64_t>(2, std::min(ceil_div(elems, out), ceil_div(elems, tiles)));
    c.compute +=
        vector_cycles(elems, first ? dtype : DType::float32, tiles, t, first ? per_vector : 1);
    if (!first) // the step's own sync is the first stage's
      c.sync += t.sync_cycles;
    elems = std::max(out, ceil_div(elems, fan_in));
    c.exchange += exchange_cycles(elems * 4, t);
    elem_bytes = 4;
    first = false;
  }
  return c;
}

/// A plan of an AMP product over the tiles, and the bytes it needs on a tile.
struct AmpPlan {
  StepCost cost;
  std::int64_t bytes = std::numeric_limits<std::int64_t>::max();
};

/// The cheapest parallel plan of an AMP product over the tiles, as PopLibs' planner chooses one
/// (poplin plans matmuls as convolutions): the groups and the three dims split (at most the
/// tiles in all); each tile receives its blocks of the two operands, multiplies them on its
/// AMP unit (Target::amp_vertex_cycles beside the MACs at the AMP's rate) and, where the
/// contracted dim is split, exchanges its partials with the tiles that share its output block
/// and adds them in a second compute phase, after a second sync. A tile holds its operand
/// blocks and its partials: within `budget` bytes the fastest plan wins, and when no plan fits,
/// the smallest.
AmpPlan parallel_amp_plan(const AmpShape& a, std::int64_t macs, std::int64_t budget,
                          const Target& t) {
  const DType dtype = a.operands;
  const std::int64_t tiles = std::max<std::int64_t>(1, t.tiles_per_ipu);
  const DType partials = a.partials_bytes == 2 ? DType::float16 : DType::float32;
  const std::int64_t rate =
      dtype == DType::float16 ? t.fp16_macs_per_tile_cycle : t.fp32_macs_per_tile_cycle;
  const auto elem = static_cast<std::int64_t>(size_of(dtype));
  const std::int64_t bytes_per_cycle = std::max<std::int64_t>(1, t.exchange_bytes_per_cycle);
  // A dim's splits: powers of two, and the most that fits, so that the tiles a power of two
  // leaves over are used too (1,472 = 1,024 + 448).
  const auto splits = [&](std::int64_t extent, std::int64_t at_most) {
    const std::int64_t most = std::max<std::int64_t>(1, std::min(extent, at_most));
    std::vector<std::int64_t> r;
    for (std::int64_t s = 1; s < most; s *= 2)
      r.push_back(s);
    r.push_back(most);
    return r;
  };
  AmpPlan best;
  const int c = std::clamp(a.contracted, 0, 2);
  for (const std::int64_t sg : splits(a.groups, tiles))
    for (const std::int64_t s0 : splits(a.extent[0], tiles / sg))
      for (const std::int64_t s1 : splits(a.extent[1], tiles / (sg * s0)))
        for (const std::int64_t s2 : splits(a.extent[2], tiles / (sg * s0 * s1))) {
          const std::array<std::int64_t, 3> s{s0, s1, s2};
          // The tile's share of the tensor over the dims other than i.
          const auto share = [&](int i) {
            std::int64_t parts = sg;
            for (int j = 0; j < 3; ++j)
              if (j != i)
                parts *= s[static_cast<std::size_t>(j)];
            return ceil_div(a.elements[static_cast<std::size_t>(i)], parts);
          };
          StepCost cost;
          cost.sync = t.sync_cycles;
          cost.compute = ceil_div(ceil_div(macs, sg * s0 * s1 * s2), rate) + t.amp_vertex_cycles;
          std::int64_t bytes = share(c) * a.partials_bytes;
          for (int i = 0; i < 3; ++i)
            if (i != c) {
              cost.exchange += ceil_div(share(i) * elem, bytes_per_cycle);
              bytes += share(i) * elem;
            }
          if (const std::int64_t ways = s[static_cast<std::size_t>(c)]; ways > 1) {
            const std::int64_t sent = ceil_div(share(c) * (ways - 1), ways);
            cost.exchange += ceil_div(sent * a.partials_bytes, bytes_per_cycle);
            cost.compute += vector_cycles(sent, partials, 1, t, 1);
            cost.sync += t.sync_cycles;
          }
          const bool fits = bytes <= budget, best_fits = best.bytes <= budget;
          const bool faster = cost.total() < best.cost.total();
          if (fits ? !best_fits || faster
                   : !best_fits && (bytes < best.bytes || (bytes == best.bytes && faster)))
            best = {cost, bytes};
        }
  return best;
}

/// The plan of an AMP product within the available memory proportion of a tile: the fastest
/// parallel plan that fits; if none does, the product's output-side dim (a matmul's columns, a
/// convolution's output channels) split serially into the fewest passes of a fitting plan,
/// one after the other, as PopLibs' serial splits (their operands exchanged again each pass).
/// A product that fits in no number of passes takes its smallest plan.
StepCost search_amp_plan(const AmpShape& a, std::int64_t macs, const Target& t) {
  const auto budget = static_cast<std::int64_t>(a.available_memory_proportion *
                                                static_cast<double>(t.bytes_per_tile));
  AmpPlan plan = parallel_amp_plan(a, macs, budget, t);
  for (std::int64_t passes = 2; plan.bytes > budget && passes <= a.extent[1]; passes *= 2) {
    AmpShape part = a;
    part.extent[1] = ceil_div(a.extent[1], passes);
    for (const int i : {0, 2}) // the tensors over dim 1
      part.elements[static_cast<std::size_t>(i)] =
          ceil_div(a.elements[static_cast<std::size_t>(i)], passes);
    const AmpPlan pass = parallel_amp_plan(part, ceil_div(macs, passes), budget, t);
    if (pass.bytes < plan.bytes) {
      plan.bytes = pass.bytes;
      plan.cost = StepCost{.compute = pass.cost.compute * passes,
                           .exchange = pass.cost.exchange * passes,
                           .sync = pass.cost.sync * passes};
    }
  }
  return plan.cost;
}

/// search_amp_plan, remembered per thread: a profiled run prices every step it executes, and
/// a program has few distinct products. The key is everything the search reads.
StepCost amp_plan(const AmpShape& a, std::int64_t macs, const Target& t) {
  using Key = std::array<std::int64_t, 20>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = 0;
      for (const std::int64_t v : k)
        h = h * 1000003u ^ std::hash<std::int64_t>{}(v);
      return h;
    }
  };
  thread_local std::unordered_map<Key, StepCost, KeyHash> plans;
  const Key key{a.groups,
                a.extent[0],
                a.extent[1],
                a.extent[2],
                a.elements[0],
                a.elements[1],
                a.elements[2],
                a.contracted,
                macs,
                static_cast<std::int64_t>(a.operands),
                a.partials_bytes,
                std::bit_cast<std::int64_t>(a.available_memory_proportion),
                t.bytes_per_tile,
                t.tiles_per_ipu,
                a.operands == DType::float16 ? t.fp16_macs_per_tile_cycle
                                             : t.fp32_macs_per_tile_cycle,
                t.exchange_bytes_per_cycle,
                t.sync_cycles,
                t.amp_vertex_cycles,
                t.workers_per_tile,
                t.vector_bytes};
  if (const auto it = plans.find(key); it != plans.end())
    return it->second;
  if (plans.size() >= 4096) // many programs in one process: start afresh
    plans.clear();
  return plans.emplace(key, search_amp_plan(a, macs, t)).first->second;
}

/// Ring bytes one replica sends for a collective over `replicas` replicas.
std::int64_t ring_bytes(OpCost c, std::int64_t bytes, std::int64_t replicas) {
  if (replicas <= 1 || c == OpCost::replica_slice) // a slice reads the replica's own part
    return 0;
  const std::int64_t one_way = ceil_div(bytes * (replicas - 1), replicas);
  return c == OpCost::ring_all_reduce ? 2 * one_way : one_way;
}

} // namespace

std::int64_t tiles_spanned(std::int64_t bytes, const Target& target) {
  return std::clamp<std::int64_t>(ceil_div(bytes, mapping_grain_bytes), 1,
                                  std::max<std::int64_t>(1, target.tiles_per_ipu));
}

bool exchanges_between_tiles(const StepInfo& info) {
  switch (info.kind) {
  case StepKind::copy:
    return true;
  case StepKind::call:
  case StepKind::repeat:
  case StepKind::conditional:
    return info.bytes_read - info.aliased_bytes + info.bytes_written > 0;
  case StepKind::kernel:
  case StepKind::fused_matmul:
  case StepKind::fused_conv:
  case StepKind::fused_all_reduce:
    break;
  }
  return !works_in_place(cost_of(info.op_kind));
}

std::int64_t step_tiles(const StepInfo& info, const Target& target) {
  return tiles_spanned(std::max(info.bytes_read, info.bytes_written), target);
}

std::int64_t round_trip_cycles(const Target& target) {
  return cycles_of(target.host_round_trip_seconds, target.clock_hz);
}

Target tile_set_target(const Target& target, TileSet s) {
  Target on = target;
  if (target.io_tiles > 0) {
    on.tiles_per_ipu = std::max<std::int64_t>(1, target.tiles_of(s));
    on.io_tiles = 0;
  }
  return on;
}

StepCost estimate(const StepInfo& info, const Target& t, std::int64_t replicas) {
  if (t.io_tiles > 0)
    return estimate(info, tile_set_target(t, info.tile_set), replicas);
  StepCost c;
  c.sync = t.sync_cycles;
  switch (info.kind) {
  case StepKind::copy:
  case StepKind::call:
  case StepKind::repeat:
  case StepKind::conditional:
    c.exchange = exchange_cycles(info.bytes_read - info.aliased_bytes + info.bytes_written, t);
    if (c.exchange == 0)
      c.sync = 0; // a call without argument copies is only a jump
    return c;
  case StepKind::fused_matmul:
  case StepKind::fused_conv:
  case StepKind::kernel:
  case StepKind::fused_all_reduce:
    break;
  }
  const OpCost cost = cost_of(info.op_kind);
  const std::int64_t tiles = tiles_spanned(info.bytes_written, t);
  const auto at_rate = [&](std::int64_t bytes, double bytes_per_second) {
    return cycles_of(static_cast<double>(bytes) / bytes_per_second, t.clock_hz);
  };
  switch (cost) {
  case OpCost::host_load:
  case OpCost::host_store:
    c.host = at_rate(cost == OpCost::host_load ? info.bytes_written : info.bytes_read,
                     t.host_link_bytes_per_second);
    if (info.merged_exchange)
      c.sync = 0; // the merged exchange's first transfer synchronised for it
    return c;
  case OpCost::remote_load: // off the chip: its bytes cross to the IPU at its own rate
  case OpCost::remote_store:
    c.exchange = at_rate(cost == OpCost::remote_load ? info.bytes_written : info.bytes_read,
                         t.streaming_memory_bytes_per_second);
    if (info.merged_exchange)
      c.sync = 0;
    return c;
  case OpCost::amp: {
    // PopLibs' plan over the tiles (amp_plan). A step without its product's shape is priced
    // as a matrix-vector product: its output's elements by its MACs per output.
    const std::int64_t out = std::max<std::int64_t>(
        1, info.bytes_written / static_cast<std::int64_t>(size_of(info.dtype)));
    const std::int64_t macs = info.flops / 2;
    const AmpShape shape = info.amp.value_or(AmpShape{
        .extent = {out, 1, std::max<std::int64_t>(1, macs / out)},
        .elements = {std::max<std::int64_t>(1, macs / out), std::max<std::int64_t>(1, macs), out},
        .operands = info.dtype});
    c = amp_plan(shape, macs, t);
    // The folded update, or a convolution's bias and ReLU: an element-wise pass over the output.
    if (info.kind == StepKind::fused_matmul || info.kind == StepKind::fused_conv)
      c.compute += vector_cycles(out, info.dtype, tiles, t, 1);
    return c;
  }
  case OpCost::ipu_link:
    // Between two IPUs over the links; within one (two pipeline stages sharing it), an
    // exchange on the chip as any copy.
    c.exchange = info.ipus > 1 ? at_rate(info.bytes_read, t.ipu_copy_bytes_per_second)
                               : exchange_cycles(info.bytes_read + info.bytes_written, t);
    return c;
  case OpCost::ipu_ring: {
    // A ring over the IPUs, every IPU sending 2(n - 1)/n of its tensor over its own link at
    // once; the reduction's element operations on the output's tiles.
    const std::int64_t n = std::max<std::int64_t>(1, info.ipus);
    c.exchange = at_rate(ring_bytes(OpCost::ring_all_reduce, info.bytes_read / n, n),
                         t.ipu_link_bytes_per_second);
    c.compute =
        vector_cycles(info.flops, info.dtype, tiles_spanned(info.bytes_written / n, t), t, 1);
    return c;
  }
  case OpCost::ring_all_reduce: // a fused all-reduce (and its folded update) too
  case OpCost::ring_one_way:
  case OpCost::replica_slice: {
    // The ring of the op's replica group, not of every replica.
    const std::int64_t ring = info.group > 0 ? std::min(info.group, replicas) : replicas;
    c.exchange = at_rate(ring_bytes(cost, std::max(info.bytes_read, info.bytes_written), ring),
                         t.ipu_link_bytes_per_second);
    c.compute = vector_cycles(info.flops, info.dtype, tiles, t, 1);
    return c;
  }
  case OpCost::tree_reduce:
  case OpCost::tree_reduce_series: {
    // The input's elements (flops) to the output's; without anything to reduce, a pass over
    // the output's tiles as the other exchanged kernels.
    const std::int64_t out = std::max<std::int64_t>(
        1, info.bytes_written / static_cast<std::int64_t>(size_of(info.dtype)));
    if (info.flops <= out)
      break;
    const std::int64_t in_bytes = std::max<std::int64_t>(1, info.bytes_read / info.flops);
    c += reduce_in_stages(info.flops, out, in_bytes, info.dtype, instructions_per_vector(cost), t);
    return c;
  }
  case OpCost::local:
  case OpCost::local_series:
  case OpCost::exchanged:
  case OpCost::exchanged_series:
  case OpCost::call: // a call's steps return above; priced by its elements if ever reached
    break;
  }
  c.compute = vector_cycles(info.flops, info.dtype, tiles, t, instructions_per_vector(cost));
  if (!works_in_place(cost))
    c.exchange = exchange_cycles(info.bytes_read, t);
  return c;
}

} // namespace pxl::emu
