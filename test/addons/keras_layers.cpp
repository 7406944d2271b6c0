// Keras layers: Dense with each activation against the closed form, Flatten, Sequential's
// variable names, its equality with the same layers called by hand, seeds, pipeline stages on
// IPUs, and errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include "helpers.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace pxl;
using addons::Activation;
using addons::Dense;
using addons::Dropout;
using addons::Embedding;
using addons::Flatten;
using addons::LayerNorm;
using addons::Sequential;
using Keys = std::vector<std::string>;
using test_addons::ramp;

namespace {

/// What one forward run of a model gave.
struct Run {
  HostTensor y;
  addons::NamedVariableFactories factories;
  /// The variables' data after the run, by name.
  std::map<std::string, HostTensor> variables;
  /// The IPU each variable lives on, by name.
  std::map<std::string, std::int64_t> placement;
  std::int64_t output_ipu = 0;
};

/// Runs `model` once on the emulator ("ipu_model", one worker) with `x` fed through a host
/// stream, and `seed` as a constant when given. `weights` overwrite variables by name.
template <typename M>
Run run(M model, const HostTensor& x, const std::map<std::string, HostTensor>& weights = {},
        std::optional<HostTensor> seed = std::nullopt) {
  Ir ir;
  Run r;
  HostToDeviceStream x_stream;
  DeviceToHostStream y_stream;
  addons::NamedTensors vars;
  {
    auto main = ir.main_graph().scope();
    x_stream = h2d_stream(x.shape(), x.dtype(), "x");
    const Tensor xt = ops::host_load(x_stream);
    std::vector<Tensor> inputs{xt};
    addons::NamedVariableFactories facts;
    addons::GraphWithNamedArgs fwd;
    // Each branch compiles only for the modules whose build it calls.
    if (seed) {
      inputs.push_back(constant(*seed, "seed"));
      if constexpr (addons::SeededLayer<M>)
        std::tie(facts, fwd) = model.create_graph(inputs[0], inputs[1]);
      else
        FAIL("run: the module takes no seed");
    } else {
      if constexpr (addons::UnaryLayer<M>)
        std::tie(facts, fwd) = model.create_graph(inputs[0]);
      else
        FAIL("run: the module needs a seed");
    }
    r.factories = facts;
    vars = facts.init();
    const Tensor y = fwd.bind(vars).call(inputs)[0];
    r.output_ipu = y.ipu();
    auto on_output_ipu = ipu(y.ipu());
    y_stream = d2h_stream(y.shape(), y.dtype(), "y");
    ops::host_store(y_stream, y);
  }
  Session session{ir, "ipu_model", {.workers = 1}};
  for (const auto& [key, data] : weights)
    session.write_variable_data(vars.at(key), data);
  auto attached = session.attach();
  r.y = session.run({{x_stream, x}}).at(y_stream);
  for (const auto& [key, v] : vars.items()) {
    r.variables[key] = session.get_tensor_data(v);
    r.placement[key] = v.ipu();
  }
  return r;
}

/// The activation on one value, in double (softmax is done per row by the caller).
double activated(Activation a, double z) {
  switch (a) {
  case Activation::none:
  case Activation::softmax:
    return z;
  case Activation::relu:
    return z > 0 ? z : 0;
  case Activation::gelu:
    return 0.5 * z * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (z + 0.044715 * z * z * z)));
  case Activation::tanh:
    return std::tanh(z);
  case Activation::sigmoid:
    return 1 / (1 + std::exp(-z));
  }
  return z;
}

const std::vector<Activation> every_activation{Activation::none,    Activation::relu,
                                               Activation::gelu,    Activation::tanh,
                                               Activation::sigmoid, Activation::softmax};

} // namespace

