// Optimizers: SGD, Adam, AdamW and RMSprop steps against the reference formulas computed in double
// on the host, learning rates read at run time, optimizers::apply (state names, graph sharing, in a
// traced device loop), Adam training a regression, errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <optional>

using namespace pxl;
using addons::NamedTensors;
using addons::optimizers::Adam;
using addons::optimizers::AdamW;
using addons::optimizers::LearningRate;
using addons::optimizers::RMSprop;
using addons::optimizers::SGD;
using Keys = std::vector<std::string>;

namespace {

using Vec = std::vector<double>;

Vec values(const HostTensor& t) {
  Vec r(static_cast<std::size_t>(t.nelms()));
  for (std::size_t i = 0; i < r.size(); ++i)
    r[i] = t.item(static_cast<std::int64_t>(i));
  return r;
}

HostTensor tensor(const Vec& v, Shape shape) {
  HostTensor t(std::move(shape), float32);
  for (std::size_t i = 0; i < v.size(); ++i)
    t.data<float>()[i] = static_cast<float>(v[i]);
  return t;
}

/// Largest |a − b| / (1 + |b|): an absolute error for small values, relative for large ones.
double max_error(const Vec& a, const Vec& b) {
  REQUIRE(a.size() == b.size());
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    e = std::max(e, std::abs(a[i] - b[i]) / (1.0 + std::abs(b[i])));
  return e;
}

const Shape shape{2, 3};
const Vec w0{0.5, -1.25, 2.0, 0.75, -0.3, 1.1};

/// The gradient fed at step k: irregular, of both signs, changing from step to step.
Vec grad_at(int k) {
  Vec g(w0.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    g[i] = std::sin(0.9 * static_cast<double>(i) + 1.7 * k) * (1.0 + 0.3 * k);
  return g;
}

/// After each step: the variable and the state (by key relative to the variable).
struct Trace {
  std::vector<Vec> w;
  std::vector<std::map<std::string, Vec>> state;
};

/// Applies the optimizer `make(lr)` returns to one variable "w" on the emulator for `steps` runs,
/// the gradient of run k being grad_at(k), fed through a host stream. With `lrs`, `lr` is a
/// float32 scalar main-graph variable, written with lrs[k] before run k; without, `lr` is an
/// empty Tensor.
template <typename Make>
Trace run_steps_with(const Make& make, int steps, const Vec& lrs = {}) {
  Ir ir;
  HostToDeviceStream gs;
  Tensor w, lr;
  NamedTensors state;
  {
    auto main = ir.main_graph().scope();
    w = variable(tensor(w0, shape), "w");
    gs = h2d_stream(shape, float32, "g");
    auto g = ops::host_load(gs);
    if (!lrs.empty())
      lr = variable(HostTensor::scalar(0.0f), "lr");
    state = addons::optimizers::apply(make(lr), NamedTensors{{"w", w}}, NamedTensors{{"w", g}});
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  Trace t;
  for (int k = 0; k < steps; ++k) {
    if (!lrs.empty())
      addons::optimizers::schedules::write_learning_rate(session, lr,
                                                         lrs[static_cast<std::size_t>(k)]);
    session.run({{gs, tensor(grad_at(k), shape)}});
    t.w.push_back(values(session.get_tensor_data(w)));
    std::map<std::string, Vec> s;
    const auto w_state = state.contains("w") ? state.sub("w") : NamedTensors{};
    for (const auto& [key, v] : w_state.items())
      s[key] = values(session.get_tensor_data(v));
    t.state.push_back(std::move(s));
  }
  return t;
}

/// As run_steps_with for an optimizer with a constant learning rate.
template <typename Opt>
Trace run_steps(const Opt& opt, int steps) {
  return run_steps_with([&](const Tensor&) { return opt; }, steps);
}

/// The learning rate of step k: lrs[k], or the options' constant when `lrs` is empty.
double lr_at(const LearningRate& lr, const Vec& lrs, int k) {
  return lrs.empty() ? lr.value() : lrs[static_cast<std::size_t>(k)];
}

/// PyTorch's SGD in double.
Trace sgd_reference(const addons::optimizers::SGDOptions& o, int steps, const Vec& lrs = {}) {
  Vec w = w0, v(w0.size(), 0.0);
  Trace t;
  for (int k = 0; k < steps; ++k) {
    const Vec g = grad_at(k);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double gp = g[i] + o.weight_decay * w[i];
      double step = gp;
      if (o.momentum != 0.0) {
        v[i] = o.momentum * v[i] + gp;
        step = o.nesterov ? gp + o.momentum * v[i] : v[i];
      }
      w[i] -= lr_at(o.lr, lrs, k) * step;
    }
    t.w.push_back(w);
    t.state.push_back(o.momentum != 0.0 ? std::map<std::string, Vec>{{"momentum", v}}
                                        : std::map<std::string, Vec>{});
  }
  return t;
}

/// PyTorch's Adam (decoupled = false) or AdamW (true) in double.
Trace adam_reference(const addons::optimizers::AdamOptions& o, bool decoupled, int steps,
                     const Vec& lrs = {}) {
  Vec w = w0, m(w0.size(), 0.0), v(w0.size(), 0.0);
  Trace t;
  for (int k = 0; k < steps; ++k) {
    const Vec g = grad_at(k);
    const double step = k + 1;
    const double lr = lr_at(o.lr, lrs, k);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double gp = decoupled ? g[i] : g[i] + o.weight_decay * w[i];
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * gp;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * gp * gp;
      double m_hat = m[i], v_hat = v[i];
      if (o.bias_correction) {
        m_hat /= 1 - std::pow(o.beta1, step);
        v_hat /= 1 - std::pow(o.beta2, step);
      }
      if (decoupled)
        w[i] *= 1 - lr * o.weight_decay;
      w[i] -= lr * m_hat / (std::sqrt(v_hat) + o.eps);
    }
    t.w.push_back(w);
    t.state.push_back({{"first_order", m}, {"second_order", v}, {"step", {step}}});
  }
  return t;
}

/// Keras's RMSprop, or TensorFlow's ApplyRMSProp / ApplyCenteredRMSProp, in double.
Trace rmsprop_reference(const addons::optimizers::RMSpropOptions& o, int steps,
                        const Vec& lrs = {}) {
  Vec w = w0, ms(w0.size(), 0.0), mg(w0.size(), 0.0), mom(w0.size(), 0.0);
  Trace t;
  for (int k = 0; k < steps; ++k) {
    const Vec g = grad_at(k);
    const double lr = lr_at(o.lr, lrs, k);
    for (std::size_t i = 0; i < w.size(); ++i) {
      ms[i] = o.rho * ms[i] + (1 - o.rho) * g[i] * g[i];
      double second = ms[i];
      if (o.centered) {
        mg[i] = o.rho * mg[i] + (1 - o.rho) * g[i];
        second -= mg[i] * mg[i];
      }
      const bool eps_outside =
          o.update == addons::optimizers::RMSpropUpdate::keras && o.momentum == 0.0;
      const double increment =
          lr * g[i] / (eps_outside ? std::sqrt(second) + o.eps : std::sqrt(second + o.eps));
      if (o.momentum != 0.0) {
        mom[i] = o.momentum * mom[i] + increment;
        w[i] -= mom[i];
      } else {
        w[i] -= increment;
      }
    }
    t.w.push_back(w);
    std::map<std::string, Vec> s{{"mean_square", ms}};
    if (o.centered)
      s["mean_grad"] = mg;
    if (o.momentum != 0.0)
      s["momentum"] = mom;
    t.state.push_back(std::move(s));
  }
  return t;
}

/// `got` equals `want` to `tolerance` (max_error) at every step, the variable and the state.
void check_trace(const Trace& got, const Trace& want, double tolerance = 1e-6) {
  REQUIRE(got.w.size() == want.w.size());
  for (std::size_t k = 0; k < got.w.size(); ++k) {
    CAPTURE(k);
    CHECK(max_error(got.w[k], want.w[k]) < tolerance);
    REQUIRE(got.state[k].size() == want.state[k].size());
    for (const auto& entry : want.state[k]) {
      const auto& key = entry.first;
      const auto& v = entry.second;
      CAPTURE(key);
      REQUIRE(got.state[k].count(key));
      CHECK(max_error(got.state[k].at(key), v) < tolerance);
    }
  }
}

/// Bitwise equality of two runs (the values are floats widened to double).
void check_same(const Trace& a, const Trace& b) {
  REQUIRE(a.w.size() == b.w.size());
  for (std::size_t k = 0; k < a.w.size(); ++k) {
    CAPTURE(k);
    CHECK(a.w[k] == b.w[k]);
    CHECK(a.state[k] == b.state[k]);
  }
}

addons::optimizers::AdamOptions as_adam(const addons::optimizers::AdamWOptions& o) {
  return {o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.bias_correction, o.first_order_dtype};
}

} // namespace

