// PopXL's decompose_sum: pxl's gradient sums are already chains of two-input additions.
#include "pxl/transforms/decompose_sum.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/transforms/rewrite.hpp"

namespace pxl::transforms {

Graph decompose_sum(const Graph& graph) {
  IrRewriter(graph.ir())
      .require_mutable("decompose_sum: decomposing the sums of graph '" + graph.name() + "'");
  return graph;
}

} // namespace pxl::transforms
