// Learning-rate schedules against their closed forms (PyTorch's and Keras'), writing them into a
// Session, feeding them to a stream, errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

using namespace pxl;
namespace sch = pxl::addons::optimizers::schedules;

TEST_CASE("StepDecay is PyTorch's StepLR: initial · gamma^floor(step / step_size)") {
  const sch::StepDecay s{.initial = 0.1, .step_size = 3, .gamma = 0.5};
  const std::vector<double> want{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025};
  for (std::size_t k = 0; k < want.size(); ++k) {
    CAPTURE(k);
    CHECK(s(static_cast<std::int64_t>(k)) == doctest::Approx(want[k]).epsilon(1e-15));
  }
  CHECK(sch::StepDecay{.initial = 2.0, .step_size = 1, .gamma = 0.9}(10) ==
        doctest::Approx(2.0 * std::pow(0.9, 10)).epsilon(1e-15));
}

TEST_CASE("CosineDecay is CosineAnnealingLR's closed form, held at the final value") {
  const sch::CosineDecay s{.initial = 1.0, .decay_steps = 10, .final_value = 0.1};
  CHECK(s(0) == 1.0);
  CHECK(s(5) == doctest::Approx(0.55).epsilon(1e-15));
  CHECK(s(10) == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(s(25) == doctest::Approx(0.1).epsilon(1e-15));
  for (std::int64_t t = 0; t <= 10; ++t) {
    CAPTURE(t);
    const double closed = 0.1 + 0.9 * (1 + std::cos(std::numbers::pi * t / 10.0)) / 2;
    CHECK(s(t) == doctest::Approx(closed).epsilon(1e-15));
  }
  // PyTorch's recursive CosineAnnealingLR update gives the same values.
  double lr = 1.0;
  for (std::int64_t t = 1; t <= 10; ++t) {
    const double pi = std::numbers::pi;
    lr = (1 + std::cos(pi * t / 10.0)) / (1 + std::cos(pi * (t - 1) / 10.0)) * (lr - 0.1) + 0.1;
    CAPTURE(t);
    CHECK(s(t) == doctest::Approx(lr).epsilon(1e-12));
  }
  // Keras' CosineDecay with alpha = final / initial: initial · ((1 − α)·cosine + α).
  const sch::CosineDecay keras{.initial = 0.2, .decay_steps = 8, .final_value = 0.2 * 0.25};
  for (std::int64_t t = 0; t <= 12; ++t) {
    const double p = static_cast<double>(std::min<std::int64_t>(t, 8)) / 8;
    const double cosine = 0.5 * (1 + std::cos(std::numbers::pi * p));
    CAPTURE(t);
    CHECK(keras(t) == doctest::Approx(0.2 * ((1 - 0.25) * cosine + 0.25)).epsilon(1e-15));
  }
}

TEST_CASE("LinearWarmup rises linearly to the next schedule, which then starts at its step 0") {
  const sch::LinearWarmup w{
      .steps = 4, .after = [](std::int64_t) { return 0.2; }, .start_factor = 0.25};
  // PyTorch's LinearLR(start_factor=0.25, end_factor=1, total_iters=4) on 0.2.
  CHECK(w(0) == doctest::Approx(0.05).epsilon(1e-15));
  CHECK(w(1) == doctest::Approx(0.2 * (0.25 + 0.75 / 4)).epsilon(1e-15));
  CHECK(w(2) == doctest::Approx(0.125).epsilon(1e-15));
  CHECK(w(4) == 0.2);
  CHECK(w(100) == 0.2);
  // Composed with a decay: the decay's clock starts when the warm-up ends (SequentialLR).
  const sch::CosineDecay cosine{.initial = 1.0, .decay_steps = 10, .final_value = 0.0};
  const sch::LinearWarmup warm{.steps = 5, .after = cosine};
  CHECK(warm(0) == 0.0);
  CHECK(warm(3) == doctest::Approx(0.6).epsilon(1e-15));
  CHECK(warm(5) == 1.0);
  CHECK(warm(10) == doctest::Approx(cosine(5)).epsilon(1e-15));
  CHECK(warm(15) == doctest::Approx(0.0).epsilon(1e-15));
  // Keras' CosineDecay warm-up: initial 0.01 to warmup_target 0.1 over 5 steps.
  const sch::LinearWarmup keras{
      .steps = 5,
      .after = sch::CosineDecay{.initial = 0.1, .decay_steps = 10, .final_value = 0.0},
      .start_factor = 0.1};
  for (std::int64_t t = 0; t < 5; ++t) {
    CAPTURE(t);
    CHECK(keras(t) == doctest::Approx(0.01 + (0.1 - 0.01) * t / 5.0).epsilon(1e-15));
  }
  // A step decay after the warm-up.
  const sch::LinearWarmup stepped{
      .steps = 2, .after = sch::StepDecay{.initial = 0.4, .step_size = 2, .gamma = 0.5}};
  CHECK(stepped(1) == doctest::Approx(0.2).epsilon(1e-15));
  CHECK(stepped(3) == 0.4);
  CHECK(stepped(4) == 0.2);
}

TEST_CASE("write_learning_rate and learning_rates feed a schedule to a Session") {
  Ir ir;
  Tensor lr;
  DeviceToHostStream seen;
  {
    auto main = ir.main_graph().scope();
    lr = variable(HostTensor::scalar(1.0f), "lr");
    seen = d2h_stream({}, float32, "seen");
    ops::host_store(seen, lr + 0.0);
  }
  Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const sch::StepDecay s{.initial = 0.1, .step_size = 2, .gamma = 0.5};
  for (std::int64_t step = 0; step < 5; ++step) {
    const double written = sch::write_learning_rate(session, lr, s, step);
    CHECK(written == static_cast<float>(s(step)));
    CHECK(session.run().at(seen).item() == written);
  }
  CHECK(sch::write_learning_rate(session, lr, 0.3) == 0.3f);
  CHECK(session.get_tensor_data(lr).item() == 0.3f);

  const HostTensor rates = sch::learning_rates(s, 1, 4);
  CHECK(rates.shape() == Shape{4});
  CHECK(rates.dtype() == float32);
  for (std::int64_t k = 0; k < 4; ++k)
    CHECK(rates.item(k) == static_cast<float>(s(1 + k)));
}

TEST_CASE("Schedule errors") {
  CHECK_THROWS_WITH_AS(sch::StepDecay{.step_size = 0}(1),
                       doctest::Contains("StepDecay: step_size must be >= 1, got 0"), ValueError);
  CHECK_THROWS_WITH_AS(sch::StepDecay{}(-1),
                       doctest::Contains("StepDecay: the step must be >= 0, got -1"), ValueError);
  CHECK_THROWS_WITH_AS(sch::CosineDecay{.decay_steps = 0}(0),
                       doctest::Contains("CosineDecay: decay_steps must be >= 1, got 0"),
                       ValueError);
  const auto constant = [](std::int64_t) { return 0.1; };
  CHECK_THROWS_WITH_AS((sch::LinearWarmup{.steps = 0, .after = constant}(0)),
                       doctest::Contains("LinearWarmup: steps must be >= 1, got 0"), ValueError);
  CHECK_THROWS_WITH_AS((sch::LinearWarmup{.steps = 2, .after = constant, .start_factor = 1.5}(0)),
                       doctest::Contains("LinearWarmup: start_factor must be in [0, 1], got 1.5"),
                       ValueError);
  CHECK_THROWS_WITH_AS(sch::LinearWarmup{.steps = 2}(0),
                       doctest::Contains("LinearWarmup: `after` must be a schedule"), ValueError);
  CHECK_THROWS_WITH_AS(sch::learning_rates(constant, 0, 0),
                       doctest::Contains("learning_rates: count must be >= 1, got 0"), ValueError);
  CHECK_THROWS_WITH_AS(sch::learning_rates(sch::Schedule{}, 0, 2),
                       doctest::Contains("learning_rates: the schedule is empty"), ValueError);
  CHECK_THROWS_WITH_AS(sch::CosineDecay{}(-2),
                       doctest::Contains("CosineDecay: the step must be >= 0, got -2"), ValueError);

  Ir ir;
  Tensor lr, wide, ints, loaded;
  {
    auto main = ir.main_graph().scope();
    lr = variable(HostTensor::scalar(1.0f), "lr");
    wide = variable(HostTensor::full({2}, float32, 1.0), "wide");
    ints = variable(HostTensor::scalar(std::int32_t{1}), "ints");
    loaded = ops::host_load(h2d_stream({}, float32, "rate"));
  }
  Session session{ir, "ipu_model"};
  const std::string not_variable =
      "write_learning_rate: the learning rate must be a variable, got " + loaded.id();
  const std::string wide_message = "must be a float32 scalar, got " + wide.id() + " [(2,) float32]";
  const std::string ints_message = "must be a float32 scalar, got " + ints.id();
  CHECK_THROWS_WITH_AS(sch::write_learning_rate(session, loaded, 0.1),
                       doctest::Contains(not_variable.c_str()), ValueError);
  CHECK_THROWS_WITH_AS(sch::write_learning_rate(session, wide, 0.1),
                       doctest::Contains(wide_message.c_str()), ShapeError);
  CHECK_THROWS_WITH_AS(sch::write_learning_rate(session, ints, 0.1),
                       doctest::Contains(ints_message.c_str()), DTypeError);
  CHECK_THROWS_WITH_AS(
      sch::write_learning_rate(session, Tensor{}, 0.1),
      doctest::Contains("the learning rate must be a variable, got an empty Tensor"), ValueError);
  CHECK_THROWS_WITH_AS(sch::write_learning_rate(session, lr, sch::Schedule{}, 0),
                       doctest::Contains("write_learning_rate: the schedule is empty"), ValueError);
}