TEST_CASE("SGD steps match PyTorch's formulas: plain, momentum, Nesterov, weight decay") {
  const int steps = 5;
  const std::vector<addons::optimizers::SGDOptions> cases{
      {.lr = 0.1},
      {.lr = 0.05, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.8, .nesterov = true},
      {.lr = 0.1, .weight_decay = 0.01},
      {.lr = 0.02, .momentum = 0.9, .weight_decay = 0.05, .nesterov = true},
  };
  for (const auto& o : cases) {
    CAPTURE(o.momentum);
    CAPTURE(o.weight_decay);
    CAPTURE(o.nesterov);
    check_trace(run_steps(SGD(o), steps), sgd_reference(o, steps));
  }
}

TEST_CASE("Adam and AdamW steps match PyTorch's formulas, with and without bias correction") {
  const int steps = 6;
  for (const bool bias_correction : {true, false}) {
    CAPTURE(bias_correction);
    const addons::optimizers::AdamOptions adam{
        .lr = 0.01, .weight_decay = 0.1, .bias_correction = bias_correction};
    check_trace(run_steps(Adam(adam), steps), adam_reference(adam, false, steps));
    const addons::optimizers::AdamOptions plain{
        .lr = 0.02, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .bias_correction = bias_correction};
    check_trace(run_steps(Adam(plain), steps), adam_reference(plain, false, steps));
    const addons::optimizers::AdamWOptions adamw{.lr = 0.01, .bias_correction = bias_correction};
    check_trace(run_steps(AdamW(adamw), steps), adam_reference(as_adam(adamw), true, steps));
  }
}

TEST_CASE("RMSprop steps match Keras's and TensorFlow's formulas: plain, momentum, centered") {
  const int steps = 6;
  for (const auto update : {addons::optimizers::RMSpropUpdate::keras,
                            addons::optimizers::RMSpropUpdate::tf_apply_rms_prop}) {
    CAPTURE(static_cast<int>(update));
    const std::vector<addons::optimizers::RMSpropOptions> cases{
        {.lr = 0.01, .update = update},
        {.lr = 0.01, .rho = 0.8, .momentum = 0.9, .eps = 1e-6, .update = update},
        {.lr = 0.02, .centered = true, .update = update},
        {.lr = 0.005,
         .rho = 0.95,
         .momentum = 0.5,
         .eps = 1e-4,
         .centered = true,
         .update = update},
    };
    for (const auto& o : cases) {
      CAPTURE(o.momentum);
      CAPTURE(o.centered);
      check_trace(run_steps(RMSprop(o), steps), rmsprop_reference(o, steps));
    }
  }
  // TensorFlow's kernel puts eps inside the square root: with a large eps the step is
  // lr·g/sqrt(ms + eps), which differs from Keras's lr·g/(sqrt(ms) + eps) by far more than
  // the tolerance.
  const addons::optimizers::RMSpropOptions big_eps{
      .lr = 0.1, .eps = 0.01, .update = addons::optimizers::RMSpropUpdate::tf_apply_rms_prop};
  const auto got = run_steps(RMSprop(big_eps), 1);
  const double g = grad_at(0)[1], ms = 0.1 * g * g;
  CHECK(got.w[0][1] == doctest::Approx(w0[1] - 0.1 * g / std::sqrt(ms + 0.01)).epsilon(1e-6));
  CHECK(std::abs(got.w[0][1] - (w0[1] - 0.1 * g / (std::sqrt(ms) + 0.01))) > 5e-3);
}