TEST_CASE("Activation: names as Keras spells them, parsed back, unknown names listed") {
  CHECK(addons::activation_name(Activation::none) == "linear");
  CHECK(addons::activation_name(Activation::softmax) == "softmax");
  for (const Activation a : every_activation)
    CHECK(addons::parse_activation(addons::activation_name(a)) == a);
  CHECK(addons::parse_activation("none") == Activation::none);
  CHECK_THROWS_WITH_AS(addons::parse_activation("swish"),
                       "parse_activation: unknown activation 'swish'; expected one of linear, "
                       "relu, gelu, tanh, sigmoid, softmax (or none)",
                       ValueError);
}

TEST_CASE("Dense: x · W + b through each activation, against the closed form") {
  const std::int64_t rows = 3, in = 4, units = 5;
  const auto x = ramp({rows, in}, 1.5);
  const auto w = ramp({in, units}, 0.8);
  const auto b = ramp({units}, 0.3);
  for (const Activation a : every_activation) {
    for (const bool use_bias : {true, false}) {
      const std::string name(addons::activation_name(a));
      CAPTURE(name);
      CAPTURE(use_bias);
      std::map<std::string, HostTensor> weights{{"weight", w}};
      if (use_bias)
        weights.emplace("bias", b);
      const auto r = run(Dense(units, a, use_bias), x, weights);
      CHECK(r.factories.keys_flat() == (use_bias ? Keys{"weight", "bias"} : Keys{"weight"}));
      REQUIRE(r.y.spec() == TensorSpec{{rows, units}, float32});
      HostTensor expected({rows, units}, float32);
      for (std::int64_t i = 0; i < rows; ++i) {
        std::vector<double> z(units);
        for (std::int64_t j = 0; j < units; ++j) {
          double s = use_bias ? b.item(j) : 0.0;
          for (std::int64_t k = 0; k < in; ++k)
            s += x.item(i * in + k) * w.item(k * units + j);
          z[static_cast<std::size_t>(j)] = activated(a, s);
        }
        if (a == Activation::softmax) {
          double total = 0;
          for (double& v : z)
            total += v = std::exp(v);
          for (double& v : z)
            v /= total;
        }
        for (std::int64_t j = 0; j < units; ++j)
          expected.data<float>()[static_cast<std::size_t>(i * units + j)] =
              static_cast<float>(z[static_cast<std::size_t>(j)]);
      }
      CHECK(allclose(r.y, expected, 1e-5, 1e-6));
    }
  }
}

TEST_CASE("Dense: Linear's variables, Keras's initialisers, any leading axes") {
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = Dense(6, Activation::relu).create_graph(TensorSpec{{2, 3, 4}, float16});
  CHECK(facts.keys_flat() == Keys{"weight", "bias"});
  CHECK(facts.at("weight").spec() == TensorSpec{{4, 6}, float16});
  CHECK(facts.at("weight").initializer.description ==
        addons::init::uniform(-std::sqrt(0.6), std::sqrt(0.6), {4, 6}).description);
  CHECK(facts.at("bias").spec() == TensorSpec{{6}, float16});
  CHECK(fwd.graph().outputs()[0].spec() == TensorSpec{{2, 3, 6}, float16});
}

TEST_CASE("Flatten: every axis after the first folded, a rank-1 batch gets a feature axis") {
  // Row-major: the values keep their order.
  const auto x = ramp({2, 3, 4});
  CHECK(run(Flatten{}, x).y == x.reshaped({2, 12}));

  Ir ir;
  auto main = ir.main_graph().scope();
  auto shape_of = [](TensorSpec spec) {
    auto [facts, fwd] = Flatten{}.create_graph(spec);
    CHECK(facts.empty());
    return fwd.graph().outputs()[0].spec();
  };
  CHECK(shape_of({{32, 28, 28}, float32}) == TensorSpec{{32, 784}, float32});
  CHECK(shape_of({{2, 3, 4, 5}, int32}) == TensorSpec{{2, 60}, int32});
  CHECK(shape_of({{7, 9}, float16}) == TensorSpec{{7, 9}, float16});
  CHECK(shape_of({{7}, float32}) == TensorSpec{{7, 1}, float32});
  CHECK(shape_of({{0, 3, 2}, float32}) == TensorSpec{{0, 6}, float32});
}

