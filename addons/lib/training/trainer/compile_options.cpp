// trainer_detail::check_compile_options: what Trainer::compile refuses, each error naming the
// option and the value it got.
#include "programs.hpp"

#include "pxl/addons/training/metrics.hpp"
#include "pxl/core/error.hpp"
#include "pxl/transforms/pipeline.hpp"

#include <string>
#include <variant>

namespace pxl::addons::trainer_detail {

namespace {

/// Whether the optimizer keeps state (Adam's moments, RMSprop's mean square, SGD's momentum).
bool has_state(const TrainerOptimizer& o) {
  const auto* sgd = std::get_if<optimizers::SGDOptions>(&o);
  return sgd == nullptr || sgd->momentum != 0.0;
}

} // namespace

void check_compile_options(const CompileOptions& o) {
  if (o.steps_per_execution < 1 || o.gradient_accumulation < 1 || o.replicas < 1)
    throw ValueError("Trainer::compile: steps_per_execution, gradient_accumulation and replicas "
                     "must be at least 1, got " +
                     std::to_string(o.steps_per_execution) + ", " +
                     std::to_string(o.gradient_accumulation) + " and " +
                     std::to_string(o.replicas));
  for (const std::string& m : o.metrics)
    if (parse_metric(m) == Metric::mean_loss)
      throw ValueError("Trainer::compile: the loss is always reported; metrics are accuracy or "
                       "sparse_categorical_accuracy, got '" +
                       m + "'");
  if (o.dtype != float32 && o.dtype != float16)
    throw DTypeError("Trainer::compile: dtype must be float32 or float16, got " +
                     std::string(name(o.dtype)));
  if (o.stochastic_rounding && o.dtype != float16)
    throw ValueError("Trainer::compile: stochastic_rounding rounds float16 updates and needs dtype "
                     "float16, got " +
                     std::string(name(o.dtype)));
  if (o.matmul_defaults.partials_type != float32 && o.matmul_defaults.partials_type != float16)
    throw DTypeError("Trainer::compile: matmul_defaults.partials_type must be float32 or "
                     "float16, got " +
                     std::string(name(o.matmul_defaults.partials_type)));
  if (o.matmul_defaults.partials_type == float16 && o.dtype != float16)
    throw ValueError("Trainer::compile: matmul_defaults.partials_type float16 accumulates float16 "
                     "products and needs dtype float16, got " +
                     std::string(name(o.dtype)));
  if (!(o.matmul_defaults.available_memory_proportion > 0.0 &&
        o.matmul_defaults.available_memory_proportion <= 1.0))
    throw ValueError("Trainer::compile: matmul_defaults.available_memory_proportion must be in "
                     "(0, 1], got " +
                     std::to_string(o.matmul_defaults.available_memory_proportion));
  if (o.pipeline_schedule != transforms::PipelineSchedule::grouped && !o.pipeline)
    throw ValueError("Trainer::compile: pipeline_schedule " +
                     std::string(transforms::schedule_name(o.pipeline_schedule)) +
                     " schedules a pipeline's stages and needs pipeline = true");
  if (o.recompute && !o.pipeline)
    throw ValueError("Trainer::compile: recompute recomputes each pipeline stage's activations and "
                     "needs pipeline = true; without pipelining the forward pass would be "
                     "recomputed whole inside its gradient call, costing a forward pass and "
                     "lowering no memory peak");
  if (!(o.loss_scaling > 0))
    throw ValueError("Trainer::compile: loss_scaling must be positive, got " +
                     std::to_string(o.loss_scaling));
  if ((o.offload_optimizer_state || o.shard_optimizer_state) && !has_state(o.optimizer))
    throw ValueError("Trainer::compile: offloading or sharding the optimizer state needs an "
                     "optimizer with state; SGD without momentum has none");
  if (o.shard_optimizer_state && o.replicas < 2)
    throw ValueError("Trainer::compile: shard_optimizer_state needs at least 2 replicas to shard "
                     "over, got " +
                     std::to_string(o.replicas));
  if (o.steps_per_execution % o.gradient_accumulation != 0)
    throw ValueError("Trainer::compile: steps_per_execution counts batches, and a run must end "
                     "on an optimizer step: it must be a multiple of gradient_accumulation " +
                     std::to_string(o.gradient_accumulation) + ", got " +
                     std::to_string(o.steps_per_execution));
  if (o.pipeline && o.gradient_accumulation < 2)
    throw ValueError("Trainer::compile: pipelining runs the micro-batches of an optimizer step "
                     "through the stages; it needs gradient_accumulation of at least 2");
}

} // namespace pxl::addons::trainer_detail
