// Batch serialisation: batch_serialise against the unserialised forward, the serialised
// forward/gradient pair training like the unserialised one (1-3 workers, bitwise alike), the
// on-chip memory it saves and the Streaming Memory it uses, and the errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"

#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace pxl;
using addons::GraphWithNamedArgs;
using addons::micro_batch_spec;
using addons::NamedTensors;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_batch_serialise {

constexpr std::int64_t features = 6, classes = 4;

/// Linear → relu → Linear: a layer whose hidden activations outweigh its inputs and outputs.
struct Mlp : addons::Module<Mlp> {
  explicit Mlp(std::int64_t width = 16)
      : fc1(addons::named_module<addons::Linear>("fc1", width)),
        fc2(addons::named_module<addons::Linear>("fc2", classes)) {}
  Tensor build(const Tensor& x) { return fc2(ops::relu(fc1(x))); }
  addons::Linear fc1, fc2;
};

HostTensor images(std::int64_t rows) { return test_addons::normal_images(rows, features); }

HostTensor labels(std::int64_t rows) { return test_addons::cyclic_labels(rows, classes); }

/// The Mlp's output on a batch of `batch` rows, run as `steps` micro-batches.
HostTensor serialised_forward(std::int64_t batch, std::int64_t steps) {
  Ir ir;
  DeviceToHostStream ys;
  {
    auto main = ir.main_graph().scope();
    const Tensor x = constant(images(batch), "x");
    auto [facts, fwd] = Mlp{}.create_graph(micro_batch_spec(x, steps));
    const GraphWithNamedArgs layer = addons::batch_serialise(fwd, steps);
    CHECK(layer.args().keys_flat() == fwd.args().keys_flat());
    CHECK(layer.positional_inputs().front().shape() == x.shape());
    CHECK((layer.graph() == fwd.graph()) == (steps == 1));
    const Tensor y = layer.bind(facts.init()).call(x)[0];
    CHECK(y.shape() == Shape{batch, classes});
    ys = d2h_stream(y.shape(), y.dtype(), "y");
    ops::host_store(ys, y);
  }
  Session session{ir, "ipu_model", {.workers = 1}};
  auto attached = session.attach();
  return session.run().at(ys);
}

/// What SGD training of the Mlp left: the weights, the loss of every update and the input
/// gradient of the last one.
struct Training {
  std::map<std::string, HostTensor> weights;
  std::vector<float> losses;
  HostTensor dx;
  emu::MemoryReport memory;
  /// The serialised pair's activation buffers, by name: entries × entry bytes.
  std::map<std::string, std::int64_t> activation_bytes;
};

struct TrainingRun {
  std::int64_t batch = 12;
  /// Micro-batches per batch; none: the unserialised pair.
  std::optional<std::int64_t> steps;
  unsigned workers = 1;
  /// The updates run as a device loop (a subgraph repeated in one session run) instead of
  /// from the main graph, one per session run.
  bool in_loop = false;
  int updates = 20;
  std::int64_t width = 16;
  /// Only compile and report memory.
  bool compile_only = false;
};

/// The Mlp's forward and gradient graphs, batch-serialised when `run.steps` says so.
struct Layer {
  addons::NamedVariableFactories factories;
  GraphWithNamedArgs forward, grad;
  std::map<Tensor, RemoteBuffer> activations;
};

Layer make_layer(const TrainingRun& run, const Tensor& x) {
  auto [facts, fwd] = Mlp{run.width}.create_graph(micro_batch_spec(x, run.steps.value_or(1)));
  Layer layer{facts, fwd, fwd.autodiff(), {}};
  if (run.steps) {
    auto serial = addons::batch_serialise_fwd_and_grad(layer.forward, layer.grad, *run.steps);
    layer.forward = serial.forward;
    layer.grad = serial.gradient;
    layer.activations = serial.activations;
  }
  return layer;
}

struct Streams {
  DeviceToHostStream loss, dx;
};

/// One SGD update of `vars` on (x, labels y) with the cross-entropy loss, in the current graph:
/// the loss and the input gradient go to `streams`.
void sgd_step(const Layer& layer, const NamedTensors& vars, const Tensor& x, const Tensor& y,
              const Streams& streams) {
  const auto fwd_call = layer.forward.bind(vars).call_with_info(x);
  auto [loss, dy] = addons::ops::cross_entropy_with_grad(fwd_call.outputs()[0], y);
  const auto& info = layer.grad.grad_graph_info();
  const auto grad_call = layer.grad.bind(vars).call_with_info({dy}, {}, info.inputs_dict(fwd_call));
  const Tensor dx = info.fwd_parent_ins_to_grad_parent_outs(fwd_call, grad_call).at(x);
  addons::optimizers::apply(addons::optimizers::SGD({.lr = 1.0}), vars,
                            layer.grad.grads(grad_call));
  ops::host_store(streams.loss, loss);
  ops::host_store(streams.dx, dx);
}

/// One update as the body of a device loop: the weights are by-ref inputs "model.*".
struct TrainStep : addons::Module<TrainStep> {
  TrainingRun run;
  Streams streams;
  Layer layer;
  void build() {
    const Tensor x = constant(images(run.batch), "x");
    const Tensor y = constant(labels(run.batch), "labels");
    layer = make_layer(run, x);
    const NamedTensors vars =
        add_variable_inputs("model", layer.factories.map([](addons::VariableFactory f) {
          f.by_ref = true;
          return f;
        }));
    sgd_step(layer, vars, x, y, streams);
  }
};

/// `run.updates` SGD updates of the Mlp on one batch, through the unserialised pair or the
/// batch-serialised one.
Training train(const TrainingRun& run) {
  Ir ir;
  Streams streams;
  NamedTensors vars;
  Layer layer;
  {
    auto main = ir.main_graph().scope();
    streams = {d2h_stream({}, float32, "loss"), d2h_stream({run.batch, features}, float32, "dx")};
    if (run.in_loop) {
      TrainStep body;
      body.run = run;
      body.streams = streams;
      auto [facts, step] = body.create_graph();
      const NamedTensors all = facts.init();
      vars = all.sub("model");
      const auto bound = step.bind(all).bound();
      ops::repeat(step.graph(), run.updates, {}, InputsDict(bound.begin(), bound.end()));
      ir.set_num_host_transfers(run.updates);
      layer = body.layer;
    } else {
      const Tensor x = constant(images(run.batch), "x");
      layer = make_layer(run, x);
      vars = layer.factories.init();
      sgd_step(layer, vars, x, constant(labels(run.batch), "labels"), streams);
    }
  }
  Training r;
  for (const auto& [t, buffer] : layer.activations)
    r.activation_bytes.emplace(buffer.name(), buffer.entries() * t.nelms() * 4);
  Session session{ir, "ipu_model", {.workers = run.workers, .oversubscribe = true}};
  r.memory = session.memory_report();
  if (run.compile_only)
    return r;
  // The same initial weights whatever the variables are named (a device loop's are "model.*").
  std::uint64_t seed = 0;
  for (const auto& [key, t] : vars.items())
    session.write_variable_data(t, layer.factories.at(key).initializer(float32, ++seed));
  auto attached = session.attach();
  for (int k = 0; k < (run.in_loop ? 1 : run.updates); ++k) {
    const auto out = session.run();
    const auto losses = out.at(streams.loss).data<float>();
    r.losses.insert(r.losses.end(), losses.begin(), losses.end());
    // The last update's: a loop's run returns one per update.
    const auto dx = out.at(streams.dx).data<float>();
    r.dx = HostTensor(std::vector<float>(dx.end() - run.batch * features, dx.end()),
                      {run.batch, features});
  }
  for (const auto& [key, t] : vars.items())
    r.weights.emplace(key, session.get_tensor_data(t));
  return r;
}

void check_close(const Training& serial, const Training& plain) {
  for (const auto& entry : plain.weights) {
    const std::string& key = entry.first;
    CAPTURE(key);
    CHECK(allclose(serial.weights.at(key), entry.second, 1e-5, 1e-6));
  }
  CHECK(allclose(serial.dx, plain.dx, 1e-5, 1e-7));
  REQUIRE(serial.losses.size() == plain.losses.size());
  for (std::size_t k = 0; k < plain.losses.size(); ++k)
    CHECK(serial.losses[k] == doctest::Approx(plain.losses[k]).epsilon(1e-5));
}

TEST_CASE("batch_serialise: 1, 2 and 4 micro-batches give the unserialised output") {
  const std::int64_t batch = 8;
  // One step returns the graph itself, so it is the unserialised reference.
  const HostTensor plain = serialised_forward(batch, 1);
  for (const std::int64_t steps : {2, 4}) {
    CAPTURE(steps);
    CHECK(allclose(serialised_forward(batch, steps), plain, 1e-6, 1e-7));
  }
}

TEST_CASE("batch_serialise_fwd_and_grad: the serialised pair's connections mirror the original") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = Mlp{}.create_graph(TensorSpec{{3, features}, float32});
  const auto grad = fwd.autodiff();
  const auto serial = addons::batch_serialise_fwd_and_grad(fwd, grad, 4);
  CHECK(serial.forward.args().keys_flat() == fwd.args().keys_flat());
  REQUIRE(serial.forward.graph().outputs().size() == 1);
  CHECK(serial.forward.graph().outputs()[0].shape() == Shape{12, classes});
  // The output gradient is the one positional input; the weights the gradient graph reads
  // are named; the gradients of the input and of every weight are the outputs.
  const auto dy = serial.gradient.positional_inputs();
  REQUIRE(dy.size() == 1);
  CHECK(dy[0].shape() == Shape{12, classes});
  CHECK(serial.gradient.args().keys_flat() == grad.args().keys_flat());
  CHECK(serial.gradient.named_outputs().keys_flat() == grad.named_outputs().keys_flat());
  const auto& info = serial.gradient.grad_graph_info();
  CHECK(info.forward_graph() == serial.forward.graph());
  CHECK(serial.gradient.graph().outputs().size() == grad.graph().outputs().size());
  CHECK(info.expected_outputs().size() == grad.graph().outputs().size());
  // Bound to the variables alone, as the header's example calls it.
  const NamedTensors vars = facts.init();
  const Tensor x = constant(images(12), "x");
  const auto fwd_call = serial.forward.bind(vars).call_with_info(x);
  const auto grad_call = serial.gradient.bind(vars).call_with_info(fwd_call.outputs()[0] * 0.5);
  CHECK(serial.gradient.grads(grad_call).keys_flat() == vars.keys_flat());
  const auto by_input = info.fwd_parent_ins_to_grad_parent_outs(fwd_call, grad_call);
  CHECK(by_input.at(x).shape() == x.shape());
}

