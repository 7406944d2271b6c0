// Model parallelism (sharding a model over IPUs without pipelining): a module whose second
// layer is built under ipu(1) keeps that layer's variables, gradients and optimizer steps on
// IPU 1, and trains bitwise as the same model on one IPU.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

using namespace pxl;
using addons::NamedTensors;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_model_parallel {

constexpr std::int64_t features = 6, hidden = 5, outputs = 3, rows = 4;

/// Linear → relu → Linear, the second layer on IPU 1 when `split`.
struct Net : addons::Module<Net> {
  bool split = false;
  PXL_SUBMODULE(addons::Linear, fc1, hidden);
  PXL_SUBMODULE(addons::Linear, fc2, outputs);
  Tensor build(const Tensor& x) {
    const Tensor h = ops::relu(fc1(x));
    if (!split)
      return fc2(h);
    auto on1 = ipu(1);
    return fc2(ops::ipu_copy(h, 1));
  }
};

struct Trained {
  std::vector<HostTensor> losses;
  std::map<std::string, HostTensor> weights;
  std::map<std::string, std::int64_t> placement;
  emu::MemoryReport memory;
};

/// `steps` steps of Adam fitting one batch by least squares, the loss on the last layer's IPU.
Trained train(bool split, unsigned workers, int steps) {
  Ir ir;
  test_addons::LeastSquaresStreams io;
  NamedTensors vars;
  {
    auto in_main = ir.main_graph().scope();
    io = test_addons::least_squares_streams(rows, features, outputs);
    const Tensor x = ops::host_load(io.x);
    Net net;
    net.split = split;
    auto [facts, fwd] = net.create_graph(x);
    auto bwd = addons::autodiff(fwd, {.grads_required = fwd.args().values_flat()});
    vars = facts.init();
    auto fwd_info = fwd.bind(vars).call_with_info({x});
    auto on_last = ipu(split ? 1 : 0);
    const NamedTensors grads =
        test_addons::squared_error_grads(bwd, vars, fwd_info, ops::host_load(io.t), io.loss);
    addons::optimizers::apply(addons::optimizers::Adam({.lr = 0.01}), vars, grads);
  }
  Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  auto attached = s.attach();
  Trained r;
  // One batch, fitted a little better every step.
  const HostTensor xv = addons::init::normal(0.0, 1.0, {rows, features})(float32, 10);
  const HostTensor tv = addons::init::normal(0.0, 1.0, {rows, outputs})(float32, 500);
  for (int step = 0; step < steps; ++step)
    r.losses.push_back(s.run({{io.x, xv}, {io.t, tv}}).at(io.loss));
  for (const auto& [key, t] : vars.items()) {
    r.weights.emplace(key, s.get_tensor_data(t));
    r.placement.emplace(key, t.ipu());
  }
  r.memory = s.memory_report();
  return r;
}

TEST_CASE(
    "A model split over two IPUs trains bitwise as on one, its layers where they were built") {
  const int steps = 20;
  const Trained one = train(false, 1, steps);
  for (const unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    const Trained two = train(true, workers, steps);
    CHECK(two.losses == one.losses);
    CHECK(two.weights == one.weights);
    CHECK(two.placement ==
          std::map<std::string, std::int64_t>{
              {"fc1.bias", 0}, {"fc1.weight", 0}, {"fc2.bias", 1}, {"fc2.weight", 1}});
    // fc2's weights and Adam's state for them (first and second order, a step count each)
    // live on IPU 1.
    REQUIRE(two.memory.ipus.size() == 2);
    const std::int64_t fc2 = (hidden * outputs + outputs) * 4;
    CHECK(two.memory.ipus[1].variables == 3 * fc2 + 2 * 4);
    CHECK(two.memory.ipus[0].variables + two.memory.ipus[1].variables ==
          one.memory.ipus[0].variables);
  }
  CHECK(one.losses.back().item() < one.losses.front().item());
}

TEST_CASE("Gradient accumulators sit on their variables' IPUs") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Net net;
  net.split = true;
  auto [facts, fwd] = net.create_graph(TensorSpec{{rows, features}, float32});
  const addons::GradientAccumulation accumulation{.steps = 2};
  for (const NamedTensors& accumulators :
       {addons::accumulator_factories(facts, accumulation).init(),
        addons::accumulator_factories(facts.init(), accumulation).init()})
    for (const auto& [key, t] : accumulators.items())
      if (key.find("fc") != std::string::npos) {
        const std::string name = key; // CAPTURE cannot take a structured binding (clang 14)
        CAPTURE(name);
        CHECK(t.ipu() == (name.find("fc2") != std::string::npos ? 1 : 0));
      }
}

} // namespace test_model_parallel
