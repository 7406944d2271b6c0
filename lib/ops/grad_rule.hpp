// The interface between the autodiff transform and each op's gradient rule. It lives below
// transforms/: gradient rules never include transform headers.
#pragma once

#include "pxl/ir/graph.hpp"
#include "pxl/ir/op.hpp"

#include <vector>

namespace pxl::detail {

/// How to call the gradient graph of a called graph: what each of its inputs expects and
/// what each of its outputs holds (autodiff's GradGraphInfo, reduced to what call sites need).
struct GradCall {
  /// One per gradient-graph input, in order.
  struct Input {
    Tensor fwd_tensor; ///< a tensor of the forward graph
    bool is_grad;      ///< true: the gradient of fwd_tensor (an output); false: its value
  };
  Graph graph;         ///< the gradient graph
  Graph forward_graph; ///< the graph it differentiates
  std::vector<Input> inputs;
  /// One per gradient-graph output: the forward input whose gradient it holds.
  std::vector<Tensor> outputs;
};

/// What a gradient rule may ask while it builds, in the current (gradient) graph, the
/// gradients of one forward op's inputs.
class GradContext {
public:
  virtual ~GradContext() = default;
  /// The forward op being differentiated.
  virtual const Op& op() const = 0;
  /// Forward output `i` (or any tensor no in-place op changes after it is made) made available
  /// in the gradient graph (an activation input).
  virtual Tensor fwd(const Tensor& forward_tensor) = 0;
  /// The value forward input `i` had when the op ran, made available in the gradient graph.
  /// It may differ from `fwd(op().input(i))`: an in-place op scheduled before this one may
  /// have changed the input's buffer since the handle was made, or one after it may change it
  /// before the gradient runs.
  virtual Tensor fwd_input(std::size_t i) = 0;
  Tensor fwd_output(std::size_t i) { return fwd(op().output(i)); }
  /// Gradient of forward output `i`; zeros when nothing flows into it.
  virtual Tensor grad_output(std::size_t i) = 0;
  /// Whether output `i` receives a gradient.
  virtual bool has_grad_output(std::size_t i) const = 0;
  /// Whether the gradient of forward input `i` is needed.
  virtual bool needs_grad(std::size_t i) const = 0;
  /// The gradient graph of a called graph (built on first use, or taken from the caller).
  virtual GradCall called_grad(const Graph& called, std::vector<Tensor> grads_provided,
                               std::vector<Tensor> grads_required) = 0;
};

/// A gradient rule returns one tensor per forward input: its gradient, or an empty Tensor.
using GradRule = std::vector<Tensor> (*)(GradContext&);

// One rule per differentiable op kind (op_flags::Grad in its row), in lib/ops/<family>_grad.cpp.
// A gradient through any other kind is a GraphError (not_differentiable).
#define PXL_X(kind, ...) std::vector<Tensor> grad_##kind(GradContext& ctx);
PXL_OP_TABLE(PXL_X)
#undef PXL_X

/// GraphError: `op` has no gradient rule, but a gradient is required through it.
[[noreturn]] void not_differentiable(const Op& op);

/// Sums `g` over the axes broadcasting added to reach `shape` (the inverse of broadcasting).
Tensor unbroadcast(const Tensor& g, const Shape& shape);
/// `g` broadcast to `shape`.
Tensor expand(const Tensor& g, const Shape& shape);

} // namespace pxl::detail
