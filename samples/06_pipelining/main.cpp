// Lesson 6: pipelining. Keras with IPUs pipelines a Sequential model over two IPUs:
//
//     model = keras.Sequential([Flatten(), Dense(256, relu), Dense(128, relu), Dense(10)])
//     model.set_pipeline_stage_assignment([0, 0, 1, 1])
//     model.set_pipelining_options(gradient_accumulation_steps_per_replica=16)
//
// In pxl the model places its layers with PipelineStages (stage k on IPU k, an ipu_copy where
// an activation crosses), and transforms::pipeline (here through addons::pipelined_execution)
// runs the 16 micro-batches of each update through the stages at once: while IPU 1 works on
// micro-batch m, IPU 0 computes the forward of m + 1 and the backward of m − 1. The backward
// stages follow from the copies (autodiff copies the gradients back), activations wait in
// stashes for their backward stage, and every schedule trains exactly as gradient
// accumulation on one IPU.
#include <pxl/addons.hpp>
#include <pxl/addons/ops/cross_entropy.hpp>
#include <pxl/pxl.hpp>

#include "synthetic_images.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

namespace addons = pxl::addons;
using pxl::transforms::PipelineSchedule;

constexpr std::int64_t batch = 16, micro_batches = 16, updates = 10;
constexpr double learning_rate = 0.05;

struct Model : addons::Module<Model> {
  addons::PipelineStages stages; // stage 0 on IPU 0, stage 1 on IPU 1
  PXL_SUBMODULE(addons::Linear, dense1, 256);
  PXL_SUBMODULE(addons::Linear, dense2, 128);
  PXL_SUBMODULE(addons::Linear, dense3, 10);
  pxl::Tensor build(const pxl::Tensor& images) {
    pxl::Tensor h;
    {
      auto stage0 = stages.stage(0); // Flatten, Dense(256, relu)
      h = pxl::ops::relu(dense1(images.reshape({batch, -1})));
    }
    auto stage1 = stages.stage(1); // Dense(128, relu), Dense(10)
    h = pxl::ops::relu(dense2(addons::PipelineStages::input(h)));
    return dense3(h);
  }
};

struct Trained {
  std::map<std::string, pxl::HostTensor> weights;
  std::optional<pxl::transforms::PipelinedGraph> pipeline;
  double first_loss = 0, last_loss = 0;
  double estimated_seconds = 0;
};

// `updates` SGD updates on the mean gradient of 16 micro-batches, pipelined or not.
Trained train(std::optional<pxl::transforms::PipelineOptions> pipelining) {
  pxl::Ir ir;
  pxl::HostToDeviceStream images, labels;
  pxl::DeviceToHostStream losses;
  addons::NamedTensors vars, state;
  Trained r;
  {
    auto in_main = ir.main_graph().scope();
    images = pxl::h2d_stream({batch, 28, 28}, pxl::float32, "images");
    labels = pxl::h2d_stream({batch}, pxl::int32, "labels");
    losses = pxl::d2h_stream({}, pxl::float32, "loss");
    // Not a structured binding: the lambda below captures the graph (clang 14).
    auto traced = Model{}.create_graph(pxl::TensorSpec{{batch, 28, 28}, pxl::float32});
    const auto& facts = traced.first;
    const auto& fwd = traced.second;
    auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
    vars = facts.init("", 7);
    const addons::GradientAccumulation accumulation{.steps = micro_batches};
    state = vars;
    state.update(addons::accumulator_factories(facts, accumulation).init());
    // One micro-batch: forward, loss and backward; the gradients summed into accumulators.
    auto micro_batch = [&](const addons::NamedTensors& s) {
      const pxl::ops::CallOptions inlined{.inline_graph = true};
      const auto w = s.filter_keys(vars.keys_flat());
      auto fwd_info = fwd.bind(w).call_with_info({pxl::ops::host_load(images)}, {}, {}, inlined);
      const pxl::Tensor logits = fwd_info.outputs()[0];
      auto on_last = pxl::ipu(logits.ipu()); // the loss where the logits are
      auto [loss, dlogits] =
          addons::ops::cross_entropy_with_grad(logits, pxl::ops::host_load(labels));
      pxl::ops::host_store(losses, loss);
      auto bwd_info =
          bwd.call_with_info({dlogits}, {}, bwd.grad_graph_info().inputs_dict(fwd_info), inlined);
      addons::accumulate_gradients(s, bwd.grads(bwd_info), accumulation);
    };
    if (pipelining) {
      r.pipeline = addons::pipelined_execution(state, *pipelining, micro_batch);
    } else {
      pxl::Graph micro = ir.create_empty_graph("micro_batch");
      {
        auto in_micro = micro.scope();
        micro_batch(addons::named_graph_inputs(state));
      }
      pxl::ops::repeat(micro, micro_batches, state.values_flat());
    }
    addons::apply_accumulated(vars, state,
                              [](const std::string&, const pxl::Tensor& w, const pxl::Tensor& g) {
                                pxl::ops::scaled_add_(w, g, {.b = -learning_rate});
                              });
  }
  ir.set_num_host_transfers(micro_batches);
  pxl::Session session(ir, "ipu_model", {.profile = true});
  auto attached = session.attach();
  const auto [x, y] = samples::images({micro_batches, batch}, 1);
  for (std::int64_t u = 0; u < updates; ++u) {
    const pxl::HostTensor step_losses = session.run({{images, x}, {labels, y}}).at(losses);
    const auto l = step_losses.data<float>();
    const double mean = std::accumulate(l.begin(), l.end(), 0.0) / static_cast<double>(l.size());
    (u == 0 ? r.first_loss : r.last_loss) = mean;
  }
  for (const auto& [key, t] : vars.items())
    r.weights.emplace(key, session.get_tensor_data(t));
  r.estimated_seconds = session.profile().seconds() / updates;
  return r;
}