namespace {

/// The variable [1.0] after each of two RMSprop steps with gradients 0.5 and −0.25.
std::vector<double> two_rmsprop_steps(const addons::optimizers::RMSpropOptions& o) {
  Ir ir;
  HostToDeviceStream gs;
  Tensor w;
  {
    auto main = ir.main_graph().scope();
    w = variable(HostTensor({1.0f}, {1}), "w");
    gs = h2d_stream({1}, float32, "g");
    addons::optimizers::apply(RMSprop(o), NamedTensors{{"w", w}},
                              NamedTensors{{"w", ops::host_load(gs)}});
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  std::vector<double> after;
  for (const float g : {0.5f, -0.25f}) {
    session.run({{gs, HostTensor({g}, {1})}});
    after.push_back(session.get_tensor_data(w).item(0));
  }
  return after;
}

} // namespace

TEST_CASE("RMSprop's two updates by hand: Keras's by default, TensorFlow's kernel by name") {
  // lr 0.1, ρ 0.9, eps 0.01 (large, to tell the updates apart); ms = 0.025 after g = 0.5, and
  // 0.9·0.025 + 0.1·0.0625 = 0.02875 after g = −0.25.
  using addons::optimizers::RMSpropUpdate;
  // Keras: w −= lr·g / (sqrt(ms) + eps).
  const auto keras = two_rmsprop_steps({.lr = 0.1, .eps = 0.01});
  CHECK(keras[0] == doctest::Approx(1 - 0.05 / (std::sqrt(0.025) + 0.01)).epsilon(1e-6));
  CHECK(keras[0] == doctest::Approx(0.7025825642).epsilon(1e-6));
  CHECK(keras[1] == doctest::Approx(0.8418131485).epsilon(1e-6));
  // TensorFlow's ApplyRMSProp: w −= lr·g / sqrt(ms + eps).
  const auto kernel =
      two_rmsprop_steps({.lr = 0.1, .eps = 0.01, .update = RMSpropUpdate::tf_apply_rms_prop});
  CHECK(kernel[0] == doctest::Approx(1 - 0.05 / std::sqrt(0.025 + 0.01)).epsilon(1e-6));
  CHECK(kernel[0] == doctest::Approx(0.7327387581).epsilon(1e-6));
  CHECK(kernel[1] == doctest::Approx(0.8597388851).epsilon(1e-6));
  // With momentum 0.5 Keras runs the kernel too: mom = 0.5·mom + lr·g / sqrt(ms + eps).
  for (const auto update : {RMSpropUpdate::keras, RMSpropUpdate::tf_apply_rms_prop}) {
    const auto with_momentum =
        two_rmsprop_steps({.lr = 0.1, .momentum = 0.5, .eps = 0.01, .update = update});
    CHECK(with_momentum[0] == doctest::Approx(0.7327387581).epsilon(1e-6));
    CHECK(with_momentum[1] == doctest::Approx(0.7261082641).epsilon(1e-6));
  }
}

TEST_CASE("A learning rate read from a variable: equal to the constant, and changed per run") {
  const int steps = 5;
  const Vec constant_lrs(steps, 0.05);
  const Vec changing{0.05, 0.02, 0.1, 0.0, 0.03};
  // SGD (momentum, weight decay), Adam (L2), AdamW (decoupled decay) and RMSprop (centered,
  // momentum: the rate enters the buffer), each with the constant 0.05 and with a variable.
  const addons::optimizers::SGDOptions sgd{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01};
  const addons::optimizers::AdamOptions adam{.lr = 0.05, .weight_decay = 0.1};
  const addons::optimizers::AdamWOptions adamw{.lr = 0.05, .weight_decay = 0.1};
  const addons::optimizers::RMSpropOptions rms{.lr = 0.05, .momentum = 0.5, .centered = true};
  auto with_lr = [](auto o, const Tensor& lr) {
    o.lr = lr;
    return o;
  };

  const auto sgd_var = [&](const Tensor& lr) { return SGD(with_lr(sgd, lr)); };
  const auto adam_var = [&](const Tensor& lr) { return Adam(with_lr(adam, lr)); };
  const auto adamw_var = [&](const Tensor& lr) { return AdamW(with_lr(adamw, lr)); };
  const auto rms_var = [&](const Tensor& lr) { return RMSprop(with_lr(rms, lr)); };

  // A constant schedule: to rounding for SGD and Adam(W) (the constant is folded into one
  // scaled add, the tensor multiplies first), bitwise for RMSprop (one code path).
  check_trace(run_steps_with(sgd_var, steps, constant_lrs), sgd_reference(sgd, steps));
  check_trace(run_steps_with(adam_var, steps, constant_lrs), adam_reference(adam, false, steps));
  check_trace(run_steps_with(adamw_var, steps, constant_lrs),
              adam_reference(as_adam(adamw), true, steps));
  check_same(run_steps_with(rms_var, steps, constant_lrs), run_steps(RMSprop(rms), steps));
  const auto sgd_const = run_steps(SGD(sgd), steps);
  const auto sgd_tensor = run_steps_with(sgd_var, steps, constant_lrs);
  for (int k = 0; k < steps; ++k)
    CHECK(max_error(sgd_tensor.w[static_cast<std::size_t>(k)],
                    sgd_const.w[static_cast<std::size_t>(k)]) < 1e-6);

  // Written between runs, the rate changes the next update as the reference says.
  check_trace(run_steps_with(sgd_var, steps, changing), sgd_reference(sgd, steps, changing));
  check_trace(run_steps_with(adam_var, steps, changing),
              adam_reference(adam, false, steps, changing));
  check_trace(run_steps_with(adamw_var, steps, changing),
              adam_reference(as_adam(adamw), true, steps, changing));
  check_trace(run_steps_with(rms_var, steps, changing), rmsprop_reference(rms, steps, changing));
  // The changes matter: the same steps with the constant rate end elsewhere.
  CHECK(max_error(run_steps_with(adam_var, steps, changing).w.back(),
                  adam_reference(adam, false, steps).w.back()) > 1e-3);
}

TEST_CASE("A tensor learning rate is a third, by-value input of the step graph") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const TensorSpec spec{{4}, float32};
  auto lr = variable(HostTensor::scalar(0.1f), "lr");
  auto [facts, step] = Adam({.lr = lr}).create_graph(spec, spec);
  REQUIRE(step.positional_inputs().size() == 3);
  const Tensor lr_in = step.positional_inputs()[2];
  CHECK(lr_in.spec() == TensorSpec{{}, float32});
  CHECK_FALSE(step.graph().input_is_by_ref(2));
  CHECK(Adam({.lr = lr}).lr_inputs() == std::vector<Tensor>{lr});
  CHECK(Adam().lr_inputs().empty());
  CHECK(facts.keys_flat() == Keys{"first_order", "second_order", "step"});
  // A constant rate adds no input.
  CHECK(SGD({.lr = 0.1}).create_graph(spec, spec).second.positional_inputs().size() == 2);
  CHECK(LearningRate(0.5).value() == 0.5);
  CHECK(LearningRate(lr).tensor() == lr);
  CHECK_THROWS_WITH_AS(LearningRate(lr).value(),
                       doctest::Contains("LearningRate::value: the learning rate is the tensor"),
                       ValueError);
  CHECK_THROWS_WITH_AS(
      LearningRate(0.5).tensor(),
      doctest::Contains("LearningRate::tensor: the learning rate is the constant 0.5"), ValueError);
}

TEST_CASE("Training with a schedule through one Session follows the per-step learning rate") {
  namespace sch = addons::optimizers::schedules;
  const int steps = 10;
  const sch::Schedule schedule = sch::LinearWarmup{
      .steps = 3,
      .after = sch::CosineDecay{.initial = 0.05, .decay_steps = 5, .final_value = 0.005},
      .start_factor = 0.2};
  Vec lrs;
  for (int k = 0; k < steps; ++k)
    lrs.push_back(schedule(k));
  const addons::optimizers::AdamOptions adam{.lr = 0.05};
  const addons::optimizers::RMSpropOptions rms{.lr = 0.05, .momentum = 0.9};
  check_trace(run_steps_with(
                  [&](const Tensor& lr) {
                    auto o = adam;
                    o.lr = lr;
                    return Adam(o);
                  },
                  steps, lrs),
              adam_reference(adam, false, steps, lrs));
  check_trace(run_steps_with(
                  [&](const Tensor& lr) {
                    auto o = rms;
                    o.lr = lr;
                    return RMSprop(o);
                  },
                  steps, lrs),
              rmsprop_reference(rms, steps, lrs));
}

namespace {

/// One training step as a Module: the variable "w" (by reference), its gradient and, when
/// `stream_lr`, the learning rate loaded from host streams, and Adam applied in the traced graph.
struct TrainStep : addons::Module<TrainStep> {
  HostToDeviceStream grads, lrs;
  bool stream_lr = false;
  addons::optimizers::AdamOptions options;
  void build() {
    auto w = add_variable_input("w", addons::init::from(tensor(w0, shape)), float32,
                                /*by_ref=*/true);
    auto o = options;
    if (stream_lr)
      o.lr = ops::host_load(lrs);
    addons::optimizers::apply(Adam(o), NamedTensors{{"w", w}},
                              NamedTensors{{"w", ops::host_load(grads)}});
  }
};

/// Runs `steps` TrainSteps in one run of a device loop (`repeat`); with `lrs`, the learning
/// rate of step k is lrs[k], fed through a stream. Returns the trace of the last step.
Trace train_in_loop(const addons::optimizers::AdamOptions& o, int steps, const Vec& lrs = {}) {
  Ir ir;
  TrainStep m;
  NamedTensors vars;
  {
    auto main = ir.main_graph().scope();
    m.grads = h2d_stream(shape, float32, "g");
    m.stream_lr = !lrs.empty();
    if (m.stream_lr)
      m.lrs = h2d_stream({}, float32, "lr");
    m.options = o;
    auto [facts, step] = m.create_graph();
    // The optimizer state is declared by the trace, beside the model's variable.
    CHECK(facts.keys_flat().size() == 4);
    CHECK(facts.at("optimizer.w.first_order").by_ref);
    CHECK(facts.at("optimizer.w.step").spec() == TensorSpec{{}, float32});
    vars = facts.init();
    CHECK(vars.at("optimizer.w.second_order").name() == "optimizer.w.second_order");
    auto bound = step.bind(vars).bound();
    ops::repeat(step.graph(), steps, {}, InputsDict(bound.begin(), bound.end()));
  }
  ir.set_num_host_transfers(steps);
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  HostTensor g({steps, shape[0], shape[1]}, float32);
  for (int k = 0; k < steps; ++k) {
    const Vec gk = grad_at(k);
    for (std::size_t i = 0; i < gk.size(); ++i)
      g.data<float>()[static_cast<std::size_t>(k) * gk.size() + i] = static_cast<float>(gk[i]);
  }
  if (lrs.empty()) {
    session.run({{m.grads, g}});
  } else {
    HostTensor l({steps}, float32);
    for (int k = 0; k < steps; ++k)
      l.data<float>()[static_cast<std::size_t>(k)] =
          static_cast<float>(lrs[static_cast<std::size_t>(k)]);
    session.run({{m.grads, g}, {m.lrs, l}});
  }
  Trace t;
  t.w.push_back(values(session.get_tensor_data(vars.at("w"))));
  std::map<std::string, Vec> state;
  const NamedTensors w_state = vars.sub("optimizer.w");
  for (const auto& [key, v] : w_state.items())
    state[key] = values(session.get_tensor_data(v));
  t.state.push_back(std::move(state));
  return t;
}

/// The last step of a trace.
Trace last(const Trace& t) { return {{t.w.back()}, {t.state.back()}}; }

} // namespace

