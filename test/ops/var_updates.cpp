// In-place updates, scaled_add and adam_updater: inference, aliasing in the reference evaluator,
// errors; adam_updater's time step on the emulator.
#include "reference.hpp"

#include "pxl/ops/host_io.hpp"
#include "pxl/session.hpp"
#include "pxl/transforms/autodiff.hpp"

#include <cmath>

#include <doctest/doctest.h>

using namespace pxl;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_var_updates {
/// An empty subgraph "g", current for the fixture's lifetime: room for graph inputs.
struct Fixture {
  Ir ir;
  Graph g = ir.create_empty_graph("g");
  GraphScope scope = g.scope();
};

/// Whether `scaled_add_(x, y, args...)` compiles.
template <class... Args>
constexpr bool scaled_add_accepts = requires(const Tensor& t, Args... args) {
  ops::scaled_add_(t, t, args...);
};
template <class... Args>
constexpr bool scaled_add_out_of_place_accepts = requires(const Tensor& t, Args... args) {
  ops::scaled_add(t, t, args...);
};

// PopXL's `scaled_add_(w, g, b=-lr)` ported as `scaled_add_(w, g, -lr)` would scale w, not g:
// the factors must be named. (0.1's `scaled_add_(w, g, 1.0, -lr)`, both factors given, compiles
// deprecated for one release: test/api/v0_1.cpp.)
static_assert(!scaled_add_accepts<double>, "scaled_add_(w, g, -0.1) must not compile");
static_assert(!scaled_add_out_of_place_accepts<double>);
static_assert(scaled_add_accepts<ops::ScaledAddFactors>);
static_assert(scaled_add_accepts<>);
static_assert(requires(const Tensor& t) { ops::scaled_add_(t, t, {.a = 1, .b = -0.1}); });
static_assert(requires(const Tensor& t) { ops::scaled_add(t, t, {.b = -0.1}); });

TEST_CASE("add_: output aliases input 0's spec, b broadcasts to a") {
  Fixture f;
  auto a = graph_input({2, 3}, float32, "a");
  auto b = graph_input({3}, float32, "b");
  auto r = ops::add_(a, b);
  CHECK(r.spec() == a.spec());
  CHECK(r.producer()->kind() == OpKind::AddInplace);
  CHECK(is_inplace(r.producer()->kind()));
  auto i = graph_input({2, 3}, int32, "i");
  CHECK(ops::add_(i, i).dtype() == int32);
  Tensor c = a;
  c += b;
  CHECK(c.producer()->kind() == OpKind::AddInplace);
  CHECK(c != a);

  auto wide = graph_input({4, 2, 3}, float32, "wide");
  CHECK_THROWS_WITH_AS(ops::add_(a, wide),
                       Contains("'g/wide' [(4, 2, 3) float32] must broadcast to the shape of 'g/a' "
                                "[(2, 3) float32], which is updated in place; the broadcast "
                                "result is (4, 2, 3)"),
                       ShapeError);
  auto bad = graph_input({2}, float32, "bad");
  CHECK_THROWS_WITH_AS(ops::add_(a, bad), Contains("do not broadcast"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::add_(a, i), Contains("same dtype"), DTypeError);
  auto u = graph_input({2}, uint8, "u");
  CHECK_THROWS_WITH_AS(ops::add_(u, u),
                       Contains("AddLhsInplace: cannot update 'g/u' [(2,) uint8] in place"),
                       DTypeError);
}

TEST_CASE("sub_ and mul_, and the -= and *= operators: as add_") {
  Fixture f;
  auto a = graph_input({2, 3}, float32, "a");
  auto b = graph_input({3}, float32, "b");
  CHECK(ops::sub_(a, b).producer()->kind() == OpKind::SubInplace);
  CHECK(ops::mul_(a, b).producer()->kind() == OpKind::MulInplace);
  CHECK(is_inplace(OpKind::SubInplace));
  CHECK(is_inplace(OpKind::MulInplace));
  Tensor c = a;
  c -= b;
  CHECK(c.producer()->kind() == OpKind::SubInplace);
  c *= 2.0;
  CHECK(c.producer()->kind() == OpKind::MulInplace);
  CHECK(c.spec() == a.spec());
  auto wide = graph_input({4, 2, 3}, float32, "wide");
  CHECK_THROWS_WITH_AS(ops::sub_(a, wide), Contains("which is updated in place"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::mul_(a, wide), Contains("which is updated in place"), ShapeError);
  auto u = graph_input({2}, uint8, "u");
  CHECK_THROWS_WITH_AS(ops::mul_(u, u),
                       Contains("MulLhsInplace: cannot update 'g/u' [(2,) uint8] in place"),
                       DTypeError);
}

TEST_CASE("add_ in the reference evaluator: later readers see the update") {
  Ir ir;
  Tensor v, before, after;
  {
    auto in_main = ir.main_graph().scope();
    v = variable(HostTensor({1, 2, 3, 4}, {2, 2}), "v");
    before = ops::reshape(v, {4});
    ops::add_(v, constant(HostTensor({10, 20}, {2})));
    after = ops::reshape(v, {4});
  }
  Graph g = ir.create_graph([](Tensor x) { return ops::add_(x, x); }, TensorSpec{{2}, float32});

  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  CHECK(ev.variable(v) == HostTensor({11, 22, 13, 24}, {2, 2}));
  ev.evaluate(ir.main_graph()); // variables persist across evaluations
  CHECK(ev.variable(v) == HostTensor({21, 42, 23, 44}, {2, 2}));
  CHECK(ev.evaluate(g, {HostTensor({1.5f, -2.f})})[0] == HostTensor({3.f, -4.f}));
  CHECK_THROWS_WITH_AS(ev.variable(before), Contains("is not a variable"), GraphError);
  (void)after;
}

TEST_CASE("scaled_add and scaled_add_") {
  {
    Fixture f;
    auto x = graph_input({2, 1}, float32, "x");
    auto y = graph_input({3}, float32, "y");
    auto s = ops::scaled_add(x, y, {.a = 2.0, .b = -1.0});
    CHECK(s.spec() == TensorSpec{{2, 3}, float32});
    CHECK(s.producer()->kind() == OpKind::ScaledAdd);
    CHECK(s.producer()->attrs_as<ScalarAttrs>() == ScalarAttrs{2.0, -1.0});
    auto w = graph_input({2, 3}, float32, "w");
    auto u = ops::scaled_add_(w, y, {.b = -0.1});
    CHECK(u.spec() == w.spec());
    CHECK(u.producer()->kind() == OpKind::ScaledAddInplace);
    // An unnamed factor defaults to 1: {.b = -0.1} is w = 1·w − 0.1·y.
    CHECK(u.producer()->attrs_as<ScalarAttrs>() == ScalarAttrs{1.0, -0.1});
    CHECK(ops::scaled_add(x, y).producer()->attrs_as<ScalarAttrs>() == ScalarAttrs{1.0, 1.0});

    auto i = graph_input({3}, int32, "i");
    CHECK_THROWS_WITH_AS(ops::scaled_add(i, i), Contains("ScaledAdd: expected a float32"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(ops::scaled_add(y, i), Contains("same dtype"), DTypeError);
    CHECK_THROWS_WITH_AS(ops::scaled_add_(y, w), Contains("must broadcast to the shape of 'g/y'"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::scaled_add_(i, i), Contains("cannot update 'g/i' [(3,) int32]"),
                         DTypeError);
  }
  Ir ir;
  Graph g = ir.create_graph(
      [](Tensor x, Tensor y) {
        auto s = ops::scaled_add(x, y, {.a = 2.0, .b = 0.5});
        ops::scaled_add_(x, y, {.b = -0.1}); // the SGD step x -= 0.1 y
        return std::vector<Tensor>{s, x};
      },
      TensorSpec{{2}, float32}, TensorSpec{{2}, float32});
  ReferenceEvaluator ev(ir);
  auto out = ev.evaluate(g, {HostTensor({1.f, 2.f}), HostTensor({10.f, -4.f})});
  CHECK(out[0] == HostTensor({7.f, 2.f}));
  CHECK(allclose(out[1], HostTensor({0.f, 2.4f}), 1e-6, 1e-6));
}

TEST_CASE("var_updates: accumulate_, copy_var_update_, accumulator_scale_, accumulator_zero_") {
  {
    Fixture f;
    auto t = graph_input({2, 2}, float32, "t");
    auto x = graph_input({2}, float32, "x");
    auto acc = ops::var_updates::accumulate_(t, x, 0.5);
    CHECK(acc.spec() == t.spec());
    CHECK(acc.producer()->kind() == OpKind::Accumulate);
    CHECK(acc.producer()->attrs_as<ScalarAttrs>().a == 0.5);
    auto full = graph_input({2, 2}, float32, "full");
    CHECK(ops::var_updates::copy_var_update_(t, full).producer()->kind() == OpKind::CopyVarUpdate);
    auto sc = ops::var_updates::accumulator_scale_(t, 0.25);
    CHECK(sc.producer()->kind() == OpKind::AccumulatorScale);
    CHECK(sc.producer()->attrs_as<ScalarAttrs>().a == 0.25);
    CHECK(ops::var_updates::accumulator_zero_(t).producer()->kind() == OpKind::AccumulatorZero);
    auto i = graph_input({2}, int32, "i");
    CHECK(ops::var_updates::copy_var_update_(i, i).dtype() == int32);

    CHECK_THROWS_WITH_AS(ops::var_updates::copy_var_update_(t, x),
                         Contains("CopyVarUpdate: 'g/x' [(2,) float32] must have the same shape as "
                                  "'g/t' [(2, 2) float32]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::var_updates::copy_var_update_(i, x), Contains("same dtype"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(ops::var_updates::accumulate_(i, i),
                         Contains("Accumulate: cannot update 'g/i' [(2,) int32] in place; expected "
                                  "float32 or float16"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(ops::var_updates::accumulator_scale_(i, 2.0),
                         Contains("AccumulatorScale: cannot update 'g/i'"), DTypeError);
    CHECK_THROWS_WITH_AS(ops::var_updates::accumulator_zero_(i),
                         Contains("AccumulatorZero: cannot update 'g/i'"), DTypeError);
    CHECK_THROWS_WITH_AS(ops::var_updates::accumulate_(x, t), Contains("must broadcast"),
                         ShapeError);
  }
  Ir ir;
  Tensor acc, copy, scaled, zeroed;
  {
    auto in_main = ir.main_graph().scope();
    acc = variable(HostTensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), "acc");
    copy = variable(HostTensor({0, 0}), "copy");
    scaled = variable(HostTensor({2.f, -6.f}), "scaled");
    zeroed = variable(HostTensor({5.f, 7.f}), "zeroed");
    ops::var_updates::accumulate_(acc, constant(HostTensor({10.f, 100.f})), 0.5);
    ops::var_updates::copy_var_update_(copy, constant(HostTensor({7, -8})));
    ops::var_updates::accumulator_scale_(scaled, 0.5);
    ops::var_updates::accumulator_zero_(zeroed);
  }
  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  CHECK(ev.variable(acc) == HostTensor({6.f, 52.f, 8.f, 54.f}, {2, 2}));
  CHECK(ev.variable(copy) == HostTensor({7, -8}));
  CHECK(ev.variable(scaled) == HostTensor({1.f, -3.f}));
  CHECK(ev.variable(zeroed) == HostTensor({0.f, 0.f}));
}

TEST_CASE("accumulate_moving_average_ and _square_: in place, as accumulate_") {
  Fixture f;
  auto t = graph_input({2, 3}, float32, "t");
  auto x = graph_input({3}, float32, "x");
  auto avg = ops::var_updates::accumulate_moving_average_(t, x, 0.9);
  CHECK(avg.spec() == t.spec());
  CHECK(avg.producer()->kind() == OpKind::AccumulateMovingAverage);
  CHECK(avg.producer()->attrs_as<ScalarAttrs>().a == 0.9);
  auto sq = ops::var_updates::accumulate_moving_average_square_(t, x, 0.999);
  CHECK(sq.producer()->kind() == OpKind::AccumulateMovingAverageSquare);
  CHECK(sq.producer()->attrs_as<ScalarAttrs>().a == 0.999);
  CHECK(is_inplace(OpKind::AccumulateMovingAverage));
  CHECK(is_inplace(OpKind::AccumulateMovingAverageSquare));

  auto i = graph_input({3}, int32, "i");
  auto h = graph_input({3}, float16, "h");
  auto wide = graph_input({4, 2, 3}, float32, "wide");
  CHECK_THROWS_WITH_AS(ops::var_updates::accumulate_moving_average_(i, i, 0.9),
                       Contains("AccumulateMovingAverage: cannot update 'g/i' [(3,) int32] in "
                                "place; expected float32 or float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::var_updates::accumulate_moving_average_square_(x, h, 0.9),
                       Contains("AccumulateMovingAverageSquare: operands must have the same "
                                "dtype, got 'g/x' [(3,) float32] and 'g/h' [(3,) float16]"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::var_updates::accumulate_moving_average_square_(t, wide, 0.9),
                       Contains("AccumulateMovingAverageSquare: 'g/wide' [(4, 2, 3) float32] must "
                                "broadcast to the shape of 'g/t' [(2, 3) float32], which is "
                                "updated in place"),
                       ShapeError);
}

TEST_CASE("adam_updater: inputs, dtype, the time step incremented first, errors") {
  Fixture f;
  auto m = graph_input({2, 3}, float16, "m");
  auto v = graph_input({2, 3}, float32, "v");
  auto w = graph_input({2, 3}, float32, "w");
  auto t = graph_input({}, float32, "t");
  using ops::var_updates::adam_updater;

  // Neither bias correction nor decay: m and v only, m's dtype.
  auto plain = adam_updater(m, v);
  CHECK(plain.spec() == TensorSpec{{2, 3}, float16});
  CHECK(plain.producer()->kind() == OpKind::AdamUpdater);
  CHECK(plain.producer()->num_inputs() == 2);
  CHECK(plain.producer()->attrs_as<AdamUpdaterAttrs>() == AdamUpdaterAttrs{});
  CHECK(!is_inplace(OpKind::AdamUpdater));
  CHECK(!is_differentiable(OpKind::AdamUpdater));

  // Everything: the step, incremented by an accumulate_ first, then the weight, whose dtype
  // the updater takes.
  auto full = adam_updater(m, v,
                           {.weight = w,
                            .time_step = t,
                            .weight_decay = 0.01,
                            .beta1 = 0.9,
                            .beta2 = 0.999,
                            .epsilon = 1e-8});
  CHECK(full.spec() == TensorSpec{{2, 3}, float32});
  const Op op = *full.producer();
  REQUIRE(op.num_inputs() == 4);
  CHECK(op.input(0) == m);
  CHECK(op.input(1) == v);
  CHECK(op.input(2).producer()->kind() == OpKind::Accumulate);
  CHECK(op.input(2).producer()->input(0) == t);
  CHECK(op.input(3) == w);
  CHECK(op.attrs_as<AdamUpdaterAttrs>() == AdamUpdaterAttrs{.weight_decay = 0.01,
                                                            .beta1 = 0.9,
                                                            .beta2 = 0.999,
                                                            .epsilon = 1e-8,
                                                            .bias_correction = true,
                                                            .weight = true});
  // Betas without a step: no bias correction, as in PopXL.
  CHECK(adam_updater(m, v, {.beta1 = 0.9, .beta2 = 0.999}).producer()->num_inputs() == 2);

  auto i = graph_input({2, 3}, int32, "i");
  auto small = graph_input({3}, float32, "small");
  auto steps = graph_input({2}, float32, "steps");
  CHECK_THROWS_WITH_AS(adam_updater(i, v),
                       Contains("AdamUpdater: the first moment must be float32 or float16, got "
                                "'g/i' [(2, 3) int32]"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(adam_updater(m, i), Contains("AdamUpdater: the second moment must be"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(adam_updater(m, small),
                       Contains("AdamUpdater: the second moment 'g/small' [(3,) float32] must "
                                "have the shape of the first moment 'g/m' [(2, 3) float16]"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(adam_updater(m, v, {.weight = small, .weight_decay = 0.1}),
                       Contains("AdamUpdater: the weight 'g/small' [(3,) float32] must have the "
                                "shape of the first moment"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(adam_updater(m, v, {.weight = i, .weight_decay = 0.1}),
                       Contains("AdamUpdater: the weight must be float32 or float16"), DTypeError);
  CHECK_THROWS_WITH_AS(adam_updater(m, v, {.weight_decay = 0.1}),
                       Contains("AdamUpdater: a weight decay (0.1) needs the weight"), ValueError);
  CHECK_THROWS_WITH_AS(adam_updater(m, v, {.time_step = t, .beta1 = 0.9}),
                       Contains("AdamUpdater: bias correction (a time_step) needs both beta1 and "
                                "beta2, got beta1 only"),
                       ValueError);
  CHECK_THROWS_WITH_AS(adam_updater(m, v, {.time_step = t}), Contains("got neither"), ValueError);
  CHECK_THROWS_WITH_AS(adam_updater(m, v, {.time_step = steps, .beta1 = 0.9, .beta2 = 0.99}),
                       Contains("AdamUpdater: the time step must be a scalar, got 'g/steps' "
                                "[(2,) float32]"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      adam_updater(m, v, {.time_step = graph_input({}, int32, "ti"), .beta1 = 0.9, .beta2 = 0.99}),
      Contains("AdamUpdater: the time step must be float32 or float16"), DTypeError);
  // A failed call adds no op (the step's accumulate_ included).
  const auto ops_before = f.g.ops().size();
  CHECK_THROWS_AS(adam_updater(m, small, {.time_step = t, .beta1 = 0.9, .beta2 = 0.99}),
                  ShapeError);
  CHECK(f.g.ops().size() == ops_before);
}

TEST_CASE("adam_updater is not differentiable: autodiff names it") {
  Ir ir;
  Graph g = ir.create_graph([](Tensor m, Tensor v) { return ops::var_updates::adam_updater(m, v); },
                            TensorSpec{{2}, float32}, TensorSpec{{2}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(g), Contains("autodiff: op AdamUpdater."), GraphError);
}

TEST_CASE("adam_updater with bias correction: the reference and the emulator on 1-3 workers") {
  // Three runs of u = adam_updater(m, v, t, w) with a d2h stream of u: t counts 1, 2, 3, and
  // each u matches the closed form with that t, bitwise for any number of workers.
  const double b1 = 0.8, b2 = 0.95, eps = 1e-6, wd = 0.05;
  const HostTensor m0({0.3f, -0.7f, 1.5f, -0.01f, 0.2f}, {5});
  const HostTensor v0({0.09f, 0.5f, 2.25f, 1e-4f, 0.01f}, {5});
  const HostTensor w0({1.f, 2.f, -3.f, 0.5f, -0.25f}, {5});
  Ir ir;
  Tensor t;
  DeviceToHostStream us;
  {
    auto in_main = ir.main_graph().scope();
    auto m = variable(m0, "m");
    auto v = variable(v0, "v");
    auto w = variable(w0, "w");
    t = variable(HostTensor::scalar(0.0f), "t");
    auto u = ops::var_updates::adam_updater(m, v,
                                            {.weight = w,
                                             .time_step = t,
                                             .weight_decay = wd,
                                             .beta1 = b1,
                                             .beta2 = b2,
                                             .epsilon = eps});
    us = d2h_stream(u.shape(), u.dtype(), "u");
    ops::host_store(us, u);
  }
  std::vector<HostTensor> first;
  for (unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    for (int k = 1; k <= 3; ++k) {
      CAPTURE(k);
      const HostTensor u = s.run().at(us);
      if (workers == 1) {
        first.push_back(u);
        for (std::int64_t i = 0; i < 5; ++i) {
          const double m_hat = m0.item(i) / (1 - std::pow(b1, k));
          const double v_hat = v0.item(i) / (1 - std::pow(b2, k));
          const double want = m_hat / (std::sqrt(v_hat) + eps) + wd * w0.item(i);
          CHECK(u.item(i) == doctest::Approx(want).epsilon(1e-6));
        }
      } else {
        CHECK(u == first[static_cast<std::size_t>(k - 1)]);
      }
    }
    CHECK(s.get_tensor_data(t).item(0) == 3.0);
  }
  // The reference evaluator increments the step too.
  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  ev.evaluate(ir.main_graph());
  CHECK(ev.variable(t).item(0) == 2.0);
}

TEST_CASE("accumulate_square_ and accumulate_mean_: in place, values, errors") {
  namespace vu = ops::var_updates;
  {
    Fixture f;
    auto t = graph_input({2, 3}, float32, "t");
    auto x = graph_input({3}, float32, "x");
    auto sq = vu::accumulate_square_(t, x, 0.5);
    CHECK(sq.spec() == t.spec());
    CHECK(sq.producer()->kind() == OpKind::AccumulateSquare);
    CHECK(sq.producer()->attrs_as<ScalarAttrs>().a == 0.5);
    CHECK(vu::accumulate_square_(t, x).producer()->attrs_as<ScalarAttrs>().a == 1.0);
    auto mean = vu::accumulate_mean_(t, x, 3.0);
    CHECK(mean.producer()->kind() == OpKind::AccumulateMean);
    CHECK(mean.producer()->num_inputs() == 2);
    auto step = graph_input({}, float32, "step");
    CHECK(vu::accumulate_mean_(t, x, step).producer()->num_inputs() == 3);
    CHECK(is_inplace(OpKind::AccumulateSquare));
    CHECK(is_inplace(OpKind::AccumulateMean));

    auto i = graph_input({3}, int32, "i");
    auto h = graph_input({3}, float16, "h");
    auto wide = graph_input({4, 2, 3}, float32, "wide");
    CHECK_THROWS_WITH_AS(vu::accumulate_square_(i, i),
                         Contains("AccumulateSquare: cannot update 'g/i' [(3,) int32] in place; "
                                  "expected float32 or float16"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(vu::accumulate_square_(x, h),
                         Contains("AccumulateSquare: operands must have the same dtype"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(vu::accumulate_mean_(t, wide, 1.0),
                         Contains("AccumulateMean: 'g/wide' [(4, 2, 3) float32] must broadcast to "
                                  "the shape of 'g/t' [(2, 3) float32]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(vu::accumulate_mean_(t, x, i),
                         Contains("AccumulateMean: the step must be float32 or float16, got "
                                  "'g/i' [(3,) int32]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(vu::accumulate_mean_(t, x, x),
                         Contains("AccumulateMean: the step must be a scalar, got 'g/x' [(3,) "
                                  "float32]"),
                         ShapeError);
  }
  // PopXL's example: a mean of 1 and 2 accumulated with steps 0 and 1 is 1.5; a third value 6
  // (step 2, a tensor) makes it 3. t += 0.5·x² from 1 with x = -2 gives 3.
  Ir ir;
  Tensor mean, stepped, sq;
  {
    auto in_main = ir.main_graph().scope();
    mean = variable(HostTensor({0.f, 10.f}), "mean");
    stepped = variable(HostTensor({0.f}), "stepped");
    sq = variable(HostTensor({1.f, 1.f}), "sq");
    vu::accumulate_mean_(mean, constant(HostTensor({1.f, 4.f})), 0.0);
    vu::accumulate_mean_(mean, constant(HostTensor({2.f, -2.f})), 1.0);
    vu::accumulate_mean_(mean, constant(HostTensor({6.f, 1.f})),
                         constant(HostTensor::scalar(2.0f)));
    vu::accumulate_mean_(stepped, constant(HostTensor({5.f})), constant(HostTensor::scalar(0.0f)));
    vu::accumulate_square_(sq, constant(HostTensor({-2.f, 0.5f})), 0.5);
  }
  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  CHECK(ev.variable(mean) == HostTensor({3.f, 1.f}));
  CHECK(ev.variable(stepped) == HostTensor({5.f}));
  CHECK(ev.variable(sq) == HostTensor({3.f, 1.125f}));
}

TEST_CASE("sparse_accumulate_: slices added where the indices point, errors") {
  namespace vu = ops::var_updates;
  {
    Fixture f;
    auto t = graph_input({4, 3}, float32, "t");
    auto x = graph_input({2, 2, 3}, float32, "x");
    auto idx = graph_input({2, 2}, int32, "idx");
    auto r = vu::sparse_accumulate_(t, x, idx, 0, 0.5);
    CHECK(r.spec() == t.spec());
    CHECK(r.producer()->kind() == OpKind::SparseAccumulate);
    CHECK(r.producer()->attrs<OpKind::SparseAccumulate>() ==
          SparseAccumulateAttrs{.axis = 0, .factor = 0.5});
    auto cols = graph_input({4, 5}, float32, "cols");
    CHECK(vu::sparse_accumulate_(t, cols, graph_input({5}, int32, "j"), -1)
              .producer()
              ->attrs<OpKind::SparseAccumulate>()
              .axis == 1);
    CHECK(is_inplace(OpKind::SparseAccumulate));
    CHECK_THROWS_WITH_AS(vu::sparse_accumulate_(t, cols, idx),
                         Contains("SparseAccumulate: the slices 'g/cols' [(4, 5) float32] must "
                                  "have shape (2, 2, 3), that of gathering 'g/idx' [(2, 2) int32] "
                                  "from 'g/t' [(4, 3) float32] along axis 0"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(vu::sparse_accumulate_(t, x, graph_input({2, 2}, float32, "fi")),
                         Contains("SparseAccumulate: indices must be int32, got 'g/fi'"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(vu::sparse_accumulate_(t, graph_input({2, 2, 3}, float16, "h"), idx),
                         Contains("SparseAccumulate: operands must have the same dtype"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(
        vu::sparse_accumulate_(graph_input({4}, int32, "ti"), graph_input({2}, int32, "xi"),
                               graph_input({2}, int32, "ii")),
        Contains("SparseAccumulate: cannot update 'g/ti' [(4,) int32] in place"), DTypeError);
    CHECK_THROWS_WITH_AS(
        vu::sparse_accumulate_(graph_input({}, float32, "s"), graph_input({}, float32, "xs"), idx),
        Contains("SparseAccumulate: cannot select slices of the scalar 'g/s'"), ShapeError);
    CHECK_THROWS_AS(vu::sparse_accumulate_(t, x, idx, 2), ValueError);
  }
  // Rows 2, 0, 2 and the out-of-range 7 and -1: row 2 gets two slices, row 0 one, the rest
  // nothing.
  Ir ir;
  Tensor t;
  {
    auto in_main = ir.main_graph().scope();
    t = variable(HostTensor({1.f, 1.f, 2.f, 2.f, 3.f, 3.f}, {3, 2}), "t");
    vu::sparse_accumulate_(
        t, constant(HostTensor({10.f, 20.f, 30.f, 40.f, 50.f, 60.f, 1.f, 2.f, 3.f, 4.f}, {5, 2})),
        constant(HostTensor(std::vector<std::int32_t>{2, 0, 2, 7, -1}, {5})), 0, 0.5);
  }
  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  CHECK(ev.variable(t) == HostTensor({16.f, 21.f, 2.f, 2.f, 33.f, 43.f}, {3, 2}));
}

TEST_CASE("lamb_updater, adamax_updater and adam_var_update: inputs, closed forms, errors") {
  namespace vu = ops::var_updates;
  {
    Fixture f;
    auto m = graph_input({3}, float32, "m");
    auto v = graph_input({3}, float32, "v");
    auto w = graph_input({3}, float16, "w");
    auto t = graph_input({}, float32, "t");
    auto lamb = vu::lamb_updater(m, v, {.weight = w, .weight_decay = 0.1});
    CHECK(lamb.producer()->kind() == OpKind::AdamUpdater);
    CHECK(lamb.dtype() == float16);
    CHECK_THROWS_WITH_AS(vu::lamb_updater(m, v, {.time_step = t, .beta2 = 0.9}),
                         Contains("bias correction (a time_step) needs both beta1 and beta2, got "
                                  "beta2 only"),
                         ValueError);
    auto ax = vu::adamax_updater(m, v, {.time_step = t});
    CHECK(ax.producer()->kind() == OpKind::AdamaxUpdater);
    CHECK(ax.producer()->num_inputs() == 3); // m, v and the incremented step
    CHECK(ax.producer()->attrs_as<AdamUpdaterAttrs>().beta1 == 0.9);
    CHECK(ax.producer()->attrs_as<AdamUpdaterAttrs>().epsilon == 1e-7);
    CHECK_THROWS_WITH_AS(vu::adamax_updater(m, v, {}),
                         Contains("AdamaxUpdater: AdaMax needs the time step"), ValueError);
    CHECK_THROWS_WITH_AS(vu::adamax_updater(m, v, {.time_step = t, .weight_decay = 0.1}),
                         Contains("AdamaxUpdater: a weight decay (0.1) needs the weight"),
                         ValueError);
    CHECK_THROWS_WITH_AS(vu::adamax_updater(m, graph_input({2}, float32, "v2"), {.time_step = t}),
                         Contains("AdamaxUpdater: the second moment 'g/v2' [(2,) float32] must "
                                  "have the shape of the first moment"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(vu::adamax_updater(m, v, {.time_step = m}),
                         Contains("AdamaxUpdater: the time step must be a scalar"), ShapeError);

    auto r1 = graph_input({}, float32, "r1");
    auto r2 = graph_input({1}, float32, "r2");
    auto upd = vu::adam_var_update(m, v, r1, r2, 0.01, 10.0);
    CHECK(upd.spec() == m.spec());
    CHECK(upd.producer()->kind() == OpKind::AdamVarUpdate);
    CHECK(upd.producer()->num_inputs() == 4);
    CHECK(is_inplace(OpKind::AdamVarUpdate));
    CHECK_THROWS_WITH_AS(vu::adam_var_update(m, v, r1, r2, 0.01, 0.0),
                         Contains("AdamVarUpdate: the max weight norm must not be 0"), ValueError);
    CHECK_THROWS_WITH_AS(vu::adam_var_update(m, v, m, r2, 0.01, 1.0),
                         Contains("AdamVarUpdate: r1 (the weight's sum of squares) must be a "
                                  "scalar, got 'g/m' [(3,) float32]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(vu::adam_var_update(m, v, r1, graph_input({}, int32, "ri"), 0.01, 1.0),
                         Contains("AdamVarUpdate: r2 (the updater's sum of squares) must be "
                                  "float32 or float16"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(vu::adam_var_update(m, w, r1, r2, 0.01, 1.0),
                         Contains("AdamVarUpdate: operands must have the same dtype"), DTypeError);
  }
  // LAMB's step by hand: w = (3, 4), x = (0.6, 0.8): r1 = 25, r2 = 1. With max norm 2 the
  // ratio is min(5, 2) / 1 = 2: w -= 0.5·2·x. A zero r2 makes the ratio 1. AdaMax after one
  // increment (t = 1): m / (1 − 0.5) / (u + 0.5).
  Ir ir;
  Tensor w, w1, step, u;
  {
    auto in_main = ir.main_graph().scope();
    w = variable(HostTensor({3.f, 4.f}), "w");
    w1 = variable(HostTensor({3.f, 4.f}), "w1");
    const Tensor x = constant(HostTensor({0.6f, 0.8f}));
    vu::adam_var_update(w, x, ops::lamb_square(w), ops::lamb_square(x), 0.5, 2.0);
    vu::adam_var_update(w1, x, ops::lamb_square(w1), constant(HostTensor::scalar(0.0f)), 0.5, 2.0);
    step = variable(HostTensor::scalar(0.0f), "step");
    u = variable(HostTensor({0.f, 0.f}), "u");
    vu::copy_var_update_(u, vu::adamax_updater(constant(HostTensor({1.f, -2.f})),
                                               constant(HostTensor({1.5f, 3.5f})),
                                               {.time_step = step, .beta1 = 0.5, .epsilon = 0.5}));
  }
  ReferenceEvaluator ev(ir);
  ev.evaluate(ir.main_graph());
  const HostTensor got = ev.variable(w), got1 = ev.variable(w1);
  CHECK(got.item(0) == doctest::Approx(2.4));
  CHECK(got.item(1) == doctest::Approx(3.2));
  CHECK(got1.item(0) == doctest::Approx(2.7));
  CHECK(got1.item(1) == doctest::Approx(3.6));
  CHECK(ev.variable(step).item(0) == 1.0);
  CHECK(ev.variable(u) == HostTensor({1.f, -1.f}));
}

TEST_CASE("adamax_updater and adam_var_update are not differentiable: autodiff names them") {
  Ir ir;
  Graph g = ir.create_graph(
      [](Tensor m, Tensor v) {
        return ops::var_updates::adamax_updater(m, v, {.time_step = ops::init({}, float32)});
      },
      TensorSpec{{2}, float32}, TensorSpec{{2}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(g), Contains("autodiff: op AdamaxUpdater."),
                       GraphError);
  Graph h = ir.create_graph(
      [](Tensor w, Tensor x) {
        return ops::var_updates::adam_var_update(w * 1.0, x, ops::lamb_square(w),
                                                 ops::lamb_square(x), 0.1, 1.0);
      },
      TensorSpec{{2}, float32}, TensorSpec{{2}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(h), Contains("autodiff: op AdamVarUpdate."),
                       GraphError);
}

TEST_CASE("adamax_updater: the reference and the emulator on 1-3 workers, float32 and float16") {
  // Three runs of u = adamax_updater(m, u_max, t, w) with a d2h stream of u: t counts 1, 2, 3,
  // each u matches the closed form m / (1 − β1^t) / (u_max + eps) + wd·w and the reference
  // evaluator's run, bitwise for any number of workers.
  const double b1 = 0.8, eps = 1e-3, wd = 0.05;
  for (const DType d : {float32, float16}) {
    CAPTURE(d);
    const HostTensor m0 = HostTensor({0.3f, -0.7f, 1.5f, -0.01f, 0.2f}, {5}).astype(d);
    const HostTensor v0 = HostTensor({0.3f, 0.7f, 1.5f, 0.01f, 0.25f}, {5}).astype(d);
    const HostTensor w0 = HostTensor({1.f, 2.f, -3.f, 0.5f, -0.25f}, {5}).astype(d);
    Ir ir;
    Tensor t;
    DeviceToHostStream us;
    {
      auto in_main = ir.main_graph().scope();
      t = variable(HostTensor::scalar(0.0f), "t");
      auto u = ops::var_updates::adamax_updater(variable(m0, "m"), variable(v0, "v"),
                                                {.weight = variable(w0, "w"),
                                                 .time_step = t,
                                                 .weight_decay = wd,
                                                 .beta1 = b1,
                                                 .epsilon = eps});
      us = d2h_stream(u.shape(), u.dtype(), "u");
      ops::host_store(us, u);
    }
    ReferenceEvaluator ev(ir);
    std::vector<HostTensor> first;
    for (unsigned workers : {1u, 2u, 3u}) {
      CAPTURE(workers);
      Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      auto attached = s.attach();
      for (int k = 1; k <= 3; ++k) {
        CAPTURE(k);
        const HostTensor u = s.run().at(us);
        if (workers > 1) {
          CHECK(u == first[static_cast<std::size_t>(k - 1)]);
          continue;
        }
        first.push_back(u);
        const HostTensor want = ev.run({}).at("u");
        const double tol = d == float16 ? 2e-3 : 1e-6;
        for (std::int64_t i = 0; i < 5; ++i) {
          const double m_hat = m0.item(i) / (1 - std::pow(b1, k));
          const double closed = m_hat / (v0.item(i) + eps) + wd * w0.item(i);
          CHECK(u.item(i) == doctest::Approx(closed).epsilon(tol));
          CHECK(u.item(i) == doctest::Approx(want.item(i)).epsilon(tol));
        }
      }
      CHECK(s.get_tensor_data(t).item(0) == 3.0);
    }
  }
}

} // namespace test_var_updates
