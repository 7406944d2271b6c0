// In-place updates and scaled_add: inference, aliasing in the reference evaluator, errors.
#include "reference.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

namespace {
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
} // namespace

// PopXL's `scaled_add_(w, g, b=-lr)` ported as `scaled_add_(w, g, -lr)` would scale w, not g:
// the factors must be named.
static_assert(!scaled_add_accepts<double>, "scaled_add_(w, g, -0.1) must not compile");
static_assert(!scaled_add_accepts<double, double>, "scaled_add_(w, g, 1.0, -0.1) must not compile");
static_assert(!scaled_add_out_of_place_accepts<double>);
static_assert(!scaled_add_out_of_place_accepts<double, double>);
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
