// Reference kernels of the call ops: call, repeat and conditional.
#include "reference.hpp"

namespace pxl::testing {

namespace {
std::vector<Value> argument_values(ReferenceEvaluator& ev, const Op& op) {
  std::vector<Value> args;
  for (const auto& t : op.inputs())
    args.push_back(ev.value(t));
  return args;
}

void copy_results(const std::vector<Value>& results, std::span<HostTensor* const> outputs) {
  PXL_ASSERT(results.size() == outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i)
    *outputs[i] = *results[i];
}
} // namespace

void ref_Call(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const>,
              std::span<HostTensor* const> outputs) {
  // The parent's storage goes in, so by-ref inputs see in-place updates made inside.
  copy_results(ev.evaluate_values(*op.called_graph(), argument_values(ev, op)), outputs);
}

void ref_Repeat(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const>,
                std::span<HostTensor* const> outputs) {
  const auto count = op.attrs_as<CallAttrs>().repeat_count;
  const Graph graph = *op.called_graph();
  std::vector<Value> args = argument_values(ev, op);
  std::vector<Value> results;
  for (std::int64_t i = 0; i < count; ++i) {
    results = ev.evaluate_values(graph, args);
    // Loop-carried: output k of this iteration is input k of the next (the loop's outputs
    // only: a differentiated body also returns activations).
    for (std::size_t k = 0; k < outputs.size(); ++k)
      args[k] = results[k];
  }
  results.resize(outputs.size());
  copy_results(results, outputs);
}

void ref_Conditional(ReferenceEvaluator& ev, const Op& op,
                     std::span<const HostTensor* const> inputs,
                     std::span<HostTensor* const> outputs) {
  const auto then_inputs = op.attrs<OpKind::Conditional>().then_inputs;
  const bool take_then = inputs[0]->data<bool>()[0];
  const std::vector<Value> all = argument_values(ev, op);
  const auto first = all.begin() + 1 + (take_then ? 0 : then_inputs);
  const auto last = take_then ? all.begin() + 1 + then_inputs : all.end();
  const auto results =
      ev.evaluate_values(op.called_graphs()[take_then ? 0 : 1], std::vector<Value>(first, last));
  // A differentiated branch may have gained activation outputs the conditional does not return.
  PXL_ASSERT(results.size() >= outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i)
    *outputs[i] = *results[i];
}

} // namespace pxl::testing
