// Reference kernels of host IO: host_load takes its stream's next element, host_store
// appends to its stream's output, print_tensor prints its line and copies.
#include "reference.hpp"

#include <iostream>

namespace pxl::testing {

void ref_HostLoad(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const>,
                  std::span<HostTensor* const> outputs) {
  *outputs[0] = ev.next_h2d(op.attrs_as<StreamAttrs>().stream);
}

void ref_HostStore(ReferenceEvaluator& ev, const Op& op, std::span<const HostTensor* const> inputs,
                   std::span<HostTensor* const>) {
  ev.push_d2h(op.attrs_as<StreamAttrs>().stream, *inputs[0]);
}

void ref_PrintTensor(ReferenceEvaluator&, const Op& op, std::span<const HostTensor* const> inputs,
                     std::span<HostTensor* const> outputs) {
  std::cout << op.attrs<OpKind::PrintTensor>().title << ": " << *inputs[0] << std::endl;
  *outputs[0] = *inputs[0];
}

} // namespace pxl::testing
