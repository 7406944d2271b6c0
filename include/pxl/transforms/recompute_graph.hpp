// pxl::transforms::recompute_graph: a gradient graph that recomputes the forward pass instead
// of reading stored activations.
#pragma once

#include "pxl/transforms/autodiff.hpp"

namespace pxl::transforms {

/// A new gradient graph, "<gradient graph's name>_recomp", that calls the forward graph on the
/// forward inputs and then the gradient graph on the activations it recomputes (PopXL addons'
/// `recompute_graph`). Its inputs: the gradient graph's provided output gradients and the
/// forward inputs it read, in their order, then every other forward-graph input (all expected
/// as forward tensors, so `inputs_dict(fwd_call)` binds them), then the gradient graph's other
/// inputs (accumulators and counter, by reference as before). Its outputs are the gradient
/// graph's. The forward call site no longer needs to keep its activation outputs alive until
/// the gradient call, which lowers the peak memory when several forward calls precede their
/// gradients; results are bitwise those of the stored activations, as the kernels are
/// deterministic and random ops take their seeds as inputs. A by-reference forward input is a
/// by-value input of the recomputation, so the forward pass it reruns changes only a copy.
/// GraphError on an Ir a Session has frozen.
GradGraphInfo recompute_graph(const GradGraphInfo& grad_info);

} // namespace pxl::transforms
