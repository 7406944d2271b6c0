// pxl::addons::optimizers::apply: one optimizer step for every variable of a model.
#pragma once

#include "pxl/addons/module/graph_cache.hpp"
#include "pxl/addons/optimizers/optimizer_step.hpp"
#include "pxl/ir/scope.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pxl::addons::optimizers {

// impl: what the templates here call out of line. Exported, since the templates are
// instantiated in users' code, but not API (`detail` namespaces are private to the binary).
namespace impl {
/// Where `apply` runs, which decides where its state is declared.
enum class ApplyGraph {
  main,   ///< the main graph: the state is its variables
  traced, ///< a subgraph a Module is tracing: by-ref variable inputs of the trace
  plain,  ///< any other subgraph: main-graph variables, reached through graph_input_for
};
ApplyGraph apply_graph();
/// `factories`' state created as main-graph variables under `key`, and returned as inputs of
/// the current subgraph that its main-graph call sites bind to them (graph_input_for).
NamedTensors state_inputs_for(const NamedVariableFactories& factories, const std::string& key);
/// ValueError naming the variable without a gradient.
[[noreturn]] void missing_grad(const std::string& key, const Tensor& var);
/// ValueError naming the variable without state (apply_with_state).
[[noreturn]] void missing_state(const std::string& key);
/// Calls `step` with `inputs` and its state: tensors of the current graph bound by
/// reference, or remote variables (its first is one), loaded before the call and stored
/// after it. Inlined unless `outline` (ApplyOptions::outline_steps).
void call_step(const GraphWithNamedArgs& step, const NamedTensors& state,
               const std::vector<Tensor>& inputs, bool outline);
/// This replica's shards of a variable and its gradient (ApplyOptions::shard_state).
struct ShardedInputs {
  Tensor var, grad;
};
/// The shards of `var` and `grad` over every replica, or none when the Ir has one replica
/// (nothing to shard). ShapeError / DTypeError for a gradient that does not match `var`.
std::optional<ShardedInputs> shard_inputs(const Tensor& var, const Tensor& grad);
/// `whole` (the state traced on the whole variable) with the state shaped like `var` sharded
/// over every replica, where `shard` (traced on the shards) has its shard.
NamedVariableFactories sharded_state(NamedVariableFactories whole,
                                     const NamedVariableFactories& shard, const Tensor& var);
/// Writes the shards, updated, back into every replica's `var` (all-gathered).
void gather_into(const Tensor& var, const ShardedInputs& shards);
} // namespace impl

/// The key prefix of the optimizer state `apply` declares inside a traced subgraph
/// ("optimizer.fc1.weight.momentum"): a prefix, so that state and variables fit one tree (the
/// leaf "fc1.weight" cannot also hold "fc1.weight.momentum").
inline constexpr std::string_view state_prefix = "optimizer";

/// How `apply` keeps the optimizer's state.
struct ApplyOptions {
  /// In Streaming Memory instead of on the IPU (the TF and PopART recipe for large models):
  /// the state is created as remote variables (NamedVariableFactories::init_remote, one
  /// remote buffer each, named "<key>.<state>" and initialised as on-chip state would be),
  /// loaded before each step and stored back after it. Training is bitwise that of on-chip
  /// state; on-chip memory drops by the state's size, and each step pays its transfers. It
  /// works in any graph, a device loop's body included, with no state inputs to bind: the
  /// state stays in the main graph's remote variables.
  bool offload_state = false;
  /// Replica-shard the state over every replica (ZeRO-1; PopART's
  /// replicated_optimizer_state_sharding): state shaped like its variable is created
  /// replica-sharded (VariableFactory::shard_over, on the IPU or, with offload_state, in
  /// Streaming Memory), each replica steps its shard of the variable with its shard of the
  /// gradient and state, and the updated shards are all-gathered back into the variable.
  /// The gradients must already be equal on every replica (average_across_replicas). Training
  /// is bitwise that of unsharded state; each replica keeps 1/R of the state, and the host
  /// still sees it whole (get_tensor_data, checkpoints). With one replica it changes nothing.
  bool shard_state = false;
  /// Call each step graph outlined: compiled once for all the variables of its spec, and
  /// called with argument copies (the variable, gradient and state copied in, and the variable
  /// and state back out) — the least code. By default each call is inlined
  /// (ops::CallOptions::inline_graph): the step's ops work on the variable and its state where
  /// they live, so an update costs its own passes over memory and no copies. Training is
  /// bitwise the same either way.
  bool outline_steps = false;
};

