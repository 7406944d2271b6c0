// pxl::addons::optimizers::OptimizerStep: the base of optimizer modules (var by ref, grad).
#pragma once

#include "pxl/addons/module.hpp"

#include <string_view>
#include <utility>

namespace pxl::addons::optimizers {

// impl: what the templates here call out of line. Exported, since the templates are
// instantiated in users' code, but not API (`detail` namespaces are private to the binary).
namespace impl {
/// Checks that `grad` fits `var`: DTypeError unless var is float32/float16 and grad has its
/// dtype, ShapeError unless the shapes are equal. `who` names the optimizer in the message.
void check_step_operands(std::string_view who, const TensorSpec& var, const TensorSpec& grad);
} // namespace impl

/// A Module whose graph updates one variable in place from its gradient (popxl.addons'
/// AdamOptimizerStep pattern). `Derived` implements `void build(Tensor var, Tensor grad)`,
/// updating `var` with in-place ops and declaring its state with by-ref
/// `add_variable_input`s. The traced graph has two positional inputs, `var` (by reference:
/// the update reaches the caller's variable) then `grad`, followed by the state as named,
/// by-ref inputs, and no outputs.
///
///     auto [facts, step] = SGD{{.lr = 0.1, .momentum = 0.9}}.create_graph(w, g);
///     auto state = facts.init("w");          // main-graph variable w.momentum
///     step.bind(state).call({w, g});         // w and w.momentum are updated in place
///
/// Calling the module inside another module's build (`opt(w, g)`) inlines the step there.
template <typename Derived>
class OptimizerStep : public Module<Derived> {
public:
  using Result = std::pair<NamedVariableFactories, GraphWithNamedArgs>;

  /// Traces one step for a variable of spec `var` and a gradient of spec `grad` into a new
  /// subgraph of the current graph's Ir. Errors as `impl::check_step_operands`.
  Result create_graph(const TensorSpec& var, const TensorSpec& grad) {
    impl::check_step_operands(this->graph_name(), var, grad);
    Ir& ir = current_graph().ir();
    addons::impl::BuildScope trace;
    // The inputs are made here rather than by tracing Tensor arguments: `var` must be by ref.
    Graph g = ir.create_graph(this->graph_name(), [this, &var, &grad] {
      Tensor v = graph_input(var, "var", /*by_ref=*/true);
      Tensor gr = graph_input(grad, "grad");
      static_cast<Derived&>(*this).build(v, gr);
    });
    auto frame = trace.take();
    return {std::move(frame.factories), GraphWithNamedArgs(g, std::move(frame.args))};
  }
  /// As above, with the specs of `var` and `grad` (what GraphCache calls).
  Result create_graph(const Tensor& var, const Tensor& grad) {
    return create_graph(var.spec(), grad.spec());
  }
};

} // namespace pxl::addons::optimizers
