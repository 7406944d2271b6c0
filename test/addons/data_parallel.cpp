// Data-parallel training: R replicas at batch B, their gradients averaged across replicas,
// train as one replica at batch R·B (SGD and Adam, both gradient containers, with gradient
// accumulation in the main graph and in a device loop); replicas stay identical; errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>

using namespace pxl;
using addons::DataParallel;
using addons::GradientAccumulation;
using addons::Linear;
using addons::NamedTensors;
using test_addons::cross_entropy_grads;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_data_parallel {

constexpr std::int64_t features = 6, hidden = 5, classes = 4;
constexpr std::int64_t steps = 50;
constexpr std::uint64_t seed = 3;

/// Linear → gelu → Linear: small, but with a hidden layer so the gradients are not linear in
/// the data.
struct Mlp : addons::Module<Mlp> {
  PXL_SUBMODULE(Linear, fc1, hidden);
  PXL_SUBMODULE(Linear, fc2, classes);
  Tensor build(const Tensor& x) { return fc2(ops::gelu(fc1(x))); }
};

/// Step `step`'s global batch of `rows`: images [rows, features] and labels [rows].
HostTensor images(std::int64_t step, std::int64_t rows) {
  return addons::init::normal(0.0, 1.0, {rows, features})(float32,
                                                          100 + static_cast<std::uint64_t>(step));
}
HostTensor labels(std::int64_t step, std::int64_t rows) {
  std::mt19937 gen(static_cast<std::uint32_t>(1000 + step));
  std::uniform_int_distribution<std::int32_t> dist(0, classes - 1);
  std::vector<std::int32_t> v;
  for (std::int64_t i = 0; i < rows; ++i)
    v.push_back(dist(gen));
  return HostTensor(v, {rows});
}

/// A global batch [rows, ...] as a stream array: [transfers, replicas, rows / (transfers ·
/// replicas), ...] with dims of 1 dropped, so that replica r of transfer k takes rows
/// (k·replicas + r)·b … +b−1.
HostTensor stream_array(const HostTensor& t, std::int64_t transfers, std::int64_t replicas) {
  Shape shape = t.shape();
  shape[0] /= transfers * replicas;
  if (replicas > 1)
    shape.insert(shape.begin(), replicas);
  if (transfers > 1)
    shape.insert(shape.begin(), transfers);
  return t.reshaped(shape);
}

/// How a test trains: which optimizer, which gradient container, how gradients accumulate.
enum class Optimizer { sgd, adam };
enum class Container { named, by_variable };

struct Setup {
  std::int64_t replicas = 1;
  std::int64_t batch = 8; ///< per replica and micro-batch
  Optimizer optimizer = Optimizer::sgd;
  Container container = Container::named;
  std::int64_t micro_batches = 1; ///< > 1: accumulate the mean of that many, then update
};

NamedTensors apply_optimizer(Optimizer o, const NamedTensors& vars, const NamedTensors& grads,
                             Container c) {
  auto apply = [&](auto&& opt) {
    if (c == Container::named)
      return addons::optimizers::apply(opt, vars, addons::average_across_replicas(grads));
    std::map<Tensor, Tensor> by_var;
    for (const auto& [key, v] : vars.items())
      by_var.emplace(v, grads.at(key));
    return addons::optimizers::apply(opt, vars, addons::average_across_replicas(by_var));
  };
  if (o == Optimizer::sgd)
    return apply(addons::optimizers::SGD{{.lr = 0.2, .momentum = 0.9}});
  return apply(addons::optimizers::Adam{{.lr = 0.01}});
}

/// Every replica's weights after the last step (the d2h array of the updated weights, per
/// key), and how many all-reduces the Ir holds.
struct Trained {
  std::map<std::string, std::vector<HostTensor>> weights; ///< per key, one per replica
  std::int64_t all_reduces = 0;
};

/// Replica `r`'s element of a d2h array [transfers, replicas, *shape] (dims of 1 dropped)
/// stored once per run: the first transfer's.
HostTensor replica(const HostTensor& t, const Shape& shape, std::int64_t r) {
  HostTensor one(shape, t.dtype());
  const std::size_t n = static_cast<std::size_t>(one.nelms());
  std::ranges::copy(t.data<float>().subspan(static_cast<std::size_t>(r) * n, n),
                    one.data<float>().begin());
  return one;
}

/// Each replica's value of every stream of `outs` in a run's outputs.
Trained collect(const StreamOutputs& out, const std::map<std::string, DeviceToHostStream>& outs,
                std::int64_t replicas) {
  Trained t;
  for (const auto& [key, stream] : outs)
    for (std::int64_t r = 0; r < replicas; ++r)
      t.weights[key].push_back(replica(out.at(stream), stream.spec().shape, r));
  return t;
}

/// Stores each of `vars` to a d2h stream of its own, named by its key.
std::map<std::string, DeviceToHostStream> store_each(const NamedTensors& vars) {
  std::map<std::string, DeviceToHostStream> outs;
  for (const auto& [key, v] : vars.items()) {
    outs.emplace(key, d2h_stream(v.shape(), v.dtype(), key));
    ops::host_store(outs.at(key), v);
  }
  return outs;
}

std::int64_t count_all_reduces(const Ir& ir) {
  std::int64_t n = 0;
  std::vector<Graph> graphs{ir.main_graph()};
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    for (const auto& op : graphs[i].ops())
      n += op.kind() == OpKind::ReplicatedAllReduce;
    for (const auto& g : graphs[i].called_graphs())
      if (std::ranges::find(graphs, g) == graphs.end())
        graphs.push_back(g);
  }
  return n;
}

