// Gradient rules of the host IO ops: print_tensor passes the gradient through, printing it
// when asked. host_load and host_store have none (op_flags::NoGrad).
#include "ops/grad_rule.hpp"
#include "pxl/ops/host_io.hpp"

namespace pxl::detail {

std::vector<Tensor> grad_PrintTensor(GradContext& c) {
  const auto& a = c.op().attrs<OpKind::PrintTensor>();
  const Tensor g = c.grad_output(0);
  return {a.print_gradient ? ops::print_tensor(g, "grad " + a.title) : g};
}

} // namespace pxl::detail
