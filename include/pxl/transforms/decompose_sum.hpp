// pxl::transforms::decompose_sum: PopXL's rewrite of many-input gradient sums into additions.
#pragma once

#include "pxl/ir/graph.hpp"

namespace pxl::transforms {

/// PopXL's `decompose_sum(graph)`, which rewrites every Sum op of more than two inputs into a
/// liveness-friendly chain of additions, and returns `graph`. pxl's IR has no many-input Sum:
/// autodiff already adds each gradient contribution to the running total as it appears (a
/// chain of two-input Adds), which is the decomposed form. So this changes neither the graph
/// nor its results nor the cost model's estimate, and returns `graph`; it exists so that
/// PopXL code keeps its shape. GraphError on an Ir a Session has frozen, as for any transform.
Graph decompose_sum(const Graph& graph);

} // namespace pxl::transforms
