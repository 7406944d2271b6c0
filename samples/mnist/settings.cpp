// The main job's flags as the Trainer's settings: the model, the CompileOptions and the
// target, each flag checked here rather than by CLI11, so that a mistake gets pxl's message
// and exit code 1.
#include "settings.hpp"

#include "model.hpp"

#include "pxl/core/error.hpp"
#include "pxl/dist.hpp"
#include "pxl/transforms/pipeline.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace mnist {

namespace {

/// What --model's model calls its pipeline's units.
std::string model_units(const Options& o) {
  return o.model == "cnn" ? "the CNN has 4 units: 2 blocks, 2 dense layers"
                          : "the Net has 4 layers";
}

/// --pipeline-schedule's value, else pxl's ValueError.
pxl::transforms::PipelineSchedule parse_schedule(const std::string& s) {
  using pxl::transforms::PipelineSchedule;
  for (const PipelineSchedule schedule :
       {PipelineSchedule::grouped, PipelineSchedule::interleaved, PipelineSchedule::sequential})
    if (pxl::transforms::schedule_name(schedule) == s)
      return schedule;
  throw pxl::ValueError("--pipeline-schedule: expected grouped, interleaved or sequential, got '" +
                        s + "'");
}

/// Checks --pipeline-stages, --device-mapping, --pipeline-schedule and --recompute together.
void check_pipeline(const Options& o) {
  if (o.pipeline_stages < 1 || o.pipeline_stages > Net::layers)
    throw pxl::ValueError("--pipeline-stages: expected 1 to " + std::to_string(Net::layers) + " (" +
                          model_units(o) + "), got " + std::to_string(o.pipeline_stages));
  const pxl::transforms::PipelineSchedule schedule = parse_schedule(o.pipeline_schedule);
  struct NeedsStages {
    const char* flag;
    bool given;
    const char* what;
  };
  const NeedsStages needs_stages[] = {
      {"--device-mapping", !o.device_mapping.empty(), "places pipeline stages on IPUs"},
      {"--pipeline-schedule", schedule != pxl::transforms::PipelineSchedule::grouped,
       "schedules pipeline stages"},
      {"--recompute", o.recompute, "recomputes each pipeline stage's activations"}};
  for (const NeedsStages& n : needs_stages)
    if (n.given && o.pipeline_stages < 2)
      throw pxl::ValueError(std::string(n.flag) + ": " + n.what +
                            " and needs --pipeline-stages 2 or more, got --pipeline-stages " +
                            std::to_string(o.pipeline_stages));
  if (!o.device_mapping.empty() &&
      static_cast<std::int64_t>(o.device_mapping.size()) != o.pipeline_stages)
    throw pxl::ValueError("--device-mapping: expected an IPU for each of the " +
                          std::to_string(o.pipeline_stages) + " stages, got " +
                          std::to_string(o.device_mapping.size()) + " IPUs");
  for (std::size_t k = 0; k < o.device_mapping.size(); ++k)
    if (o.device_mapping[k] < 0 || o.device_mapping[k] >= o.pipeline_stages)
      throw pxl::ValueError(
          "--device-mapping: expected IPUs 0 to " + std::to_string(o.pipeline_stages - 1) +
          ", got IPU " + std::to_string(o.device_mapping[k]) + " for stage " + std::to_string(k));
  if (o.pipeline_stages < 2)
    return;
  const std::int64_t needed =
      min_pipeline_micro_batches(o.pipeline_stages, o.device_mapping, schedule);
  if (o.gradient_accumulation < needed)
    throw pxl::ValueError("--pipeline-stages " + std::to_string(o.pipeline_stages) +
                          ": the pipeline has " + std::to_string(2 * o.pipeline_stages - 1) +
                          " stages (backward ones included) and its " + o.pipeline_schedule +
                          " schedule needs --gradient-accumulation of at least " +
                          std::to_string(needed) + " micro-batches to fill them, got " +
                          std::to_string(o.gradient_accumulation));
}

/// --dtype's value as a DType: float32 or float16, else pxl's ValueError.
pxl::DType parse_dtype(const std::string& s) {
  if (s == "float32")
    return pxl::float32;
  if (s == "float16")
    return pxl::float16;
  throw pxl::ValueError("--dtype: expected float32 or float16, got '" + s + "'");
}

/// The optimizer the flags ask for: SGD (learning rate 0.05 unless given) or Adam (0.001), with
/// the optimizer-state flags checked against it.
pxl::addons::TrainerOptimizer parse_optimizer(const Options& o) {
  if (o.optimizer != "sgd" && o.optimizer != "adam")
    throw pxl::ValueError("--optimizer: expected sgd or adam, got '" + o.optimizer + "'");
  const bool adam = o.optimizer == "adam";
  if (o.offload_optimizer_state && !adam)
    throw pxl::ValueError("--offload-optimizer-state: SGD has no optimizer state to offload; "
                          "use --optimizer adam");
  if (o.shard_optimizer_state && !adam)
    throw pxl::ValueError("--shard-optimizer-state: SGD has no optimizer state to shard; "
                          "use --optimizer adam");
  if (o.shard_optimizer_state && o.replicas < 2)
    throw pxl::ValueError("--shard-optimizer-state: needs --replicas of at least 2 to shard "
                          "the state over, got " +
                          std::to_string(o.replicas));
  if (adam)
    return pxl::addons::optimizers::AdamOptions{.lr = o.learning_rate.value_or(0.001)};
  return pxl::addons::optimizers::SGDOptions{.lr = o.learning_rate.value_or(0.05)};
}

} // namespace

