// Gradient accumulation: N accumulated micro-batches against one step on the concatenated
// batch, the reductions against their closed forms, float32 accumulators for float16
// gradients, and the errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <optional>

using namespace pxl;
using addons::AccumulationReduction;
using addons::GradientAccumulation;
using addons::Linear;
using addons::NamedTensors;
using test_addons::cross_entropy_grads;

namespace {

constexpr std::int64_t features = 6, classes = 4;
constexpr double lr = 0.5;
// A large step on purpose: the second update then depends visibly on the first.
constexpr std::uint64_t seed = 7;

HostTensor images(std::int64_t rows) { return test_addons::normal_images(rows, features); }
HostTensor labels(std::int64_t rows) { return test_addons::cyclic_labels(rows, classes); }
using test_addons::transfers_of;

void sgd(double rate, const NamedTensors& weights, const NamedTensors& grads) {
  for (const auto& [key, w] : weights.items())
    ops::scaled_add_(w, grads.at(key), {.b = -rate});
}

struct Result {
  std::map<std::string, HostTensor> data; // every main-graph variable by key
};

/// `updates` plain SGD steps on batches of `batch` rows (one per host transfer, in a loop).
Result train_plain(std::int64_t batch, std::int64_t updates) {
  Ir ir;
  HostToDeviceStream xs, ys;
  NamedTensors vars;
  {
    auto in_main = ir.main_graph().scope();
    xs = h2d_stream({batch, features}, float32, "x");
    ys = h2d_stream({batch}, int32, "y");
    auto [facts, fwd] = Linear(classes).create_graph(TensorSpec{{batch, features}, float32});
    auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
    vars = facts.init("", seed);
    Graph step = ir.create_empty_graph("step");
    {
      auto in_step = step.scope();
      auto w = addons::named_graph_inputs(vars);
      sgd(lr, w, cross_entropy_grads(fwd, bwd, w, ops::host_load(xs), ops::host_load(ys)));
    }
    ops::repeat(step, updates, vars.values_flat());
  }
  ir.set_num_host_transfers(updates);
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  session.run({{xs, transfers_of(images(batch * updates), updates)},
               {ys, transfers_of(labels(batch * updates), updates)}});
  Result r;
  for (const auto& [key, t] : vars.items())
    r.data.emplace(key, session.get_tensor_data(t));
  return r;
}

/// `updates` windows of `config.steps` micro-batches of `micro` rows, one SGD update with
/// `rate` per window, as the accumulation header documents the device loop.
Result train_accumulated(std::int64_t micro, std::int64_t updates,
                         const GradientAccumulation& config, double rate) {
  Ir ir;
  HostToDeviceStream xs, ys;
  NamedTensors state;
  {
    auto in_main = ir.main_graph().scope();
    xs = h2d_stream({micro, features}, float32, "x");
    ys = h2d_stream({micro}, int32, "y");
    auto [facts, fwd] = Linear(classes).create_graph(TensorSpec{{micro, features}, float32});
    auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
    auto vars = facts.init("", seed);
    state = vars;
    state.update(addons::accumulator_factories(facts, config).init());
    Graph micro_step = ir.create_empty_graph("micro_step");
    {
      auto in_micro = micro_step.scope();
      auto s = addons::named_graph_inputs(state);
      auto w = s.filter_keys(vars.keys());
      addons::accumulate_gradients(
          s, cross_entropy_grads(fwd, bwd, w, ops::host_load(xs), ops::host_load(ys)), config);
    }
    Graph step = ir.create_empty_graph("step");
    {
      auto in_step = step.scope();
      auto s = addons::named_graph_inputs(state);
      ops::repeat(micro_step, config.steps, s.values_flat());
      addons::apply_accumulated(s.filter_keys(vars.keys()), s,
                                [&](const std::string&, const Tensor& w, const Tensor& g) {
                                  ops::scaled_add_(w, g, {.b = -rate});
                                });
    }
    ops::repeat(step, updates, state.values_flat());
  }
  const std::int64_t transfers = updates * config.steps;
  ir.set_num_host_transfers(transfers);
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  session.run({{xs, transfers_of(images(micro * transfers), transfers)},
               {ys, transfers_of(labels(micro * transfers), transfers)}});
  Result r;
  for (const auto& [key, t] : state.items())
    r.data.emplace(key, session.get_tensor_data(t));
  return r;
}

void check_same_weights(const Result& accumulated, const Result& plain) {
  for (const auto& entry : plain.data) {
    const auto& key = entry.first;
    const auto& w = entry.second;
    CAPTURE(key);
    CHECK(allclose(accumulated.data.at(key), w, 1e-5, 1e-6));
  }
}

/// Each run feeds `feeds[k]` (as the gradient of variable "w") to one micro step of a loop
/// of feeds.size() steps, without an update; returns the accumulator and counter data.
std::map<std::string, HostTensor> accumulate_fed(const std::vector<HostTensor>& feeds,
                                                 const GradientAccumulation& config,
                                                 const Shape& shape) {
  Ir ir;
  HostToDeviceStream gs;
  NamedTensors state;
  const auto n = static_cast<std::int64_t>(feeds.size());
  {
    auto in_main = ir.main_graph().scope();
    gs = h2d_stream(shape, feeds[0].dtype(), "g");
    NamedTensors vars{{"w", variable(HostTensor::full(shape, float32, 0.0), "w")}};
    state = addons::accumulator_factories(vars, config).init();
    Graph micro_step = ir.create_empty_graph("micro_step");
    {
      auto in_micro = micro_step.scope();
      auto s = addons::named_graph_inputs(state);
      addons::accumulate_gradients(s, NamedTensors{{"w", ops::host_load(gs)}}, config);
    }
    ops::repeat(micro_step, n, state.values_flat());
  }
  ir.set_num_host_transfers(n);
  Shape stacked = shape;
  stacked.insert(stacked.begin(), n);
  HostTensor all(stacked, feeds[0].dtype());
  std::size_t offset = 0;
  for (const auto& f : feeds) {
    std::copy(f.bytes().begin(), f.bytes().end(), all.bytes().begin() + static_cast<long>(offset));
    offset += f.nbytes();
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  session.run({{gs, all}});
  std::map<std::string, HostTensor> r;
  for (const auto& [key, t] : state.items())
    r.emplace(key, session.get_tensor_data(t));
  return r;
}

std::vector<HostTensor> random_feeds(std::int64_t n, const Shape& shape) {
  std::vector<HostTensor> r;
  for (std::int64_t k = 0; k < n; ++k)
    r.push_back(addons::init::normal(0.5, 2.0, shape)(float32, 100 + static_cast<unsigned>(k)));
  return r;
}

} // namespace

TEST_CASE("accumulator_factories: accum.<variable> zeros by reference, plus the counter") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  auto [facts, fwd] = Linear(3).create_graph(TensorSpec{{2, 5}, float16});
  const auto mean = addons::accumulator_factories(facts, {.dtype = float32, .steps = 4});
  CHECK(mean.keys_flat() == std::vector<std::string>{"accum.weight", "accum.bias"});
  CHECK(mean.at("accum.weight").spec() == TensorSpec{{5, 3}, float32});
  CHECK(mean.at("accum.bias").by_ref);
  const auto running = addons::accumulator_factories(
      facts.init(), {.reduction = AccumulationReduction::running_mean, .dtype = float16});
  CHECK(running.keys_flat() ==
        std::vector<std::string>{"accum.weight", "accum.bias", "accum_counter"});
  CHECK(running.at("accum.bias").spec() == TensorSpec{{3}, float16});
  CHECK(running.at("accum_counter").spec() == TensorSpec{{}, float32});
  CHECK(running.at("accum_counter").by_ref);
  auto accums = running.init();
  CHECK(addons::accumulated_gradients(accums).keys_flat() ==
        std::vector<std::string>{"weight", "bias"});
  CHECK(addons::reduction_name(AccumulationReduction::running_mean) == "running_mean");
}

