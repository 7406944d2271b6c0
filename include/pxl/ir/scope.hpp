// RAII scopes for the thread's current graph, name scope, IPU and tile set placement, pipeline
// stage and op ordering.
#pragma once

#include "pxl/fwd.hpp"
#include "pxl/ir/tile_set.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace pxl {

/// Makes a graph the current one until destroyed (PopXL's `with graph:`). Obtain it from
/// `Graph::scope()`. Non-copyable; a moved-from guard does nothing.
class [[nodiscard]] GraphScope {
public:
  explicit GraphScope(const Graph& g);
  GraphScope(GraphScope&& other) noexcept : active_(other.active_) { other.active_ = false; }
  GraphScope(const GraphScope&) = delete;
  GraphScope& operator=(const GraphScope&) = delete;
  GraphScope& operator=(GraphScope&&) = delete;
  ~GraphScope();

private:
  bool active_ = true;
};

/// Prefixes names of tensors and ops created in its lifetime with `name/` (nests).
class [[nodiscard]] NameScope {
public:
  explicit NameScope(std::string name);
  NameScope(NameScope&& other) noexcept : active_(other.active_) { other.active_ = false; }
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;
  NameScope& operator=(NameScope&&) = delete;
  ~NameScope();

private:
  bool active_ = true;
};

/// Places ops created in its lifetime on IPU `n` of the replica.
class [[nodiscard]] IpuScope {
public:
  explicit IpuScope(std::int64_t n);
  IpuScope(IpuScope&& other) noexcept : active_(other.active_) { other.active_ = false; }
  IpuScope(const IpuScope&) = delete;
  IpuScope& operator=(const IpuScope&) = delete;
  IpuScope& operator=(IpuScope&&) = delete;
  ~IpuScope();

private:
  bool active_ = true;
};

/// Runs ops created in its lifetime on the tile set `s` of their IPU, and places the graph
/// inputs, variables and constants created in it there. Opened by io_tiles(), and by autodiff
/// for a gradient op on its forward op's tile set.
class [[nodiscard]] TileSetScope {
public:
  explicit TileSetScope(TileSet s);
  TileSetScope(TileSetScope&& other) noexcept : active_(other.active_) { other.active_ = false; }
  TileSetScope(const TileSetScope&) = delete;
  TileSetScope& operator=(const TileSetScope&) = delete;
  TileSetScope& operator=(TileSetScope&&) = delete;
  ~TileSetScope();

private:
  bool active_ = true;
};

/// Marks ops created in its lifetime as pipeline stage `k` (PopXL's `pipeline.stage(k)`):
/// transforms::pipeline runs stage k of micro-batch m while stage k+1 runs micro-batch m-1.
/// Usually opened with `ipu(n)` for the stage's IPU. A lower bound only: an op is never in an
/// earlier stage than its inputs, and an IpuCopy starts a later one (see transforms::pipeline).
class [[nodiscard]] PipelineStageScope {
public:
  explicit PipelineStageScope(std::int64_t k);
  PipelineStageScope(PipelineStageScope&& other) noexcept : active_(other.active_) {
    other.active_ = false;
  }
  PipelineStageScope(const PipelineStageScope&) = delete;
  PipelineStageScope& operator=(const PipelineStageScope&) = delete;
  PipelineStageScope& operator=(PipelineStageScope&&) = delete;
  ~PipelineStageScope();

private:
  bool active_ = true;
};

/// With `true`, every op created in its lifetime is ordered after the previous one created in
/// it, data dependency or not (PopXL's `in_sequence`); `false` lifts that inside a `true` scope.
class [[nodiscard]] SequenceScope {
public:
  explicit SequenceScope(bool enabled);
  SequenceScope(SequenceScope&& other) noexcept : active_(other.active_) { other.active_ = false; }
  SequenceScope(const SequenceScope&) = delete;
  SequenceScope& operator=(const SequenceScope&) = delete;
  SequenceScope& operator=(SequenceScope&&) = delete;
  ~SequenceScope();

private:
  bool active_ = true;
};

inline NameScope name_scope(std::string name) { return NameScope(std::move(name)); }
inline IpuScope ipu(std::int64_t n) { return IpuScope(n); }
inline PipelineStageScope pipeline_stage(std::int64_t k) { return PipelineStageScope(k); }
/// Ops created in its lifetime run on the IO tiles of their IPU (PopXL's `popxl.io_tiles()`).
/// An op reading a tensor of the other tile set reads it through a copy between the sets, as
/// PopART inserts one (ops::io_tile_copy makes it explicit); the emulator needs
/// emu::Target::io_tiles > 0 for a program with ops on IO tiles.
inline TileSetScope io_tiles() { return TileSetScope(TileSet::io); }
/// The tile set ops created now run on: the innermost io_tiles() (or TileSetScope) scope's,
/// else the compute tiles.
TileSet current_tile_set();
inline SequenceScope in_sequence(bool enabled = true) { return SequenceScope(enabled); }

/// The IPU ops created now are placed on: the innermost `ipu(n)` scope's, else 0.
std::int64_t current_ipu();
/// The pipeline stage ops created now are marked with: the innermost `pipeline_stage(k)`
/// scope's, none outside every such scope.
std::optional<std::int64_t> current_pipeline_stage();
/// The thread's current graph; throws GraphError if no graph scope is open.
Graph current_graph();
/// The main graph of the current graph's Ir.
Graph main_graph();
/// True when a graph scope is open on this thread.
bool has_current_graph();

} // namespace pxl