/// Applies `optimizer` (an OptimizerStep module: SGD, Adam, AdamW, ...) to every variable of
/// `vars` with its gradient in `grads` (keyed by variable, as
/// `GradGraphInfo::fwd_parent_ins_to_grad_parent_outs` returns), in the current graph, in
/// sorted key order. For each variable it traces the step graph once per distinct variable spec
/// (through a GraphCache, so variables of one shape and dtype share one graph), creates the
/// step's state as main-graph variables named "<key>.<state>" ("fc1.weight.momentum"; variable
/// names take the same form) and calls the step, inlined unless `options.outline_steps`, with
/// the variable, its gradient and the state (the variable and the state by reference). Returns
/// the state under those dotted keys (empty for stateless steps): save it with the weights to
/// resume training.
///
///     auto grads = bwd.grads(bwd_call);                 // "fc1.weight" → its gradient
///     auto opt_state = addons::optimizers::apply(
///         addons::optimizers::SGD{{.lr = 0.1, .momentum = 0.9}}, vars, grads);
///
/// A tensor learning rate (`.lr = lr_tensor`) must be a tensor of the current graph; every
/// step call passes it to its step graph.
///
/// Inside a subgraph, a device loop's body say, the state cannot be created there: subgraphs
/// hold no variables. In a subgraph no Module traces (made with create_empty_graph), the
/// state is created as main-graph variables "<key>.<state>" as in the main graph, and the
/// step reads them through by-ref inputs of the subgraph made with graph_input_for, which
/// every call or repeat of it in the main graph binds without being asked (the returned
/// tensors are those inputs), so the loop needs nothing more than its own inputs:
///
///     Graph body = ir.create_empty_graph("body");
///     {
///       auto in_body = body.scope();
///       Tensor w = graph_input(w_var.spec(), "w", /*by_ref=*/true);
///       addons::optimizers::apply(Adam{}, NamedTensors{{"w", w}}, grads_of(w));
///     }
///     ops::repeat(body, steps, {w_var});  // Adam's state bound to "w.first_order", ...
///
/// In a subgraph that a Module is tracing (its `build`), the state is declared instead as
/// by-ref variable inputs of the traced graph, under "optimizer.<key>.<state>"
/// (`state_prefix`; prefixed further by the sub-module being inlined, as any variable input),
/// and the returned tensors are those graph inputs. The trace's factories then hold the state
/// beside the model's variables, so one `init()` creates it all in the main graph and one
/// `bind` passes it all by reference:
///
///     struct TrainStep : addons::Module<TrainStep> {
///       void build(Tensor x) {
///         auto w = add_variable_input("w", init::zeros({4}), float32, /*by_ref=*/true);
///         ... grads ...
///         addons::optimizers::apply(Adam{}, NamedTensors{{"w", w}}, grads);
///       }
///     };
///     auto [facts, step] = TrainStep{}.create_graph(x_spec);
///     auto vars = facts.init();          // w, optimizer.w.first_order, ...
///     auto bound = step.bind(vars).bound();
///     ops::repeat(step.graph(), steps, {}, {bound.begin(), bound.end()});
///
/// With `offload_state` the state is remote in every graph, nothing to bind. Training is bitwise
/// the same in every case: N steps in a device loop equal N runs of one step.
///
/// GraphError for an lr tensor of another graph; ValueError for a variable without a gradient
/// (extra gradients are ignored); DTypeError / ShapeError for a gradient that does not match its
/// variable.
template <typename Optimizer>
NamedTensors apply(Optimizer&& optimizer, const NamedTensors& vars,
                   const std::map<Tensor, Tensor>& grads, ApplyOptions options = {}) {
  const impl::ApplyGraph where =
      options.offload_state ? impl::ApplyGraph::main : impl::apply_graph();
  // One module object for the whole loop: the cache keys graphs by module object and specs.
  std::remove_cvref_t<Optimizer> step_module = optimizer;
  if constexpr (impl::HasLearningRate<std::remove_cvref_t<Optimizer>>)
    impl::check_learning_rate_graph(step_module.graph_name(), step_module.options.lr);
  const std::vector<Tensor> lr_inputs = step_module.lr_inputs();
  GraphCache cache;
  NamedTensors state;
  for (const auto& [key, var] : vars.to_dict()) {
    const auto grad = grads.find(var);
    if (grad == grads.end())
      impl::missing_grad(key, var);
    auto on_its_ipu = ipu(var.ipu()); // the step, its state and their copies sit by the variable
    const auto shards = options.shard_state ? impl::shard_inputs(var, grad->second) : std::nullopt;
    auto [facts, step] = shards ? cache.create_graph(step_module, shards->var, shards->grad)
                                : cache.create_graph(step_module, var, grad->second);
    if (shards)
      facts =
          impl::sharded_state(cache.create_graph(step_module, var, grad->second).first, facts, var);
    std::vector<Tensor> inputs{shards ? shards->var : var, shards ? shards->grad : grad->second};
    inputs.insert(inputs.end(), lr_inputs.begin(), lr_inputs.end());
    const NamedTensors vars_state =
        options.offload_state             ? facts.init_remote(key)
        : where == impl::ApplyGraph::main ? facts.init(key)
        : where == impl::ApplyGraph::traced
            ? add_variable_inputs(std::string(state_prefix) + "." + key, facts)
            : impl::state_inputs_for(facts, key);
    impl::call_step(step, vars_state, inputs, options.outline_steps);
    if (shards)
      impl::gather_into(var, *shards);
    state.insert(key, vars_state);
  }
  return state;
}

