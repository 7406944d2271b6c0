// autodiff_with_accumulation: the gradient graph's accumulators against addons' gradient
// accumulation (bitwise), the running mean's closed form, the bindings and the errors.
#include "../addons/helpers.hpp"

#include <doctest/doctest.h>

#include <map>
#include <optional>

namespace test_autodiff_with_accumulation {

using namespace pxl;
using addons::AccumulationReduction;
using addons::GradientAccumulation;
using addons::NamedTensors;
using doctest::Contains;

// The data, loss and SGD loop of test/addons/accumulation.cpp, with a hidden layer: a
// two-layer MLP trained on cross entropy.
constexpr std::int64_t features = 6, hidden = 5, classes = 4;
constexpr double lr = 0.5;

HostTensor images(std::int64_t rows) { return test_addons::normal_images(rows, features); }
HostTensor labels(std::int64_t rows) { return test_addons::cyclic_labels(rows, classes); }
using test_addons::transfers_of;

/// logits = relu(x·w1 + b1)·w2 + b2; inputs x, w1, b1, w2, b2.
Graph mlp(Ir& ir, std::int64_t rows) {
  return ir.create_graph(
      "mlp",
      [](Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2) {
        return ops::matmul(ops::relu(ops::matmul(x, w1) + b1), w2) + b2;
      },
      TensorSpec{{rows, features}, float32}, TensorSpec{{features, hidden}, float32},
      TensorSpec{{hidden}, float32}, TensorSpec{{hidden, classes}, float32},
      TensorSpec{{classes}, float32});
}

HostTensor initial(const Shape& s, unsigned seed) {
  return addons::init::normal(0.0, 0.5, s)(float32, seed);
}
NamedTensors mlp_variables() {
  return NamedTensors{{"w1", variable(initial({features, hidden}, 1), "w1")},
                      {"b1", variable(initial({hidden}, 2), "b1")},
                      {"w2", variable(initial({hidden, classes}, 3), "w2")},
                      {"b2", variable(initial({classes}, 4), "b2")}};
}
const std::vector<std::string> keys{"w1", "b1", "w2", "b2"};

/// f(x, w) = sum(x * w) on 3-vectors: the gradient of w is x.
Graph dot_graph(Ir& ir) {
  return ir.create_graph(
      "f", [](Tensor x, Tensor w) { return ops::sum(x * w); }, TensorSpec{{3}, float32},
      TensorSpec{{3}, float32});
}

enum class Way { addons_running_mean, transform, transform_recomputed };

/// `updates` SGD updates of `n` micro-batches of `micro` rows each, the gradients accumulated
/// `way`, on `workers` workers; returns every main-graph variable (weights, accumulators,
/// counter) by key.
std::map<std::string, HostTensor> train(Way way, std::int64_t micro, std::int64_t n,
                                        std::int64_t updates, unsigned workers = 1) {
  Ir ir;
  HostToDeviceStream xs, ys;
  NamedTensors state;
  {
    auto in_main = ir.main_graph().scope();
    xs = h2d_stream({micro, features}, float32, "x");
    ys = h2d_stream({micro}, int32, "y");
    Graph fwd = mlp(ir, micro);
    const auto fwd_in = fwd.inputs();
    const std::vector<Tensor> weights(fwd_in.begin() + 1, fwd_in.end());
    const NamedTensors vars = mlp_variables();
    state = vars;
    const GradientAccumulation config{.reduction = AccumulationReduction::running_mean, .steps = n};
    std::optional<transforms::GradGraphInfo> info;
    if (way == Way::addons_running_mean) {
      info = transforms::autodiff(fwd, {.grads_required = weights});
      state.update(addons::accumulator_factories(vars, config).init());
    } else {
      info = transforms::autodiff_with_accumulation(fwd, weights);
      if (way == Way::transform_recomputed)
        info = transforms::recompute_graph(*info);
      for (const auto& key : keys)
        state.insert("accum." + key,
                     variable(HostTensor::full(vars.at(key).shape(), float32, 0.0), "a_" + key));
      state.insert("accum_counter", variable(HostTensor::full({}, float32, 0.0), "counter"));
    }
    Graph micro_step = ir.create_empty_graph("micro_step");
    {
      auto in_micro = micro_step.scope();
      auto s = addons::named_graph_inputs(state);
      std::vector<Tensor> args{ops::host_load(xs)};
      for (const auto& key : keys)
        args.push_back(s.at(key));
      const CallSiteInfo fwd_call = ops::call_with_info(fwd, args);
      auto [loss, dlogits] =
          addons::ops::cross_entropy_with_grad(fwd_call.parent_output(0), ops::host_load(ys));
      InputsDict bind = info->inputs_dict(fwd_call);
      if (way == Way::addons_running_mean) {
        const auto grads = ops::call(info->graph(), {dlogits}, bind);
        NamedTensors g;
        for (std::size_t k = 0; k < keys.size(); ++k)
          g.insert(keys[k], grads[k]);
        addons::accumulate_gradients(s, g, config);
      } else {
        std::map<Tensor, Tensor> accums;
        for (std::size_t k = 0; k < keys.size(); ++k)
          accums.emplace(weights[k], s.at("accum." + keys[k]));
        const InputsDict more = info->accumulators_dict(accums, s.at("accum_counter"));
        bind.insert(bind.end(), more.begin(), more.end());
        CHECK(ops::call(info->graph(), {dlogits}, bind).empty());
      }
    }
    Graph step = ir.create_empty_graph("step");
    {
      auto in_step = step.scope();
      auto s = addons::named_graph_inputs(state);
      ops::repeat(micro_step, n, s.values_flat());
      addons::apply_accumulated(s.filter_keys(vars.keys()), s,
                                [&](const std::string&, const Tensor& w, const Tensor& g) {
                                  ops::scaled_add_(w, g, {.b = -lr});
                                });
    }
    ops::repeat(step, updates, state.values_flat());
  }
  const std::int64_t transfers = updates * n;
  ir.set_num_host_transfers(transfers);
  Session session{ir, "ipu_model", {.workers = workers, .oversubscribe = true}};
  auto attached = session.attach();
  session.run({{xs, transfers_of(images(micro * transfers), transfers)},
               {ys, transfers_of(labels(micro * transfers), transfers)}});
  std::map<std::string, HostTensor> r;
  for (const auto& [key, t] : state.items())
    r.emplace(key, session.get_tensor_data(t));
  return r;
}

TEST_CASE("autodiff_with_accumulation: an MLP trained over N micro-batches is bitwise the MLP "
          "of addons' running-mean accumulation, recomputed or not, on 1-3 workers") {
  constexpr std::int64_t micro = 3, n = 4, updates = 3;
  const auto reference = train(Way::addons_running_mean, micro, n, updates);
  const auto fused = train(Way::transform, micro, n, updates);
  const auto recomputed = train(Way::transform_recomputed, micro, n, updates, 2);
  const auto three = train(Way::transform, micro, n, updates, 3);
  // One update fewer gives other weights, so the equality has teeth.
  const auto fewer = train(Way::transform, micro, n, updates - 1);
  for (const auto& key : keys) {
    CAPTURE(key);
    CHECK(fused.at(key) == reference.at(key));
    CHECK(recomputed.at(key) == reference.at(key));
    CHECK(three.at(key) == reference.at(key));
    CHECK_FALSE(fused.at(key) == fewer.at(key));
    // The update zeroed the accumulators.
    CHECK(fused.at("accum." + key) == HostTensor::full(reference.at(key).shape(), float32, 0.0));
  }
  CHECK(fused.at("accum_counter").item() == 0.0);
}

TEST_CASE("autodiff_with_accumulation: the accumulator holds the mean of the calls' gradients") {
  // f(x, w) = sum(x * w): the gradient of w is x; N calls from zeros leave mean(x_k).
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Graph f = dot_graph(ir);
  const Tensor w_in = f.inputs()[1];
  const auto info = transforms::autodiff_with_accumulation(f, {w_in});
  const auto inputs = info.graph().inputs();
  REQUIRE(info.accumulators().size() == 1);
  CHECK(info.accumulators()[0].fwd_tensor == w_in);
  CHECK(info.accumulators()[0].input.name() == "accum." + w_in.name());
  CHECK(info.mean_accum_counter().name() == "mean_accum_counter");
  CHECK(info.mean_accum_counter().spec() == TensorSpec{{}, float32});
  // Provided gradient and activations, then the counter, then the accumulator.
  REQUIRE(inputs.size() == info.expected_inputs().size() + 2);
  CHECK(inputs[inputs.size() - 2] == info.mean_accum_counter());
  CHECK(inputs.back() == info.accumulators()[0].input);
  CHECK(info.graph().input_is_by_ref(inputs.size() - 1));
  CHECK(info.graph().input_is_by_ref(inputs.size() - 2));
  CHECK(info.graph().outputs().empty());
  CHECK(info.expected_outputs().empty());

  const std::vector<std::vector<float>> xs{{1, 2, 3}, {-4, 0.5F, 8}, {0.25F, -1, 10}};
  const Tensor w = variable(HostTensor(std::vector<float>{1, 1, 1}, {3}), "w");
  const Tensor acc = variable(HostTensor::full({3}, float32, 0.0), "acc");
  const Tensor counter = variable(HostTensor::full({}, float32, 0.0), "counter");
  for (const auto& x : xs) {
    const CallSiteInfo call = ops::call_with_info(f, {constant(HostTensor(x, {3})), w});
    InputsDict bind = info.inputs_dict(call);
    const InputsDict more = info.accumulators_dict({{w_in, acc}}, counter);
    bind.insert(bind.end(), more.begin(), more.end());
    ops::call(info.graph(), {constant(1.0, float32)}, bind);
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  session.run();
  // a ← a + (x − a)·(1/(k + 1)), in float32 as the graph computes it.
  std::vector<float> expected(3, 0.0F);
  for (std::size_t k = 0; k < xs.size(); ++k)
    for (std::size_t i = 0; i < 3; ++i)
      expected[i] += (xs[k][i] - expected[i]) * (1.0F / (static_cast<float>(k) + 1.0F));
  CHECK(session.get_tensor_data(acc) == HostTensor(expected, {3}));
  CHECK(session.get_tensor_data(counter).item() == 3.0);
}

TEST_CASE("autodiff_with_accumulation: other required gradients stay outputs") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Graph f = dot_graph(ir);
  const auto info =
      transforms::autodiff_with_accumulation(f, {f.inputs()[1]}, std::vector{f.inputs()[0]});
  REQUIRE(info.expected_outputs().size() == 1);
  CHECK(info.expected_outputs()[0].fwd_tensor == f.inputs()[0]);
  CHECK(info.graph().outputs().size() == 1);
}

TEST_CASE("autodiff_with_accumulation errors") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  Graph f = ir.create_graph(
      "f", [](Tensor x, Tensor w, Tensor i) { return ops::sum(x * w) + ops::cast(i, float32); },
      TensorSpec{{3}, float32}, TensorSpec{{3}, float32}, TensorSpec{{}, int32});
  const auto in = f.inputs();
  const Tensor outside = variable(HostTensor::full({3}, float32, 0.0), "outside");
  CHECK_THROWS_WITH_AS(
      transforms::autodiff_with_accumulation(f, {outside}),
      Contains("in tensors_to_accumulate_grads is not an input of graph 'f_subgraph(0)'"),
      GraphError);
  CHECK_THROWS_WITH_AS(transforms::autodiff_with_accumulation(f, {in[1], in[0], in[1]}),
                       Contains("is listed twice in tensors_to_accumulate_grads"), ValueError);
  CHECK_THROWS_WITH_AS(transforms::autodiff_with_accumulation(f, {in[2]}),
                       Contains("cannot accumulate the gradient of"), DTypeError);
  CHECK_THROWS_WITH_AS(transforms::autodiff_with_accumulation(f, {in[1]}, std::vector{in[1]}),
                       Contains("is in both tensors_to_accumulate_grads and grads_required"),
                       ValueError);
  CHECK_THROWS_WITH_AS(transforms::autodiff_with_accumulation(f, {}),
                       Contains("tensors_to_accumulate_grads is empty"), ValueError);
  // None of those changed the graph: it differentiates now.
  const auto info = transforms::autodiff_with_accumulation(f, {in[1]});
  CHECK_THROWS_WITH_AS(info.accumulators_dict({}, outside), Contains("no accumulator given for"),
                       ValueError);
  CHECK_THROWS_WITH_AS(info.accumulators_dict({{in[1], outside}, {in[0], outside}}, outside),
                       Contains("has no accumulator in gradient graph"), ValueError);
  const auto plain = transforms::autodiff(f, {.force = true});
  CHECK_THROWS_WITH_AS(plain.accumulators_dict({}, outside), Contains("has no accumulators"),
                       ValueError);
  Graph g = ir.create_graph(
      "g", [](Tensor x) { return ops::exp(x); }, TensorSpec{{3}, float32});
  Session s(ir, "ipu_model");
  CHECK_THROWS_AS(transforms::autodiff_with_accumulation(g, {g.inputs()[0]}), GraphError);
}

} // namespace test_autodiff_with_accumulation