namespace {

/// `steps` steps of `opt` on the variable "w" (w0) with the gradients grad_at(k): one run of a
/// device loop whose body is a plain subgraph (create_empty_graph, no Module tracing it), the
/// gradient loaded in the body, apply called there; or (`in_loop` false) one run per step,
/// apply in the main graph. Returns "w" after the last step.
template <typename Opt>
Vec steps_in_plain_loop(const Opt& opt, int steps, bool in_loop, bool offload) {
  Ir ir;
  HostToDeviceStream gs;
  Tensor w;
  {
    auto main = ir.main_graph().scope();
    w = variable(tensor(w0, shape), "w");
    gs = h2d_stream(shape, float32, "g");
    const addons::optimizers::ApplyOptions how{.offload_state = offload};
    if (in_loop) {
      Graph body = ir.create_empty_graph("body");
      {
        auto in_body = body.scope();
        const Tensor wi = graph_input(w.spec(), "w", /*by_ref=*/true);
        addons::optimizers::apply(opt, NamedTensors{{"w", wi}},
                                  NamedTensors{{"w", ops::host_load(gs)}}, how);
      }
      // Only the loop's own input: the state, if on chip, is bound to its variables.
      ops::repeat(body, steps, {w});
      ir.set_num_host_transfers(steps);
    } else {
      addons::optimizers::apply(opt, NamedTensors{{"w", w}},
                                NamedTensors{{"w", ops::host_load(gs)}}, how);
    }
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  if (in_loop) {
    HostTensor g({steps, shape[0], shape[1]}, float32);
    for (int k = 0; k < steps; ++k) {
      const Vec gk = grad_at(k);
      for (std::size_t i = 0; i < gk.size(); ++i)
        g.data<float>()[static_cast<std::size_t>(k) * gk.size() + i] = static_cast<float>(gk[i]);
    }
    session.run({{gs, g}});
  } else {
    for (int k = 0; k < steps; ++k)
      session.run({{gs, tensor(grad_at(k), shape)}});
  }
  return values(session.get_tensor_data(w));
}

} // namespace

TEST_CASE("optimizers::apply in a plain device-loop body: every optimizer, on chip or offloaded") {
  // Before, apply refused a subgraph no Module traces (even stateless SGD) unless the state
  // was offloaded. Now every optimizer steps there, its state on chip or remote, and N steps
  // in one run equal N runs of one step, bitwise.
  const int steps = 4;
  auto check = [&](const auto& opt, bool stateful) {
    for (const bool offload : {false, true}) {
      if (offload && !stateful)
        continue; // no state to offload (SGD without momentum)
      CAPTURE(offload);
      CHECK(steps_in_plain_loop(opt, steps, true, offload) ==
            steps_in_plain_loop(opt, steps, false, offload));
    }
  };
  SUBCASE("SGD") { check(SGD({.lr = 0.1}), false); }
  SUBCASE("SGD with momentum") { check(SGD({.lr = 0.05, .momentum = 0.9}), true); }
  SUBCASE("Adam") { check(Adam({.lr = 0.01, .weight_decay = 0.1}), true); }
  SUBCASE("AdamW") { check(AdamW({.lr = 0.01}), true); }
  SUBCASE("RMSprop") {
    check(RMSprop({.lr = 0.01, .momentum = 0.5, .centered = true}), true);
    check(RMSprop({.lr = 0.01}), true);
  }
  // And the steps are the optimizer's: SGD's four steps by its formula.
  const Trace want = sgd_reference({.lr = 0.1}, steps);
  CHECK(max_error(steps_in_plain_loop(SGD({.lr = 0.1}), steps, true, false), want.w.back()) < 1e-6);
}

TEST_CASE("optimizers::apply in a traced device loop: N steps in one run equal N runs") {
  const int steps = 4;
  const addons::optimizers::AdamOptions o{.lr = 0.05, .weight_decay = 0.1};
  // Constant learning rate: bitwise the single-step runs, and the double reference.
  const Trace loop = train_in_loop(o, steps);
  check_same(loop, last(run_steps(Adam(o), steps)));
  check_trace(loop, last(adam_reference(o, false, steps)));
  // A learning rate per step from a stream inside the loop: bitwise the single-step runs that
  // write the same rates into a variable, and the reference with those rates.
  namespace sch = addons::optimizers::schedules;
  const sch::Schedule schedule = sch::StepDecay{.initial = 0.08, .step_size = 2, .gamma = 0.25};
  const HostTensor rates = sch::learning_rates(schedule, 0, steps);
  const Vec lrs = values(rates);
  const Trace loop_lr = train_in_loop(o, steps, lrs);
  check_same(loop_lr, last(run_steps_with(
                          [&](const Tensor& lr) {
                            auto with = o;
                            with.lr = lr;
                            return Adam(with);
                          },
                          steps, lrs)));
  // (2e-6: a tensor rate rounds (−lr)·u to float32 before adding it, see Adam.)
  check_trace(loop_lr, last(adam_reference(o, false, steps, lrs)), 2e-6);
  CHECK(max_error(loop_lr.w[0], loop.w[0]) > 1e-3);
}

TEST_CASE("Adam on a float16 variable with float16 first-order state") {
  const int steps = 3;
  const addons::optimizers::AdamOptions o{.lr = 0.05, .first_order_dtype = float16};
  Ir ir;
  HostToDeviceStream gs;
  Tensor w;
  NamedTensors state;
  {
    auto main = ir.main_graph().scope();
    w = variable(tensor(w0, shape), float16, "w");
    gs = h2d_stream(shape, float16, "g");
    state = addons::optimizers::apply(Adam(o), NamedTensors{{"w", w}},
                                      NamedTensors{{"w", ops::host_load(gs)}});
  }
  CHECK(state.at("w.first_order").dtype() == float16);
  CHECK(state.at("w.second_order").dtype() == float32);
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const Trace want = adam_reference(o, false, steps);
  for (int k = 0; k < steps; ++k) {
    session.run({{gs, tensor(grad_at(k), shape).astype(float16)}});
    // float16 keeps ~3 significant digits: a few units in the last place of |w| ≤ 2.
    CHECK(max_error(values(session.get_tensor_data(w)), want.w[static_cast<std::size_t>(k)]) <
          3e-3);
  }
}

TEST_CASE("float16 variables with a learning rate read at run time: SGD, AdamW, RMSprop") {
  const int steps = 3;
  const Vec lrs{0.05, 0.1, 0.02};
  auto run = [&](auto make) {
    Ir ir;
    HostToDeviceStream gs;
    Tensor w, lr;
    {
      auto main = ir.main_graph().scope();
      w = variable(tensor(w0, shape), float16, "w");
      gs = h2d_stream(shape, float16, "g");
      lr = variable(HostTensor::scalar(0.0f), "lr");
      addons::optimizers::apply(make(lr), NamedTensors{{"w", w}},
                                NamedTensors{{"w", ops::host_load(gs)}});
    }
    Session session{ir, "ipu_model"};
    auto attached = session.attach();
    std::vector<Vec> ws;
    for (int k = 0; k < steps; ++k) {
      addons::optimizers::schedules::write_learning_rate(session, lr,
                                                         lrs[static_cast<std::size_t>(k)]);
      session.run({{gs, tensor(grad_at(k), shape).astype(float16)}});
      ws.push_back(values(session.get_tensor_data(w)));
    }
    return ws;
  };
  const addons::optimizers::SGDOptions sgd{.momentum = 0.9};
  const addons::optimizers::AdamWOptions adamw{};
  const addons::optimizers::RMSpropOptions rms{.centered = true};
  const auto sgd_w = run([&](const Tensor& lr) {
    auto o = sgd;
    o.lr = lr;
    return SGD(o);
  });
  const auto adamw_w = run([&](const Tensor& lr) {
    auto o = adamw;
    o.lr = lr;
    return AdamW(o);
  });
  const auto rms_w = run([&](const Tensor& lr) {
    auto o = rms;
    o.lr = lr;
    return RMSprop(o);
  });
  const auto sgd_want = sgd_reference(sgd, steps, lrs);
  const auto adamw_want = adam_reference(as_adam(adamw), true, steps, lrs);
  const auto rms_want = rmsprop_reference(rms, steps, lrs);
  for (std::size_t k = 0; k < static_cast<std::size_t>(steps); ++k) {
    CAPTURE(k);
    // float16 keeps ~3 significant digits (as in the Adam test above).
    CHECK(max_error(sgd_w[k], sgd_want.w[k]) < 3e-3);
    CHECK(max_error(adamw_w[k], adamw_want.w[k]) < 3e-3);
    CHECK(max_error(rms_w[k], rms_want.w[k]) < 3e-3);
  }
}

TEST_CASE("A step module: var by ref, grad, by-ref named state; inlined in a build") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const TensorSpec spec{{4}, float32};
  auto [facts, step] = SGD({.lr = 0.1, .momentum = 0.9}).create_graph(spec, spec);
  CHECK(step.graph().name() == "SGD_subgraph(0)");
  CHECK(facts.keys_flat() == Keys{"momentum"});
  CHECK(facts.at("momentum").by_ref);
  CHECK(facts.at("momentum").spec() == spec);
  REQUIRE(step.graph().inputs().size() == 3);
  CHECK(step.graph().input_is_by_ref(0));       // var
  CHECK_FALSE(step.graph().input_is_by_ref(1)); // grad
  CHECK(step.graph().input_is_by_ref(2));       // momentum
  CHECK(step.positional_inputs().size() == 2);
  CHECK(step.graph().outputs().empty());
  // Plain SGD has no state.
  auto [plain_facts, plain] = SGD({.lr = 0.1}).create_graph(spec, spec);
  CHECK(plain_facts.empty());

