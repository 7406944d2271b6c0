// pxl::emu::MemoryReport: how much device memory a compiled plan needs, per IPU.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace pxl::emu {

/// One tensor in the report.
struct TensorMemory {
  std::string id; ///< the tensor's scoped name
  std::string graph;
  std::int64_t ipu = 0;
  std::int64_t bytes = 0;
  bool always_live = false;
  /// Live interval: the first and last step of its graph's compiled schedule that use it
  /// (steps counted from 0; a graph output is held to the step past the last). -1 for both
  /// when always live.
  std::int64_t first_step = -1;
  std::int64_t last_step = -1;
};

/// Device memory of one IPU, as Poplar splits it.
struct IpuMemory {
  std::int64_t ipu = 0;
  std::int64_t capacity = 0;  ///< tiles × bytes per tile
  std::int64_t variables = 0; ///< always live
  std::int64_t constants = 0; ///< always live
  std::int64_t code = 0;      ///< always live: an estimate per compiled op instance
  /// Peak of the intermediates (not always live), a called graph's counted while it runs.
  std::int64_t not_always_live_peak = 0;
  std::int64_t tile_capacity = 0; ///< bytes per tile
  /// Bytes on the most loaded tile at the peak: tile 0, as Poplar's linear mapping starts
  /// every tensor there and spreads it over as many tiles as its size fills in 64-byte
  /// grains (small tensors all land on the first tiles); code is spread over every tile.
  std::int64_t max_tile = 0;
  /// Not-always-live bytes at each step of the main graph's schedule (a called graph's peak
  /// counted at its call step), then at its end (the outputs held): PopVision's liveness
  /// curve. Its maximum is not_always_live_peak.
  std::vector<std::int64_t> liveness;
  std::int64_t peak_step = 0; ///< where the curve peaks (the first such step)
  std::string peak_step_op;   ///< the op of that step ("MatMul.12 'fc1/MatMul'"), or "end"

  std::int64_t always_live() const { return variables + constants + code; }
  std::int64_t total() const { return always_live() + not_always_live_peak; }
  /// Whether the IPU's total and its most loaded tile both fit.
  bool fits() const { return total() <= capacity && max_tile <= tile_capacity; }
};

/// What `Session::memory_report()` returns.
struct MemoryReport {
  std::vector<IpuMemory> ipus;
  /// Every variable, constant and intermediate buffer, largest first.
  std::vector<TensorMemory> tensors;

  /// Whether every IPU's total fits its capacity.
  bool fits() const;
  /// A printable summary: per IPU the totals, then the five largest tensors.
  std::string summary() const;
  /// Every field as JSON: {"ipus": [...], "tensors": [...]}.
  std::string to_json() const;
  friend std::ostream& operator<<(std::ostream& os, const MemoryReport& r) {
    return os << r.summary();
  }
};

} // namespace pxl::emu
