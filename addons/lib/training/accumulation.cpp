// Gradient accumulation: accumulator factories, the per-micro-batch accumulation and the
// update-and-reset at the end of a window.
#include "pxl/addons/training/accumulation.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/ops/var_updates.hpp"

#include <algorithm>
#include <map>

namespace pxl::addons {

namespace {

const std::string accumulators_key(accumulator_prefix);
const std::string counter_name(accumulator_counter_key);

/// The per-variable accumulators of `tree` (its "accum" sub-tree), keyed like the variables.
NamedTensors accumulators_of(const NamedTensors& tree, std::string_view fn) {
  if (!tree.contains(accumulators_key) || tree.is_leaf(accumulators_key))
    throw ValueError(std::string(fn) + ": expected the accumulators under '" + accumulators_key +
                     ".<variable>' (as accumulator_factories names them); found keys: " +
                     impl::join_keys(tree.keys_flat()));
  return tree.sub(accumulators_key);
}

/// ValueError unless `a` and `b` have the same leaf keys; names what each side lacks.
void check_same_keys(std::string_view fn, std::string_view a_what, const NamedTensors& a,
                     std::string_view b_what, const NamedTensors& b) {
  std::vector<std::string> only_a, only_b;
  for (const auto& k : a.keys_flat())
    if (!b.is_leaf(k))
      only_a.push_back(k);
  for (const auto& k : b.keys_flat())
    if (!a.is_leaf(k))
      only_b.push_back(k);
  if (only_a.empty() && only_b.empty())
    return;
  auto list = [](const std::vector<std::string>& ks) {
    return ks.empty() ? std::string("none") : impl::join_keys(ks);
  };
  throw ValueError(std::string(fn) + ": the " + std::string(a_what) + " and the " +
                   std::string(b_what) + " must have the same names; " + std::string(a_what) +
                   " without " + std::string(b_what) + ": " + list(only_a) + "; " +
                   std::string(b_what) + " without " + std::string(a_what) + ": " + list(only_b));
}

Tensor cast_to(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : pxl::ops::cast(t, dtype);
}

/// A variable to accumulate the gradient of: its key, shape and IPU (the accumulator's).
struct Accumulated {
  std::string key;
  Shape shape;
  std::int64_t ipu = 0;
};

NamedVariableFactories factories_for(const std::vector<Accumulated>& vars,
                                     const GradientAccumulation& config) {
  config.validate();
  NamedVariableFactories r;
  for (const auto& v : vars)
    r.insert(accumulators_key + "." + v.key, VariableFactory{.initializer = init::zeros(v.shape),
                                                             .dtype = config.dtype,
                                                             .by_ref = true,
                                                             .ipu = v.ipu});
  if (config.reduction == AccumulationReduction::running_mean)
    r.insert(counter_name, VariableFactory{init::zeros({}), float32, true});
  return r;
}

void check_float_variable(const std::string& key, DType dtype) {
  if (!is_floating_point(dtype))
    throw ValueError("accumulator_factories: variable '" + key + "' is " +
                     std::string(name(dtype)) +
                     "; only float32/float16 variables have gradients to accumulate");
}

/// `t` on the IPU of `like`: itself, or a copy there.
Tensor on_ipu_of(const Tensor& like, const Tensor& t) {
  return t.ipu() == like.ipu() ? t : pxl::ops::ipu_copy(t, like.ipu());
}

} // namespace

std::string_view reduction_name(AccumulationReduction reduction) {
  switch (reduction) {
  case AccumulationReduction::sum:
    return "sum";
  case AccumulationReduction::mean:
    return "mean";
  case AccumulationReduction::running_mean:
    return "running_mean";
  }
  return "?";
}

void GradientAccumulation::validate() const {
  if (steps < 1)
    throw ValueError("GradientAccumulation: steps (micro-batches per update) must be >= 1, got " +
                     std::to_string(steps));
  if (!is_floating_point(dtype))
    throw DTypeError("GradientAccumulation: the accumulator dtype must be float32 or float16, "
                     "got " +
                     std::string(name(dtype)));
}

NamedVariableFactories accumulator_factories(const NamedVariableFactories& variables,
                                             const GradientAccumulation& config) {
  std::vector<Accumulated> vars;
  for (const auto& [key, f] : variables.items()) {
    check_float_variable(key, f.dtype);
    vars.push_back({key, f.initializer.shape, f.ipu});
  }
  return factories_for(vars, config);
}

NamedVariableFactories accumulator_factories(const NamedTensors& variables,
                                             const GradientAccumulation& config) {
  std::vector<Accumulated> vars;
  for (const auto& [key, t] : variables.items()) {
    check_float_variable(key, t.dtype());
    vars.push_back({key, t.shape(), t.ipu()});
  }
  return factories_for(vars, config);
}

NamedTensors named_graph_inputs(const NamedTensors& parent, bool by_ref) {
  NamedTensors r;
  for (const auto& [key, t] : parent.items()) {
    auto on = ipu(t.ipu()); // each input where its argument is: the call binds them there
    r.insert(key, graph_input(t.spec(), key, by_ref));
  }
  return r;
}

void accumulate_gradients(const NamedTensors& accumulators, const NamedTensors& grads,
                          const GradientAccumulation& config) {
  constexpr std::string_view fn = "accumulate_gradients";
  config.validate();
  const NamedTensors accums = accumulators_of(accumulators, fn);
  check_same_keys(fn, "gradients", grads, "accumulators", accums);
  const bool running = config.reduction == AccumulationReduction::running_mean;
  if (running && !accumulators.is_leaf(counter_name))
    throw ValueError(std::string(fn) + ": running_mean needs the counter '" + counter_name +
                     "' beside the accumulators (accumulator_factories creates it for "
                     "running_mean)");
  // Check everything before adding any op, so a mistake leaves the graph untouched.
  for (const auto& [key, g] : grads.items()) {
    const Tensor& acc = accums.at(key);
    if (!is_floating_point(g.dtype()))
      throw DTypeError(std::string(fn) + ": gradient '" + key + "' " + to_string(g) +
                       " must be float32 or float16");
    if (g.shape() != acc.shape())
      throw ShapeError(std::string(fn) + ": gradient '" + key + "' " + to_string(g) +
                       " does not have the shape of its accumulator " + to_string(acc));
  }

  // running_mean: 1/(k+1) once, in each accumulator dtype used.
  std::map<DType, Tensor> weight;
  Tensor counter;
  if (running) {
    counter = accumulators.at(counter_name);
    const Tensor w = 1.0 / (cast_to(counter, float32) + 1.0);
    for (const auto& [key, acc] : accums.items())
      if (!weight.contains(acc.dtype()))
        weight.emplace(acc.dtype(), cast_to(w, acc.dtype()));
  }
  for (const auto& [key, grad] : grads.items()) {
    const Tensor& acc = accums.at(key);
    auto on = ipu(acc.ipu()); // where the accumulator, its variable and (autodiff) its gradient are
    const Tensor g = cast_to(grad, acc.dtype());
    switch (config.reduction) {
    case AccumulationReduction::sum:
      pxl::ops::var_updates::accumulate_(acc, g, 1.0);
      break;
    case AccumulationReduction::mean:
      pxl::ops::var_updates::accumulate_(acc, g, 1.0 / static_cast<double>(config.steps));
      break;
    case AccumulationReduction::running_mean:
      // Reads `acc` before the in-place update: ops run in creation order.
      pxl::ops::var_updates::accumulate_(acc, (g - acc) * on_ipu_of(acc, weight.at(acc.dtype())));
      break;
    }
  }
  if (running) {
    auto on = ipu(counter.ipu());
    pxl::ops::var_updates::accumulate_(counter, constant(1.0, counter.dtype()));
  }
}

NamedTensors accumulated_gradients(const NamedTensors& accumulators) {
  return accumulators_of(accumulators, "accumulated_gradients");
}

void reset_accumulators(const NamedTensors& accumulators) {
  const NamedTensors accums = accumulators_of(accumulators, "reset_accumulators");
  for (const auto& [key, acc] : accums.items()) {
    auto on = ipu(acc.ipu());
    pxl::ops::var_updates::accumulator_zero_(acc);
  }
  if (accumulators.is_leaf(counter_name)) {
    auto on = ipu(accumulators.at(counter_name).ipu());
    pxl::ops::var_updates::accumulator_zero_(accumulators.at(counter_name));
  }
}

void apply_accumulated(const NamedTensors& variables, const NamedTensors& accumulators,
                       const AccumulatedUpdate& update) {
  constexpr std::string_view fn = "apply_accumulated";
  const NamedTensors accums = accumulators_of(accumulators, fn);
  check_same_keys(fn, "variables", variables, "accumulators", accums);
  // Every update reads its accumulator before the resets below zero it (creation order).
  for (const auto& [key, var] : variables.items()) {
    auto on = ipu(var.ipu()); // the update runs where its variable is
    update(key, var, cast_to(accums.at(key), var.dtype()));
  }
  reset_accumulators(accumulators);
}

} // namespace pxl::addons
