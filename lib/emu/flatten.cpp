#include "flatten.hpp"

#include "pxl/core/error.hpp"
#include "pxl/ir/attrs.hpp"
#include "pxl/ir/op_kind.hpp"

#include <algorithm>
#include <unordered_map>

namespace pxl::emu::detail {

using pxl::TensorKind;
using pxl::detail::GraphNode;
using pxl::detail::OpNode;

namespace {

/// Tensor -> value within one (inlined) instance of a graph.
using Env = std::unordered_map<Index, std::size_t>;

class Flattener {
public:
  explicit Flattener(const IrStorage& ir) : ir_(ir) {}

  FlatSchedule run(std::uint32_t g) {
    const GraphNode& node = ir_.graphs[g];
    Env env;
    for (const auto id : node.inputs) {
      const Index t = id.value;
      env[t] = add_value(t);
      out_.inputs.push_back(env[t]);
    }
    expand(g, env);
    for (const auto t : node.outputs)
      out_.outputs.push_back(value_of(env, t.value));
    return std::move(out_);
  }

private:
  std::size_t add_value(Index t, bool is_static = false) {
    const auto& tn = ir_.tensors[t];
    out_.values.push_back({t, static_cast<std::int64_t>(tn.spec.nbytes()), tn.ipu, is_static});
    return out_.values.size() - 1;
  }

  std::size_t value_of(const Env& env, Index t) {
    if (auto it = env.find(t); it != env.end())
      return it->second;
    const auto kind = ir_.tensors[t].kind;
    PXL_ASSERT(kind == TensorKind::variable || kind == TensorKind::constant);
    if (auto it = statics_.find(t); it != statics_.end())
      return it->second;
    return statics_[t] = add_value(t, true);
  }

  /// A fresh value holding a copy of `from`, named after tensor `t`.
  std::size_t copy_of(std::size_t from, Index t) {
    const std::size_t v = add_value(t);
    out_.steps.push_back({flat_copy, {from}, {v}, out_.values[v].ipu});
    return v;
  }

  void expand(std::uint32_t g, Env& env) {
    for (const auto id : ir_.graphs[g].ops) {
      const Index o = id.value;
      const OpNode& op = ir_.ops[o];
      if (const auto* c = std::get_if<CallAttrs>(&op.attrs);
          c && op.kind == OpKind::Call && c->inline_graph) {
        inline_call(op, c->graph, env);
        continue;
      }
      FlatStep step{o, {}, {}, op.ipu};
      for (const auto t : op.inputs)
        step.inputs.push_back(value_of(env, t.value));
      for (std::size_t k = 0; k < op.outputs.size(); ++k) {
        const bool aliases_input = k == 0 && is_inplace(op.kind) && !step.inputs.empty();
        const std::size_t v = aliases_input ? step.inputs[0] : add_value(op.outputs[k].value);
        env[op.outputs[k].value] = v;
        step.outputs.push_back(v);
      }
      out_.steps.push_back(std::move(step));
    }
  }

  /// Per input of graph `g`: whether running `g` may change it (an in-place op on it or on
  /// an alias of it, or passing it by reference to a call).
  std::vector<bool> written_inputs(std::uint32_t g) const {
    const GraphNode& node = ir_.graphs[g];
    std::unordered_map<Index, std::size_t> input_of;
    for (std::size_t i = 0; i < node.inputs.size(); ++i)
      input_of[node.inputs[i].value] = i;
    std::vector<bool> written(node.inputs.size(), false);
    for (const auto o : node.ops) {
      const OpNode& op = ir_.op(o);
      auto mark = [&](std::size_t k) {
        if (auto it = input_of.find(op.inputs[k].value); it != input_of.end())
          written[it->second] = true;
      };
      if (is_inplace(op.kind) && !op.inputs.empty()) {
        mark(0);
        if (auto it = input_of.find(op.inputs[0].value); it != input_of.end())
          input_of[op.outputs[0].value] = it->second;
      }
      if (const auto* c = std::get_if<CallAttrs>(&op.attrs)) {
        const auto& by_ref = ir_.graphs[c->graph].input_by_ref;
        for (std::size_t k = 0; k < op.inputs.size() && k < by_ref.size(); ++k)
          if (by_ref[k])
            mark(k);
      }
    }
    return written;
  }

  void inline_call(const OpNode& op, std::uint32_t g, Env& env) {
    const GraphNode& callee = ir_.graphs[g];
    const std::size_t first_own = out_.values.size(); // values before this belong to the caller
    std::vector<std::size_t> bound;
    for (const auto t : op.inputs)
      bound.push_back(value_of(env, t.value));
    const std::vector<bool> written = written_inputs(g);
    Env inner;
    for (std::size_t i = 0; i < bound.size(); ++i) {
      const bool by_ref = i < callee.input_by_ref.size() && callee.input_by_ref[i];
      // A by-value input must not see writes: neither its own nor those through another
      // input bound to the same caller tensor.
      bool copy = false;
      for (std::size_t j = 0; j < bound.size() && !by_ref; ++j)
        copy = copy || (written[j] && bound[j] == bound[i]);
      inner[callee.inputs[i].value] = copy ? copy_of(bound[i], callee.inputs[i].value) : bound[i];
    }
    expand(g, inner);
    std::vector<std::size_t> given;
    for (std::size_t k = 0; k < op.outputs.size(); ++k) {
      std::size_t v = value_of(inner, callee.outputs[k].value);
      if (v < first_own || std::find(given.begin(), given.end(), v) != given.end())
        v = copy_of(v, op.outputs[k].value);
      given.push_back(v);
      env[op.outputs[k].value] = v;
    }
  }

  const IrStorage& ir_;
  FlatSchedule out_;
  std::unordered_map<Index, std::size_t> statics_; ///< variable/constant tensor -> value
};

} // namespace

FlatSchedule flatten(const IrStorage& ir, std::uint32_t graph) { return Flattener(ir).run(graph); }

} // namespace pxl::emu::detail