TEST_CASE("batch_serialise_fwd_and_grad trains as the unserialised pair, for 1-3 workers, in "
          "the main graph or a device loop") {
  const Training plain = train({.batch = 16});
  REQUIRE(plain.losses.size() == 20);
  CHECK(plain.losses.back() < plain.losses.front() / 2);
  for (const std::int64_t steps : {1, 2, 4}) {
    CAPTURE(steps);
    check_close(train({.batch = 16, .steps = steps}), plain);
  }
  const Training one = train({.batch = 16, .steps = 4});
  for (const unsigned workers : {2u, 3u}) {
    CAPTURE(workers);
    const Training many = train({.batch = 16, .steps = 4, .workers = workers});
    CHECK(many.weights == one.weights);
    CHECK(many.losses == one.losses);
    CHECK(many.dx == one.dx);
  }
  // Called from the body of a device loop: the same program, one run.
  const Training looped = train({.batch = 16, .steps = 4, .in_loop = true});
  CHECK(looped.weights == one.weights);
  CHECK(looped.losses == one.losses);
  CHECK(looped.dx == one.dx);
}

TEST_CASE("batch_serialise_fwd_and_grad: less on-chip activation memory, activations in "
          "Streaming Memory") {
  const TrainingRun big{.batch = 256, .width = 256, .compile_only = true};
  const Training plain = train(big);
  TrainingRun serial_run = big;
  serial_run.steps = 8;
  const Training serial = train(serial_run);
  const std::int64_t plain_peak = plain.memory.ipus[0].not_always_live_peak;
  const std::int64_t serial_peak = serial.memory.ipus[0].not_always_live_peak;
  MESSAGE("not-always-live peak: unserialised " << plain_peak << " B, 8 micro-batches "
                                                << serial_peak << " B; Streaming Memory "
                                                << serial.memory.streaming.used << " B");
  // One hidden activation of the whole batch is 256 KiB; the serialised loop holds an eighth.
  CHECK(serial_peak < plain_peak / 2);
  CHECK(plain.memory.streaming.used == 0);
  std::int64_t stored = 0;
  for (const auto& b : serial.memory.streaming.buffers) {
    CAPTURE(b.name);
    REQUIRE(serial.activation_bytes.contains(b.name));
    CHECK(b.entries == 8);
    CHECK(b.bytes == serial.activation_bytes.at(b.name));
    stored += b.bytes;
  }
  CHECK(serial.memory.streaming.buffers.size() == serial.activation_bytes.size());
  CHECK(serial.memory.streaming.used == stored);
  // At least the input and the hidden activation of every sample wait there.
  CHECK(stored >= 256 * (features + 256) * 4);
}

