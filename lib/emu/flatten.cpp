#include "flatten.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/op_kind.hpp"

#include <algorithm>
#include <unordered_map>

namespace pxl::emu::detail {

namespace {

/// Tensor -> value within one (inlined) instance of a graph.
using Env = std::unordered_map<TensorId, std::size_t>;

class Flattener {
public:
  explicit Flattener(const IrView& ir) : ir_(ir) {}

  FlatSchedule run(GraphId g) {
    Env env;
    for (TensorId t : ir_.inputs(g)) {
      env[t] = add_value(t);
      out_.inputs.push_back(env[t]);
    }
    expand(g, env);
    for (TensorId t : ir_.outputs(g))
      out_.outputs.push_back(value_of(env, t));
    return std::move(out_);
  }

private:
  std::size_t add_value(TensorId t, bool is_static = false) {
    out_.values.push_back(
        {t, static_cast<std::int64_t>(ir_.spec(t).nbytes()), ir_.ipu(t), is_static});
    return out_.values.size() - 1;
  }

  std::size_t value_of(const Env& env, TensorId t) {
    if (auto it = env.find(t); it != env.end())
      return it->second;
    const auto kind = ir_.kind(t);
    PXL_ASSERT(kind == TensorKind::variable || kind == TensorKind::constant);
    if (auto it = statics_.find(t); it != statics_.end())
      return it->second;
    return statics_[t] = add_value(t, true);
  }

  /// A fresh value holding a copy of `from`, named after tensor `t`.
  std::size_t copy_of(std::size_t from, TensorId t) {
    const std::size_t v = add_value(t);
    out_.steps.push_back({std::nullopt, {from}, {v}, out_.values[v].ipu, {}});
    return v;
  }

  void expand(GraphId g, Env& env) {
    for (OpId o : ir_.ops(g)) {
      const OpKind kind = ir_.kind(o);
      if (const auto* c = std::get_if<CallAttrs>(&ir_.attrs(o));
          c && kind == OpKind::Call && c->inline_graph) {
        inline_call(o, GraphId{c->graph}, env);
        continue;
      }
      FlatStep step{o, {}, {}, ir_.ipu(o), {}};
      for (TensorId t : ir_.inputs(o))
        step.inputs.push_back(value_of(env, t));
      const auto outputs = ir_.outputs(o);
      for (std::size_t k = 0; k < outputs.size(); ++k) {
        const bool aliases_input = k == 0 && is_inplace(kind) && !step.inputs.empty();
        const std::size_t v = aliases_input ? step.inputs[0] : add_value(outputs[k]);
        env[outputs[k]] = v;
        step.outputs.push_back(v);
      }
      out_.steps.push_back(std::move(step));
    }
  }

  void inline_call(OpId op, GraphId g, Env& env) {
    const auto callee_inputs = ir_.inputs(g), callee_outputs = ir_.outputs(g);
    const auto op_outputs = ir_.outputs(op);
    const std::size_t first_own = out_.values.size(); // values before this belong to the caller
    std::vector<std::size_t> bound;
    for (TensorId t : ir_.inputs(op))
      bound.push_back(value_of(env, t));
    std::vector<bool> written(bound.size());
    for (std::size_t i = 0; i < bound.size(); ++i)
      written[i] = ir_.input_is_written(g, i);
    Env inner;
    for (std::size_t i = 0; i < bound.size(); ++i) {
      const bool by_ref = i < callee_inputs.size() && ir_.input_is_by_ref(g, i);
      // A by-value input must not see writes: neither its own nor those through another
      // input bound to the same caller tensor.
      bool copy = false;
      for (std::size_t j = 0; j < bound.size() && !by_ref; ++j)
        copy = copy || (written[j] && bound[j] == bound[i]);
      inner[callee_inputs[i]] = copy ? copy_of(bound[i], callee_inputs[i]) : bound[i];
    }
    expand(g, inner);
    std::vector<std::size_t> given;
    for (std::size_t k = 0; k < op_outputs.size(); ++k) {
      std::size_t v = value_of(inner, callee_outputs[k]);
      if (v < first_own || std::find(given.begin(), given.end(), v) != given.end())
        v = copy_of(v, op_outputs[k]);
      given.push_back(v);
      env[op_outputs[k]] = v;
    }
  }

  const IrView& ir_;
  FlatSchedule out_;
  std::unordered_map<TensorId, std::size_t> statics_; ///< variable/constant tensor -> value
};

} // namespace

FlatSchedule flatten(const IrView& ir, GraphId graph) { return Flattener(ir).run(graph); }

} // namespace pxl::emu::detail