/// Trains `steps` updates, one per run, in the main graph: each loads `micro_batches`
/// micro-batches of `batch` rows per replica (through a loop when accumulating), averages the
/// gradients across replicas and applies the optimizer. Step s's global batch of
/// replicas·micro_batches·batch rows is split as [micro_batches, replicas, batch].
Trained train(const Setup& s) {
  Ir ir(s.replicas);
  HostToDeviceStream xs, ys;
  std::map<std::string, DeviceToHostStream> outs;
  {
    auto in_main = ir.main_graph().scope();
    xs = h2d_stream({s.batch, features}, float32, "x");
    ys = h2d_stream({s.batch}, int32, "y");
    auto created = Mlp{}.create_graph(TensorSpec{{s.batch, features}, float32});
    auto& facts = created.first;
    auto& fwd = created.second; // a reference, not a binding: lambdas below capture it
    auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
    auto vars = facts.init("", seed);
    auto grads_of = [&](const NamedTensors& w) {
      return cross_entropy_grads(fwd, bwd, w, ops::host_load(xs), ops::host_load(ys));
    };
    if (s.micro_batches == 1) {
      apply_optimizer(s.optimizer, vars, grads_of(vars), s.container);
    } else {
      const GradientAccumulation config{.steps = s.micro_batches};
      NamedTensors state = vars;
      state.update(addons::accumulator_factories(facts, config).init());
      Graph micro = ir.create_empty_graph("micro_step");
      {
        auto in_micro = micro.scope();
        auto m = addons::named_graph_inputs(state);
        addons::accumulate_gradients(m, grads_of(m.filter_keys(vars.keys())), config);
      }
      ops::repeat(micro, config.steps, state.values_flat());
      // Averaged once per update: the accumulated mean, not each micro-batch's gradient.
      apply_optimizer(s.optimizer, vars, addons::accumulated_gradients(state), s.container);
      addons::reset_accumulators(state);
    }
    outs = store_each(vars);
  }
  ir.set_num_host_transfers(s.micro_batches);
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const std::int64_t rows = s.replicas * s.micro_batches * s.batch;
  Trained t;
  for (std::int64_t step = 0; step < steps; ++step) {
    auto out = session.run({{xs, stream_array(images(step, rows), s.micro_batches, s.replicas)},
                            {ys, stream_array(labels(step, rows), s.micro_batches, s.replicas)}});
    if (step == steps - 1)
      t = collect(out, outs, s.replicas);
  }
  t.all_reduces = count_all_reduces(ir);
  return t;
}

