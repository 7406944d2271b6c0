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

/// Device memory of one IPU, as Poplar splits it (PopVision's categories). Code is
/// estimated per compiled step from the tiles it spans (see Target's code knobs).
struct IpuMemory {
  std::int64_t ipu = 0;
  std::int64_t capacity = 0;  ///< tiles × bytes per tile
  std::int64_t variables = 0; ///< always live
  std::int64_t constants = 0; ///< always live
  // Always live: the code, in Poplar's categories.
  std::int64_t vertex_code = 0;
  std::int64_t vertex_state = 0;
  std::int64_t control_code = 0;
  std::int64_t exchange_code = 0;
  /// Steps compiled for this IPU (an outlined graph's once, an inlined one's per site).
  std::int64_t steps = 0;
  /// Peak of the intermediates (not always live), a called graph's counted while it runs.
  /// An outlined call's input aliases the caller's argument where that is safe (PopXL's
  /// aliasZeroCopy): it is not counted twice, and its copy costs no time.
  std::int64_t not_always_live_peak = 0;
  std::int64_t tile_capacity = 0; ///< bytes per tile
  /// Bytes on the most loaded tile at its worst moment: tile 0, as Poplar's linear mapping
  /// starts every tensor (and every step's code) there and spreads it over as many tiles as
  /// its size fills in 64-byte grains, so small tensors all land on the first tiles.
  std::int64_t max_tile = 0;
  /// Every tile's bytes at the not-always-live peak: the mean, and how many tiles fall in
  /// each tenth of tile_capacity (the last bucket also counts tiles over capacity) —
  /// PopVision's tile map as a histogram.
  std::int64_t tile_mean = 0;
  std::vector<std::int64_t> tile_histogram;
  /// Every tile's bytes at the not-always-live peak (always-live ones included), tile 0
  /// first: PopVision's tile map itself.
  std::vector<std::int64_t> tiles;
  /// Not-always-live bytes at each step of the main graph's schedule (a called graph's peak
  /// counted at its call step), then at its end (the outputs held): PopVision's liveness
  /// curve. Its maximum is not_always_live_peak.
  std::vector<std::int64_t> liveness;
  std::int64_t peak_step = 0; ///< where the curve peaks (the first such step)
  std::string peak_step_op;   ///< the op of that step ("MatMul.12 'fc1/MatMul'"), or "end"

  std::int64_t code() const { return vertex_code + vertex_state + control_code + exchange_code; }
  std::int64_t always_live() const { return variables + constants + code(); }
  std::int64_t total() const { return always_live() + not_always_live_peak; }
  /// Whether the IPU's total and its most loaded tile both fit.
  bool fits() const { return total() <= capacity && max_tile <= tile_capacity; }
};

/// One remote buffer in Streaming Memory (every replica has its own).
struct RemoteBufferMemory {
  std::string name;
  std::int64_t entries = 0;
  std::int64_t entry_bytes = 0;
  std::int64_t bytes = 0; ///< entries × entry_bytes
};

/// One replica's Streaming Memory: off the IPU, so none of it counts in IpuMemory.
struct StreamingMemory {
  std::int64_t capacity = 0; ///< the replica's IPUs × Target::streaming_memory_bytes_per_ipu
  std::int64_t used = 0;
  std::vector<RemoteBufferMemory> buffers;
  bool fits() const { return used <= capacity; }
};

/// What `Session::memory_report()` returns.
struct MemoryReport {
  std::vector<IpuMemory> ipus;
  StreamingMemory streaming;
  /// Every variable, constant and intermediate buffer, largest first.
  std::vector<TensorMemory> tensors;

  /// Whether every IPU's total, and Streaming Memory, fit their capacity.
  bool fits() const;
  /// A printable summary: per IPU the totals, Streaming Memory with its five largest remote
  /// buffers, then the five largest tensors.
  std::string summary() const;
  /// Every field as JSON: {"ipus": [...], "tensors": [...]}.
  std::string to_json() const;
  friend std::ostream& operator<<(std::ostream& os, const MemoryReport& r) {
    return os << r.summary();
  }
};

} // namespace pxl::emu
