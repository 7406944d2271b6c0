// Errors of optimizers::apply.
#include "pxl/addons/optimizers/apply.hpp"

namespace pxl::addons::optimizers::impl {

void check_apply_in_main_graph() {
  const Graph g = current_graph();
  if (!g.is_main())
    throw GraphError("optimizers::apply: must be called in the main graph, where the "
                     "optimizer state variables are created; the current graph is '" +
                     g.name() + "'");
}

void missing_grad(const std::string& key, const Tensor& var) {
  throw ValueError("optimizers::apply: no gradient for variable '" + key + "' (" + var.id() +
                   "); pass a gradient for every variable, or filter the variables with "
                   "filter_keys");
}

} // namespace pxl::addons::optimizers::impl
