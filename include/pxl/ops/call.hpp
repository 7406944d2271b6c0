// Calling subgraphs: call, call_with_info, repeat and the CallSiteInfo that maps a call site;
// conditional and its ConditionalSiteInfo.
#pragma once

#include "pxl/ir/graph.hpp"
#include "pxl/ir/op.hpp"

#include <optional>
#include <utility>
#include <vector>

namespace pxl {

/// Binds graph inputs (tensors of the called graph) to parent tensors.
using InputsDict = std::vector<std::pair<Tensor, Tensor>>;

/// What a call site connects: the called graph's inputs/outputs and the parent's.
class CallSiteInfo {
public:
  CallSiteInfo() = default;
  explicit CallSiteInfo(Op call_op);

  Op op() const { return op_; }
  Graph called_graph() const;
  /// Parent tensors, one per graph input, in the graph's input order.
  std::vector<Tensor> inputs() const { return op_.inputs(); }
  /// Parent tensors, one per graph output.
  std::vector<Tensor> outputs() const { return op_.outputs(); }
  Tensor parent_input(std::size_t i) const { return op_.input(i); }
  Tensor parent_output(std::size_t i) const { return op_.output(i); }
  /// The parent tensor connected to a graph input or output; GraphError if neither.
  Tensor graph_to_parent(const Tensor& graph_tensor) const;
  /// The graph input (first occurrence) or output fed by / feeding a parent tensor.
  Tensor parent_to_graph(const Tensor& parent_tensor) const;
  /// Graph inputs bound to each parent input (`{graph input, parent tensor}`).
  InputsDict inputs_dict() const;

private:
  Op op_;
};

/// What a conditional connects: the condition, each branch's graph and the parent tensors bound
/// to its inputs, and the outputs (those of the branch taken).
class ConditionalSiteInfo {
public:
  ConditionalSiteInfo() = default;
  explicit ConditionalSiteInfo(Op conditional_op);

  Op op() const { return op_; }
  Tensor condition() const { return op_.input(0); }
  Graph then_graph() const;
  Graph else_graph() const;
  /// Parent tensors bound to the then-branch's inputs, in its input order.
  std::vector<Tensor> then_inputs() const;
  /// Parent tensors bound to the else-branch's inputs, in its input order.
  std::vector<Tensor> else_inputs() const;
  std::vector<Tensor> outputs() const { return op_.outputs(); }

private:
  Op op_;
};

namespace ops {

/// How a call site is compiled. An aggregate:
///
///     auto y = ops::call(g, {x}, {}, {.inline_graph = true});
struct CallOptions {
  /// false (the default): the graph is outlined, i.e. compiled once for all its call sites and
  /// called with argument copies (least code). true: this call site gets its own copy of the
  /// graph's ops, scheduled in the caller and working on the caller's tensors directly (no
  /// argument copies; the code is paid once per inlined call site). Results are the same;
  /// autodiff gives the gradient call the same choice.
  bool inline_graph = false;
};

/// Runs `graph` with `inputs` bound to its first inputs, in order, and `inputs_dict` to the
/// rest; returns its outputs. Every graph input must be bound exactly once.
std::vector<Tensor> call(const Graph& graph, const std::vector<Tensor>& inputs,
                         const InputsDict& inputs_dict = {}, CallOptions options = {});
CallSiteInfo call_with_info(const Graph& graph, const std::vector<Tensor>& inputs,
                            const InputsDict& inputs_dict = {}, CallOptions options = {});
/// Runs `graph` `count` (≥ 1) times; between iterations its N outputs are copied to its
/// first N inputs (N ≤ number of inputs). Returns the outputs of the last iteration.
std::vector<Tensor> repeat(const Graph& graph, std::int64_t count,
                           const std::vector<Tensor>& inputs, const InputsDict& inputs_dict = {});
CallSiteInfo repeat_with_info(const Graph& graph, std::int64_t count,
                              const std::vector<Tensor>& inputs,
                              const InputsDict& inputs_dict = {});

/// PopXL's `conditional`: runs `then_branch` when `condition` (a bool_ tensor of one element)
/// is true at run time, `else_branch` otherwise, and returns the outputs of the branch taken.
/// Each branch's inputs are bound as `call` binds them; the branches must return as many
/// outputs, of equal shapes and dtypes. A by-ref input a branch writes is changed in the
/// parent only when that branch runs. Replicas decide for themselves: each reads its own
/// condition. A branch may not load from or store to host streams or run collectives (a
/// replica that skips the branch would leave its stream or its peers waiting): the Session
/// refuses such a program with a GraphError.
std::vector<Tensor> conditional(const Tensor& condition, const Graph& then_branch,
                                const Graph& else_branch,
                                const std::vector<Tensor>& then_inputs = {},
                                const std::vector<Tensor>& else_inputs = {},
                                const InputsDict& then_inputs_dict = {},
                                const InputsDict& else_inputs_dict = {});
ConditionalSiteInfo conditional_with_info(const Tensor& condition, const Graph& then_branch,
                                          const Graph& else_branch,
                                          const std::vector<Tensor>& then_inputs = {},
                                          const std::vector<Tensor>& else_inputs = {},
                                          const InputsDict& then_inputs_dict = {},
                                          const InputsDict& else_inputs_dict = {});

} // namespace ops
} // namespace pxl
