// PopXL's merge_exchange scope: the transfers created in it are marked with its id, and the
// emulator prices consecutive ones as one exchange.
#include "pxl/transforms/merge_exchange.hpp"
#include "ir/context.hpp"
#include "pxl/core/error.hpp"
#include "pxl/ir/scope.hpp"

namespace pxl::transforms {

MergeExchangeScope::MergeExchangeScope(bool transfers_only) {
  if (!has_current_graph())
    throw GraphError("merge_exchange: no current graph; open it inside a graph's scope "
                     "(auto in_graph = graph.scope();)");
  graph_ = current_graph();
  detail::Context& ctx = detail::context();
  ctx.exchanges.push_back({.group = ctx.next_exchange_group++, .transfers_only = transfers_only});
}

MergeExchangeScope::~MergeExchangeScope() { detail::context().exchanges.pop_back(); }

IoTileExchangeScope::IoTileExchangeScope(bool verify_overlap)
    : io_(TileSet::io), merge_(verify_overlap), unordered_(false) {}

} // namespace pxl::transforms
