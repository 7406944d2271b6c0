// Learning-rate schedules and writing them into a Session.
#include "pxl/addons/optimizers/schedules.hpp"

#include "pxl/core/error.hpp"
#include "pxl/session.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <string>

namespace pxl::addons::optimizers::schedules {

namespace {

[[noreturn]] void fail(const char* who, const std::string& what, const std::string& expected,
                       double got) {
  std::ostringstream os;
  os << who << ": " << what << " must be " << expected << ", got " << got;
  throw ValueError(os.str());
}

void check_step(const char* who, std::int64_t step) {
  if (step < 0)
    fail(who, "the step", ">= 0", static_cast<double>(step));
}

} // namespace

double StepDecay::operator()(std::int64_t step) const {
  check_step("StepDecay", step);
  if (step_size < 1)
    fail("StepDecay", "step_size", ">= 1", static_cast<double>(step_size));
  return initial * std::pow(gamma, static_cast<double>(step / step_size));
}

double CosineDecay::operator()(std::int64_t step) const {
  check_step("CosineDecay", step);
  if (decay_steps < 1)
    fail("CosineDecay", "decay_steps", ">= 1", static_cast<double>(decay_steps));
  const double t =
      static_cast<double>(std::min(step, decay_steps)) / static_cast<double>(decay_steps);
  return final_value + (initial - final_value) * (1.0 + std::cos(std::numbers::pi * t)) / 2.0;
}

double LinearWarmup::operator()(std::int64_t step) const {
  check_step("LinearWarmup", step);
  if (steps < 1)
    fail("LinearWarmup", "steps", ">= 1", static_cast<double>(steps));
  if (!(start_factor >= 0.0 && start_factor <= 1.0))
    fail("LinearWarmup", "start_factor", "in [0, 1]", start_factor);
  if (!after)
    throw ValueError("LinearWarmup: `after` must be a schedule, got an empty one (use "
                     "[](std::int64_t) { return lr; } for a constant rate)");
  if (step >= steps)
    return after(step - steps);
  const double f = static_cast<double>(step) / static_cast<double>(steps);
  return after(0) * (start_factor + (1.0 - start_factor) * f);
}

double write_learning_rate(Session& session, const Tensor& lr, double value) {
  if (!lr.valid() || !lr.is_variable())
    throw ValueError(
        "write_learning_rate: the learning rate must be a variable, got " +
        (lr.valid() ? lr.id() + " " + pxl::to_string(lr.spec()) : std::string("an empty Tensor")) +
        " (a stream-fed rate takes learning_rates(...) as its run input)");
  if (lr.dtype() != float32)
    throw DTypeError("write_learning_rate: the learning rate must be a float32 scalar, got " +
                     lr.id() + " " + pxl::to_string(lr.spec()));
  if (lr.rank() != 0)
    throw ShapeError("write_learning_rate: the learning rate must be a float32 scalar, got " +
                     lr.id() + " " + pxl::to_string(lr.spec()));
  const auto stored = static_cast<float>(value);
  session.write_variable_data(lr, HostTensor::scalar(stored));
  return stored;
}

double write_learning_rate(Session& session, const Tensor& lr, const Schedule& schedule,
                           std::int64_t step) {
  if (!schedule)
    throw ValueError("write_learning_rate: the schedule is empty");
  return write_learning_rate(session, lr, schedule(step));
}

HostTensor learning_rates(const Schedule& schedule, std::int64_t first, std::int64_t count) {
  if (count < 1)
    fail("learning_rates", "count", ">= 1", static_cast<double>(count));
  if (!schedule)
    throw ValueError("learning_rates: the schedule is empty");
  HostTensor r({count}, float32);
  for (std::int64_t k = 0; k < count; ++k)
    r.data<float>()[static_cast<std::size_t>(k)] = static_cast<float>(schedule(first + k));
  return r;
}

} // namespace pxl::addons::optimizers::schedules