TEST_CASE("MEAN: N micro-batches of b give one step on the concatenated batch of N*b") {
  constexpr std::int64_t b = 3, n = 4;
  const GradientAccumulation config{.reduction = AccumulationReduction::mean, .steps = n};
  SUBCASE("one update") {
    const auto acc = train_accumulated(b, 1, config, lr);
    check_same_weights(acc, train_plain(b * n, 1));
    // The update reset the accumulators.
    CHECK(acc.data.at("accum.weight") == HostTensor::full({features, classes}, float32, 0.0));
    CHECK(acc.data.at("accum.bias") == HostTensor::full({classes}, float32, 0.0));
  }
  SUBCASE("three updates in one device loop: each window starts from zero") {
    const auto acc = train_accumulated(b, 3, config, lr);
    const auto plain = train_plain(b * n, 3);
    check_same_weights(acc, plain);
    // And differs from fewer steps, so the comparison has teeth.
    CHECK_FALSE(allclose(plain.data.at("weight"), train_plain(b * n, 2).data.at("weight"), 1e-3));
  }
}

TEST_CASE("SUM: the summed gradient applied with lr/N equals the concatenated-batch step") {
  constexpr std::int64_t b = 2, n = 3;
  const GradientAccumulation config{.reduction = AccumulationReduction::sum, .steps = n};
  check_same_weights(train_accumulated(b, 2, config, lr / n), train_plain(b * n, 2));
  // With lr itself the step is N times larger: not the same weights.
  CHECK_FALSE(allclose(train_accumulated(b, 1, config, lr).data.at("weight"),
                       train_plain(b * n, 1).data.at("weight"), 1e-3));
}

