// transforms::pipeline on hand-built graphs: how stages are found, what the pipelined graph
// computes against repeating the micro-batch, the schedules' fill requirements, and the errors.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace pxl;
using doctest::Contains;
using transforms::PipelineOptions;
using transforms::PipelineSchedule;

namespace {

/// One micro-batch over two IPUs: load x on IPU 0, exp, copy to IPU 1, times 2, store, and
/// add x (copied back to IPU 0) into the by-ref accumulator `acc` on IPU 0.
struct TwoStages {
  Ir ir;
  HostToDeviceStream in;
  DeviceToHostStream out;
  Graph micro;
  Tensor acc;

  TwoStages() {
    auto in_main = ir.main_graph().scope();
    in = h2d_stream({3}, float32, "x");
    out = d2h_stream({3}, float32, "y");
    acc = variable(HostTensor(std::vector<float>{0, 0, 0}, {3}), "acc");
    micro = ir.create_empty_graph("micro");
    auto in_micro = micro.scope();
    const Tensor a = graph_input(TensorSpec{{3}, float32}, "acc", true);
    const Tensor h = ops::exp(ops::host_load(in));
    Tensor y;
    {
      auto on1 = ipu(1);
      y = ops::ipu_copy(h, 1) * 2.0;
      ops::host_store(out, y);
    }
    ops::var_updates::accumulate_(a, ops::ipu_copy(y, 0), 1.0);
  }
};

HostTensor inputs(std::int64_t n) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < 3 * n; ++i)
    v.push_back(0.1f * static_cast<float>(i));
  return HostTensor(v, {n, 3});
}

/// Runs `steps` micro-batches once, pipelined or repeated; the stored outputs and `acc`.
std::pair<HostTensor, HostTensor> run(std::int64_t steps, const PipelineOptions* options) {
  TwoStages m;
  {
    auto in_main = m.ir.main_graph().scope();
    if (options)
      ops::call(transforms::pipeline(m.micro, *options).graph, {m.acc});
    else
      ops::repeat(m.micro, steps, {m.acc});
  }
  m.ir.set_num_host_transfers(steps);
  Session s(m.ir, "ipu_model");
  auto attached = s.attach();
  HostTensor y = s.run({{m.in, inputs(steps)}}).at(m.out);
  return {y, s.get_tensor_data(m.acc)};
}

} // namespace

TEST_CASE("Stages follow the IPU copies, and the pipelined graph computes the repeated one") {
  TwoStages m;
  const auto p = transforms::pipeline(m.micro, {.steps = 4});
  // exp on IPU 0 | ×2 and the store on IPU 1 | the accumulation back on IPU 0.
  CHECK(p.stages == 3);
  CHECK(p.stage_ipus == std::vector<std::vector<std::int64_t>>{{0}, {1}, {0}});
  CHECK(p.cycles == 6);
  CHECK(p.ramp_up_cycles == 2);
  CHECK(p.main_cycles == 2);
  CHECK(p.ramp_down_cycles == 2);
  CHECK(p.graph.inputs().size() == 1);
  CHECK(p.graph.input_is_by_ref(0));
  CHECK(p.graph.outputs().empty());
  // The micro-batch graph is left as it was.
  CHECK(m.micro.ops().size() == 7);

  for (const PipelineSchedule schedule :
       {PipelineSchedule::grouped, PipelineSchedule::interleaved, PipelineSchedule::sequential}) {
    CAPTURE(transforms::schedule_name(schedule));
    for (const std::int64_t steps : {3, 4, 7}) {
      CAPTURE(steps);
      const PipelineOptions options{.steps = steps, .schedule = schedule};
      const auto expected = run(steps, nullptr);
      const auto got = run(steps, &options);
      CHECK(got.first == expected.first);
      CHECK(got.second == expected.second);
    }
  }
}

TEST_CASE("Each schedule needs enough micro-batches to fill the pipeline") {
  const std::vector<std::vector<std::int64_t>> three{{0}, {1}, {0}};
  CHECK(transforms::min_steps(PipelineSchedule::grouped, three) == 3);
  CHECK(transforms::min_steps(PipelineSchedule::sequential, three) == 1);
  // Interleaved: IPU 0 alternates between stages 0 and 2, so stage 2 starts in cycle 3 and
  // the period is 2.
  CHECK(transforms::min_steps(PipelineSchedule::interleaved, three) == 2);
  TwoStages m;
  CHECK_THROWS_WITH_AS(transforms::pipeline(m.micro, {.steps = 2}),
                       Contains("the grouped schedule of 3 pipeline stages needs at least 3 "
                                "micro-batches (steps) to fill the pipeline, got 2"),
                       ValueError);
  CHECK_THROWS_WITH_AS(transforms::pipeline(m.micro, {.steps = 0}),
                       Contains("steps (micro-batches per call) must be at least 1, got 0"),
                       ValueError);
  CHECK_NOTHROW(
      transforms::pipeline(m.micro, {.steps = 1, .schedule = PipelineSchedule::sequential}));
}

