// PopXL's merge_exchange scope: every transfer is its own step in pxl, so it merges nothing.
#include "pxl/transforms/merge_exchange.hpp"
#include "pxl/core/error.hpp"
#include "pxl/ir/scope.hpp"

namespace pxl::transforms {

MergeExchangeScope::MergeExchangeScope() {
  if (!has_current_graph())
    throw GraphError("merge_exchange: no current graph; open it inside a graph's scope "
                     "(auto in_graph = graph.scope();)");
  graph_ = current_graph();
}

} // namespace pxl::transforms
