// pxl::transforms::autodiff_with_accumulation: a gradient graph that accumulates the running
// mean of some gradients into by-reference accumulators instead of returning them.
#pragma once

#include "pxl/transforms/autodiff.hpp"

#include <optional>
#include <string_view>
#include <vector>

namespace pxl::transforms {

/// The name of the running mean's counter input.
inline constexpr std::string_view mean_accum_counter_name = "mean_accum_counter";
/// The prefix of an accumulator input's name: "accum.<forward tensor's name>".
inline constexpr std::string_view accumulator_name_prefix = "accum.";

/// Differentiates `graph` (as `autodiff`, with `grads_required` plus
/// `tensors_to_accumulate_grads` required and every output's gradient provided), then, inside
/// the gradient graph, folds the gradient of each tensor of `tensors_to_accumulate_grads` into a
/// new by-reference input "accum.<name>" (the tensor's shape and dtype) as a running mean, and
/// leaves that gradient out of the outputs (PopXL addons' `autodiff_with_accumulation`). A
/// by-reference float32 scalar input "mean_accum_counter", k, counts the calls: each call sets
/// a ← a + (g − a)·(1/(k + 1)) for every accumulator a, then k ← k + 1, so after N calls from
/// zeros each accumulator holds the mean of the N gradients; zero the counter (and the
/// accumulators) to start again. The counter, then the accumulators, follow the activations
/// among the gradient graph's inputs: bind them with `GradGraphInfo::accumulators_dict` (the
/// caller creates them, normally variables of zeros). The outputs are the gradients of
/// `grads_required` (default: none), in order.
///
/// The running mean is the one `addons::AccumulationReduction::running_mean` computes, op for
/// op (PopART's fused `accumulate_mean_` computes (1 − w)·a + w·g, equal but for rounding).
///
/// Errors: GraphError for a tensor of `tensors_to_accumulate_grads` that is not an input of
/// `graph`; ValueError for one listed twice or also in `grads_required`, or an empty list;
/// DTypeError for one that is not float32 or float16; and autodiff's.
GradGraphInfo
autodiff_with_accumulation(const Graph& graph,
                           const std::vector<Tensor>& tensors_to_accumulate_grads,
                           std::optional<std::vector<Tensor>> grads_required = std::nullopt);

} // namespace pxl::transforms