/// Every replica of `parallel` holds `single`'s weights, to float rounding, and the replicas
/// are bitwise identical.
void check_same_training(const Trained& single, const Trained& parallel, std::int64_t replicas) {
  REQUIRE(single.weights.size() == 4);
  for (const auto& entry : single.weights) {
    const std::string& key = entry.first;
    const auto& w = entry.second;
    CAPTURE(key);
    const auto& all = parallel.weights.at(key);
    REQUIRE(all.size() == static_cast<std::size_t>(replicas));
    CHECK(allclose(w.at(0), all[0], 1e-5, 1e-6));
    for (std::int64_t r = 1; r < replicas; ++r)
      CHECK(all[static_cast<std::size_t>(r)] == all[0]);
  }
}

TEST_CASE("R replicas at batch B train as one replica at batch R·B over 50 steps") {
  for (Optimizer o : {Optimizer::sgd, Optimizer::adam}) {
    for (Container c : {Container::named, Container::by_variable}) {
      CAPTURE(static_cast<int>(o));
      CAPTURE(static_cast<int>(c));
      const Trained single = train({.replicas = 1, .batch = 8, .optimizer = o, .container = c});
      CHECK(single.all_reduces == 0); // one replica: the average adds no op
      for (std::int64_t r : {2, 4}) {
        CAPTURE(r);
        const Trained parallel =
            train({.replicas = r, .batch = 8 / r, .optimizer = o, .container = c});
        CHECK(parallel.all_reduces == 4); // one per variable
        check_same_training(single, parallel, r);
      }
    }
  }
}

TEST_CASE("With accumulation the gradients are averaged once per update, in the main graph") {
  for (Optimizer o : {Optimizer::sgd, Optimizer::adam}) {
    CAPTURE(static_cast<int>(o));
    // 2 replicas × 3 micro-batches × 2 rows = one replica at batch 12.
    const Trained single = train({.replicas = 1, .batch = 12, .optimizer = o});
    const Trained parallel = train({.replicas = 2, .batch = 2, .optimizer = o, .micro_batches = 3});
    CHECK(parallel.all_reduces == 4); // none in the micro-batch loop
    check_same_training(single, parallel, 2);
  }
}

TEST_CASE("averaged_across_replicas: SGD with accumulation in a device loop, one run") {
  // `updates` SGD steps of `micro` micro-batches in one run, replicas averaging each update's
  // accumulated gradient; against one replica taking the same global batches whole.
  auto train_loop = [](std::int64_t replicas, std::int64_t batch, std::int64_t micro) {
    Ir ir(replicas);
    HostToDeviceStream xs, ys;
    std::map<std::string, DeviceToHostStream> outs;
    {
      auto in_main = ir.main_graph().scope();
      xs = h2d_stream({batch, features}, float32, "x");
      ys = h2d_stream({batch}, int32, "y");
      auto [facts, fwd] = Mlp{}.create_graph(TensorSpec{{batch, features}, float32});
      auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
      auto vars = facts.init("", seed);
      const GradientAccumulation config{.steps = micro};
      NamedTensors state = vars;
      state.update(addons::accumulator_factories(facts, config).init());
      Graph micro_step = ir.create_empty_graph("micro_step");
      {
        auto in_micro = micro_step.scope();
        auto m = addons::named_graph_inputs(state);
        addons::accumulate_gradients(m,
                                     cross_entropy_grads(fwd, bwd, m.filter_keys(vars.keys()),
                                                         ops::host_load(xs), ops::host_load(ys)),
                                     config);
      }
      Graph step = ir.create_empty_graph("step");
      {
        auto in_step = step.scope();
        auto m = addons::named_graph_inputs(state);
        ops::repeat(micro_step, config.steps, m.values_flat());
        addons::apply_accumulated(m.filter_keys(vars.keys()), m,
                                  addons::averaged_across_replicas(
                                      [](const std::string&, const Tensor& w, const Tensor& g) {
                                        ops::scaled_add_(w, g, {.b = -0.3});
                                      }));
      }
      ops::repeat(step, steps, state.values_flat());
      outs = store_each(vars);
    }
    ir.set_num_host_transfers(steps * micro);
    Session session{ir, "ipu_model"};
    auto attached = session.attach();
    // Update s takes global rows s·G … s·G+G−1 (G = replicas·micro·batch), split as
    // [steps·micro, replicas, batch].
    const std::int64_t rows = steps * micro * replicas * batch;
    auto out = session.run({{xs, stream_array(images(0, rows), steps * micro, replicas)},
                            {ys, stream_array(labels(0, rows), steps * micro, replicas)}});
    Trained t = collect(out, outs, replicas);
    t.all_reduces = count_all_reduces(ir);
    return t;
  };
  const Trained single = train_loop(1, 8, 1);
  const Trained parallel = train_loop(2, 2, 2);
  CHECK(parallel.all_reduces == 4);
  check_same_training(single, parallel, 2);
}

