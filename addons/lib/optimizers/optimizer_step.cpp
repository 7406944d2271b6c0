// Operand checks shared by every optimizer step.
#include "pxl/addons/optimizers/optimizer_step.hpp"

namespace pxl::addons::optimizers::impl {

void check_step_operands(std::string_view who, const TensorSpec& var, const TensorSpec& grad) {
  const std::string prefix = std::string(who) + ": ";
  if (!is_floating_point(var.dtype))
    throw DTypeError(prefix + "can only update float32 or float16 variables, got a variable " +
                     pxl::to_string(var));
  if (grad.dtype != var.dtype)
    throw DTypeError(prefix + "the gradient must have the variable's dtype " +
                     std::string(pxl::name(var.dtype)) + ", got gradient " + pxl::to_string(grad) +
                     " for variable " + pxl::to_string(var) + " (cast the gradient)");
  if (grad.shape != var.shape)
    throw ShapeError(prefix + "the gradient must have the variable's shape " +
                     pxl::to_string(var.shape) + ", got gradient " + pxl::to_string(grad) +
                     " for variable " + pxl::to_string(var));
}

} // namespace pxl::addons::optimizers::impl