  auto [adam_facts, adam] =
      Adam({.first_order_dtype = float16})
          .create_graph(TensorSpec{{2, 2}, float32}, TensorSpec{{2, 2}, float32});
  CHECK(adam_facts.keys_flat() == Keys{"first_order", "second_order", "step"});
  CHECK(adam_facts.at("first_order").spec() == TensorSpec{{2, 2}, float16});
  CHECK(adam_facts.at("second_order").spec() == TensorSpec{{2, 2}, float32});
  CHECK(adam_facts.at("step").spec() == TensorSpec{{}, float32});
  CHECK(AdamW().create_graph(spec, spec).second.graph().name() == "AdamW_subgraph(0)");

  // Called inside another module's build, a step is inlined under its member name.
  struct Train : addons::Module<Train> {
    PXL_SUBMODULE(SGD, opt, addons::optimizers::SGDOptions{.lr = 0.1, .momentum = 0.5});
    void build(Tensor w, Tensor g) { opt(w, g); }
  };
  auto [train_facts, train] = Train{}.create_graph(spec, spec);
  CHECK(train_facts.keys_flat() == Keys{"opt.momentum"});
  CHECK(train.graph().called_graphs().empty());
}

TEST_CASE("optimizers::apply: state per variable, named after it; one step graph per spec") {
  Ir ir;
  auto main = ir.main_graph().scope();
  NamedTensors vars{{"fc1.weight", variable(HostTensor::full({3, 2}, float32, 1.0), "fc1.weight")},
                    {"fc1.bias", variable(HostTensor::full({2}, float32, 1.0), "fc1.bias")},
                    {"fc2.weight", variable(HostTensor::full({3, 2}, float32, 1.0), "fc2.weight")}};
  NamedTensors grads = vars.map([](const Tensor& v) { return ops::init(v.shape(), v.dtype()); });
  const auto graphs_before = ir.graphs().size();
  auto state = addons::optimizers::apply(SGD({.lr = 0.1, .momentum = 0.9}), vars, grads);
  CHECK(state.keys_flat() ==
        Keys{"fc1.bias.momentum", "fc1.weight.momentum", "fc2.weight.momentum"});
  CHECK(state.at("fc1.weight.momentum").is_variable());
  CHECK(state.at("fc2.weight.momentum").name() == "fc2.weight.momentum");
  CHECK(state.at("fc1.bias.momentum").shape() == Shape{2});
  // (3, 2) and (2,): two step graphs for three variables, three calls.
  CHECK(ir.graphs().size() - graphs_before == 2);
  std::size_t calls = 0;
  for (const auto& op : ir.main_graph().ops())
    calls += op.debug_name().rfind("Call", 0) == 0;
  CHECK(calls == 3);
  // Gradients keyed by variable work the same way.
  std::map<Tensor, Tensor> by_var;
  for (const auto& [key, v] : vars.items())
    by_var.emplace(v, grads.at(key));
  auto adam_state = addons::optimizers::apply(Adam(), vars.filter_keys({"fc1.bias"}), by_var);
  CHECK(adam_state.keys_flat() ==
        Keys{"fc1.bias.first_order", "fc1.bias.second_order", "fc1.bias.step"});
}