TEST_CASE("RUNNING_MEAN over N micro-batches equals MEAN (and the concatenated batch)") {
  constexpr std::int64_t b = 2, n = 5;
  const auto running =
      train_accumulated(b, 2, {.reduction = AccumulationReduction::running_mean, .steps = n}, lr);
  check_same_weights(running, train_plain(b * n, 2));
  CHECK(running.data.at("accum_counter").item() == 0.0); // reset by the update
}

TEST_CASE("reductions against their formulas, accumulator by accumulator") {
  const Shape shape{2, 3};
  const auto feeds = random_feeds(5, shape);
  const auto n = static_cast<std::int64_t>(feeds.size());
  // The formulas, iterated in float32 as the device does.
  std::vector<float> sum(6, 0.f), mean(6, 0.f), running(6, 0.f);
  for (std::int64_t k = 0; k < n; ++k) {
    const auto g = feeds[static_cast<std::size_t>(k)].data<float>();
    const float w = 1.f / (static_cast<float>(k) + 1.f);
    for (std::size_t i = 0; i < 6; ++i) {
      sum[i] += g[i];
      mean[i] += g[i] * static_cast<float>(1.0 / static_cast<double>(n));
      running[i] += (g[i] - running[i]) * w;
    }
  }
  SUBCASE("sum") {
    const auto r = accumulate_fed(feeds, {.reduction = AccumulationReduction::sum}, shape);
    CHECK(allclose(r.at("accum.w"), HostTensor(sum, shape), 1e-6, 1e-6));
    CHECK_FALSE(r.contains("accum_counter"));
  }
  SUBCASE("mean divides by steps") {
    const auto r =
        accumulate_fed(feeds, {.reduction = AccumulationReduction::mean, .steps = n}, shape);
    CHECK(allclose(r.at("accum.w"), HostTensor(mean, shape), 1e-6, 1e-6));
  }
  SUBCASE("running mean: a <- a + (g - a)/(k + 1), k counted on the device") {
    // `steps` plays no part: the counter drives the running mean.
    const auto r = accumulate_fed(
        feeds, {.reduction = AccumulationReduction::running_mean, .steps = 2}, shape);
    CHECK(allclose(r.at("accum.w"), HostTensor(running, shape), 1e-6, 1e-6));
    CHECK(r.at("accum_counter").item() == static_cast<double>(n));
    // Which is the arithmetic mean of what ran so far.
    for (std::size_t i = 0; i < 6; ++i)
      CHECK(r.at("accum.w").item(static_cast<std::int64_t>(i)) ==
            doctest::Approx(sum[i] / static_cast<float>(n)).epsilon(1e-5));
  }
}

TEST_CASE("float16 gradients into float32 accumulators keep what a float16 sum loses") {
  // 1 + 7 * 2^-12: each 2^-12 is below half a float16 ulp of 1 (2^-11), so a float16
  // accumulator stays at 1; a float32 one is exact.
  std::vector<HostTensor> feeds{HostTensor::full({2}, float16, 1.0)};
  for (int k = 0; k < 7; ++k)
    feeds.push_back(HostTensor::full({2}, float16, std::ldexp(1.0, -12)));
  const auto f32 = accumulate_fed(feeds, {.reduction = AccumulationReduction::sum}, {2});
  CHECK(f32.at("accum.w").dtype() == float32);
  CHECK(f32.at("accum.w").item(0) == 1.0 + 7.0 * std::ldexp(1.0, -12));
  const auto f16 =
      accumulate_fed(feeds, {.reduction = AccumulationReduction::sum, .dtype = float16}, {2});
  CHECK(f16.at("accum.w").dtype() == float16);
  CHECK(f16.at("accum.w").item(1) == 1.0);
  // Running mean of float16 gradients in float32: the mean of the feeds.
  const auto running = accumulate_fed(
      feeds, {.reduction = AccumulationReduction::running_mean, .dtype = float32}, {2});
  CHECK(running.at("accum.w").item(0) ==
        doctest::Approx((1.0 + 7.0 * std::ldexp(1.0, -12)) / 8.0).epsilon(1e-6));
}

