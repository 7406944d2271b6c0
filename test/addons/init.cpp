// Initialisers and variable factories: values, statistics, seeding and creation order.
#include "pxl/addons/layers/dense.hpp"
#include "pxl/addons/layers/embedding.hpp"
#include "pxl/addons/layers/layer_norm.hpp"
#include "pxl/addons/layers/linear.hpp"
#include "pxl/addons/module/initializers.hpp"
#include "pxl/addons/module/variable_factory.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <optional>

using namespace pxl;
namespace init = pxl::addons::init;

namespace {
struct Stats {
  double mean = 0, std = 0, min = 1e300, max = -1e300;
};
Stats stats(const HostTensor& t) {
  Stats s;
  const auto n = static_cast<double>(t.nelms());
  for (std::int64_t i = 0; i < t.nelms(); ++i) {
    const double v = t.item(i);
    s.mean += v / n;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  for (std::int64_t i = 0; i < t.nelms(); ++i)
    s.std += std::pow(t.item(i) - s.mean, 2) / n;
  s.std = std::sqrt(s.std);
  return s;
}
} // namespace

TEST_CASE("constant initialisers give exact values in the requested dtype") {
  CHECK(init::zeros({2, 3})(float32, 1) == HostTensor::full({2, 3}, float32, 0.0));
  CHECK(init::ones({4})(float16, 1) == HostTensor::full({4}, float16, 1.0));
  CHECK(init::constant(2.5, {2})(float32, 7) == HostTensor({2.5f, 2.5f}));
  CHECK(init::constant(3.0, {})(int32, 0) == HostTensor::scalar<std::int32_t>(3));
  const HostTensor data({1.f, 2.f, 3.f, 4.f}, {2, 2});
  const auto f = init::from(data);
  CHECK(f.shape == Shape{2, 2});
  CHECK(f(float32, 99) == data);
  CHECK(f(float16, 0) == data.astype(float16));
}

TEST_CASE("random initialisers follow their distributions (100k samples)") {
  const Shape shape{100, 1000};
  const auto n = stats(init::normal(1.0, 0.5, shape)(float32, 3));
  CHECK(n.mean == doctest::Approx(1.0).epsilon(0.01));
  CHECK(n.std == doctest::Approx(0.5).epsilon(0.01));

  const auto u = stats(init::uniform(-2.0, 4.0, shape)(float32, 3));
  CHECK(u.min >= -2.0);
  CHECK(u.max < 4.0);
  CHECK(u.mean == doctest::Approx(1.0).epsilon(0.01));
  CHECK(u.std == doctest::Approx(6.0 / std::sqrt(12.0)).epsilon(0.01));

  // Truncated at ±2σ: the std of a standard normal truncated to [-2, 2] is 0.8796.
  const auto t = stats(init::truncated_normal(0.0, 0.02, shape)(float32, 3));
  CHECK(t.min >= -0.04f);
  CHECK(t.max <= 0.04f);
  CHECK(t.mean == doctest::Approx(0.0).epsilon(0.001).scale(1));
  CHECK(t.std == doctest::Approx(0.02 * 0.8796).epsilon(0.01));

  // Glorot uniform for (300, 700): limit sqrt(6 / 1000).
  const double a = std::sqrt(6.0 / 1000.0);
  const auto g = stats(init::glorot({300, 700})(float32, 3));
  CHECK(g.min >= -a);
  CHECK(g.max < a);
  CHECK(g.std == doctest::Approx(2 * a / std::sqrt(12.0)).epsilon(0.01));
  CHECK(init::glorot({300, 700}).description == "glorot(gain=1)");
  // Receptive field: (3, 3, 4, 8) has fan_in 36 and fan_out 72.
  const auto conv = stats(init::glorot({3, 3, 4, 8})(float32, 1));
  CHECK(conv.max < std::sqrt(6.0 / 108.0));
  CHECK(conv.max > 0.9 * std::sqrt(6.0 / 108.0));
}

TEST_CASE("Keras's initializers by name: bounds and statistics for a variable's shape") {
  namespace ki = pxl::addons::initializers;
  // Keras's fans: (in, out); the receptive field for kernels of rank >= 3; shape[0] for rank 1.
  CHECK(ki::fans_of({300, 200}).in == 300);
  CHECK(ki::fans_of({300, 200}).out == 200);
  CHECK(ki::fans_of({3, 3, 16, 32}).in == 144);
  CHECK(ki::fans_of({3, 3, 16, 32}).out == 288);
  CHECK(ki::fans_of({5}).in == 5);
  CHECK(ki::fans_of({5}).out == 5);
  CHECK(ki::fans_of({}).in == 1);
  const Shape shape{300, 200}; // 60,000 samples

  // glorot_uniform: U(±sqrt(6 / (fan_in + fan_out))), the default kernel initializer.
  const double limit = std::sqrt(6.0 / 500.0);
  const auto gu = stats(ki::glorot_uniform()(shape)(float32, 3));
  CHECK(gu.min >= -limit);
  CHECK(gu.max < limit);
  CHECK(gu.max > 0.999 * limit);
  CHECK(gu.min < -0.999 * limit);
  CHECK(gu.mean == doctest::Approx(0.0).scale(1).epsilon(3 * limit / std::sqrt(3 * 60000.0)));
  CHECK(gu.std == doctest::Approx(limit / std::sqrt(3.0)).epsilon(0.01));
  CHECK(ki::glorot_uniform().name == "glorot_uniform");

  // glorot_normal and he_normal: truncated at two of their σ, with the standard deviations
  // Keras's variance scaling targets, sqrt(2 / (fan_in + fan_out)) and sqrt(2 / fan_in).
  const double glorot_std = std::sqrt(2.0 / 500.0), he_std = std::sqrt(2.0 / 300.0);
  const auto gn = stats(ki::glorot_normal()(shape)(float32, 3));
  CHECK(gn.std == doctest::Approx(glorot_std).epsilon(0.02));
  CHECK(gn.max <= 2 * glorot_std / 0.87962566103423978 + 1e-7);
  CHECK(gn.min >= -2 * glorot_std / 0.87962566103423978 - 1e-7);
  const auto hn = stats(ki::he_normal()(shape)(float32, 3));
  CHECK(hn.std == doctest::Approx(he_std).epsilon(0.02));
  CHECK(hn.max <= 2 * he_std / 0.87962566103423978 + 1e-7);
  // he_uniform: U(±sqrt(6 / fan_in)).
  const double he_limit = std::sqrt(6.0 / 300.0);
  const auto hu = stats(ki::he_uniform()(shape)(float32, 3));
  CHECK(hu.max < he_limit);
  CHECK(hu.max > 0.999 * he_limit);
  CHECK(hu.min >= -he_limit);
  CHECK(hu.std == doctest::Approx(he_limit / std::sqrt(3.0)).epsilon(0.01));

  // variance_scaling: Glorot and He as instances, and PyTorch's U(±1 / sqrt(fan_in)).
  CHECK(ki::variance_scaling(2.0)(shape)(float32, 3) == ki::he_normal()(shape)(float32, 3));
  CHECK(ki::variance_scaling(1.0, ki::FanMode::fan_avg, ki::Distribution::uniform)(shape)(
            float32, 3) == ki::glorot_uniform()(shape)(float32, 3));
  const auto torch = stats(ki::variance_scaling(1.0 / 3, ki::FanMode::fan_in,
                                                ki::Distribution::uniform)(shape)(float32, 3));
  CHECK(torch.max < 1 / std::sqrt(300.0));
  CHECK(torch.max > 0.999 / std::sqrt(300.0));
  const auto out_normal = stats(ki::variance_scaling(
      0.5, ki::FanMode::fan_out, ki::Distribution::untruncated_normal)(shape)(float32, 3));
  CHECK(out_normal.std == doctest::Approx(std::sqrt(0.5 / 200)).epsilon(0.02));
  CHECK(out_normal.max > 3 * std::sqrt(0.5 / 200)); // not truncated
  CHECK_THROWS_WITH_AS(ki::variance_scaling(0.0), "variance_scaling: scale must be positive, got 0",
                       ValueError);

  // Keras's defaults for the plain distributions: N(0, 0.05²), U(±0.05), truncated N(0, 0.05²).
  const auto rn = stats(ki::random_normal()(shape)(float32, 3));
  CHECK(rn.std == doctest::Approx(0.05).epsilon(0.02));
  CHECK(rn.mean == doctest::Approx(0.0).scale(1).epsilon(1e-3));
  const auto ru = stats(ki::random_uniform()(shape)(float32, 3));
  CHECK(ru.min >= -0.05);
  CHECK(ru.max < 0.05);
  CHECK(stats(ki::random_normal(1.0, 0.5)(shape)(float32, 3)).mean ==
        doctest::Approx(1.0).epsilon(0.01));
  CHECK(stats(ki::truncated_normal()(shape)(float32, 3)).max <= 0.1 + 1e-7);

  CHECK(ki::zeros()({2, 3})(float32, 1) == HostTensor(std::vector<float>(6, 0.f), {2, 3}));
  CHECK(ki::ones()({4})(float16, 1) == HostTensor(std::vector<float>(4, 1.f), {4}).astype(float16));
  CHECK(ki::constant(0.5)({3})(float32, 1) == HostTensor({0.5f, 0.5f, 0.5f}, {3}));
  // The seed decides the data, as for every initialiser.
  CHECK(ki::glorot_uniform()(shape)(float32, 3) == ki::glorot_uniform()(shape)(float32, 3));
  CHECK(ki::glorot_uniform()(shape)(float32, 3) != ki::glorot_uniform()(shape)(float32, 4));
  CHECK_THROWS_AS(ki::random_normal(0.0, -1.0)({2}), ValueError);
}

TEST_CASE("Dense starts from Keras's glorot_uniform and zeros, or the initializers given") {
  namespace ki = pxl::addons::initializers;
  Ir ir;
  auto main = ir.main_graph().scope();
  auto [facts, fwd] = pxl::addons::Dense(200).create_graph(TensorSpec{{8, 300}, float32});
  const HostTensor w = facts.at("weight").initializer(float32, 11);
  CHECK(w.shape() == Shape{300, 200});
  const double limit = std::sqrt(6.0 / 500.0);
  const auto s = stats(w);
  CHECK(s.max < limit);
  CHECK(s.min >= -limit);
  CHECK(s.max > 0.999 * limit);
  CHECK(s.std == doctest::Approx(limit / std::sqrt(3.0)).epsilon(0.01));
  CHECK(facts.at("bias").initializer(float32, 11) ==
        HostTensor(std::vector<float>(200, 0.f), {200}));

  auto [given, fwd2] =
      pxl::addons::Dense(3, pxl::addons::Activation::none, true, ki::ones(), ki::constant(0.25))
          .create_graph(TensorSpec{{8, 2}, float32});
  CHECK(given.at("weight").initializer(float32, 1) ==
        HostTensor(std::vector<float>(6, 1.f), {2, 3}));
  CHECK(given.at("bias").initializer(float32, 1) == HostTensor({0.25f, 0.25f, 0.25f}, {3}));
}

TEST_CASE("Embedding and LayerNorm take Keras's initializer arguments") {
  namespace ki = pxl::addons::initializers;
  Ir ir;
  auto main = ir.main_graph().scope();
  // Embedding: popxl.addons' normal(0, 0.02) unless given, Keras's random_uniform say.
  auto [table, fwd] = pxl::addons::Embedding(300, 200).create_graph(TensorSpec{{4}, int32});
  CHECK(stats(table.at("weight").initializer(float32, 5)).std ==
        doctest::Approx(0.02).epsilon(0.02));
  auto [uniform, fwd2] = pxl::addons::Embedding(300, 200, float32, ki::random_uniform())
                             .create_graph(TensorSpec{{4}, int32});
  const auto u = stats(uniform.at("weight").initializer(float32, 5));
  CHECK(u.max < 0.05);
  CHECK(u.min >= -0.05);
  CHECK(u.max > 0.0499);
  // LayerNorm: gamma ones and beta zeros, as Keras's, or the initializers given.
  auto [norm, fwd3] = pxl::addons::LayerNorm().create_graph(TensorSpec{{2, 3}, float32});
  CHECK(norm.at("weight").initializer(float32, 1) == HostTensor({1.f, 1.f, 1.f}, {3}));
  CHECK(norm.at("bias").initializer(float32, 1) == HostTensor({0.f, 0.f, 0.f}, {3}));
  auto [given, fwd4] = pxl::addons::LayerNorm(1e-3, ki::constant(2.0), ki::constant(-1.0))
                           .create_graph(TensorSpec{{2, 3}, float32});
  CHECK(given.at("weight").initializer(float32, 1) == HostTensor({2.f, 2.f, 2.f}, {3}));
  CHECK(given.at("bias").initializer(float32, 1) == HostTensor({-1.f, -1.f, -1.f}, {3}));
}

TEST_CASE("random initialisers are reproducible per seed and differ across seeds") {
  const auto f = init::normal(0.0, 1.0, {64});
  CHECK(f(float32, 5) == f(float32, 5));
  CHECK_FALSE(f(float32, 5) == f(float32, 6));
  CHECK(init::seed_for(1, "fc1.weight") == init::seed_for(1, "fc1.weight"));
  CHECK(init::seed_for(1, "fc1.weight") != init::seed_for(1, "fc2.weight"));
  CHECK(init::seed_for(1, "fc1.weight") != init::seed_for(2, "fc1.weight"));
  // Draw 0 is the seed of the name alone; each further draw of one name is another seed.
  CHECK(init::seed_for(1, "fc1.weight", 0) == init::seed_for(1, "fc1.weight"));
  CHECK(init::seed_for(1, "fc1.weight", 1) != init::seed_for(1, "fc1.weight"));
  CHECK(init::seed_for(1, "fc1.weight", 1) != init::seed_for(1, "fc1.weight", 2));
}

TEST_CASE("initialiser errors") {
  CHECK_THROWS_WITH_AS(init::normal(0, -1, {2}),
                       doctest::Contains("init::normal: std must be >= 0"), ValueError);
  CHECK_THROWS_WITH_AS(init::truncated_normal(0, -1, {2}),
                       doctest::Contains("init::truncated_normal: std must be >= 0"), ValueError);
  CHECK_THROWS_WITH_AS(init::uniform(1, 0, {2}),
                       doctest::Contains("expected low <= high, got low=1, high=0"), ValueError);
  CHECK_THROWS_WITH_AS(init::glorot({5}), doctest::Contains("rank >= 2"), ValueError);
}

TEST_CASE("NamedVariableFactories::init creates named main-graph variables, data by name") {
  addons::NamedVariableFactories f;
  f.insert("b.weight", {init::normal(0, 1, {3}), float32});
  f.insert("a.bias", {init::zeros({2}), float16});
  Ir ir;
  auto main = std::optional(ir.main_graph().scope());
  const auto vars = f.init();
  CHECK(vars.keys_flat() == std::vector<std::string>{"b.weight", "a.bias"});
  const Tensor w = vars.at("b.weight"), b = vars.at("a.bias");
  CHECK(w.is_variable());
  CHECK(w.id() == "b.weight");
  CHECK(b.dtype() == float16);
  // Created in sorted key order, so "a.bias" comes first whatever the tree's order.
  CHECK(b.index() < w.index());

  main.reset();
  Session session{ir, "ipu_model"};
  const auto w_data = session.get_tensor_data(w);
  CHECK(w_data == f.at("b.weight").data("b.weight", addons::default_seed));

  // Another prefix names the variables and seeds them differently; the same prefix and seed
  // reproduce the data in another Ir.
  Ir ir2;
  auto main2 = ir2.main_graph().scope();
  const auto v1 = f.init("copy");
  const auto v2 = f.init("other", 7);
  CHECK(v1.at("b.weight").id() == "copy.b.weight");
  Session s2{ir2, "ipu_model"};
  CHECK_FALSE(s2.get_tensor_data(v1.at("b.weight")) == w_data);
  CHECK(s2.get_tensor_data(v2.at("b.weight")) == f.at("b.weight").data("other.b.weight", 7));
  CHECK_THROWS_WITH_AS(f.init("bad prefix"), doctest::Contains("malformed key 'bad prefix'"),
                       ValueError);
}

TEST_CASE("init_zero and init_undef create buffers in the current graph") {
  addons::NamedVariableFactories f;
  f.insert("m.w", {init::normal(0, 1, {2, 2}), float32});
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph g = ir.create_empty_graph("acc");
  auto in_g = g.scope();
  const auto zeros = f.init_zero();
  const auto undef = f.init_undef();
  CHECK(zeros.at("m.w").graph() == g);
  CHECK(zeros.at("m.w").shape() == Shape{2, 2});
  CHECK(undef.at("m.w").producer()->attrs_as<CreateAttrs>().init == InitType::undef);
  CHECK(zeros.at("m.w").producer()->attrs_as<CreateAttrs>().init == InitType::zero);
}

TEST_CASE("VariableFactory prints its spec and initialiser") {
  addons::VariableFactory f{init::normal(0, 0.02, {784, 512}), float32, true};
  std::ostringstream os;
  os << f;
  CHECK(os.str() == "(784, 512) float32 normal(mean=0, std=0.02) by_ref");
}

namespace {
/// The data of the weights of `inits` initialisations of one Linear(3) in a fresh Ir, each with
/// `init_seed` when given.
std::vector<HostTensor> linear_weights(int inits, std::optional<std::uint64_t> init_seed = {}) {
  Ir ir;
  auto main = std::optional(ir.main_graph().scope());
  auto x = constant(HostTensor({1.f, 2.f, 3.f, 4.f}, {1, 4}), "x");
  const auto facts = addons::Linear(3).create_graph(x).first;
  std::vector<Tensor> weights;
  for (int i = 0; i < inits; ++i) {
    const auto vars = init_seed ? facts.init("", *init_seed) : facts.init();
    weights.push_back(vars.at("weight"));
    CHECK(vars.at("weight").name() == "weight");
    // Ids stay unique: weight, weight__t1, ... (the Linear's graph input is scoped by its graph).
    CHECK(vars.at("weight").id() == (i == 0 ? "weight" : "weight__t" + std::to_string(i)));
  }
  main.reset();
  Session session{ir, "ipu_model"};
  std::vector<HostTensor> data;
  for (const Tensor& w : weights)
    data.push_back(session.get_tensor_data(w));
  return data;
}
} // namespace

TEST_CASE("every init of one module draws fresh values; a program draws the same every run") {
  const auto a = linear_weights(3);
  // Two inits of one Linear are two differently initialised layers, not copies.
  CHECK_FALSE(a[0] == a[1]);
  CHECK_FALSE(a[1] == a[2]);
  CHECK_FALSE(a[0] == a[2]);
  // The same program gives the same values (the count is kept by the Ir, not the process).
  CHECK(linear_weights(3) == a);
  // The first init draws what the name and seed alone give (as before draws were counted), so
  // it is reproduced in any Ir; the others are the next draws of that name.
  const auto facts = [&] {
    Ir ir;
    auto main = ir.main_graph().scope();
    auto x = constant(HostTensor({1.f, 2.f, 3.f, 4.f}, {1, 4}), "x");
    return addons::Linear(3).create_graph(x).first;
  }();
  const auto& w = facts.at("weight");
  CHECK(a[0] == w.data("weight", addons::default_seed));
  CHECK(a[1] == w.data("weight", addons::default_seed, 1));
  CHECK(a[2] == w.data("weight", addons::default_seed, 2));

  // An explicit seed chooses other values, reproducibly, and still draws fresh ones per init.
  const auto s = linear_weights(2, 7);
  CHECK(linear_weights(2, 7) == s);
  CHECK_FALSE(s[0] == s[1]);
  CHECK_FALSE(s[0] == a[0]);
  CHECK(s[0] == w.data("weight", 7));
  CHECK(s[1] == w.data("weight", 7, 1));
}