pxl::addons::Trainer make_trainer(const Options& o) {
  if (o.model == "cnn") {
    Cnn cnn(o.available_memory_proportion);
    cnn.stages = o.pipeline_stages;
    cnn.device_mapping = o.device_mapping;
    return pxl::addons::Trainer(cnn);
  }
  Net net;
  net.stages = o.pipeline_stages;
  net.device_mapping = o.device_mapping;
  return pxl::addons::Trainer(net);
}

std::int64_t pipeline_ipus(const Options& o) {
  return o.device_mapping.empty() ? o.pipeline_stages
                                  : 1 + *std::ranges::max_element(o.device_mapping);
}

pxl::addons::CompileOptions compile_options(const Options& o) {
  if (o.replicas < 1)
    throw pxl::ValueError("--replicas: expected at least 1 replica, got " +
                          std::to_string(o.replicas));
  if (o.model != "mlp" && o.model != "cnn")
    throw pxl::ValueError("--model: expected mlp or cnn, got '" + o.model + "'");
  if (o.stochastic_rounding && o.dtype != "float16")
    throw pxl::ValueError(
        "--stochastic-rounding: rounds float16 weights' updates and needs --dtype float16, got "
        "--dtype " +
        o.dtype);
  if (o.matmul_partials_type != "float32" && o.matmul_partials_type != "float16")
    throw pxl::ValueError("--matmul-partials-type: expected float32 or float16, got '" +
                          o.matmul_partials_type + "'");
  if (o.matmul_partials_type == "float16" && o.dtype != "float16")
    throw pxl::ValueError("--matmul-partials-type: float16 partials accumulate float16 products "
                          "and need --dtype float16, got --dtype " +
                          o.dtype);
  if (o.available_memory_proportion &&
      !(*o.available_memory_proportion > 0.0 && *o.available_memory_proportion <= 1.0))
    throw pxl::ValueError("--available-memory-proportion: expected a value in (0, 1], got " +
                          std::to_string(*o.available_memory_proportion));
  static_assert(Net::layers == Cnn::layers);
  check_pipeline(o);
  return {.optimizer = parse_optimizer(o),
          // The Net ends in its last Linear, without a softmax: logits.
          .from_logits = true,
          .metrics = {"accuracy"},
          // The Trainer counts batches per run, as Keras does; the flag counts updates.
          .steps_per_execution = o.steps_per_execution * o.gradient_accumulation,
          .gradient_accumulation = o.gradient_accumulation,
          .replicas = o.replicas,
          .pipeline = o.pipeline_stages > 1,
          .pipeline_schedule = parse_schedule(o.pipeline_schedule),
          .recompute = o.recompute,
          .dtype = parse_dtype(o.dtype),
          .stochastic_rounding = o.stochastic_rounding,
          .matmul_defaults = {.partials_type = parse_dtype(o.matmul_partials_type),
                              .available_memory_proportion =
                                  o.available_memory_proportion.value_or(0.6)},
          .offload_optimizer_state = o.offload_optimizer_state,
          .shard_optimizer_state = o.shard_optimizer_state,
          .constant_learning_rate = true,
          .workers = o.workers,
          .profile = o.profile || !o.trace.empty(),
          .distributed = pxl::dist::is_distributed(),
          .seed = o.seed,
          // One instance writes the reports (every instance runs the same program).
          .report_directory = pxl::dist::instance_index() == 0 ? o.report : std::string()};
}

pxl::emu::Target parse_target(const Options& o) {
  pxl::emu::Target t = pxl::emu::target_named(o.target.value_or("ipu2"));
  t.ipus = pipeline_ipus(o);
  return t;
}

} // namespace mnist