TEST_CASE("optimizers::apply inlines its step calls unless outline_steps; training is the same") {
  // Two variables of one spec: one step graph either way, called inlined (no argument copies)
  // by default, outlined on request, with bitwise equal weights and state after 3 runs.
  const auto train = [](bool outline) {
    Ir ir;
    HostToDeviceStream gs;
    NamedTensors vars, state;
    {
      auto main = ir.main_graph().scope();
      vars = NamedTensors{{"a", variable(tensor(w0, shape), "a")},
                          {"b", variable(tensor(grad_at(5), shape), "b")}};
      gs = h2d_stream(shape, float32, "g");
      const Tensor g = ops::host_load(gs);
      const auto graphs_before = ir.graphs().size();
      state = addons::optimizers::apply(Adam({.lr = 0.05, .weight_decay = 0.1}), vars,
                                        NamedTensors{{"a", g}, {"b", g * 0.5}},
                                        {.outline_steps = outline});
      CHECK(ir.graphs().size() - graphs_before == 1);
      std::size_t calls = 0, inlined = 0;
      for (const auto& op : ir.main_graph().ops())
        if (op.kind() == OpKind::Call) {
          ++calls;
          inlined += op.attrs<OpKind::Call>().inline_graph;
        }
      CHECK(calls == 2);
      CHECK(inlined == (outline ? 0u : 2u));
    }
    Session session{ir, "ipu_model"};
    auto attached = session.attach();
    Trace t;
    for (int k = 0; k < 3; ++k) {
      session.run({{gs, tensor(grad_at(k), shape)}});
      t.w.push_back(values(session.get_tensor_data(vars.at("a"))));
      std::map<std::string, Vec> s{{"b", values(session.get_tensor_data(vars.at("b")))}};
      for (const auto& [key, v] : state.items())
        s[key] = values(session.get_tensor_data(v));
      t.state.push_back(std::move(s));
    }
    return t;
  };
  check_same(train(false), train(true));
}

namespace {

/// y = X·w*, X (64, 8); the model is a bias-free Linear trained on the squared error.
struct Regression : addons::Module<Regression> {
  PXL_SUBMODULE(addons::Linear, fc, 1, /*bias=*/false);
  Tensor build(Tensor x, Tensor y) {
    auto d = fc(x) - y;
    return ops::mean(d * d);
  }
};

constexpr std::int64_t regression_rows = 64, regression_features = 8;

/// X (64, 8) and y = X·w* with w* = (-1.5, -1, ..., 2).
std::pair<HostTensor, HostTensor> regression_data() {
  const std::int64_t n = regression_rows, features = regression_features;
  HostTensor x({n, features}, float32), y({n, 1}, float32);
  for (std::int64_t i = 0; i < n; ++i) {
    double acc = 0;
    for (std::int64_t j = 0; j < features; ++j) {
      const double xij = std::sin(0.37 * static_cast<double>(i * features + j) + 0.1 * j);
      x.data<float>()[static_cast<std::size_t>(i * features + j)] = static_cast<float>(xij);
      acc += xij * (0.5 * static_cast<double>(j) - 1.5);
    }
    y.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(acc);
  }
  return {x, y};
}

} // namespace

TEST_CASE("Adam drives a linear regression's loss down by more than 100x") {
  const auto [x, y] = regression_data();
  Ir ir;
  DeviceToHostStream loss_stream;
  NamedTensors vars, state;
  {
    auto main = ir.main_graph().scope();
    auto xt = constant(x, "x");
    auto yt = constant(y, "y");
    auto [facts, fwd] = Regression{}.create_graph(xt, yt);
    auto bwd = addons::autodiff(fwd, {.grads_required = fwd.args().values_flat()});
    vars = facts.init();
    auto fwd_info = fwd.bind(vars).call_with_info({xt, yt});
    loss_stream = d2h_stream({}, float32, "loss");
    ops::host_store(loss_stream, fwd_info.parent_output(0));
    auto one = constant(1.0, float32, "dloss");
    auto bwd_info =
        bwd.bind(vars).call_with_info({one}, {}, bwd.grad_graph_info().inputs_dict(fwd_info));
    state = addons::optimizers::apply(Adam({.lr = 0.05}), vars, bwd.grads(bwd_info));
  }
  CHECK(state.keys_flat() ==
        Keys{"fc.weight.first_order", "fc.weight.second_order", "fc.weight.step"});
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const double first = session.run().at(loss_stream).item();
  double last = first;
  const int runs = 300;
  for (int i = 1; i < runs; ++i)
    last = session.run().at(loss_stream).item();
  CAPTURE(first);
  CAPTURE(last);
  CHECK(first > 1.0);
  CHECK(last < first / 100);
  CHECK(session.get_tensor_data(state.at("fc.weight.step")).item() == runs);
}

namespace {

/// One training step of the regression as a Module, the body of a device loop: forward (the
/// loss to a host stream), backward and an Adam update. The model's variables are its by-ref
/// inputs "model.fc.weight"; apply declares Adam's state beside them ("optimizer.fc.weight.*").
struct RegressionStep : addons::Module<RegressionStep> {
  HostTensor x, y;
  DeviceToHostStream loss;
  addons::optimizers::ApplyOptions options;
  NamedTensors offloaded; ///< the state apply keeps in Streaming Memory when offloading
  void build() {
    auto xt = constant(x, "x");
    auto yt = constant(y, "y");
    auto [facts, fwd] = Regression{}.create_graph(xt, yt);
    auto bwd = addons::autodiff(fwd, {.grads_required = fwd.args().values_flat()});
    auto vars = add_variable_inputs("model", facts.map([](addons::VariableFactory f) {
      f.by_ref = true;
      return f;
    }));
    auto fwd_info = fwd.bind(vars).call_with_info({xt, yt});
    ops::host_store(loss, fwd_info.parent_output(0));
    auto one = constant(1.0, float32, "dloss");
    auto bwd_info =
        bwd.bind(vars).call_with_info({one}, {}, bwd.grad_graph_info().inputs_dict(fwd_info));
    offloaded = addons::optimizers::apply(Adam({.lr = 0.05}), vars, bwd.grads(bwd_info), options);
  }
};

/// The losses, weights and Adam state after `steps` steps from weights `w_init`: in one run of
/// a device loop (`in_loop`), or one step per run with everything in the main graph.
struct RegressionRun {
  Vec losses, w;
  std::map<std::string, Vec> state;
  emu::MemoryReport memory;
};

/// Adam's state is kept as `options` say (offloaded to Streaming Memory, sharded); `replicas`
/// replicas all train alike (each with its own Streaming Memory).
RegressionRun train_regression(int steps, const HostTensor& w_init, bool in_loop,
                               addons::optimizers::ApplyOptions options = {}, unsigned workers = 0,
                               std::int64_t replicas = 1) {
  const bool offload = options.offload_state;
  const auto [x, y] = regression_data();
  Ir ir(replicas);
  DeviceToHostStream loss;
  Tensor w;
  NamedTensors state;
  {
    auto main = ir.main_graph().scope();
    loss = d2h_stream({}, float32, "loss");
    if (in_loop) {
      RegressionStep body;
      body.x = x;
      body.y = y;
      body.loss = loss;
      body.options = options;
      auto [facts, step] = body.create_graph();
      auto vars = facts.init();
      w = vars.at("model.fc.weight");
      state = offload ? body.offloaded.sub("fc.weight") : vars.sub("optimizer.fc.weight");
      auto bound = step.bind(vars).bound();
      ops::repeat(step.graph(), steps, {}, InputsDict(bound.begin(), bound.end()));
      ir.set_num_host_transfers(steps);
    } else {
      auto xt = constant(x, "x");
      auto yt = constant(y, "y");
      auto [facts, fwd] = Regression{}.create_graph(xt, yt);
      auto bwd = addons::autodiff(fwd, {.grads_required = fwd.args().values_flat()});
      auto vars = facts.init();
      w = vars.at("fc.weight");
      auto fwd_info = fwd.bind(vars).call_with_info({xt, yt});
      ops::host_store(loss, fwd_info.parent_output(0));
      auto one = constant(1.0, float32, "dloss");
      auto bwd_info =
          bwd.bind(vars).call_with_info({one}, {}, bwd.grad_graph_info().inputs_dict(fwd_info));
      state = addons::optimizers::apply(Adam({.lr = 0.05}), vars, bwd.grads(bwd_info), options)
                  .sub("fc.weight");
    }
  }
  Session session{ir, "ipu_model", {.workers = workers, .oversubscribe = true}};
  auto attached = session.attach();
  session.write_variable_data(w, w_init);
  RegressionRun r;
  for (int run = 0; run < (in_loop ? 1 : steps); ++run) {
    const Vec l = values(session.run().at(loss));
    r.losses.insert(r.losses.end(), l.begin(), l.end());
  }
  r.w = values(session.get_tensor_data(w));
  for (const auto& [key, t] : state.items())
    r.state[key] = values(session.get_tensor_data(t));
  r.memory = session.memory_report();
  return r;
}

} // namespace