TEST_CASE("Sequential: layers named by position, shapes traced in order") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const std::int64_t b = 8;
  Sequential model{Flatten{}, Dense(256, Activation::relu), Dense(128, Activation::relu),
                   Dense(10)};
  CHECK(model.size() == 4);
  CHECK(model.layer(0).name() == "layers.0");
  CHECK(model.layer(2).type_name() == "Dense");
  REQUIRE(model.layer(3).get<Dense>() != nullptr);
  CHECK(model.layer(3).get<Dense>()->units == 10);
  CHECK(model.layer(3).get<Flatten>() == nullptr);
  auto [facts, fwd] = model.create_graph(TensorSpec{{b, 28, 28}, float32});
  CHECK(facts.keys_flat() == Keys{"layers.1.weight", "layers.1.bias", "layers.2.weight",
                                  "layers.2.bias", "layers.3.weight", "layers.3.bias"});
  CHECK(facts.at("layers.1.weight").spec() == TensorSpec{{784, 256}, float32});
  CHECK(facts.at("layers.2.weight").spec() == TensorSpec{{256, 128}, float32});
  CHECK(facts.at("layers.3.bias").spec() == TensorSpec{{10}, float32});
  CHECK(fwd.graph().outputs()[0].spec() == TensorSpec{{b, 10}, float32});
  CHECK(fwd.graph().name().rfind("Sequential_subgraph", 0) == 0);
  // Tensors are named after the layers' scopes too.
  CHECK(fwd.args().at("layers.2.weight").id() == fwd.graph().name() + "/layers/2/weight");

  // add() appends under the next index; copies are independent.
  Sequential copy = model;
  copy.add(Dense(3));
  CHECK(copy.size() == 5);
  CHECK(model.size() == 4);
  CHECK(copy.layer(4).name() == "layers.4");
}

TEST_CASE("Sequential: Embedding, LayerNorm and a nested Sequential; as a sub-module") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Sequential model{Embedding(50, 8), LayerNorm(), Flatten{},
                   Sequential{Dense(4, Activation::gelu), Dense(2)}};
  auto [facts, fwd] = model.create_graph(TensorSpec{{3, 5}, int32});
  CHECK(facts.keys_flat() == Keys{"layers.0.weight", "layers.1.weight", "layers.1.bias",
                                  "layers.3.layers.0.weight", "layers.3.layers.0.bias",
                                  "layers.3.layers.1.weight", "layers.3.layers.1.bias"});
  CHECK(facts.at("layers.3.layers.0.weight").spec() == TensorSpec{{40, 4}, float32});
  CHECK(fwd.graph().outputs()[0].spec() == TensorSpec{{3, 2}, float32});

  struct Classifier : addons::Module<Classifier> {
    PXL_SUBMODULE(Sequential, body, Flatten{}, Dense(16, Activation::tanh));
    PXL_SUBMODULE(Dense, head, 3);
    Tensor build(const Tensor& x) { return head(body(x)); }
  };
  auto [cfacts, cfwd] = Classifier{}.create_graph(TensorSpec{{2, 4, 4}, float32});
  CHECK(cfacts.keys_flat() ==
        Keys{"body.layers.1.weight", "body.layers.1.bias", "head.weight", "head.bias"});
}

