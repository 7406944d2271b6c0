// pxl::transforms::autodiff: the gradient graph of a graph, and how to connect its call sites.
#pragma once

#include "pxl/ir/graph.hpp"
#include "pxl/ops/call.hpp"

#include <map>
#include <optional>
#include <vector>

namespace pxl::transforms {

/// What feeds or leaves a gradient graph: a forward tensor itself (an activation), or the
/// gradient of one.
struct ExpectedConnection {
  enum class Kind : std::uint8_t { fwd, fwd_grad };
  Tensor fwd_tensor;
  Kind kind = Kind::fwd;
  friend bool operator==(const ExpectedConnection&, const ExpectedConnection&) = default;
};

/// An accumulator input of a gradient graph made by `autodiff_with_accumulation`.
struct AccumulatorInput {
  Tensor fwd_tensor; ///< the forward-graph input whose gradient it accumulates
  Tensor input;      ///< the gradient graph's by-reference input "accum.<name>"
  friend bool operator==(const AccumulatorInput&, const AccumulatorInput&) = default;
};

/// The result of autodiff: the gradient graph and the maps that wire it to call sites.
class GradGraphInfo {
public:
  /// The gradient graph.
  Graph graph() const { return graph_; }
  Graph forward_graph() const { return forward_graph_; }
  /// One per gradient-graph input, in order: first the gradients of the forward outputs that
  /// were provided, then the forward tensors (activations) the gradient graph reads. A graph
  /// of `autodiff_with_accumulation` has its accumulator inputs after these
  /// (`mean_accum_counter()`, then `accumulators()`).
  const std::vector<ExpectedConnection>& expected_inputs() const { return expected_inputs_; }
  /// One per gradient-graph output: the gradient of each required forward input.
  const std::vector<ExpectedConnection>& expected_outputs() const { return expected_outputs_; }
  /// Binds the activation inputs of the gradient graph to the tensors of a forward call site
  /// (pass it as `inputs_dict` when calling the gradient graph; the output gradients are the
  /// positional inputs).
  InputsDict inputs_dict(const CallSiteInfo& fwd_call) const;
  /// Forward graph input → the gradient call site's output holding its gradient.
  std::map<Tensor, Tensor> fwd_graph_ins_to_grad_parent_outs(const CallSiteInfo& grad_call) const;
  /// Forward call site's parent input → the gradient call site's output holding its gradient.
  std::map<Tensor, Tensor> fwd_parent_ins_to_grad_parent_outs(const CallSiteInfo& fwd_call,
                                                              const CallSiteInfo& grad_call) const;

  /// `autodiff_with_accumulation`'s by-reference accumulator inputs, one per tensor whose
  /// gradient is accumulated, in the order they were listed (empty for `autodiff`).
  const std::vector<AccumulatorInput>& accumulators() const { return accumulators_; }
  /// The by-reference float32 scalar input "mean_accum_counter" of a graph with accumulators
  /// (the micro-batches accumulated so far); an invalid Tensor without accumulators.
  Tensor mean_accum_counter() const { return counter_; }
  /// Binds the accumulator inputs (pass it as `inputs_dict` with the activations):
  /// `accumulators` maps each forward tensor of `accumulators()` to the caller's accumulator,
  /// `counter` is the caller's counter. ValueError for a forward tensor without an entry, an
  /// entry for a tensor whose gradient is not accumulated, or a graph without accumulators.
  InputsDict accumulators_dict(const std::map<Tensor, Tensor>& accumulators,
                               const Tensor& counter) const;

  GradGraphInfo(Graph graph, Graph forward_graph, std::vector<ExpectedConnection> inputs,
                std::vector<ExpectedConnection> outputs,
                std::vector<AccumulatorInput> accumulators = {}, Tensor counter = {})
      : graph_(graph), forward_graph_(forward_graph), expected_inputs_(std::move(inputs)),
        expected_outputs_(std::move(outputs)), accumulators_(std::move(accumulators)),
        counter_(counter) {}

private:
  Graph graph_, forward_graph_;
  std::vector<ExpectedConnection> expected_inputs_, expected_outputs_;
  std::vector<AccumulatorInput> accumulators_;
  Tensor counter_;
};

struct AutodiffOptions {
  /// Forward outputs whose gradients the caller provides (default: all outputs).
  std::optional<std::vector<Tensor>> grads_provided;
  /// Forward inputs whose gradients are wanted (default: all inputs).
  std::optional<std::vector<Tensor>> grads_required;
  /// Gradient graphs to reuse for graphs called by `graph` (a graph called many times is
  /// differentiated once).
  std::map<Graph, GradGraphInfo> called_graphs_grad_info;
  /// Differentiate a graph that was differentiated before (its activation outputs are reused).
  bool force = false;
};

/// Builds the gradient graph of `graph` (PopXL's `autodiff`). The forward graph gains the
/// activations the gradient graph reads as extra outputs, and every existing call site of it
/// gains matching outputs, so call sites made before or after autodiff can feed the gradient
/// graph through `GradGraphInfo::inputs_dict`. Differentiating one graph twice is a
/// GraphError unless `options.force`. Gradients through a non-differentiable op are a
/// GraphError naming the op; `ops::detach` stops gradients silently.
GradGraphInfo autodiff(const Graph& graph, AutodiffOptions options = {});

/// As `autodiff`, also returning the gradient graphs built for called subgraphs.
std::map<Graph, GradGraphInfo> autodiff_all(const Graph& graph, AutodiffOptions options = {});

} // namespace pxl::transforms
