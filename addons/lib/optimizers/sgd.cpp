// SGD step.
#include "pxl/addons/optimizers/sgd.hpp"

#include "update.hpp"

#include "pxl/ops/var_updates.hpp"

#include <sstream>

namespace pxl::addons::optimizers {

SGD::SGD(SGDOptions o) : options(o) {
  auto fail = [](const char* what, double v) {
    std::ostringstream os;
    os << "SGD: " << what << " must be >= 0, got " << v;
    throw ValueError(os.str());
  };
  impl::check_learning_rate("SGD", o.lr);
  if (!(o.momentum >= 0.0))
    fail("momentum", o.momentum);
  if (!(o.weight_decay >= 0.0))
    fail("weight_decay", o.weight_decay);
  if (o.nesterov && o.momentum == 0.0)
    throw ValueError("SGD: nesterov needs a momentum > 0, got momentum 0");
}

void SGD::build(const Tensor& var, const Tensor& grad) {
  impl::check_step_operands(graph_name(), var.spec(), grad.spec());
  impl::check_learning_rate_graph(graph_name(), options.lr);
  const auto& o = options;
  Tensor g = o.weight_decay != 0.0 ? pxl::ops::scaled_add(grad, var, {.b = o.weight_decay}) : grad;
  Tensor step = g;
  if (o.momentum != 0.0) {
    Tensor v = add_variable_input("momentum", init::zeros(var.shape()), var.dtype(),
                                  /*by_ref=*/true);
    v = pxl::ops::scaled_add_(v, g, {.a = o.momentum});
    step = o.nesterov ? pxl::ops::scaled_add(g, v, {.b = o.momentum}) : v;
  }
  // Created after every read of `var` above, so the schedule (creation order) reads the old
  // weights for the weight decay.
  impl::subtract_scaled_(var, step, o.lr);
}

} // namespace pxl::addons::optimizers
