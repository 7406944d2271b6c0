// Reference kernels of the call ops: call and repeat.
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
    // Loop-carried: output k of this iteration is input k of the next.
    for (std::size_t k = 0; k < results.size(); ++k)
      args[k] = results[k];
  }
  copy_results(results, outputs);
}

} // namespace pxl::testing