TEST_CASE("Sequential equals its layers called by hand, bitwise, seeds drawn in order") {
  // The same layers as members: the seeded ones take split_random_seed's chain as documented.
  struct ByHand : addons::Module<ByHand> {
    PXL_SUBMODULE(Flatten, flatten);
    PXL_SUBMODULE(Dense, hidden, 16, Activation::relu);
    PXL_SUBMODULE(Dropout, drop1, 0.25);
    PXL_SUBMODULE(LayerNorm, norm);
    PXL_SUBMODULE(Dropout, drop2, 0.5);
    PXL_SUBMODULE(Dense, out, 10, Activation::softmax);
    Tensor build(const Tensor& x, const Tensor& seed) {
      const auto first = ops::split_random_seed(seed);
      Tensor h = drop1(hidden(flatten(x)), first[0]);
      const auto second = ops::split_random_seed(first[1]);
      return out(drop2(norm(h), second[0]));
    }
  };
  Sequential model{Flatten{},    Dense(16, Activation::relu),   Dropout(0.25), LayerNorm(),
                   Dropout(0.5), Dense(10, Activation::softmax)};
  CHECK(model.needs_seed());
  const auto x = ramp({4, 3, 5});
  const HostTensor seed(std::vector<std::uint32_t>{7, 1234}, {2});
  const auto seq = run(model, x, {}, seed);
  const std::map<std::string, std::string> member_of{
      {"layers.1.weight", "hidden.weight"}, {"layers.1.bias", "hidden.bias"},
      {"layers.3.weight", "norm.weight"},   {"layers.3.bias", "norm.bias"},
      {"layers.5.weight", "out.weight"},    {"layers.5.bias", "out.bias"}};
  REQUIRE(seq.factories.keys_flat().size() == member_of.size());
  std::map<std::string, HostTensor> weights;
  for (const auto& [key, member] : member_of)
    weights.emplace(member, seq.variables.at(key));
  const auto by_hand = run(ByHand{}, x, weights, seed);
  CHECK(seq.y == by_hand.y);
  // Some elements were dropped before the softmax: the seeds reached the Dropouts.
  const auto undropped =
      run(Sequential{Flatten{}, Dense(16, Activation::relu), Dropout(0.25, false), LayerNorm(),
                     Dropout(0.5, false), Dense(10, Activation::softmax)},
          x, seq.variables, seed);
  CHECK_FALSE(undropped.y == seq.y);
  // A seed is accepted when no layer needs it, and changes nothing then.
  Sequential plain{Flatten{}, Dense(5)};
  CHECK_FALSE(plain.needs_seed());
  const auto without = run(plain, x);
  CHECK(run(plain, x, without.variables, seed).y == without.y);
}

TEST_CASE("Sequential with a stage assignment: variables on the stages' IPUs, same output") {
  const auto x = ramp({4, 2, 3});
  Sequential model{Flatten{}, Dense(8, Activation::relu), Dense(8, Activation::relu), Dense(3)};
  const auto unstaged = run(model, x);
  CHECK(unstaged.output_ipu == 0);

  model.set_pipeline_stage_assignment({0, 0, 1, 2});
  CHECK(model.pipeline_stage_assignment() == std::vector<std::int64_t>{0, 0, 1, 2});
  const auto staged = run(model, x, unstaged.variables);
  CHECK(staged.placement == std::map<std::string, std::int64_t>{{"layers.1.weight", 0},
                                                                {"layers.1.bias", 0},
                                                                {"layers.2.weight", 1},
                                                                {"layers.2.bias", 1},
                                                                {"layers.3.weight", 2},
                                                                {"layers.3.bias", 2}});
  CHECK(staged.output_ipu == 2);
  CHECK(staged.y == unstaged.y);

  // A device mapping puts stage k elsewhere: stage 0 on IPU 1, stage 1 on IPU 0.
  model.set_pipeline_stage_assignment({0, 0, 1, 1}, {1, 0});
  const auto mapped = run(model, x, unstaged.variables);
  CHECK(mapped.placement.at("layers.1.weight") == 1);
  CHECK(mapped.placement.at("layers.3.bias") == 0);
  CHECK(mapped.output_ipu == 0);
  CHECK(mapped.y == unstaged.y);

  // Switched off again with an empty list.
  model.set_pipeline_stage_assignment({});
  CHECK(run(model, x, unstaged.variables).placement.at("layers.3.weight") == 0);

  // The ops are marked with their stages.
  Ir ir;
  auto main = ir.main_graph().scope();
  model.set_pipeline_stage_assignment({0, 0, 1, 2});
  auto [facts, fwd] = model.create_graph(TensorSpec{{4, 2, 3}, float32});
  std::set<std::optional<std::int64_t>> stages;
  for (const auto& op : fwd.graph().ops())
    stages.insert(op.pipeline_stage());
  CHECK(stages == std::set<std::optional<std::int64_t>>{0, 1, 2});
}

