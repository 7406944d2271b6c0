// pxl::emu::Target: the knobs of the emulated IPU system (Poplar's IPUModel field set).
#pragma once

#include <cstdint>
#include <string>

namespace pxl::emu {

/// What the emulator models. An aggregate: start from a preset and change what differs,
/// `auto t = emu::ipu2(); t.tiles_per_ipu = 4;` or `emu::Target{.ipus = 2}`.
struct Target {
  std::string name = "ipu2";
  std::int64_t ipus = 1;
  std::int64_t tiles_per_ipu = 1472;
  std::int64_t workers_per_tile = 6;
  std::int64_t bytes_per_tile = 638976; ///< 624 KiB: 1,472 tiles hold ~900 MB
  double clock_hz = 1.33e9;
  std::int64_t exchange_bytes_per_cycle = 4;
  double host_link_bytes_per_second = 16e9;
  /// Estimated code (vertex and control code over the tiles) of one compiled op instance;
  /// an outlined graph's ops are counted once however often it is called.
  std::int64_t code_bytes_per_op = 16384;

  /// Device memory of one IPU.
  std::int64_t bytes_per_ipu() const { return tiles_per_ipu * bytes_per_tile; }
};

/// Mk2 GC200 (the IPU Model's default): 1,472 tiles, 6 workers per tile, 624 KiB per tile,
/// ~1.33 GHz.
inline Target ipu2() { return Target{}; }
/// Bow: the GC200 die at 1.85 GHz.
inline Target bow() {
  Target t;
  t.name = "bow";
  t.clock_hz = 1.85e9;
  return t;
}

} // namespace pxl::emu
