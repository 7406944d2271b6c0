// pxl::emu::Target: the knobs of the emulated IPU system (Poplar's IPUModel field set).
#pragma once

#include "pxl/core/error.hpp"
#include "pxl/ir/tile_set.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pxl::emu {

/// What the emulator models. An aggregate: start from a preset and change what differs,
/// `auto t = emu::ipu2(); t.tiles_per_ipu = 4;` or `emu::Target{.ipus = 2}`.
///
/// The cost model (cost_model.hpp) reads the time knobs; the memory report (the plan's
/// memory, per IPU, tile and category) reads the memory and code knobs.
struct Target {
  // Sources, cited as [n] (docs/profiling.md has the same table):
  //  [1] Graphcore, Colossus Mk2 GC200 IPU / IPU-M2000 product figures: 1,472 tiles, 6 threads
  //      per tile (8,832), 900 MB In-Processor-Memory, 250 TFLOPS float16, 62.5 TFLOPS float32,
  //      8 TB/s IPU-Exchange, 10 IPU-Links of 320 GB/s together, PCIe Gen4 x16 (as listed at
  //      https://thecharlieblake.co.uk/ipus and in Graphcore's GC200 announcement).
  //  [2] Bow-2000 datasheet, https://docs.graphcore.ai/projects/bow-2000-datasheet/en/latest/
  //      overview.html: Bow IPU, 1.4 PFLOPS float16 over 4 IPUs, 256 GB Streaming Memory per
  //      Bow-2000, IPU-Link 512 Gbps, Host-Link over PCIe Gen4 RoCEv2.
  //  [3] Z. Jia, B. Tillman, M. Maggioni, D. P. Scarpazza, "Dissecting the Graphcore IPU
  //      Architecture via Microbenchmarking", arXiv:1912.03413 (2019): the Mk1's tile memory
  //      (6-cycle latency), its AMP throughput and its exchange, which the Mk2 keeps per tile.
  //  [4] PopLibs' IPU-Link model (graphcore/poplibs lib/poplibs_test/Util.cpp,
  //      addGlobalExchangeConstraints): each IPU-Link 128 Gbit/s per direction at 85%
  //      efficiency; IPUs in a ladder, 4 links between the two IPUs of a pair, 2 up, 2 down.
  //  [5] IPU-M2000 block diagram (BMC user guide, summarised at
  //      https://vengineer.hatenablog.com/entry/2023/01/23/090000): each IPU reaches the
  //      gateway (host link and Streaming Memory) over PCIe Gen4 x8, ~16 GB/s each way.
  //  [6] graphcore-research/tessellate-ipu, notebooks/"IPU Peak Flops.ipynb": a
  //      ConvPartial1x1 vertex timed on every tile of a Bow IPU (1.85 GHz) with ipu_cycle_count.
  std::string name = "ipu2";
  std::int64_t ipus = 1;
  std::int64_t tiles_per_ipu = 1472; ///< [1]
  /// Tiles of each IPU set aside as its IO tiles (PopART's `numIOTiles`, a session option
  /// there): ops created in an io_tiles() scope run on them, the rest on the other
  /// tiles_per_ipu − io_tiles, and the two sets keep their own time, so that transfers on the
  /// IO tiles overlap the compute tiles' work. 0 (the default): every tile computes, and a
  /// program with ops on IO tiles is refused. At most tiles_per_ipu − 1.
  std::int64_t io_tiles = 0;
  /// Hardware threads per tile, barrel-scheduled: a tile issues one of its workers'
  /// instructions per cycle, so a worker issuing T instructions takes workers × T cycles.
  /// [1] (8,832 threads over 1,472 tiles); the barrel scheduling [3].
  std::int64_t workers_per_tile = 6;
  /// 624 KiB: [1]'s 900 MB over 1,472 tiles (1,472 × 624 KiB = 897 MiB).
  std::int64_t bytes_per_tile = 638976;
  /// 1.33 GHz: [1]'s 250 TFLOPS float16 / (1,472 tiles × 64 MACs × 2 flops) = 1.327 GHz.
  double clock_hz = 1.33e9;
  /// Multiply-accumulates one tile's matrix unit (AMP) completes per cycle: [1]'s 250 and
  /// 62.5 TFLOPS at 1.33 GHz over 1,472 tiles (twice the Mk1's, whose 124.5 and 31.1 TFLOPS
  /// over 1,216 tiles at 1.6 GHz [3] give 32 and 8).
  std::int64_t fp32_macs_per_tile_cycle = 16;
  std::int64_t fp16_macs_per_tile_cycle = 64;
  /// Fixed cycles of one AMP vertex on a tile beside its streamed rows: Graphcore's
  /// tessellate-ipu "IPU Peak Flops" notebook times a ConvPartial1x1 vertex on every tile of a
  /// Bow IPU, float16 rows of 16 against a 16 × 16 block, at 55.5 TFLOPS for 16 rows and
  /// 334.9 for 2,048 [6]: 4 cycles a row plus about 335 (N = 16: 402 cycles; 512: 2,381;
  /// 2,048: 8,526).
  std::int64_t amp_vertex_cycles = 335;
  /// Bytes one vector instruction processes (64 bits: 2 float32 or 4 float16 elements) [3].
  std::int64_t vector_bytes = 8;
  /// Bytes each tile sends and receives per cycle in an exchange phase: [1]'s 8 TB/s
  /// (1,472 × 4 B × 1.33 GHz = 7.8 TB/s); Poplar's Target::getExchangeBytesPerCycle.
  std::int64_t exchange_bytes_per_cycle = 4;
  /// Cycles of one BSP sync of every tile of an IPU. Not published for the GC200 (Poplar's
  /// Target::getMaxIPUSyncDelay holds it); an estimate of the order [3] measures on the Mk1.
  std::int64_t sync_cycles = 150;
  /// The IPU's link to the host: PCIe Gen4 x8 to the gateway, ~16 GB/s each way [5].
  double host_link_bytes_per_second = 16e9;
  /// One host round trip per Session::run: the host and the device synchronise around the
  /// program; a device loop pays it once for all its steps, which is why Graphcore's guides
  /// measure it faster. Not published: an estimate (tens of microseconds on an IPU-M2000).
  double host_round_trip_seconds = 50e-6;
  /// Collectives between replicas and across the IPUs of a replica: IPU-Link bandwidth one
  /// replica's ring sends at, 2 links of 16 GB/s per direction at 85% [4] (10 links of
  /// 320 GB/s together, both directions [1]).
  double ipu_link_bytes_per_second = 27.2e9;
  /// IpuCopy between two IPUs: the 4 IPU-Links between the IPUs of a pair at 16 GB/s per
  /// direction each, at 85% [4]. A pipeline's stages are on neighbouring IPUs.
  double ipu_copy_bytes_per_second = 54.4e9;
  /// Streaming Memory (the DRAM beside each IPU holding remote buffers): capacity per IPU
  /// ([2]'s 256 GB per Bow-2000 over its 4 IPUs), and the rate of remote loads and stores
  /// (not published; the IPU's PCIe Gen4 x8 link to its gateway, ~16 GB/s each way, bounds
  /// it [5]).
  std::int64_t streaming_memory_bytes_per_ipu = std::int64_t{64} << 30;
  double streaming_memory_bytes_per_second = 16e9;
  /// Code and its state, as Poplar lays them out, on each tile a step spans (the tiles of its
  /// largest tensor under the linear mapping, from a start tile that rotates as PopART's). Vertex
  /// code: a codelet (an op kind for one dtype) is loaded once on each tile that runs it, however
  /// many steps use it. Vertex state: each step has a vertex per worker on every tile it spans
  /// (transfers to and from the host or Streaming Memory are stream copies, without vertices).
  /// Control code: each step's program on its tiles. Exchange code: each step that moves data
  /// between tiles. An outlined graph's steps are counted once however often it is called; an
  /// inlined graph's at every call site, which is the memory outlining saves. Not published:
  /// estimates of the order PopVision's memory reports show.
  std::int64_t vertex_code_bytes = 1024; ///< per codelet and tile
  std::int64_t vertex_state_bytes = 32;  ///< per vertex
  std::int64_t control_code_bytes = 64;  ///< per step and tile
  std::int64_t exchange_code_bytes = 32; ///< per exchanging step and tile