TEST_CASE("Sequential, Dense and Flatten errors name the layer and what was expected") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const TensorSpec images{{2, 3, 3}, float32};

  CHECK_THROWS_WITH_AS(Dense(0), "Dense: units must be at least 1, got 0", ValueError);
  CHECK_THROWS_WITH_AS(Dense(3).create_graph(TensorSpec{{}, float32}),
                       doctest::Contains("Dense: expected an input of rank >= 1"), ShapeError);
  CHECK_THROWS_WITH_AS(Flatten{}.create_graph(TensorSpec{{}, float32}),
                       doctest::Contains("Flatten: expected an input with a batch axis"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(Sequential{}.create_graph(images),
                       doctest::Contains("Sequential: there are no layers to build"), ValueError);

  Sequential model{Flatten{}, Dense(4), Dense(2)};
  CHECK_THROWS_WITH_AS(model.layer(3), "Sequential: no layer 3; it has 3 layers", ValueError);
  CHECK_THROWS_WITH_AS(model.set_pipeline_stage_assignment({0, 1}),
                       "Sequential::set_pipeline_stage_assignment: expected one stage per layer "
                       "(3), got 2 stages [0, 1]",
                       ValueError);
  CHECK_THROWS_WITH_AS(model.set_pipeline_stage_assignment({0, 1, 0}),
                       doctest::Contains("stages must not decrease along the layers (data flows "
                                         "forward through the pipeline), but layer 2 is in stage "
                                         "0 after stage 1 in [0, 1, 0]"),
                       ValueError);
  CHECK_THROWS_WITH_AS(model.set_pipeline_stage_assignment({-1, 0, 0}),
                       doctest::Contains("layer 0 has the negative stage -1"), ValueError);
  CHECK_THROWS_WITH_AS(model.set_pipeline_stage_assignment({0, 1, 2}, {0, 1}),
                       doctest::Contains("PipelineStages: no stage 2"), ValueError);
  CHECK(model.pipeline_stage_assignment().empty()); // failed calls change nothing

  model.set_pipeline_stage_assignment({0, 1, 1});
  model.add(Dense(2));
  CHECK_THROWS_WITH_AS(model.create_graph(images),
                       doctest::Contains("the pipeline stage assignment [0, 1, 1] has 3 stages "
                                         "for 4 layers (a layer was added after it was set)"),
                       ValueError);

  Sequential dropping{Flatten{}, Dropout(0.1), Dense(2)};
  CHECK_THROWS_WITH_AS(dropping.create_graph(images),
                       doctest::Contains("Sequential: layer 1 (Dropout) needs a random seed"),
                       ValueError);
  CHECK_THROWS_WITH_AS(dropping.create_graph(images, TensorSpec{{2}, int32}),
                       doctest::Contains("Sequential: the seed must be uint32 of shape (2,)"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(dropping.create_graph(images, TensorSpec{{3}, uint32}),
                       doctest::Contains("Sequential: the seed must have shape (2,)"), ShapeError);
  // A layer's own error comes through unchanged.
  CHECK_THROWS_WITH_AS(Sequential{Embedding(4, 2)}.create_graph(images),
                       doctest::Contains("Embedding: expected int32 indices"), DTypeError);
}
