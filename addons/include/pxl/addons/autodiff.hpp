// pxl::addons::autodiff: the gradient graph of a GraphWithNamedArgs, with names carried over.
#pragma once

#include "pxl/addons/module/graph_with_named_args.hpp"
#include "pxl/transforms/autodiff.hpp"

namespace pxl::addons {

/// Differentiates `fwd.graph()` with pxl::transforms::autodiff (same options and rules: the
/// forward graph gains activation outputs; a second autodiff needs `options.force`) and returns
/// the gradient graph carrying its GradGraphInfo. Names carry over: a gradient-graph input that
/// reads a named forward input is named like it (so `bwd.bind(vars)` binds the weights), and
/// the gradient of each named forward input is a named output (`bwd.grads(bwd_call)`).
/// Positional inputs are the provided output gradients, then the unnamed activations (bind
/// those with `grad_graph_info().inputs_dict(fwd_call)`).
GraphWithNamedArgs autodiff(const GraphWithNamedArgs& fwd,
                            transforms::AutodiffOptions options = {});

} // namespace pxl::addons