TEST_CASE("Replica groupings: each group trains its own model on its own data") {
  // 4 replicas in groups {0, 1} and {2, 3} (stride 1, size 2); the gradients averaged within
  // a group. Replicas 0-1 and 2-3 then stay pairwise identical and differ across groups.
  Ir ir(4);
  HostToDeviceStream xs, ys;
  DeviceToHostStream w_out;
  {
    auto in_main = ir.main_graph().scope();
    xs = h2d_stream({2, features}, float32, "x");
    ys = h2d_stream({2}, int32, "y");
    auto [facts, fwd] = Mlp{}.create_graph(TensorSpec{{2, features}, float32});
    auto bwd = fwd.autodiff({.grads_required = fwd.args().tensors()});
    auto vars = facts.init("", seed);
    auto fwd_info = fwd.bind(vars).call_with_info({ops::host_load(xs)});
    auto [loss, dlogits] =
        addons::ops::cross_entropy_with_grad(fwd_info.outputs()[0], ops::host_load(ys));
    const auto grads = bwd.grad_graph_info().fwd_parent_ins_to_grad_parent_outs(
        fwd_info, bwd.call_with_info({dlogits}, {}, bwd.grad_graph_info().inputs_dict(fwd_info)));
    addons::optimizers::apply(
        addons::optimizers::SGD{{.lr = 0.5}}, vars,
        addons::average_across_replicas(grads, {.group = ir.replica_grouping(1, 2)}));
    w_out = d2h_stream(vars.at("fc1.weight").shape(), float32, "w");
    ops::host_store(w_out, vars.at("fc1.weight"));
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const auto out =
      session.run({{xs, stream_array(images(0, 8), 1, 4)}, {ys, stream_array(labels(0, 8), 1, 4)}});
  const HostTensor& w = out.at(w_out);
  const Shape shape{features, hidden};
  CHECK(replica(w, shape, 0) == replica(w, shape, 1));
  CHECK(replica(w, shape, 2) == replica(w, shape, 3));
  CHECK_FALSE(replica(w, shape, 0) == replica(w, shape, 2));
}

TEST_CASE("Data-parallel errors name the gradient and the grouping") {
  Ir ir(2);
  Ir other(2);
  auto in_main = ir.main_graph().scope();
  const Tensor w = variable(HostTensor({2.0f, 3.0f}, {2}), float32, "w");
  const Tensor g = w * 1.0;

  SUBCASE("a gradient that is not float") {
    const NamedTensors grads{{"w", ops::cast(g, int32)}};
    CHECK_THROWS_WITH_AS(addons::average_across_replicas(grads),
                         doctest::Contains("the gradient of 'w' is"), DTypeError);
    CHECK_THROWS_WITH_AS(
        addons::average_across_replicas(std::map<Tensor, Tensor>{{w, ops::cast(g, int32)}}),
        doctest::Contains("the gradient of variable 'w' is"), DTypeError);
  }
  SUBCASE("a grouping of another Ir, even of one replica") {
    CHECK_THROWS_WITH_AS(addons::average_across_replicas(NamedTensors{{"w", g}},
                                                         {.group = other.replica_grouping(1, 1)}),
                         doctest::Contains("was made by another Ir"), ValueError);
  }
  SUBCASE("an empty update") {
    CHECK_THROWS_WITH_AS(addons::averaged_across_replicas({}),
                         doctest::Contains("the update is empty"), ValueError);
  }
}

} // namespace test_data_parallel