TEST_CASE("pipeline_stage scopes set stages on one IPU, as lower bounds") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const auto out = d2h_stream({2}, float32, "y");
  Graph g = ir.create_empty_graph("micro");
  {
    auto in_g = g.scope();
    const Tensor x = graph_input(TensorSpec{{2}, float32}, "x");
    Tensor h;
    {
      auto s = pipeline_stage(0);
      h = ops::exp(x);
    }
    auto s = pipeline_stage(1);
    CHECK(current_pipeline_stage() == 1);
    ops::host_store(out, ops::tanh(h));
  }
  CHECK_FALSE(current_pipeline_stage().has_value());
  const auto p = transforms::pipeline(g, {.steps = 2});
  CHECK(p.stage_ipus == std::vector<std::vector<std::int64_t>>{{0}, {0}});
  CHECK_THROWS_WITH_AS(static_cast<void>(pipeline_stage(-1)), Contains("stage index must be >= 0"),
                       ValueError);

  Graph later = ir.create_empty_graph("later");
  {
    auto in_later = later.scope();
    const Tensor x = graph_input(TensorSpec{{2}, float32}, "x");
    Tensor h;
    {
      auto s = pipeline_stage(3);
      h = ops::exp(x);
    }
    // An op never runs before its input: the store joins stage 3.
    auto s = pipeline_stage(1);
    ops::host_store(out, h);
  }
  CHECK(transforms::pipeline(later, {.steps = 1}).stages == 1);
}

TEST_CASE("pipeline refuses what it cannot pipeline") {
  SUBCASE("the main graph, outputs, a frozen Ir") {
    TwoStages m;
    CHECK_THROWS_WITH_AS(transforms::pipeline(m.ir.main_graph(), {.steps = 2}),
                         Contains("the main graph cannot be pipelined"), GraphError);
    Graph with_output = m.ir.create_empty_graph("out");
    {
      auto in_g = with_output.scope();
      graph_output(ops::exp(graph_input(TensorSpec{{2}, float32}, "x")));
    }
    CHECK_THROWS_WITH_AS(transforms::pipeline(with_output, {.steps = 2}),
                         Contains("graph 'out' has 1 outputs, but a pipeline returns none"),
                         GraphError);
    Session s(m.ir, "ipu_model");
    CHECK_THROWS_AS(transforms::pipeline(m.micro, {.steps = 3}), GraphError);
  }
  SUBCASE("a by-ref input written in one stage and read in another") {
    Ir ir;
    auto in_main = ir.main_graph().scope();
    Graph g = ir.create_empty_graph("micro");
    auto in_g = g.scope();
    const Tensor a = graph_input(TensorSpec{{2}, float32}, "state", true);
    const Tensor b = graph_input(TensorSpec{{2}, float32}, "b", true);
    ops::var_updates::accumulate_(a, ops::exp(b), 1.0);
    {
      auto on1 = ipu(1);
      auto later = pipeline_stage(1);
      const Tensor copied = ops::ipu_copy(a, 1);
      ops::var_updates::accumulate_(ops::ipu_copy(b, 1), copied, 1.0);
    }
    CHECK_THROWS_WITH_AS(transforms::pipeline(g, {.steps = 4}),
                         Contains("state' is written in place by"), GraphError);
  }
  SUBCASE("a host stream used by two stages") {
    Ir ir;
    auto in_main = ir.main_graph().scope();
    const auto in = h2d_stream({2}, float32, "x");
    const auto out = d2h_stream({2}, float32, "y");
    Graph g = ir.create_empty_graph("micro");
    auto in_g = g.scope();
    const Tensor first = ops::host_load(in);
    const Tensor first_exp = ops::exp(first);
    auto on1 = ipu(1);
    const Tensor second = ops::host_load(in);
    ops::host_store(out, ops::ipu_copy(first_exp, 1) + second);
    CHECK_THROWS_WITH_AS(transforms::pipeline(g, {.steps = 4}),
                         Contains("host stream 'x' is used by"), GraphError);
  }
}