TEST_CASE("batch_serialise errors name the graph, the tensor, what was expected and found") {
  Ir elsewhere;
  GraphWithNamedArgs foreign_grad;
  {
    auto in_elsewhere = elsewhere.main_graph().scope();
    foreign_grad = Mlp{}.create_graph(TensorSpec{{4, features}, float32}).second.autodiff();
  }
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = Mlp{}.create_graph(TensorSpec{{4, features}, float32});
  using doctest::Contains;

  CHECK_THROWS_WITH_AS(addons::batch_serialise(fwd, 0),
                       Contains("batch_serialise: steps (micro-batches per batch) must be >= 1, "
                                "got 0"),
                       ValueError);
  CHECK_THROWS_WITH_AS(micro_batch_spec(TensorSpec{{10, 3}, float32}, 4),
                       Contains("micro_batch_spec: the batch [(10, 3) float32] has 10 rows along "
                                "axis 0, which 4 micro-batches cannot share equally; expected a "
                                "multiple of 4 rows"),
                       ShapeError);
  const Tensor scalar = constant(1.0, float32, "scale");
  CHECK_THROWS_WITH_AS(micro_batch_spec(scalar, 2),
                       Contains("micro_batch_spec: 'scale' [() float32] is a scalar"), ShapeError);
  CHECK_THROWS_WITH_AS(micro_batch_spec(TensorSpec{{4}, float32}, -1),
                       Contains("micro_batch_spec: steps (micro-batches per batch) must be >= 1, "
                                "got -1"),
                       ValueError);

  const Graph two = ir.create_graph(
      "two",
      [](const Tensor& a, const Tensor& b) {
        return std::tuple{a * 2.0, b * 2.0};
      },
      TensorSpec{{4, 2}, float32}, TensorSpec{{5, 2}, float32});
  CHECK_THROWS_WITH_AS(addons::batch_serialise(GraphWithNamedArgs(two), 2),
                       Contains("has 5 rows along axis 0; expected 4, the micro-batch rows of"),
                       ShapeError);
  const Graph scaled = ir.create_graph(
      "scaled", [](const Tensor& s) { return s * 2.0; }, TensorSpec{{}, float32});
  CHECK_THROWS_WITH_AS(addons::batch_serialise(GraphWithNamedArgs(scaled), 2),
                       Contains("is a scalar; expected a micro-batch with rows along axis 0"),
                       ShapeError);
  const Graph summed = ir.create_graph(
      "summed", [](const Tensor& x) { return ops::sum(x); }, TensorSpec{{4, 2}, float32});
  CHECK_THROWS_WITH_AS(addons::batch_serialise(GraphWithNamedArgs(summed), 2),
                       Contains("must hold one row per sample: expected dim 0 = 4 (the "
                                "micro-batch rows), found shape ()"),
                       ShapeError);
  const Graph none = ir.create_graph("none", [] { return ops::init({4}, float32); });
  CHECK_THROWS_WITH_AS(addons::batch_serialise(GraphWithNamedArgs(none), 2),
                       Contains("has no positional inputs to split into micro-batches"),
                       ValueError);
  const Graph by_ref = ir.create_empty_graph("by_ref");
  {
    auto in_graph = by_ref.scope();
    graph_output(graph_input({4, 2}, float32, "x", /*by_ref=*/true) * 2.0);
  }
  CHECK_THROWS_WITH_AS(addons::batch_serialise(GraphWithNamedArgs(by_ref), 2),
                       Contains("is passed by reference, but each step receives a slice of it"),
                       ValueError);

  const auto grad = fwd.autodiff();
  CHECK_THROWS_WITH_AS(addons::batch_serialise_fwd_and_grad(fwd, grad, 0),
                       Contains("batch_serialise_fwd_and_grad: steps (micro-batches per batch) "
                                "must be >= 1, got 0"),
                       ValueError);
  CHECK_THROWS_WITH_AS(addons::batch_serialise_fwd_and_grad(fwd, fwd, 2),
                       Contains(("graph '" + fwd.graph().name() +
                                 "' is not a gradient graph; expected the autodiff of the "
                                 "forward graph '" +
                                 fwd.graph().name() + "'")
                                    .c_str()),
                       GraphError);
  auto [other_facts, other] = Mlp{}.create_graph(TensorSpec{{4, features}, float32});
  CHECK_THROWS_WITH_AS(
      addons::batch_serialise_fwd_and_grad(other, grad, 2),
      Contains(("'" + grad.graph().name() + "' is the gradient graph of '" + fwd.graph().name() +
                "'; expected the gradient graph of '" + other.graph().name() + "'")
                   .c_str()),
      GraphError);
  CHECK_THROWS_WITH_AS(
      addons::batch_serialise_fwd_and_grad(fwd, foreign_grad, 2),
      Contains(
          ("belongs to another Ir than the forward graph '" + fwd.graph().name() + "'").c_str()),
      GraphError);
}

} // namespace test_batch_serialise
