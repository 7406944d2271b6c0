// RMSprop step.
#include "pxl/addons/optimizers/rmsprop.hpp"

#include "update.hpp"

#include <sstream>

namespace pxl::addons::optimizers {

RMSprop::RMSprop(RMSpropOptions o) : options(o) {
  auto fail = [](const char* what, const char* expected, double v) {
    std::ostringstream os;
    os << "RMSprop: " << what << " must be " << expected << ", got " << v;
    throw ValueError(os.str());
  };
  impl::check_learning_rate("RMSprop", o.lr);
  if (!(o.rho >= 0.0 && o.rho < 1.0))
    fail("rho", "in [0, 1)", o.rho);
  if (!(o.momentum >= 0.0))
    fail("momentum", ">= 0", o.momentum);
  if (!(o.eps > 0.0))
    fail("eps", "> 0", o.eps);
}

void RMSprop::build(const Tensor& var, const Tensor& grad) {
  impl::check_step_operands(graph_name(), var.spec(), grad.spec());
  impl::check_learning_rate_graph(graph_name(), options.lr);
  const auto& o = options;
  using pxl::ops::var_updates::accumulate_;
  using pxl::ops::var_updates::accumulator_scale_;
  auto state = [&](const char* name) {
    return add_variable_input(name, init::zeros(var.shape()), float32, /*by_ref=*/true);
  };
  Tensor ms = state("mean_square");
  Tensor mg = o.centered ? state("mean_grad") : Tensor{};
  Tensor mom = o.momentum != 0.0 ? state("momentum") : Tensor{};

  const Tensor g = impl::as(grad, float32);
  ms = accumulate_(accumulator_scale_(ms, o.rho), g * g, 1.0 - o.rho);
  Tensor second = ms;
  if (o.centered) {
    mg = accumulate_(accumulator_scale_(mg, o.rho), g, 1.0 - o.rho);
    second = ms - mg * mg;
  }
  // One code path for both kinds of lr: a constant is a float32 constant here. Keras adds eps
  // outside the root only without momentum (with it, Keras calls TensorFlow's kernel).
  const bool eps_outside = o.update == RMSpropUpdate::keras && o.momentum == 0.0;
  const Tensor denominator =
      eps_outside ? pxl::ops::sqrt(second) + o.eps : pxl::ops::sqrt(second + o.eps);
  const Tensor increment = o.lr.as_tensor() * g / denominator;
  Tensor delta = increment;
  if (o.momentum != 0.0)
    delta = pxl::ops::add_(accumulator_scale_(mom, o.momentum), increment);
  // Created after every other op, as the last write of `var`.
  pxl::ops::add_(var, impl::as(pxl::ops::negate(delta), var.dtype()));
}

} // namespace pxl::addons::optimizers