/// As above with gradients under the variables' keys (what `GraphWithNamedArgs::grads`
/// returns).
template <typename Optimizer>
NamedTensors apply(Optimizer&& optimizer, const NamedTensors& vars, const NamedTensors& grads,
                   ApplyOptions options = {}) {
  std::map<Tensor, Tensor> by_var;
  for (const auto& [key, var] : vars.items()) {
    if (!grads.is_leaf(key))
      impl::missing_grad(key, var);
    by_var.emplace(var, grads.at(key));
  }
  return apply(optimizer, vars, by_var, options);
}

/// The state `apply` gives `optimizer` for `vars`, as factories under "<key>.<state>", for a
/// graph that can declare none (a device loop's body no Module traces): create it in the
/// main graph (`init("optimizer")`, or `init_remote` to keep it in Streaming Memory), pass
/// on-chip state into the graph by reference like any variable, and step with
/// apply_with_state. Traces each distinct step graph once (they are not run).
template <typename Optimizer>
NamedVariableFactories state_factories(Optimizer&& optimizer, const NamedTensors& vars,
                                       ApplyOptions options = {}) {
  std::remove_cvref_t<Optimizer> step_module = optimizer;
  GraphCache cache;
  NamedVariableFactories factories;
  for (const auto& [key, var] : vars.to_dict()) {
    auto on_its_ipu = ipu(var.ipu());
    auto traced = cache.create_graph(step_module, var, var);
    if (const auto shards = options.shard_state ? impl::shard_inputs(var, var) : std::nullopt)
      traced.first = impl::sharded_state(
          traced.first, cache.create_graph(step_module, shards->var, shards->grad).first, var);
    for (const auto& [name, factory] : traced.first.items())
      factories.insert(key + "." + name, factory);
  }
  return factories;
}

/// As apply, with the state given under "<key>.<state>" (as state_factories names it):
/// tensors of the current graph, which the steps update in place (variables in the main graph,
/// by-ref inputs in a subgraph), or remote variables, loaded before each step and stored
/// after it. With `options.shard_state` (the state made by state_factories with it) the steps
/// run on shards as apply's do. ValueError for a variable without a gradient or without its
/// state.
template <typename Optimizer>
void apply_with_state(Optimizer&& optimizer, const NamedTensors& vars, const NamedTensors& grads,
                      const NamedTensors& state, ApplyOptions options = {}) {
  std::remove_cvref_t<Optimizer> step_module = optimizer;
  if constexpr (impl::HasLearningRate<std::remove_cvref_t<Optimizer>>)
    impl::check_learning_rate_graph(step_module.graph_name(), step_module.options.lr);
  const std::vector<Tensor> lr_inputs = step_module.lr_inputs();
  GraphCache cache;
  for (const auto& [key, var] : vars.to_dict()) {
    if (!grads.is_leaf(key))
      impl::missing_grad(key, var);
    auto on_its_ipu = ipu(var.ipu());
    const Tensor& grad = grads.at(key);
    const auto shards = options.shard_state ? impl::shard_inputs(var, grad) : std::nullopt;
    auto [facts, step] = shards ? cache.create_graph(step_module, shards->var, shards->grad)
                                : cache.create_graph(step_module, var, grad);
    std::vector<Tensor> inputs{shards ? shards->var : var, shards ? shards->grad : grad};
    inputs.insert(inputs.end(), lr_inputs.begin(), lr_inputs.end());
    const bool stateless = facts.keys_flat().empty();
    if (!stateless && !state.contains(key))
      impl::missing_state(key);
    impl::call_step(step, stateless ? NamedTensors{} : NamedTensors(state.sub(key)), inputs,
                    options.outline_steps);
    if (shards)
      impl::gather_into(var, *shards);
  }
}

} // namespace pxl::addons::optimizers