int main() {
  const Trained one_ipu = train(std::nullopt);
  std::printf(
      "Gradient accumulation of %lld micro-batches of %lld: loss fell over %lld updates: %s\n",
      static_cast<long long>(micro_batches), static_cast<long long>(batch),
      static_cast<long long>(updates), one_ipu.last_loss < one_ipu.first_loss ? "yes" : "no");

  const Trained grouped = train(pxl::transforms::PipelineOptions{.steps = micro_batches});
  const auto& p = *grouped.pipeline;
  std::printf("\nPipeline stages: %lld, on IPUs", static_cast<long long>(p.stages));
  for (const auto& ipus : p.stage_ipus)
    std::printf(" %lld", static_cast<long long>(ipus.front()));
  std::printf("  (forward 0 | forward 1, loss, backward 1 | backward 0)\n");
  std::printf("Cycles per update: %lld = %lld to fill + %lld in the loop + %lld to drain\n",
              static_cast<long long>(p.cycles), static_cast<long long>(p.ramp_up_cycles),
              static_cast<long long>(p.main_cycles), static_cast<long long>(p.ramp_down_cycles));
  std::map<std::pair<std::int64_t, std::int64_t>, std::pair<int, std::int64_t>> stashes;
  for (const auto& s : p.stashes) {
    auto& [count, depth] = stashes[{s.from_stage, s.to_stage}];
    ++count;
    depth = std::max(depth, s.depth);
  }
  for (const auto& [stages, stash] : stashes)
    std::printf("Stashed from stage %lld for stage %lld: %d tensor(s), %lld micro-batch(es) deep\n",
                static_cast<long long>(stages.first), static_cast<long long>(stages.second),
                stash.first, static_cast<long long>(stash.second));

  std::printf("\nEvery schedule trains as gradient accumulation on one IPU:\n");
  for (const PipelineSchedule schedule :
       {PipelineSchedule::grouped, PipelineSchedule::interleaved, PipelineSchedule::sequential})
    for (const bool recompute : {false, true}) {
      const Trained t =
          schedule == PipelineSchedule::grouped && !recompute
              ? grouped
              : train(pxl::transforms::PipelineOptions{
                    .steps = micro_batches, .schedule = schedule, .recompute = recompute});
      std::printf("  %-11s%-18s weights bitwise equal: %s; estimated IPU time per update: %.2fx "
                  "one IPU's\n",
                  std::string(pxl::transforms::schedule_name(schedule)).c_str(),
                  recompute ? " (recomputing)" : "", t.weights == one_ipu.weights ? "yes" : "no",
                  t.estimated_seconds / one_ipu.estimated_seconds);
    }
}
