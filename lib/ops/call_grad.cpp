// Gradient rules of call, repeat and conditional: they differentiate the called graph and
// call its gradient graph.
#include "ir/context.hpp"
#include "ops/grad_rule.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/call.hpp"
#include "pxl/ops/shape.hpp"

#include <algorithm>

namespace pxl::detail {

using std::vector;

namespace {
std::size_t position(const vector<Tensor>& ts, const Tensor& t) {
  return static_cast<std::size_t>(std::find(ts.begin(), ts.end(), t) - ts.begin());
}

/// Calls `info`'s gradient graph. `output_grad(k)` is the gradient of the called graph's
/// output k, `fwd_value(t)` the value, in the current graph, of the called graph's tensor t.
/// Returns the gradient of each called-graph input (empty where none).
template <typename OutputGrad, typename FwdValue>
vector<Tensor> call_grad_graph(const GradCall& info, OutputGrad output_grad, FwdValue fwd_value,
                               ops::CallOptions options) {
  const Graph called = info.forward_graph;
  const auto outs = called.outputs();
  const auto ins = called.inputs();
  vector<Tensor> positional;
  InputsDict dict;
  const auto grad_inputs = info.graph.inputs();
  for (std::size_t i = 0; i < info.inputs.size(); ++i) {
    const auto& e = info.inputs[i];
    if (e.is_grad)
      positional.push_back(output_grad(position(outs, e.fwd_tensor)));
    else
      dict.emplace_back(grad_inputs[i], fwd_value(e.fwd_tensor));
  }
  const auto results = ops::call(info.graph, positional, dict, options);
  vector<Tensor> grads(ins.size());
  for (std::size_t j = 0; j < info.outputs.size(); ++j)
    grads[position(ins, info.outputs[j])] = results[j];
  return grads;
}
} // namespace

vector<Tensor> grad_Call(GradContext& c) {
  const Op op = c.op();
  const Graph called = *op.called_graph();
  const GradCall info = c.called_grad(called, {}, {});
  // The called graph may have gained activation outputs; this call site gained them too.
  const auto ins = called.inputs();
  const auto outs = called.outputs();
  return call_grad_graph(
      info, [&](std::size_t k) { return c.grad_output(k); },
      [&](const Tensor& t) {
        if (auto i = position(ins, t); i < ins.size())
          return c.fwd_input(i);
        return c.fwd(op.output(position(outs, t)));
      },
      // An inlined forward call gets an inlined gradient call.
      ops::CallOptions{.inline_graph = op.attrs_as<CallAttrs>().inline_graph});
}

vector<Tensor> grad_Repeat(GradContext& c) {
  // Recompute-based: the forward iterations are replayed in the gradient graph (keeping every
  // iteration's state), then the body's gradient graph runs once per iteration in reverse.
  const Op op = c.op();
  const Graph body = *op.called_graph();
  const auto count = op.attrs_as<CallAttrs>().repeat_count;
  const std::size_t carried = op.num_outputs();
  const GradCall info = c.called_grad(body, {}, {});
  const auto body_ins = body.inputs();
  const auto body_outs = body.outputs();
  vector<Tensor> inputs;
  for (std::size_t k = 0; k < op.num_inputs(); ++k)
    inputs.push_back(c.fwd_input(k));
  vector<vector<Tensor>> states{inputs};
  vector<CallSiteInfo> calls;
  for (std::int64_t it = 0; it < count; ++it) {
    calls.push_back(ops::call_with_info(body, states.back()));
    vector<Tensor> next = states.back();
    for (std::size_t k = 0; k < carried; ++k)
      next[k] = calls.back().parent_output(k);
    states.push_back(std::move(next));
  }
  vector<Tensor> carry_grads(carried);
  for (std::size_t k = 0; k < carried; ++k)
    carry_grads[k] = c.grad_output(k);
  vector<Tensor> other_grads(op.num_inputs());
  for (std::int64_t it = count - 1; it >= 0; --it) {
    const auto& call = calls[static_cast<std::size_t>(it)];
    const auto grads = call_grad_graph(
        info,
        [&](std::size_t k) {
          if (k < carried)
            return carry_grads[k];
          return ops::init(body_outs[k].shape(), body_outs[k].dtype());
        },
        [&](const Tensor& t) { return call.graph_to_parent(t); }, ops::CallOptions{});
    for (std::size_t k = 0; k < op.num_inputs(); ++k) {
      const Tensor zeros_if_none =
          grads[k].valid() ? grads[k] : ops::init(body_ins[k].shape(), body_ins[k].dtype());
      if (k < carried)
        carry_grads[k] = zeros_if_none;
      else if (grads[k].valid())
        other_grads[k] = other_grads[k].valid() ? other_grads[k] + grads[k] : grads[k];
    }
  }
  vector<Tensor> result(op.num_inputs());
  for (std::size_t k = 0; k < op.num_inputs(); ++k)
    result[k] = k < carried ? carry_grads[k] : other_grads[k];
  return result;
}

vector<Tensor> grad_Conditional(GradContext& c) {
  // Recompute-based, as repeat's: the gradient is a conditional on the same condition whose
  // branches each replay their forward branch and run its gradient graph. So only the branch
  // taken runs, forward and backward, and the forward keeps no activations of either branch.
  // Both backward branches return a gradient for every input that needs one (zeros for the
  // other branch's inputs), as a conditional's branches must return the same outputs.
  const Op op = c.op();
  const auto branches = op.called_graphs();
  const std::size_t then_inputs = op.attrs<OpKind::Conditional>().then_inputs;
  const std::size_t first_input[2] = {1, 1 + then_inputs};
  const std::size_t end_input[2] = {1 + then_inputs, op.num_inputs()};
  vector<std::size_t> wanted; // op inputs whose gradient the backward branches return
  for (std::size_t k = 1; k < op.num_inputs(); ++k)
    if (c.needs_grad(k) && is_floating_point(op.input(k).dtype()))
      wanted.push_back(k);
  vector<Tensor> output_grads;
  for (std::size_t k = 0; k < op.num_outputs(); ++k)
    output_grads.push_back(c.grad_output(k));

  vector<Tensor> branch_args[2];
  Graph backward[2];
  for (std::size_t b = 0; b < 2; ++b) {
    const Graph forward = branches[b];
    const GradCall info = c.called_grad(forward, {}, {});
    vector<Tensor> own;
    for (std::size_t k = first_input[b]; k < end_input[b]; ++k)
      own.push_back(c.fwd_input(k));
    // Traced outside the gradient graph's in_sequence scopes, which order its own ops.
    auto& ctx = context();
    auto sequences = std::exchange(ctx.sequences, {});
    try {
      backward[b] = op.graph().ir().create_graph(
          forward.name() + "_branch_grad",
          [&](const vector<Tensor>& inputs, const vector<Tensor>& grads) {
            const CallSiteInfo replay = ops::call_with_info(forward, inputs);
            const auto input_grads = call_grad_graph(
                info, [&](std::size_t k) { return grads[k]; },
                [&](const Tensor& t) { return replay.graph_to_parent(t); }, ops::CallOptions{});
            vector<Tensor> results;
            for (const std::size_t k : wanted) {
              const bool own_input = k >= first_input[b] && k < end_input[b];
              const Tensor g = own_input ? input_grads[k - first_input[b]] : Tensor();
              results.push_back(g.valid() ? g
                                          : ops::init(op.input(k).shape(), op.input(k).dtype()));
            }
            return results;
          },
          own, output_grads);
    } catch (...) {
      ctx.sequences = std::move(sequences);
      throw;
    }
    ctx.sequences = std::move(sequences);
    branch_args[b] = std::move(own);
    branch_args[b].insert(branch_args[b].end(), output_grads.begin(), output_grads.end());
  }
  const auto grads =
      ops::conditional(c.fwd_input(0), backward[0], backward[1], branch_args[0], branch_args[1]);
  vector<Tensor> result(op.num_inputs());
  for (std::size_t j = 0; j < wanted.size(); ++j)
    result[wanted[j]] = grads[j];
  return result;
}

} // namespace pxl::detail
