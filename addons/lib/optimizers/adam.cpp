// Adam and AdamW steps.
#include "pxl/addons/optimizers/adam.hpp"

#include "update.hpp"

#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/var_updates.hpp"

#include <sstream>

namespace pxl::addons::optimizers {

namespace impl {

namespace {
AdamOptions as_adam(const AdamWOptions& o) {
  return {o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.bias_correction, o.first_order_dtype};
}
} // namespace

void check_adam_options(const AdamOptions& o, std::string_view who) {
  auto fail = [&](const char* what, const char* expected, double v) {
    std::ostringstream os;
    os << who << ": " << what << " must be " << expected << ", got " << v;
    throw ValueError(os.str());
  };
  check_learning_rate(who, o.lr);
  if (!(o.beta1 >= 0.0 && o.beta1 < 1.0))
    fail("beta1", "in [0, 1)", o.beta1);
  if (!(o.beta2 >= 0.0 && o.beta2 < 1.0))
    fail("beta2", "in [0, 1)", o.beta2);
  if (!(o.eps > 0.0))
    fail("eps", "> 0", o.eps);
  if (!(o.weight_decay >= 0.0))
    fail("weight_decay", ">= 0", o.weight_decay);
  if (o.first_order_dtype && !is_floating_point(*o.first_order_dtype))
    throw DTypeError(std::string(who) + ": first_order_dtype must be float32 or float16, got " +
                     std::string(pxl::name(*o.first_order_dtype)));
}

void adam_step(const Tensor& var, const Tensor& grad, const AdamOptions& o, bool decoupled,
               std::string_view who) {
  check_step_operands(who, var.spec(), grad.spec());
  check_learning_rate_graph(who, o.lr);
  const DType first_dtype = o.first_order_dtype.value_or(var.dtype());
  Tensor m = add_variable_input("first_order", init::zeros(var.shape()), first_dtype, true);
  Tensor v = add_variable_input("second_order", init::zeros(var.shape()), float32, true);
  Tensor t = add_variable_input("step", init::zeros({}), float32, true);
  namespace vu = pxl::ops::var_updates;

  // PopXL's fused updates, one pass over memory each: the two moments, the updater (bias
  // corrections, the division, AdamW's decay) and the step. Adam's L2 term joins the gradient
  // first, in float32; v is float32 whatever the variable's dtype (float16 squares underflow).
  Tensor g = grad;
  if (!decoupled && o.weight_decay != 0.0)
    g = pxl::ops::scaled_add(as(g, float32), as(var, float32), {.b = o.weight_decay});
  m = vu::accumulate_moving_average_(m, as(g, first_dtype), o.beta1);
  v = vu::accumulate_moving_average_square_(v, as(g, float32), o.beta2);
  // The weight sets the updater's dtype; with AdamW's decay the updater adds weight_decay·w,
  // and w − lr·(u + weight_decay·w) is PyTorch's w·(1 − lr·weight_decay) − lr·u.
  vu::AdamUpdaterOptions u{
      .weight = var, .weight_decay = decoupled ? o.weight_decay : 0.0, .epsilon = o.eps};
  if (o.bias_correction) { // adam_updater counts the step, then corrects with it
    u.time_step = t;
    u.beta1 = o.beta1;
    u.beta2 = o.beta2;
  } else {
    vu::accumulate_(t, constant(1.0, float32));
  }
  subtract_scaled_(var, vu::adam_updater(m, v, u), o.lr);
}

} // namespace impl

Adam::Adam(AdamOptions o) : options(o) { impl::check_adam_options(o, "Adam"); }

void Adam::build(const Tensor& var, const Tensor& grad) {
  impl::adam_step(var, grad, options, /*decoupled=*/false, graph_name());
}

AdamW::AdamW(AdamWOptions o) : options(o) { impl::check_adam_options(impl::as_adam(o), "AdamW"); }

void AdamW::build(const Tensor& var, const Tensor& grad) {
  impl::adam_step(var, grad, impl::as_adam(options), /*decoupled=*/true, graph_name());
}

} // namespace pxl::addons::optimizers
