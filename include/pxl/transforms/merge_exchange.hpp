// pxl::transforms::merge_exchange: PopXL's scope that merges host and remote transfers.
#pragma once

#include "pxl/ir/graph.hpp"

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
  /// GraphError outside any graph (no graph scope open).
  MergeExchangeScope();
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

} // namespace pxl::transforms
