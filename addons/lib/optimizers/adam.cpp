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

  // Moments in float32 whatever the variable's dtype (float16 squares underflow).
  Tensor g = as(grad, float32);
  if (!decoupled && o.weight_decay != 0.0)
    g = ops::scaled_add(g, as(var, float32), {.b = o.weight_decay});
  m = ops::scaled_add_(m, as(g, first_dtype), {.a = o.beta1, .b = 1.0 - o.beta1});
  v = ops::scaled_add_(v, g * g, {.a = o.beta2, .b = 1.0 - o.beta2});
  t = ops::var_updates::accumulate_(t, constant(1.0, float32));

  Tensor m_hat = as(m, float32), v_hat = v;
  if (o.bias_correction) {
    // 1 − β^t with t read at run time: the counter lives on the device.
    m_hat = m_hat / (1.0 - ops::pow(constant(o.beta1, float32), t));
    v_hat = v_hat / (1.0 - ops::pow(constant(o.beta2, float32), t));
  }
  Tensor update = m_hat / (ops::sqrt(v_hat) + o.eps);

  Tensor w = var;
  if (decoupled && o.weight_decay != 0.0) {
    if (!o.lr.is_tensor())
      w = ops::var_updates::accumulator_scale_(w, 1.0 - o.lr.value() * o.weight_decay);
    else
      w = ops::var_updates::copy_var_update_(
          w, as(as(w, float32) * (1.0 - o.lr.tensor() * o.weight_decay), var.dtype()));
  }
  subtract_scaled_(w, update, o.lr);
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
