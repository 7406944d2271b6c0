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

/// popxl.addons' `recompute_graph`: the gradient graph `grad_graph` (from `autodiff`) made to
/// recompute the forward pass's activations inside its call instead of reading them
/// (transforms::recompute_graph). It reads every forward input, each weight that `grad_graph`
/// reads or differentiates under its name (so `bind(vars)` binds them all), and its named
/// outputs are `grad_graph`'s gradients under the same names; bind the rest with
/// `grad_graph_info().inputs_dict(fwd_call)` as before. The gradients are bitwise those of
/// `grad_graph`. It lowers the peak where several forward calls precede their gradients (a
/// layer graph called per layer); recomputing a single forward call costs a forward pass and
/// saves nothing. ValueError unless `grad_graph` is a gradient graph.
GraphWithNamedArgs recompute_graph(const GraphWithNamedArgs& grad_graph);

} // namespace pxl::addons
