// Reference kernels of the Streaming Memory ops: copies to and from the evaluator's remote
// buffer entries (and a code load, which copies no value).
#include "reference.hpp"

namespace pxl::testing {

namespace {
std::int64_t entry_of(const Op& op, std::span<const HostTensor* const> inputs) {
  const auto& a = op.attrs_as<RemoteAttrs>();
  return a.runtime_offset ? inputs.back()->data<std::int32_t>()[0] : a.offset;
}
} // namespace

void ref_RemoteLoad(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const> inputs,
                    std::span<HostTensor* const> outputs) {
  *outputs[0] = ev.remote_entry(op.attrs_as<RemoteAttrs>().buffer, entry_of(op, inputs));
}

void ref_RemoteLoadInplace(ReferenceEvaluator& ev, const Op& op,
                           std::span<const HostTensor* const> inputs,
                           std::span<HostTensor* const> outputs) {
  *outputs[0] = ev.remote_entry(op.attrs_as<RemoteAttrs>().buffer, entry_of(op, inputs));
}

void ref_RemoteStore(ReferenceEvaluator& ev, const Op& op,
                     std::span<const HostTensor* const> inputs, std::span<HostTensor* const>) {
  ev.remote_entry(op.attrs_as<RemoteAttrs>().buffer, entry_of(op, inputs)) = *inputs[0];
}

// Loading a graph's code changes no value.
void ref_RemoteCodeLoad(ReferenceEvaluator&, const Op&, std::span<const HostTensor* const>,
                        std::span<HostTensor* const>) {}

} // namespace pxl::testing