TEST_CASE("Adam trains a regression in a device loop: one run of N steps is N runs, bitwise") {
  const int steps = 20;
  HostTensor w_init({regression_features, 1}, float32);
  for (std::int64_t j = 0; j < regression_features; ++j)
    w_init.data<float>()[static_cast<std::size_t>(j)] = static_cast<float>(0.1 * std::cos(j));
  const RegressionRun loop = train_regression(steps, w_init, /*in_loop=*/true);
  const RegressionRun runs = train_regression(steps, w_init, /*in_loop=*/false);
  REQUIRE(loop.losses.size() == static_cast<std::size_t>(steps));
  CHECK(loop.losses == runs.losses);
  CHECK(loop.w == runs.w);
  CHECK(loop.state == runs.state);
  CHECK(loop.state.at("step") == Vec{steps});
  CHECK(loop.losses.back() < loop.losses.front() / 2);
}

TEST_CASE("Adam's state offloaded to Streaming Memory trains bitwise as on-chip state") {
  const int steps = 20;
  HostTensor w_init({regression_features, 1}, float32);
  for (std::int64_t j = 0; j < regression_features; ++j)
    w_init.data<float>()[static_cast<std::size_t>(j)] = static_cast<float>(0.1 * std::sin(j));
  for (const bool in_loop : {false, true}) {
    CAPTURE(in_loop);
    for (const std::int64_t replicas : {1, 2}) {
      CAPTURE(replicas);
      const RegressionRun on_chip = train_regression(steps, w_init, in_loop, {}, 1, replicas);
      for (const unsigned workers : {1u, 2u, 3u}) {
        CAPTURE(workers);
        const RegressionRun offloaded =
            train_regression(steps, w_init, in_loop, {.offload_state = true}, workers, replicas);
        CHECK(offloaded.losses == on_chip.losses);
        CHECK(offloaded.w == on_chip.w);
        CHECK(offloaded.state == on_chip.state);
        CHECK(offloaded.state.at("step") == Vec{steps});
      }
      // The state left the IPU for Streaming Memory: first and second order (the weight's
      // shape) and the step count, each in a buffer of its own.
      const RegressionRun offloaded =
          train_regression(steps, w_init, in_loop, {.offload_state = true}, 1, replicas);
      const std::int64_t moments = 2 * regression_features * 4;
      CHECK(offloaded.memory.streaming.buffers.size() == 3);
      CHECK(offloaded.memory.streaming.used >= moments + 4);
      CHECK(on_chip.memory.ipus[0].variables - offloaded.memory.ipus[0].variables == moments + 4);
      CHECK(on_chip.memory.streaming.used == 0);
    }
  }
}

TEST_CASE("Adam's state sharded over the replicas trains bitwise as unsharded state") {
  const int steps = 20;
  HostTensor w_init({regression_features, 1}, float32);
  for (std::int64_t j = 0; j < regression_features; ++j)
    w_init.data<float>()[static_cast<std::size_t>(j)] = static_cast<float>(0.1 * std::sin(j));
  const std::int64_t f = regression_features;
  for (const bool in_loop : {false, true}) {
    CAPTURE(in_loop);
    for (const std::int64_t replicas : {2, 3}) {
      CAPTURE(replicas);
      const RegressionRun on_chip = train_regression(steps, w_init, in_loop, {}, 1, replicas);
      for (const bool offload : {false, true}) {
        CAPTURE(offload);
        const addons::optimizers::ApplyOptions options{.offload_state = offload,
                                                       .shard_state = true};
        for (const unsigned workers : {1u, 2u, 3u}) {
          CAPTURE(workers);
          const RegressionRun sharded =
              train_regression(steps, w_init, in_loop, options, workers, replicas);
          CHECK(sharded.losses == on_chip.losses);
          CHECK(sharded.w == on_chip.w);
          // The host sees the whole moments, unpadded.
          CHECK(sharded.state == on_chip.state);
          if (workers == 1) {
            // Each replica keeps its shard of both moments (ceil(f / replicas) floats each);
            // the step count (a scalar) is not sharded.
            const std::int64_t shard = (f + replicas - 1) / replicas;
            const std::int64_t saved = 2 * (f - shard) * 4;
            // Offloaded, all of it leaves the IPU (the shards' entries in Streaming Memory are
            // covered by test/emu/replica_sharding.cpp).
            if (offload)
              CHECK(on_chip.memory.ipus[0].variables - sharded.memory.ipus[0].variables ==
                    2 * f * 4 + 4);
            else
              CHECK(on_chip.memory.ipus[0].variables - sharded.memory.ipus[0].variables == saved);
          }
        }
      }
    }
  }
  // With one replica there is nothing to shard: the same program as unsharded state.
  const RegressionRun one = train_regression(steps, w_init, true, {.shard_state = true}, 1, 1);
  CHECK(one.w == train_regression(steps, w_init, true, {}, 1, 1).w);
}

TEST_CASE("load_remote / store_remote: named remote variables; errors name the key") {
  Ir ir;
  auto main = ir.main_graph().scope();
  addons::NamedVariableFactories facts;
  facts.insert("m", addons::VariableFactory{addons::init::zeros({3}), float32});
  const NamedTensors remote = facts.init_remote("opt");
  const auto entry = remote_entry(remote.at("m"));
  REQUIRE(entry.has_value());
  CHECK(entry->buffer.name() == "opt.m");
  CHECK(remote.at("m").name() == "opt.m");
  const NamedTensors loaded = addons::load_remote(remote);
  CHECK(loaded.at("m").producer()->kind() == OpKind::RemoteLoad);
  addons::store_remote(remote, loaded.map([](const Tensor& t) { return t * 2.0; }));
  CHECK(ir.main_graph().ops().back().kind() == OpKind::RemoteStore);
  const NamedTensors on_chip{{"m", variable(HostTensor({3}, float32), "m")}};
  CHECK_THROWS_WITH_AS(addons::load_remote(on_chip), doctest::Contains("'m'"), ValueError);
  CHECK_THROWS_WITH_AS(addons::store_remote(remote, NamedTensors{}),
                       doctest::Contains("no value to store for 'm'"), ValueError);
}