  /// Device memory of one IPU.
  std::int64_t bytes_per_ipu() const { return tiles_per_ipu * bytes_per_tile; }
  /// The tiles of tile set `s` of each IPU: io_tiles, or the others.
  std::int64_t tiles_of(TileSet s) const {
    return s == TileSet::io ? io_tiles : tiles_per_ipu - io_tiles;
  }
  /// The first tile of tile set `s`: the IO tiles are the last io_tiles.
  std::int64_t first_tile_of(TileSet s) const {
    return s == TileSet::io ? tiles_per_ipu - io_tiles : 0;
  }
};

/// Mk2 GC200 (the IPU Model's default): 1,472 tiles, 6 workers per tile, 624 KiB per tile,
/// ~1.33 GHz.
inline Target ipu2() { return Target{}; }
/// Bow: the GC200 die at 1.85 GHz ([2]: 1.4 PFLOPS over 4 IPUs = 350 TFLOPS = 1,472 × 128 flops
/// × 1.85 GHz), so 1.85 / 1.33 faster per cycle-bound step.
inline Target bow() {
  Target t;
  t.name = "bow";
  t.clock_hz = 1.85e9;
  return t;
}
/// IPU21, the Mk2 variant of the C600 card (Poplar's "ipu21"): the GC200's tiles and memory
/// at about 1.5 GHz (Graphcore's C600 figure of 280 TFLOPS of float16 over 1,472 tiles × 64
/// MACs; its FP8, twice that, pxl does not model).
inline Target ipu21() {
  Target t;
  t.name = "ipu21";
  t.clock_hz = 1.486e9;
  return t;
}
/// PopART's default IPU Model device (`createIpuModelDevice`): a GC200 cut to 4 tiles, small
/// enough to compile fast; memory and compute shrink with it.
inline Target popart_ipu_model() {
  Target t;
  t.name = "popart_ipu_model";
  t.tiles_per_ipu = 4;
  return t;
}

/// Every preset above, in the order a command line's help lists them.
inline std::vector<Target> target_presets() { return {ipu2(), bow(), ipu21(), popart_ipu_model()}; }

/// The presets' names as a sentence lists them: "ipu2, bow, ipu21 or popart_ipu_model" (the
/// values a `--target` flag takes, for its help and its error).
inline std::string target_preset_names() {
  const std::vector<Target> presets = target_presets();
  std::string names;
  for (std::size_t i = 0; i < presets.size(); ++i)
    names += (i == 0 ? "" : i + 1 == presets.size() ? " or " : ", ") + presets[i].name;
  return names;
}

/// The preset named `name` (its Target::name): what a command line's `--target` chooses.
/// Throws ValueError naming the presets for any other name.
inline Target target_named(std::string_view name) {
  for (Target& t : target_presets())
    if (t.name == name)
      return t;
  throw ValueError("no IPU target named '" + std::string(name) + "': expected " +
                   target_preset_names());
}

} // namespace pxl::emu
