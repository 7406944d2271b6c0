// pxl::addons::optimizers::OptimizerStep: the base of optimizer modules (var by ref, grad).
#pragma once

#include "pxl/addons/module/module.hpp"
#include "pxl/addons/optimizers/learning_rate.hpp"

#include <concepts>
#include <string_view>
#include <utility>
#include <vector>

namespace pxl::addons::optimizers {

// impl: what the templates here call out of line. Exported, since the templates are
// instantiated in users' code, but not API (`detail` namespaces are private to the binary).
namespace impl {
/// Checks that `grad` fits `var`: DTypeError unless var is float32/float16 and grad has its
/// dtype, ShapeError unless the shapes are equal. `who` names the optimizer in the message.
void check_step_operands(std::string_view who, const TensorSpec& var, const TensorSpec& grad);

/// Whether a step module's options hold a LearningRate `lr` (SGD, Adam, AdamW, RMSprop).
template <typename M>
concept HasLearningRate = requires(M& m) {
  { m.options.lr } -> std::convertible_to<LearningRate>;
};
} // namespace impl

/// A Module whose graph updates one variable in place from its gradient (popxl.addons'
/// AdamOptimizerStep pattern). `Derived` implements `void build(Tensor var, Tensor grad)`,
/// updating `var` with in-place ops and declaring its state with by-ref
/// `add_variable_input`s. The traced graph has two positional inputs, `var` (by reference:
/// the update reaches the caller's variable) then `grad`, followed by the state as named,
/// by-ref inputs, and no outputs. When the options' learning rate is a tensor, the graph
/// takes it as a third positional input, "lr" (a float32 scalar, by value), and `build` reads
/// that input through `options.lr`; `lr_inputs()` gives the caller's tensor to pass for it.
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
    // A copy is traced so that a tensor learning rate can be replaced by the graph's input.
    Derived traced = static_cast<const Derived&>(*this);
    Graph g = ir.create_graph(this->graph_name(), [&traced, &var, &grad] {
      Tensor v = graph_input(var, "var", /*by_ref=*/true);
      Tensor gr = graph_input(grad, "grad");
      if constexpr (impl::HasLearningRate<Derived>) {
        if (LearningRate(traced.options.lr).is_tensor())
          traced.options.lr = graph_input(TensorSpec{{}, float32}, "lr");
      }
      traced.build(v, gr);
    });
    auto frame = trace.take();
    return {std::move(frame.factories), GraphWithNamedArgs(g, std::move(frame.args))};
  }
  /// As above, with the specs of `var` and `grad` (what GraphCache calls).
  Result create_graph(const Tensor& var, const Tensor& grad) {
    return create_graph(var.spec(), grad.spec());
  }

  /// The positional inputs a call of the step graph takes after the variable and the gradient:
  /// the learning rate tensor when the options hold one, else nothing.
  std::vector<Tensor> lr_inputs() const {
    if constexpr (impl::HasLearningRate<Derived>) {
      const LearningRate lr = static_cast<const Derived&>(*this).options.lr;
      if (lr.is_tensor())
        return {lr.tensor()};
    }
    return {};
  }
};

} // namespace pxl::addons::optimizers
