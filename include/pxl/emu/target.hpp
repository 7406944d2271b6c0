// pxl::emu::Target: the knobs of the emulated IPU system (Poplar's IPUModel field set).
#pragma once

#include <cstdint>
#include <string>

namespace pxl::emu {

/// What the emulator models. An aggregate: start from a preset and change what differs,
/// `auto t = emu::ipu2(); t.tiles_per_ipu = 4;` or `emu::Target{.ipus = 2}`.
///
/// The cost model (cost_model.hpp) reads the time knobs; the memory report (the plan's
/// memory, per IPU, tile and category) reads the memory and code knobs.
struct Target {
  std::string name = "ipu2";
  std::int64_t ipus = 1;
  std::int64_t tiles_per_ipu = 1472;
  /// Hardware threads per tile, barrel-scheduled: a tile issues one of its workers'
  /// instructions per cycle, so a worker issuing T instructions takes workers × T cycles.
  std::int64_t workers_per_tile = 6;
  std::int64_t bytes_per_tile = 638976; ///< 624 KiB: 1,472 tiles hold ~900 MB
  double clock_hz = 1.33e9;
  /// Multiply-accumulates one tile's matrix unit (AMP) completes per cycle.
  std::int64_t fp32_macs_per_tile_cycle = 16;
  std::int64_t fp16_macs_per_tile_cycle = 64;
  /// Bytes one vector instruction processes (64 bits: 2 float32 or 4 float16 elements).
  std::int64_t vector_bytes = 8;
  /// Bytes each tile sends and receives per cycle in an exchange phase.
  std::int64_t exchange_bytes_per_cycle = 4;
  /// Cycles of one BSP sync of every tile of an IPU.
  std::int64_t sync_cycles = 150;
  double host_link_bytes_per_second = 16e9;
  /// One host round trip per Session::run: the host and the device synchronise around the
  /// program (tens of microseconds on an IPU-M2000); a device loop pays it once for all its
  /// steps, which is why Graphcore's guides measure it faster.
  double host_round_trip_seconds = 50e-6;
  /// Collectives between replicas and copies between IPUs: IPU-Link bandwidth one replica's
  /// ring sends at (2 of the GC200's 10 links of 128 Gbit/s per direction, at 85%).
  double ipu_link_bytes_per_second = 27.2e9;
  /// Streaming Memory (the DRAM beside each IPU holding remote buffers): capacity per IPU
  /// (a Bow-2000's 256 GB over its 4 IPUs), and the rate of remote loads and stores (not
  /// published; the IPU's PCIe Gen4 x8 link to its gateway, ~16 GB/s each way, bounds it).
  std::int64_t streaming_memory_bytes_per_ipu = std::int64_t{64} << 30;
  double streaming_memory_bytes_per_second = 16e9;
  /// Code and its state, as Poplar lays them out, on each tile a step spans (the tiles of its
  /// largest tensor under the linear mapping). Vertex code: a codelet (an op kind for one
  /// dtype) is loaded once on each tile that runs it, however many steps use it. Vertex
  /// state: each step has a vertex per worker on every tile it spans (transfers to and from
  /// the host or Streaming Memory are stream copies, without vertices). Control code: each
  /// step's program on its tiles. Exchange code: each step that moves data between tiles.
  /// An outlined graph's steps are counted once however often it is called; an inlined
  /// graph's at every call site, which is the memory outlining saves.
  std::int64_t vertex_code_bytes = 1024; ///< per codelet and tile
  std::int64_t vertex_state_bytes = 32;  ///< per vertex
  std::int64_t control_code_bytes = 64;  ///< per step and tile
  std::int64_t exchange_code_bytes = 32; ///< per exchanging step and tile

  /// Device memory of one IPU.
  std::int64_t bytes_per_ipu() const { return tiles_per_ipu * bytes_per_tile; }
};

/// Mk2 GC200 (the IPU Model's default): 1,472 tiles, 6 workers per tile, 624 KiB per tile,
/// ~1.33 GHz.
inline Target ipu2() { return Target{}; }
/// Bow: the GC200 die at 1.85 GHz, so 1.85 / 1.33 faster per cycle-bound step.
inline Target bow() {
  Target t;
  t.name = "bow";
  t.clock_hz = 1.85e9;
  return t;
}
/// IPU21, the Mk2 variant of the C600 card (Poplar's "ipu21"): the GC200's tiles and memory
/// at about 1.5 GHz (280 TFLOPS of float16 over 1,472 tiles × 64 MACs; its FP8, twice that,
/// pxl does not model).
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

} // namespace pxl::emu
