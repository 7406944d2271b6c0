// Pipelined training: a three-layer model split over IPUs, pipelined with every schedule, with
// and without recomputation, trains bitwise as gradient accumulation over the same
// micro-batches on one IPU; concurrent stages and stages sharing an IPU too.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

using namespace pxl;
using addons::NamedTensors;
using transforms::PipelineSchedule;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_pipeline {

constexpr std::int64_t features = 6, hidden = 8, outputs = 3, rows = 4;
constexpr double lr = 0.2;

/// Linear → relu → Linear → relu → Linear, layer k in stage k of `stages` (IPU k by default).
/// `concurrent`: the middle layer is two half-width Linears on IPUs 1 and 2 taking the same
/// input, their outputs concatenated on IPU 3 for the last layer (TF's concurrent stages).
struct Net : addons::Module<Net> {
  addons::PipelineStages stages;
  bool concurrent = false;
  PXL_SUBMODULE(addons::Linear, fc1, hidden);
  PXL_SUBMODULE(addons::Linear, fc2, hidden);
  PXL_SUBMODULE(addons::Linear, fc2a, hidden / 2);
  PXL_SUBMODULE(addons::Linear, fc2b, hidden / 2);
  PXL_SUBMODULE(addons::Linear, fc3, outputs);

  Tensor build(const Tensor& x) {
    Tensor h;
    {
      auto s = stages.stage(0);
      h = ops::relu(fc1(addons::PipelineStages::input(x)));
    }
    if (concurrent) {
      Tensor a, b;
      {
        auto on1 = pipeline_stage(1);
        auto ipu1 = ipu(1);
        a = fc2a(addons::PipelineStages::input(h));
      }
      {
        auto on2 = pipeline_stage(1);
        auto ipu2 = ipu(2);
        b = fc2b(addons::PipelineStages::input(h));
      }
      auto on3 = pipeline_stage(2);
      auto ipu3 = ipu(3);
      h = ops::relu(ops::concat({ops::ipu_copy(a, 3), ops::ipu_copy(b, 3)}, 1));
      return fc3(h);
    }
    {
      auto s = stages.stage(1);
      h = ops::relu(fc2(addons::PipelineStages::input(h)));
    }
    auto s = stages.stage(2);
    return fc3(addons::PipelineStages::input(h));
  }
};

struct Setup {
  std::vector<std::int64_t> mapping{0, 1, 2};
  bool concurrent = false;
  std::optional<transforms::PipelineOptions> pipeline; ///< none: repeat the micro-batch
  std::int64_t micro_batches = 6;
  unsigned workers = 1;
  int updates = 20;
};

struct Trained {
  std::vector<HostTensor> losses; ///< per run: one per micro-batch
  std::map<std::string, HostTensor> weights;
  std::optional<transforms::PipelinedGraph> pipelined;
  emu::MemoryReport memory;
};

HostTensor data(std::int64_t n, Shape element, std::uint64_t seed) {
  element.insert(element.begin(), n);
  return addons::init::normal(0.0, 1.0, element)(float32, seed);
}

/// `updates` SGD updates, each on the gradients of `micro_batches` micro-batches accumulated
/// (mean), the loss (least squares) on the last layer's IPU.
Trained train(const Setup& setup) {
  Ir ir;
  HostToDeviceStream x_in, t_in;
  DeviceToHostStream loss_out;
  NamedTensors vars, state;
  Trained r;
  {
    auto in_main = ir.main_graph().scope();
    x_in = h2d_stream({rows, features}, float32, "x");
    t_in = h2d_stream({rows, outputs}, float32, "t");
    loss_out = d2h_stream({}, float32, "loss");
    Net net;
    net.stages = addons::PipelineStages(setup.mapping);
    net.concurrent = setup.concurrent;
    // Not a structured binding: the lambda below captures the graph (clang 14).
    auto traced = net.create_graph(TensorSpec{{rows, features}, float32});
    const auto& facts = traced.first;
    const auto& fwd = traced.second;
    auto bwd = addons::autodiff(fwd, {.grads_required = fwd.args().values_flat()});
    vars = facts.init("", 3);
    const addons::GradientAccumulation accumulation{.steps = setup.micro_batches};
    state = vars;
    state.update(addons::accumulator_factories(facts, accumulation).init());
    auto micro_batch = [&](const NamedTensors& s) {
      const NamedTensors w = s.filter_keys(vars.keys_flat());
      // Expanded at their call sites, as transforms::pipeline expands them: the emulator then
      // folds each weight gradient's accumulation into its matmul in both programs alike.
      const ops::CallOptions inlined{.inline_graph = true};
      auto fwd_info = fwd.bind(w).call_with_info({ops::host_load(x_in)}, {}, {}, inlined);
      const Tensor y = fwd_info.parent_output(0);
      auto on_last = ipu(y.ipu());
      const Tensor diff = y - ops::host_load(t_in);
      ops::host_store(loss_out, ops::mean(diff * diff));
      auto bwd_info =
          bwd.bind(w).call_with_info({diff * (2.0 / static_cast<double>(rows * outputs))}, {},
                                     bwd.grad_graph_info().inputs_dict(fwd_info), inlined);
      addons::accumulate_gradients(s, bwd.grads(bwd_info), accumulation);
    };
    if (setup.pipeline) {
      r.pipelined = addons::pipelined_execution(state, *setup.pipeline, micro_batch);
    } else {
      Graph micro = ir.create_empty_graph("micro_batch");
      {
        auto in_micro = micro.scope();
        micro_batch(addons::named_graph_inputs(state));
      }
      ops::repeat(micro, setup.micro_batches, state.values_flat());
    }
    addons::apply_accumulated(vars, state,
                              [](const std::string&, const Tensor& w, const Tensor& g) {
                                ops::scaled_add_(w, g, {.b = -lr});
                              });
  }
  ir.set_num_host_transfers(setup.micro_batches);
  Session s(ir, "ipu_model", {.workers = setup.workers, .oversubscribe = true});
  auto attached = s.attach();
  for (int u = 0; u < setup.updates; ++u) {
    // The same micro-batches every update, so the loss falls visibly.
    const std::uint64_t seed = 100;
    r.losses.push_back(s.run({{x_in, data(setup.micro_batches, {rows, features}, seed)},
                              {t_in, data(setup.micro_batches, {rows, outputs}, seed + 1000)}})
                           .at(loss_out));
  }
  for (const auto& [key, t] : vars.items())
    r.weights.emplace(key, s.get_tensor_data(t));
  r.memory = s.memory_report();
  return r;
}

TEST_CASE("A pipelined model trains bitwise as gradient accumulation on one IPU, every schedule") {
  const Trained one = train({.mapping = {0, 0, 0}});
  auto total = [](const HostTensor& losses) {
    const auto v = losses.data<float>();
    return std::accumulate(v.begin(), v.end(), 0.0);
  };
  CHECK(total(one.losses.back()) < total(one.losses.front()));
  for (const PipelineSchedule schedule :
       {PipelineSchedule::grouped, PipelineSchedule::interleaved, PipelineSchedule::sequential})
    for (const bool recompute : {false, true}) {
      const std::string name = std::string(transforms::schedule_name(schedule)) +
                               (recompute ? " with recomputation" : "");
      CAPTURE(name);
      const Trained piped = train({.pipeline = transforms::PipelineOptions{
                                       .steps = 6, .schedule = schedule, .recompute = recompute}});
      CHECK(piped.losses == one.losses);
      CHECK(piped.weights == one.weights);
      for (const auto& [key, w] : piped.weights) {
        const std::string k = key;
        CAPTURE(k);
        CHECK(w == one.weights.at(key));
      }
      REQUIRE(piped.pipelined);
      // Three forward stages, the last with its own backward, then two backward stages.
      CHECK(piped.pipelined->stages == 5);
      CHECK(piped.pipelined->stage_ipus ==
            std::vector<std::vector<std::int64_t>>{{0}, {1}, {2}, {1}, {0}});
      // The variables stay on their stages' IPUs.
      REQUIRE(piped.memory.ipus.size() >= 3);
      for (std::size_t i = 0; i < 3; ++i)
        CHECK(piped.memory.ipus[i].variables > 0);
    }
}

TEST_CASE("Pipelining stashes each stage's activations for as many cycles as PopART does") {
  const Trained grouped =
      train({.pipeline = transforms::PipelineOptions{.steps = 6}, .updates = 1});
  REQUIRE(grouped.pipelined);
  const auto& p = *grouped.pipelined;
  // Grouped, 5 stages, 6 micro-batches: 6 + 5 − 1 cycles, a fill and a flush of 4.
  CHECK(p.cycles == 10);
  CHECK(p.ramp_up_cycles == 4);
  CHECK(p.main_cycles == 2);
  CHECK(p.ramp_down_cycles == 4);
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> depth; // (from, to) -> deepest
  for (const auto& stash : p.stashes)
    depth[{stash.from_stage, stash.to_stage}] =
        std::max(depth[{stash.from_stage, stash.to_stage}], stash.depth);
  // Stage 0's activations wait for stage 4 (its backward), stage 1's for stage 3; a copy's
  // input waits one cycle.
  CHECK(depth.at({0, 4}) == 4);
  CHECK(depth.at({1, 3}) == 2);
  CHECK(depth.at({0, 1}) == 1);

  const Trained sequential =
      train({.pipeline =
                 transforms::PipelineOptions{.steps = 6, .schedule = PipelineSchedule::sequential},
             .updates = 1});
  for (const auto& stash : sequential.pipelined->stashes)
    CHECK(stash.depth == 1);
  CHECK(sequential.pipelined->ramp_up_cycles == 0);
  CHECK(sequential.pipelined->main_cycles == 30);

  // Recomputing keeps only the stage inputs for the backward: fewer stashed tensors.
  const Trained recomputed =
      train({.pipeline = transforms::PipelineOptions{.steps = 6, .recompute = true}, .updates = 1});
  CHECK(recomputed.pipelined->stashes.size() < p.stashes.size());
}

TEST_CASE("A pipeline trains bitwise the same on any number of workers") {
  const Trained one =
      train({.pipeline = transforms::PipelineOptions{.steps = 5}, .micro_batches = 5});
  for (const unsigned workers : {2u, 3u}) {
    CAPTURE(workers);
    const Trained more = train({.pipeline = transforms::PipelineOptions{.steps = 5},
                                .micro_batches = 5,
                                .workers = workers});
    CHECK(more.losses == one.losses);
    CHECK(more.weights == one.weights);
  }
}

TEST_CASE("Concurrent stages and stages sharing an IPU pipeline as they compute unpipelined") {
  SUBCASE("two stages on IPUs 1 and 2 take the same input, their outputs joined on IPU 3") {
    const Trained plain = train({.concurrent = true});
    const Trained piped =
        train({.concurrent = true, .pipeline = transforms::PipelineOptions{.steps = 6}});
    CHECK(piped.losses == plain.losses);
    CHECK(piped.weights == plain.weights);
    // Forward 0 | 1 on IPUs 1 and 2 | 2 with the loss; backward on IPUs 1 and 2 | 0.
    CHECK(piped.pipelined->stage_ipus ==
          std::vector<std::vector<std::int64_t>>{{0}, {1, 2}, {3}, {1, 2}, {0}});
  }
  SUBCASE("a device mapping with two stages on one IPU") {
    const Trained plain = train({.mapping = {0, 1, 1}});
    const Trained piped = train({.mapping = {0, 1, 1},
                                 .pipeline = transforms::PipelineOptions{
                                     .steps = 6, .schedule = PipelineSchedule::interleaved}});
    CHECK(piped.losses == plain.losses);
    CHECK(piped.weights == plain.weights);
  }
}

TEST_CASE("Stages sharing one IPU are split in the backward too, and are recomputation "
          "checkpoints") {
  const Trained plain = train({.mapping = {0, 0, 0}, .updates = 3});
  std::map<bool, std::map<std::pair<std::int64_t, std::int64_t>, int>> stashes; // by recompute
  for (const bool recompute : {false, true}) {
    CAPTURE(recompute);
    const Trained piped =
        train({.mapping = {0, 0, 0},
               .pipeline = transforms::PipelineOptions{.steps = 6,
                                                       .schedule = PipelineSchedule::sequential,
                                                       .recompute = recompute},
               .updates = 3});
    CHECK(piped.losses == plain.losses);
    CHECK(piped.weights == plain.weights);
    // PipelineStages::input copies on the chip between the stages, so they pipeline as on
    // three IPUs: three forward stages, then the backward of the first two.
    REQUIRE(piped.pipelined);
    CHECK(piped.pipelined->stages == 5);
    CHECK(piped.pipelined->stage_ipus ==
          std::vector<std::vector<std::int64_t>>{{0}, {0}, {0}, {0}, {0}});
    for (const auto& stash : piped.pipelined->stashes) {
      CHECK(stash.depth == 1); // one micro-batch through every stage at a time
      ++stashes[recompute][{stash.from_stage, stash.to_stage}];
    }
  }
  // Recomputing, a backward stage keeps only its forward stage's input: the images for stage
  // 4 (the backward of stage 0), the copy into stage 1 for stage 3.
  CHECK(stashes[true].at({0, 4}) == 1);
  CHECK(stashes[true].at({1, 3}) == 1);
  CHECK(stashes[false].at({0, 4}) > 1);
  CHECK(stashes[false].at({1, 3}) > 1);
}

TEST_CASE("PipelineStages maps stages to IPUs and refuses what it cannot map") {
  const addons::PipelineStages stages({1, 0});
  CHECK(stages.ipu_of(0) == 1);
  CHECK(stages.ipu_of(1) == 0);
  CHECK_THROWS_WITH_AS(stages.ipu_of(2), doctest::Contains("no stage 2"), ValueError);
  CHECK_THROWS_WITH_AS(addons::PipelineStages({0, -1}), doctest::Contains("stage 1 on IPU -1"),
                       ValueError);
  CHECK(addons::PipelineStages().ipu_of(5) == 5);

  // Stages sharing a variable must share an IPU: an op reads only its own IPU's tensors.
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const Tensor w = variable(HostTensor(std::vector<float>{1, 2}, {2}), "tied");
  const addons::PipelineStages split({0, 1});
  Tensor h;
  {
    auto s = split.stage(0);
    h = w * 2.0;
  }
  auto s = split.stage(1);
  CHECK_THROWS_WITH_AS(addons::PipelineStages::input(h) + w,
                       doctest::Contains("located on different IPUs: 0 != 1"), GraphError);
}

} // namespace test_pipeline
