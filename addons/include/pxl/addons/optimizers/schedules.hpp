// pxl::addons::optimizers::schedules: host-side learning-rate schedules and feeding them in.
#pragma once

#include "pxl/core/host_tensor.hpp"
#include "pxl/fwd.hpp"
#include "pxl/ir/tensor.hpp"

#include <cstdint>
#include <functional>

namespace pxl::addons::optimizers::schedules {

/// A learning-rate schedule: the learning rate of step `step` (0-based), computed on the host
/// between runs, as Keras' LearningRateSchedule and PyTorch's schedulers' closed forms.
/// The structs below are Schedules; so is any callable `double(std::int64_t)`.
using Schedule = std::function<double(std::int64_t step)>;

/// PyTorch's StepLR (and Keras' ExponentialDecay with staircase=True):
/// initial · gamma^⌊step / step_size⌋.
///
///     StepDecay{.initial = 0.1, .step_size = 30, .gamma = 0.1}   // 0.1, ×0.1 every 30 steps
///
/// ValueError (when called) for step_size < 1 or a negative step.
struct StepDecay {
  double initial = 0.1;
  std::int64_t step_size = 1;
  double gamma = 0.1;
  double operator()(std::int64_t step) const;
};

/// Cosine decay from `initial` to `final_value` over `decay_steps`, then constant:
/// final + (initial − final) · (1 + cos(π · min(step, decay_steps) / decay_steps)) / 2.
/// PyTorch's CosineAnnealingLR (T_max = decay_steps, eta_min = final_value) over its first
/// half-period, and Keras' CosineDecay (alpha = final_value / initial), which also holds the
/// final value past decay_steps. ValueError (when called) for decay_steps < 1 or a negative
/// step.
struct CosineDecay {
  double initial = 0.1;
  std::int64_t decay_steps = 1;
  double final_value = 0.0;
  double operator()(std::int64_t step) const;
};

/// A linear warm-up in front of another schedule: for step < `steps` the rate rises linearly
/// from start_factor · after(0) to after(0),
/// after(0) · (start_factor + (1 − start_factor) · step / steps), then it is
/// after(step − steps): PyTorch's LinearLR(start_factor, 1.0, total_iters = steps) followed by
/// `after` (SequentialLR, milestone `steps`); Keras' CosineDecay warm-up with
/// initial_learning_rate = start_factor · warmup_target.
///
///     LinearWarmup{.steps = 100, .after = CosineDecay{.initial = 1e-3, .decay_steps = 900}}
///
/// ValueError (when called) for steps < 1, start_factor outside [0, 1], an empty `after` or a
/// negative step.
struct LinearWarmup {
  std::int64_t steps = 1;
  Schedule after;
  double start_factor = 0.0;
  double operator()(std::int64_t step) const;
};

/// Writes `value` into the learning-rate variable `lr` (a float32 scalar main-graph variable,
/// what `.lr = lr` reads) of `session`, between runs; returns it as stored (rounded to
/// float32). ValueError for a tensor that is not a variable, DTypeError / ShapeError for one
/// that is not a float32 scalar; Session::write_variable_data's errors otherwise.
double write_learning_rate(Session& session, const Tensor& lr, double value);
/// Writes `schedule(step)`: call it before the run that makes step `step`.
///
///     for (std::int64_t step = 0; step < steps; ++step) {
///       write_learning_rate(session, lr, schedule, step);
///       session.run(...);
///     }
double write_learning_rate(Session& session, const Tensor& lr, const Schedule& schedule,
                           std::int64_t step);

/// The rates of steps first, ..., first + count − 1 as a float32 HostTensor of shape (count,):
/// the array of a scalar h2d stream loaded once per step over `count` host transfers, so a
/// device loop of `count` steps gets a rate per step (ValueError for count < 1).
HostTensor learning_rates(const Schedule& schedule, std::int64_t first, std::int64_t count);

} // namespace pxl::addons::optimizers::schedules