TEST_CASE("Optimizer errors") {
  CHECK_THROWS_WITH_AS(SGD({.lr = -0.1}), doctest::Contains("SGD: lr must be >= 0, got -0.1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(SGD({.momentum = -1}),
                       doctest::Contains("SGD: momentum must be >= 0, got -1"), ValueError);
  CHECK_THROWS_WITH_AS(SGD({.weight_decay = -1}),
                       doctest::Contains("SGD: weight_decay must be >= 0, got -1"), ValueError);
  CHECK_THROWS_WITH_AS(SGD({.nesterov = true}),
                       doctest::Contains("SGD: nesterov needs a momentum > 0"), ValueError);
  CHECK_THROWS_WITH_AS(Adam({.beta1 = 1.0}),
                       doctest::Contains("Adam: beta1 must be in [0, 1), got 1"), ValueError);
  CHECK_THROWS_WITH_AS(Adam({.beta2 = -0.5}),
                       doctest::Contains("Adam: beta2 must be in [0, 1), got -0.5"), ValueError);
  CHECK_THROWS_WITH_AS(Adam({.eps = 0.0}), doctest::Contains("Adam: eps must be > 0, got 0"),
                       ValueError);
  CHECK_THROWS_WITH_AS(AdamW({.lr = -1}), doctest::Contains("AdamW: lr must be >= 0, got -1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(AdamW({.weight_decay = -1}),
                       doctest::Contains("AdamW: weight_decay must be >= 0, got -1"), ValueError);
  CHECK_THROWS_WITH_AS(
      Adam({.first_order_dtype = int32}),
      doctest::Contains("Adam: first_order_dtype must be float32 or float16, got int32"),
      DTypeError);

  Ir ir;
  auto main = ir.main_graph().scope();
  const TensorSpec w{{2, 3}, float32};
  CHECK_THROWS_WITH_AS(
      SGD().create_graph(w, TensorSpec{{3, 2}, float32}),
      doctest::Contains("SGD: the gradient must have the variable's shape (2, 3), "
                        "got gradient [(3, 2) float32] for variable [(2, 3) float32]"),
      ShapeError);
  CHECK_THROWS_WITH_AS(Adam().create_graph(w, TensorSpec{{2, 3}, float16}),
                       doctest::Contains("Adam: the gradient must have the variable's dtype "
                                         "float32, got gradient [(2, 3) float16]"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(AdamW().create_graph(TensorSpec{{2}, int32}, TensorSpec{{2}, int32}),
                       doctest::Contains("AdamW: can only update float32 or float16 variables, "
                                         "got a variable [(2,) int32]"),
                       DTypeError);

  auto v = variable(HostTensor::full({2, 3}, float32, 1.0), "v");
  auto bad = ops::init({3, 2}, float32);
  CHECK_THROWS_WITH_AS(
      addons::optimizers::apply(SGD(), NamedTensors{{"v", v}}, NamedTensors{{"v", bad}}),
      doctest::Contains("SGD: the gradient must have the variable's shape"), ShapeError);
  CHECK_THROWS_WITH_AS(
      addons::optimizers::apply(SGD(), NamedTensors{{"v", v}}, NamedTensors{{"other", bad}}),
      doctest::Contains("optimizers::apply: no gradient for variable 'v'"), ValueError);
  CHECK_THROWS_WITH_AS(
      addons::optimizers::apply(SGD(), NamedTensors{{"v", v}}, std::map<Tensor, Tensor>{}),
      doctest::Contains("optimizers::apply: no gradient for variable 'v'"), ValueError);
  CHECK_THROWS_WITH_AS(RMSprop({.rho = 1.0}),
                       doctest::Contains("RMSprop: rho must be in [0, 1), got 1"), ValueError);
  CHECK_THROWS_WITH_AS(RMSprop({.momentum = -0.5}),
                       doctest::Contains("RMSprop: momentum must be >= 0, got -0.5"), ValueError);
  CHECK_THROWS_WITH_AS(RMSprop({.eps = 0.0}), doctest::Contains("RMSprop: eps must be > 0, got 0"),
                       ValueError);
  CHECK_THROWS_WITH_AS(RMSprop({.lr = -1}), doctest::Contains("RMSprop: lr must be >= 0, got -1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(RMSprop().create_graph(w, TensorSpec{{3, 2}, float32}),
                       doctest::Contains("RMSprop: the gradient must have the variable's shape"),
                       ShapeError);

  // Learning-rate tensors: float32 scalars of the graph apply runs in.
  auto int_lr = variable(HostTensor::scalar(std::int32_t{1}), "int_lr");
  auto vec_lr = variable(HostTensor::full({2}, float32, 0.1), "vec_lr");
  CHECK_THROWS_WITH_AS(SGD({.lr = int_lr}),
                       doctest::Contains("SGD: the lr tensor must be a float32 scalar, got"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(Adam({.lr = vec_lr}),
                       doctest::Contains("Adam: the lr tensor must be a float32 scalar, got"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(RMSprop({.lr = vec_lr}),
                       doctest::Contains("[(2,) float32] (reshape it to ())"), ShapeError);
  CHECK_THROWS_WITH_AS(AdamW({.lr = Tensor{}}),
                       doctest::Contains("AdamW: the lr tensor is a default-constructed Tensor"),
                       ValueError);
  auto lr = variable(HostTensor::scalar(0.1f), "lr");
  {
    // A main-graph rate used in a traced subgraph must come in as an input.
    struct Step : addons::Module<Step> {
      Tensor lr;
      void build(Tensor w, Tensor g) {
        addons::optimizers::apply(SGD({.lr = lr}), NamedTensors{{"w", w}}, NamedTensors{{"w", g}});
      }
    };
    Step step;
    step.lr = lr;
    const std::string message = "SGD: the lr tensor " + lr.id() + " belongs to graph '" +
                                ir.main_graph().name() +
                                "', not to the current graph 'Step_subgraph";
    CHECK_THROWS_WITH_AS(step.create_graph(w, w), doctest::Contains(message.c_str()), GraphError);
  }
}

TEST_CASE("state_factories + apply_with_state: state made by the caller, on chip or remote") {
  // Two variables stepped by Adam with state the caller created: apply_with_state on on-chip
  // state, and on remote state, both equal apply's own, bitwise, after 3 runs.
  auto train = [](int mode) { // 0: apply, 1: with on-chip state, 2: with remote state
    Ir ir;
    NamedTensors vars, state;
    {
      auto main = ir.main_graph().scope();
      vars = NamedTensors{{"a", variable(HostTensor::full({3}, float32, 1.0), "a")},
                          {"b", variable(HostTensor::full({2, 2}, float32, -1.0), "b")}};
      const NamedTensors grads =
          vars.map([](const Tensor& v) { return ops::sin(v) + 0.5; }); // changes every run
      const Adam adam({.lr = 0.1});
      if (mode == 0) {
        state = addons::optimizers::apply(adam, vars, grads);
      } else {
        const auto factories = addons::optimizers::state_factories(adam, vars);
        CHECK(factories.keys_flat() == Keys{"a.first_order", "a.second_order", "a.step",
                                            "b.first_order", "b.second_order", "b.step"});
        state = mode == 1 ? factories.init("optimizer") : factories.init_remote("optimizer");
        addons::optimizers::apply_with_state(adam, vars, grads, state);
      }
    }
    Session s{ir, "ipu_model", {.workers = 1}};
    auto attached = s.attach();
    for (int r = 0; r < 3; ++r)
      s.run();
    std::map<std::string, HostTensor> out;
    for (const auto& [key, t] : vars.items())
      out.emplace(key, s.get_tensor_data(t));
    for (const auto& [key, t] : state.items())
      out.emplace(key, s.get_tensor_data(t));
    return out;
  };
  const auto reference = train(0);
  CHECK(train(1) == reference);
  CHECK(train(2) == reference);
  CHECK(reference.at("a.step").item() == 3);

  Ir ir;
  auto main = ir.main_graph().scope();
  const NamedTensors vars{{"w", variable(HostTensor({2}, float32), "w")}};
  CHECK_THROWS_WITH_AS(
      addons::optimizers::apply_with_state(Adam({.lr = 0.1}), vars, vars, NamedTensors{}),
      doctest::Contains("no state for variable 'w'"), ValueError);
  // A stateless step needs none.
  CHECK_NOTHROW(addons::optimizers::apply_with_state(SGD({.lr = 0.1}), vars, vars, NamedTensors{}));
}
