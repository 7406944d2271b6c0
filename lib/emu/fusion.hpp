// Fusions compile_program applies to a flattened schedule: reshapes read in place by their
// readers, transposes read in place by the matmuls they feed, a convolution's or matmul's
// bias and ReLU applied as it writes, and in-place updates folded into the matmul, weight-gradient
// convolution or all-reduce computing their operand.
#pragma once

#include "flatten.hpp"

namespace pxl::emu::detail {

/// Rewrites `schedule` so that a step reading a Reshape's output reads the Reshape's input
/// instead, the same bytes in the same order (kernels take shapes from their op), when the
/// step is not a call and writes neither value, and neither is written in between.
/// A Reshape left with no readers is removed, and values nothing uses any more are dropped.
/// Results are unchanged; a reshape stops costing a copy and a buffer (a linear layer's input
/// and gradient are reshaped to matrices for its weight's gradient, say).
void fuse_reshapes(const IrView& ir, FlatSchedule& schedule);

/// Rewrites `schedule` so that each MatMul whose operand comes from a Transpose swapping the
/// last two axes reads the Transpose's input instead (StepFusion::transposed_inputs), when that
/// input and the transposed value are not written in between. A Transpose left with no
/// readers is removed, and values nothing uses any more are dropped. Results are unchanged;
/// the matmul gradient's weight transposes stop costing a copy each, and their buffers.
void fuse_transposes(const IrView& ir, FlatSchedule& schedule);

/// Rewrites `schedule` so that a float32 or float16 Conv or MatMul whose result is read only by
/// an Add of a bias (one value per channel for a Conv, broadcast over the images and spatial
/// axes: a conv layer's bias; one per column for a MatMul, broadcast over the rows: a linear
/// layer's), by a Relu, or by the Add and then the Relu (its result read only by the Relu),
/// becomes one step at the last one's place writing its result (StepFusion::bias,
/// StepFusion::relu): each image or tile gets its bias and ReLU as it is stored, bitwise as the
/// Add and Relu kernels compute them. The intermediate results are never stored. Needs the
/// producer's operands and the bias unchanged up to that place, and no empty tensor.
void fuse_epilogues(const IrView& ir, FlatSchedule& schedule);

/// Folds `scaled_add_(w, p, {a, b})`, `accumulate_(w, p, f)` and `add_(w, p)` on float32 or
/// float16 (w and p alike) into the MatMul or ConvWeightsGrad that computes `p`, when `p` has
/// no other reader and has w's shape: that step moves to the update's place and updates w
/// directly. The product is never stored: an SGD step's weight-gradient matmul or convolution
/// updates the weight in one pass instead of writing the gradient and reading it back.
/// - A MatMul computes w = a·w + b·(product) in float (float32: sgemm's beta and alpha;
///   float16: sgemm's alpha, then a·w added as the tile is rounded to half, once).
/// - A ConvWeightsGrad applies the update to each block of weights it computes, bitwise as
///   the unfused steps (the gradient rounded to w's dtype, then scaled_add_'s arithmetic).
/// Needs the product's operands unchanged up to the update, and w not among them. A float32
/// product multiplied by a float32 scalar tensor before the update (w += (−lr)·g with the
/// learning rate in a tensor) folds too, the scalar read as the update runs: it must be
/// unchanged from the Mul to the update, and the Mul's result read by the update only.
/// Without `fold_float16`, float16 updates stay steps of their own (they round stochastically:
/// CompileOptions::stochastic_rounding).
void fuse_product_updates(const IrView& ir, FlatSchedule& schedule, bool fold_float16 = true);

/// Folds `scaled_add_(w, p, {a, b})` on float32 into the add or mean ReplicatedAllReduce that
/// computes `p`, when `p` has no other reader and has w's shape: the all-reduce moves to the
/// update's place and updates every replica's w directly (the SGD step of data-parallel
/// training), the reduced gradient is never stored. Results are bitwise those of the two
/// steps: the reduction rounds to float, then the update computes a·w + b·p in double and
/// rounds once, as scaled_add_ does. Needs the all-reduce's input unchanged up to the update,
/// and w not its input.
void fuse_all_reduce_updates(const IrView& ir, FlatSchedule& schedule);

} // namespace pxl::emu::detail
