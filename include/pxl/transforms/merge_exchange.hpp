// pxl::transforms::merge_exchange: PopXL's scope that merges host and remote transfers.
#pragma once

#include "pxl/ir/graph.hpp"

namespace pxl::transforms {

/// The scope `merge_exchange()` returns (PopXL's `with popxl.transforms.merge_exchange():`).
/// In PopXL the HostLoad, HostStore, RemoteLoad and RemoteStore ops created inside are fused
/// into one MergeExchange op so that they share one synchronisation. pxl's executor and cost
/// model run and charge each transfer as its own step (its sync and its bytes at the link's
/// rate), whatever scope it was created in, so the scope changes neither the graph, nor the
/// results, nor the estimated time. It checks that it is closed in the graph it was opened
/// in.
class [[nodiscard]] MergeExchangeScope {
public:
  /// GraphError outside any graph (no graph scope open).
  MergeExchangeScope();
  MergeExchangeScope(const MergeExchangeScope&) = delete;
  MergeExchangeScope& operator=(const MergeExchangeScope&) = delete;
  ~MergeExchangeScope() = default;
  /// The graph whose transfers the scope covers.
  Graph graph() const { return graph_; }

private:
  Graph graph_;
};

/// Opens a merge_exchange scope in the current graph: `auto merged = merge_exchange();`.
inline MergeExchangeScope merge_exchange() { return MergeExchangeScope(); }

} // namespace pxl::transforms
