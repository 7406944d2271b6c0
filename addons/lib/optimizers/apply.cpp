// What optimizers::apply and apply_with_state call out of line: their errors, and a step call
// with on-chip or remote state.
#include "pxl/addons/optimizers/apply.hpp"

#include "pxl/addons/training/remote.hpp"
#include "pxl/addons/training/rts.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ir/remote_buffer.hpp"
#include "pxl/ops/var_updates.hpp"

namespace pxl::addons::optimizers::impl {

ApplyGraph apply_graph() {
  if (current_graph().is_main())
    return ApplyGraph::main;
  // No factories: adds nothing, and throws GraphError when no Module is being traced.
  try {
    add_variable_inputs(state_prefix, NamedVariableFactories{});
  } catch (const GraphError&) {
    return ApplyGraph::plain;
  }
  return ApplyGraph::traced;
}

NamedTensors state_inputs_for(const NamedVariableFactories& factories, const std::string& key) {
  if (factories.keys_flat().empty())
    return {};
  const Graph here = current_graph();
  NamedTensors variables;
  {
    auto in_main = here.ir().main_graph().scope();
    variables = factories.init(key);
  }
  NamedTensors inputs;
  for (const auto& [name, v] : variables.items())
    inputs.insert(name, graph_input_for(v, key + "." + name));
  return inputs;
}

void missing_grad(const std::string& key, const Tensor& var) {
  throw ValueError("optimizers::apply: no gradient for variable '" + key + "' (" + var.id() +
                   "); pass a gradient for every variable, or filter the variables with "
                   "filter_keys");
}

void missing_state(const std::string& key) {
  throw ValueError("optimizers::apply_with_state: no state for variable '" + key +
                   "'; create it from state_factories(optimizer, vars) under '" + key +
                   ".<state>'");
}

void call_step(const GraphWithNamedArgs& step, const NamedTensors& state,
               const std::vector<Tensor>& inputs, bool outline) {
  // An outlined step copies its arguments in and the by-ref ones back: on the emulator those
  // copies cost more than the update's own passes over memory.
  const CallArgs how{.options = {.inline_graph = !outline}};
  const auto values = state.values_flat();
  if (values.empty() || !remote_entry(values.front())) {
    step.bind(state).call(inputs, how);
    return;
  }
  const NamedTensors loaded = load_remote(state);
  step.bind(loaded).call(inputs, how); // updates the loaded state in place
  store_remote(state, loaded);
}

std::optional<ShardedInputs> shard_inputs(const Tensor& var, const Tensor& grad) {
  if (var.graph().ir().replication_factor() == 1)
    return std::nullopt;
  if (grad.spec() != var.spec())
    throw ShapeError("optimizers: the gradient " + to_string(grad.spec()) + " of '" + var.id() +
                     "' " + to_string(var.spec()) + " does not match it");
  return ShardedInputs{rts::shard(var), rts::shard(grad)};
}

NamedVariableFactories sharded_state(NamedVariableFactories whole,
                                     const NamedVariableFactories& shard, const Tensor& var) {
  const std::int64_t replicas = var.graph().ir().replication_factor();
  const TensorSpec var_shard = replica_sharded_spec(var.spec(), replicas);
  for (const auto& [key, factory] : shard.items())
    if (factory.spec().shape == var_shard.shape && whole.at(key).initializer.shape == var.shape())
      whole.at(key).shard_over = replicas;
  return whole;
}

void gather_into(const Tensor& var, const ShardedInputs& shards) {
  pxl::ops::var_updates::copy_var_update_(var, rts::gather(shards.var));
}

} // namespace pxl::addons::optimizers::impl
