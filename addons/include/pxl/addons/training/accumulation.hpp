// pxl::addons gradient accumulation: per-variable accumulators, filled over N micro-batches
// inside a device loop and applied as one weight update.
#pragma once

#include "pxl/addons/module/named_tensors.hpp"
#include "pxl/addons/module/variable_factory.hpp"
#include "pxl/core/dtype.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace pxl::addons {

/// How the gradients of N micro-batches combine in an accumulator `a` (zero after a reset).
enum class AccumulationReduction {
  /// a += g: the sum. For a mean-reduced loss, apply it with lr / N to match one step on the
  /// concatenated batch.
  sum,
  /// a += g / N: the mean over exactly N micro-batches, i.e. the gradient of the mean-reduced
  /// loss on the concatenated batch of N·b.
  mean,
  /// a = a + (g - a) / (k + 1), then k += 1, with k the by-ref counter "accum_counter": the mean
  /// of however many micro-batches ran since the last reset (popxl.addons' accumulate_mean_).
  running_mean,
};

/// "sum", "mean" or "running_mean" (not `to_string`: that would hide pxl::to_string here).
std::string_view reduction_name(AccumulationReduction reduction);

/// Gradient accumulation settings (an aggregate):
///
///     pxl::addons::GradientAccumulation accum{
///         .reduction = pxl::addons::AccumulationReduction::mean, .dtype = pxl::float32,
///         .steps = 4};
///
/// The effective batch is micro-batch × `steps`.
struct GradientAccumulation {
  AccumulationReduction reduction = AccumulationReduction::mean;
  /// The accumulators' dtype; gradients of another float dtype are cast to it (float32
  /// accumulators for float16 gradients keep the small contributions a float16 sum loses).
  DType dtype = float32;
  /// N, the micro-batches per weight update (≥ 1); the mean's divisor.
  std::int64_t steps = 1;

  /// ValueError if steps < 1, DTypeError unless dtype is float32 or float16.
  void validate() const;
};

/// Key of the sub-tree holding one accumulator per variable ("accum.fc1.weight"). A prefix
/// rather than a suffix so that variables and accumulators can share one tree (a leaf
/// "fc1.weight" cannot also hold "fc1.weight.accum").
inline constexpr std::string_view accumulator_prefix = "accum";
/// Key of the running mean's counter: a by-ref float32 scalar, the number of micro-batches
/// accumulated since the last reset.
inline constexpr std::string_view accumulator_counter_key = "accum_counter";

/// The accumulators' factories: "accum.<key>" per variable, zeros of its shape in
/// `config.dtype`, passed by reference; for running_mean also "accum_counter" (a zero float32
/// scalar, by reference). Create them with `.init()` in the main graph beside the variables.
/// Throws as `config.validate()` does, and ValueError for a variable that is not float.
NamedVariableFactories accumulator_factories(const NamedVariableFactories& variables,
                                             const GradientAccumulation& config);
/// As above, from the variables themselves (their shapes).
NamedVariableFactories accumulator_factories(const NamedTensors& variables,
                                             const GradientAccumulation& config);

/// In the current graph, adds one graph input per leaf of `parent`, named after its key, with
/// `parent`'s spec and IPU, and returns them under the same keys. By reference by default, so
/// updates of variables and accumulators made inside reach the caller. Pass `parent.values_flat()`
/// as the call's (or repeat's) inputs: they are in the same order.
NamedTensors named_graph_inputs(const NamedTensors& parent, bool by_ref = true);

/// Accumulates one micro-batch: for every key of `grads`, combines the gradient into the
/// accumulator `accumulators["accum.<key>"]` according to `config.reduction` (gradients are
/// cast to the accumulator's dtype), then, for running_mean, increments
/// `accumulators["accum_counter"]`. `accumulators` is the tree `accumulator_factories(...)`
/// describes (other keys, e.g. the variables themselves, are ignored), as tensors of the
/// current graph, normally by-ref inputs of a micro-step graph.
///
/// Errors: ValueError when the gradients' keys and the accumulators' differ (listing both
/// sides) or the counter is missing for running_mean; ShapeError for a gradient whose shape is
/// not its accumulator's; DTypeError for a non-float gradient; and config.validate()'s.
void accumulate_gradients(const NamedTensors& accumulators, const NamedTensors& grads,
                          const GradientAccumulation& config);

/// The accumulated gradients under the variables' keys (views of the accumulators). Whatever
/// the reduction, they hold the value to apply: the sum, the mean or the running mean.
NamedTensors accumulated_gradients(const NamedTensors& accumulators);

/// Zeroes every accumulator and the counter (if any), in place.
void reset_accumulators(const NamedTensors& accumulators);

/// Updates one variable from its accumulated gradient: `(key, variable, gradient)`, with the
/// gradient already cast to the variable's dtype. E.g. SGD:
/// `[&](auto&, const Tensor& w, const Tensor& g) { pxl::ops::scaled_add_(w, g, {.b = -lr}); }`.
using AccumulatedUpdate =
    std::function<void(const std::string& key, const Tensor& variable, const Tensor& gradient)>;

/// The end of an accumulation window: calls `update` once per variable (in `variables`' order)
/// with its accumulated gradient, then resets the accumulators and counter, so the next window
/// starts from zero. ValueError when `variables`' keys and the accumulators' differ.
///
/// How it fits a device loop (S updates of N micro-batches each per `session.run`):
///
///     // main graph
///     auto vars = factories.init();
///     auto accums = accumulator_factories(factories, config).init();
///     NamedTensors state = vars;
///     state.update(accums);
///     Graph micro = ir.create_empty_graph("micro_step");     // one micro-batch
///     {
///       auto in = micro.scope();
///       auto s = named_graph_inputs(state);                  // all by reference
///       ... host_load, forward, backward: grads keyed like vars ...
///       accumulate_gradients(s, grads, config);
///     }
///     Graph step = ir.create_empty_graph("train_step");     // N micro-batches, one update
///     {
///       auto in = step.scope();
///       auto s = named_graph_inputs(state);
///       ops::repeat(micro, config.steps, s.values_flat());
///       apply_accumulated(s.filter_keys(vars.keys()), s, sgd);
///     }
///     ops::repeat(step, S, state.values_flat());
///     ir.set_num_host_transfers(S * config.steps);           // one load per micro-batch
void apply_accumulated(const NamedTensors& variables, const NamedTensors& accumulators,
                       const AccumulatedUpdate& update);

} // namespace pxl::addons
