// pxl::addons batch serialisation: a layer's batch run as N micro-batches, one after another
// in a device loop, so that only one micro-batch's activations are on chip at a time
// (popxl.addons' batch_serialise and batch_serialise_fwd_and_grad).
#pragma once

#include "pxl/addons/module/graph_with_named_args.hpp"
#include "pxl/ir/remote_buffer.hpp"

#include <cstdint>
#include <map>

namespace pxl::addons {

/// The spec of one micro-batch of `full_batch`: dim 0 divided by `steps`. Build the layer's
/// graph for it, then batch-serialise that graph to take the full batch:
///
///     auto [facts, fwd] = Mlp{}.create_graph(micro_batch_spec(x, 4));   // x: (64, 16)
///     auto serial = batch_serialise(fwd, 4);                             // takes (64, 16)
///     auto y = serial.bind(vars).call(x)[0];
///
/// ValueError for steps < 1; ShapeError for a rank-0 tensor or a dim 0 that `steps` does not
/// divide (naming the tensor, its shape and the steps).
TensorSpec micro_batch_spec(const Tensor& full_batch, std::int64_t steps);
/// As above for a spec (named by its shape in messages).
TensorSpec micro_batch_spec(const TensorSpec& full_batch, std::int64_t steps);

/// `graph` (built for one micro-batch) run on `steps` micro-batches one after another: a graph
/// with `graph`'s inputs, named args and outputs, in the same order, whose positional inputs
/// and outputs are `steps` times longer along axis 0. It loops `steps` times (ops::repeat, the
/// step number carried as an int32 scalar); step i slices rows [i·r, (i+1)·r) of every
/// positional input (dynamic_slice; r is the micro-batch's rows), calls `graph` with them and
/// the named args (unchanged, by reference where `graph` takes them so), and writes its
/// outputs into rows [i·r, (i+1)·r) of the full outputs (dynamic_update).
///
/// Every positional input must have the same dim 0, the micro-batch rows r, and every output
/// must have dim 0 = r (a per-sample output). With steps = 1, `graph` itself is returned.
///
/// Errors: ValueError for steps < 1, a graph without positional inputs, or a positional input
/// passed by reference (its in-place changes would reach a slice, not the caller); ShapeError
/// for a rank-0 positional input, positional inputs of different dim 0, or an output whose
/// dim 0 is not the micro-batch rows (each naming the tensor, the rows expected and found).
GraphWithNamedArgs batch_serialise(const GraphWithNamedArgs& graph, std::int64_t steps);

/// The forward and gradient loops of batch_serialise_fwd_and_grad.
struct BatchSerialisedGraphs {
  /// The forward loop: as batch_serialise(fwd, steps) on the outputs fwd had before autodiff
  /// (the activation outputs autodiff appended stay inside), and each step also stores the
  /// activations the gradient graph reads into `activations`, at entry i.
  GraphWithNamedArgs forward;
  /// The gradient loop, a gradient graph of `forward` in its own right: positional inputs are
  /// the full-batch gradients of `forward`'s outputs (those autodiff was given), named args
  /// the weights the gradient graph reads (bind them with `bind(vars)` or
  /// `grad_graph_info().inputs_dict(forward_call)`), outputs the gradients of `forward`'s
  /// inputs, in `grad`'s order. Step i slices the output gradients' micro-batch, loads the
  /// activations of entry i, calls `grad`, writes the input gradients' rows like forward's
  /// outputs and sums the named args' (weights') gradients over the steps, in their own dtype
  /// (float16 sums round once per step). So `grads(call)` names the weight gradients and
  /// `grad_graph_info().fwd_parent_ins_to_grad_parent_outs(forward_call, call)` maps the
  /// forward inputs to theirs, as for an unserialised pair.
  GraphWithNamedArgs gradient;
  /// Forward-graph tensor → the remote buffer (`steps` entries of its spec) holding it for
  /// each micro-batch: every activation the gradient graph reads except named args, which it
  /// receives directly. Their bytes are the Streaming Memory the pair uses.
  std::map<Tensor, RemoteBuffer> activations;
};

/// Batch-serialises a layer's forward graph `fwd` (built for one micro-batch) and its gradient
/// graph `grad` (`fwd.autodiff(...)`, any grads_provided / grads_required) together: the
/// forward loop keeps the activations of each micro-batch in Streaming Memory instead of on
/// chip, and the gradient loop reads them back, one micro-batch at a time. Call `forward`,
/// then `gradient`, with the full batch: the results equal those of the unserialised pair to
/// float rounding (the weight gradients are summed in a different order).
///
///     auto [facts, fwd] = Mlp{}.create_graph(micro_batch_spec(x, steps));
///     auto serial = batch_serialise_fwd_and_grad(fwd, fwd.autodiff(), steps);
///     auto fwd_call = serial.forward.bind(vars).call_with_info(x);
///     auto [loss, dy] = addons::ops::cross_entropy_with_grad(fwd_call.outputs()[0], labels);
///     auto grad_call = serial.gradient.bind(vars).call_with_info(dy);
///     addons::optimizers::apply(SGD{}, vars, serial.gradient.grads(grad_call));
///
/// The loops are built for steps = 1 too (the activations then pass through one entry).
/// Errors: as batch_serialise for `steps`, fwd's inputs and its outputs; GraphError when
/// `grad` is of another Ir, is not a gradient graph, or is the gradient graph of another graph
/// than `fwd`.
BatchSerialisedGraphs batch_serialise_fwd_and_grad(const GraphWithNamedArgs& fwd,
                                                   const GraphWithNamedArgs& grad,
                                                   std::int64_t steps);

} // namespace pxl::addons