TEST_CASE("apply_accumulated casts the float32 accumulator to a float16 variable's dtype") {
  Ir ir;
  NamedTensors vars, accums;
  {
    auto in_main = ir.main_graph().scope();
    vars.insert("w", variable(HostTensor::full({3}, float16, 1.0), "w"));
    accums = addons::accumulator_factories(vars, {.dtype = float32}).init();
    addons::accumulate_gradients(
        accums, NamedTensors{{"w", constant(HostTensor::full({3}, float16, 0.25))}},
        {.reduction = AccumulationReduction::sum});
    addons::apply_accumulated(vars, accums,
                              [](const std::string& key, const Tensor& w, const Tensor& g) {
                                CHECK(key == "w");
                                CHECK(g.dtype() == float16);
                                ops::scaled_add_(w, g, {.b = -2.0});
                              });
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  session.run();
  CHECK(session.get_tensor_data(vars.at("w")) == HostTensor::full({3}, float16, 0.5));
  CHECK(session.get_tensor_data(accums.at("accum.w")) == HostTensor::full({3}, float32, 0.0));
}

TEST_CASE("gradient accumulation errors") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  NamedTensors vars{{"fc.weight", variable(HostTensor::full({2, 3}, float32, 0.0), "fc.weight")},
                    {"fc.bias", variable(HostTensor::full({3}, float32, 0.0), "fc.bias")}};
  const GradientAccumulation mean{.steps = 2};
  auto accums = addons::accumulator_factories(vars, mean).init();
  auto g_weight = constant(HostTensor::full({2, 3}, float32, 1.0));
  auto g_bias = constant(HostTensor::full({3}, float32, 1.0));

  CHECK_THROWS_WITH_AS(GradientAccumulation{.steps = 0}.validate(),
                       doctest::Contains("steps (micro-batches per update) must be >= 1, got 0"),
                       ValueError);
  CHECK_THROWS_WITH_AS(addons::accumulator_factories(vars, {.steps = -3}),
                       doctest::Contains("must be >= 1, got -3"), ValueError);
  CHECK_THROWS_WITH_AS(addons::accumulator_factories(vars, {.dtype = int32}),
                       "GradientAccumulation: the accumulator dtype must be float32 or float16, "
                       "got int32",
                       DTypeError);
  NamedTensors ints{{"step", variable(HostTensor::full({}, int32, 0.0), "step")}};
  CHECK_THROWS_WITH_AS(addons::accumulator_factories(ints, mean),
                       doctest::Contains("variable 'step' is int32"), ValueError);

  CHECK_THROWS_WITH_AS(
      addons::accumulate_gradients(accums, NamedTensors{{"fc.weight", g_weight}}, mean),
      "accumulate_gradients: the gradients and the accumulators must have the same names; "
      "gradients without accumulators: none; accumulators without gradients: fc.bias",
      ValueError);
  CHECK_THROWS_WITH_AS(
      addons::accumulate_gradients(
          accums, NamedTensors{{"fc.weight", g_weight}, {"fc.bias", g_bias}, {"fc.scale", g_bias}},
          mean),
      doctest::Contains("gradients without accumulators: fc.scale;"), ValueError);
  CHECK_THROWS_WITH_AS(addons::accumulate_gradients(
                           accums, NamedTensors{{"fc.weight", g_bias}, {"fc.bias", g_bias}}, mean),
                       doctest::Contains("gradient 'fc.weight'"), ShapeError);
  CHECK_THROWS_WITH_AS(
      addons::accumulate_gradients(
          accums, NamedTensors{{"fc.weight", g_weight}, {"fc.bias", g_bias}}, {.steps = 0}),
      doctest::Contains("got 0"), ValueError);
  auto int_grad = constant(HostTensor::full({3}, int32, 1.0));
  CHECK_THROWS_WITH_AS(
      addons::accumulate_gradients(
          accums, NamedTensors{{"fc.weight", g_weight}, {"fc.bias", int_grad}}, mean),
      doctest::Contains("must be float32 or float16"), DTypeError);
  CHECK_THROWS_WITH_AS(addons::accumulate_gradients(vars, vars, mean),
                       doctest::Contains("expected the accumulators under 'accum.<variable>'"),
                       ValueError);
  CHECK_THROWS_WITH_AS(addons::accumulate_gradients(
                           accums, NamedTensors{{"fc.weight", g_weight}, {"fc.bias", g_bias}},
                           {.reduction = AccumulationReduction::running_mean}),
                       doctest::Contains("running_mean needs the counter 'accum_counter'"),
                       ValueError);
  // A rejected call adds no op.
  CHECK(ir.main_graph().ops().empty());

  CHECK_THROWS_WITH_AS(
      addons::apply_accumulated(vars.filter_keys({"fc.weight"}), accums,
                                [](const std::string&, const Tensor&, const Tensor&) {}),
      doctest::Contains("accumulators without variables: fc.bias"), ValueError);
  CHECK_THROWS_WITH_AS(addons::reset_accumulators(vars),
                       doctest::Contains("reset_accumulators: expected the accumulators"),
                       ValueError);
}
