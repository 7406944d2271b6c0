// pxl::transforms::merge_exchange and io_tile_exchange: PopXL's scopes that merge host and remote
// transfers (on the IO tiles).
#pragma once

#include "pxl/ir/graph.hpp"
#include "pxl/ir/scope.hpp"

namespace pxl::transforms {

/// The scope `merge_exchange()` returns (PopXL's `with popxl.transforms.merge_exchange():`).
/// In PopXL the HostLoad, HostStore, RemoteLoad and RemoteStore ops created inside are fused
/// into one MergeExchange op so that they share one synchronisation. pxl keeps each transfer
/// an op and a step of its own (the graph and the results are unchanged), marks it with the
/// scope (IrView::exchange_group), and prices the transfers of one scope that run one after
/// the other as one exchange: their bytes at the link's rate, one sync for all
/// (emu::StepInfo::merged_exchange). A transfer scheduled after other work (an op it waits
/// for) begins an exchange of its own, as it would have to on the IPU.
class [[nodiscard]] MergeExchangeScope {
public:
  /// GraphError outside any graph (no graph scope open). `transfers_only`: any other op
  /// created in the scope is a GraphError (io_tile_exchange's `verify_overlap`).
  explicit MergeExchangeScope(bool transfers_only = false);
  MergeExchangeScope(const MergeExchangeScope&) = delete;
  MergeExchangeScope& operator=(const MergeExchangeScope&) = delete;
  ~MergeExchangeScope();
  /// The graph whose transfers the scope covers.
  Graph graph() const { return graph_; }

private:
  Graph graph_;
};

/// Opens a merge_exchange scope in the current graph: `auto merged = merge_exchange();`.
inline MergeExchangeScope merge_exchange() { return MergeExchangeScope(); }

/// The scope `io_tile_exchange()` returns (PopXL's `popxl.transforms.io_tile_exchange()`):
/// io_tiles(), merge_exchange() and in_sequence(false) at once, so that the transfers created
/// in it become one exchange on the IO tiles, which overlaps the compute tiles' work. With
/// `verify_overlap`, an op other than a host or Streaming Memory transfer created in it is a
/// GraphError when it is created (PopXL checks, when the scope closes, that one op remains).
class [[nodiscard]] IoTileExchangeScope {
public:
  explicit IoTileExchangeScope(bool verify_overlap);

private:
  TileSetScope io_;
  MergeExchangeScope merge_;
  SequenceScope unordered_;
};

/// Opens an io_tile_exchange scope in the current graph:
///
///     { auto exchange = transforms::io_tile_exchange(); x = ops::host_load(stream); }
inline IoTileExchangeScope io_tile_exchange(bool verify_overlap = true) {
  return IoTileExchangeScope(verify_overlap);
}

} // namespace pxl::transforms
