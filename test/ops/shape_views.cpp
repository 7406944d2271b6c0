// PopXL's views (reshape_, flatten_, transpose_, slice_, concat_) and dynamic_update_: specs,
// values, and the GraphErrors where a copy would differ from PopXL's shared memory.
#include "shape_helpers.hpp"

#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using namespace pxl::test_ops_shape;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

namespace test_shape_views {
using T = std::vector<Tensor>;
using pxl::testing::evaluate;

TEST_CASE("reshape_, flatten_, transpose_, slice_, concat_: the views' specs, values and errors") {
  {
    Fixture f;
    auto x = graph_input({2, 3, 4}, float32, "x");
    auto y = graph_input({2, 1, 4}, float32, "y");
    const auto r = ops::reshape_(x, {6, -1});
    CHECK(r.spec() == TensorSpec{{6, 4}, float32});
    CHECK(r.producer()->kind() == OpKind::ReshapeInplace);
    CHECK(ops::flatten_(x).spec() == TensorSpec{{24}, float32});
    CHECK(ops::flatten_(x).producer()->kind() == OpKind::ReshapeInplace);
    CHECK(ops::transpose_(x).shape() == Shape{4, 3, 2});
    CHECK(ops::transpose_(x, {0, 2, 1}).producer()->kind() == OpKind::TransposeInplace);
    CHECK(ops::slice_(x, {1}, {3}, {1}).shape() == Shape{2, 2, 4});
    CHECK(ops::slice_(x, {1}, {3}, {1}).producer()->kind() == OpKind::SliceInplace);
    CHECK(ops::concat_({x, y}, 1).shape() == Shape{2, 4, 4});
    CHECK(ops::concat_({x, y}, 1).producer()->kind() == OpKind::ConcatInplace);
    // The out-of-place forms' checks, naming the in-place op.
    CHECK_THROWS_WITH_AS(ops::reshape_(x, {5, -1}),
                         Contains("ReshapeInplace: cannot reshape 'g/x' [(2, 3, 4) float32] (24 "
                                  "elements) to (5, -1)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::transpose_(x, {0, 1}),
                         Contains("TransposeInplace: permutation [0, 1] has 2 entries but 'g/x'"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::slice_(x, {0, 0}, {1}, {0, 1}),
                         Contains("SliceInplace: start [0, 0], stop [1] and axes [0, 1] must "
                                  "have the same length"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        ops::concat_({x, y}, 0),
        Contains("ConcatInplace: tensor 1 'g/y' [(2, 1, 4) float32] does not match"), ShapeError);
    CHECK_THROWS_WITH_AS(ops::concat_({x, ops::cast(y, float16)}, 1),
                         Contains("ConcatInplace: operands must have the same dtype"), DTypeError);
  }
  const auto x = iota({2, 3});
  const auto out = evaluate(
      [](const T& t) {
        return T{ops::reshape_(t[0], {3, 2}), ops::flatten_(t[0]), ops::transpose_(t[0]),
                 ops::slice_(t[0], {1}, {3}, {1}), ops::concat_({t[0], t[0]}, 0)};
      },
      {x});
  CHECK(out[0] == iota({3, 2}));
  CHECK(out[1] == iota({6}));
  CHECK(out[2] == HostTensor({0.f, 3.f, 1.f, 4.f, 2.f, 5.f}, {3, 2}));
  CHECK(out[3] == HostTensor({1.f, 2.f, 4.f, 5.f}, {2, 2}));
  CHECK(out[4] == HostTensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f}, {4, 3}));
  // float16 views copy every bit.
  const auto h = iota({2, 3}, float16);
  CHECK(evaluate([](const T& t) { return T{ops::transpose_(t[0])}; }, {h})[0] ==
        HostTensor({0.f, 3.f, 1.f, 4.f, 2.f, 5.f}, {3, 2}).astype(float16));
}

TEST_CASE("views: what PopXL gives where a copy agrees with its shared memory") {
  // v = reshape_(x); y = 2·v; x += 1 (after v's last read); z = slice_(x) read after the
  // update: PopXL's y = 2·x₀ and z = x₀ + 1 on the slice, as here.
  const auto out = evaluate(
      [](const T& t) {
        const Tensor v = ops::reshape_(t[0], {6});
        const Tensor y = v * 2.0;
        ops::add_(t[0], constant(HostTensor({1.f}, {1}), "one"));
        const Tensor z = ops::slice_(t[0], {1}, {2}, {0});
        return T{y, z, ops::identity(t[0])};
      },
      {iota({2, 3})});
  CHECK(out[0] == HostTensor({0.f, 2.f, 4.f, 6.f, 8.f, 10.f}, {6}));
  CHECK(out[1] == HostTensor({4.f, 5.f, 6.f}, {1, 3}));
  CHECK(out[2] == HostTensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3}));
}

TEST_CASE("views: a write through a view is a GraphError naming the op and the view") {
  Fixture f;
  auto x = graph_input({2, 3}, float32, "x");
  const Tensor one = constant(HostTensor({1.f}, {1}), "one");
  const auto ops_before = f.g.ops().size();
  const Tensor r = ops::reshape_(x, {6});
  CHECK_THROWS_WITH_AS(
      ops::relu_(r),
      Contains(("ReluInplace: cannot modify input 0 '" + r.id() +
                "' [(6,) float32] in place: it is '" + r.id() + "', a view made by ReshapeInplace")
                   .c_str()),
      GraphError);
  CHECK_THROWS_WITH_AS(ops::add_(ops::slice_(x, {0}, {1}, {0}), one),
                       Contains("AddLhsInplace: cannot modify input 0"), GraphError);
  CHECK_THROWS_WITH_AS(ops::exp_(ops::transpose_(x)), Contains("a view made by TransposeInplace"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::gelu_(ops::concat_({x, x}, 0)),
                       Contains("a view made by ConcatInplace"), GraphError);
  CHECK_THROWS_WITH_AS(ops::swish_(ops::detach_(x)), Contains("a view made by DetachInplace"),
                       GraphError);
  const Tensor at = constant(HostTensor(std::vector<std::int32_t>{0}, {1}), "at");
  CHECK_THROWS_WITH_AS(ops::dynamic_update_(ops::flatten_(x), at, ops::reshape(one, {1}), {0}),
                       Contains("DynamicUpdateInplace: cannot modify input 0"), GraphError);
  CHECK_THROWS_WITH_AS(ops::dynamic_update_(ops::flatten_(x), at, ops::reshape(one, {1}), {0}),
                       Contains("PopXL would write the change through to the viewed tensor"),
                       GraphError);
  // The failed ops added nothing: the seven views and two reshapes of `one` are all there is.
  CHECK(f.g.ops().size() == ops_before + 9);
}

TEST_CASE("views: a read after the viewed tensor changed in place is a GraphError") {
  Fixture f;
  auto x = graph_input({2, 3}, float32, "x");
  const Tensor v = ops::transpose_(x);
  const Tensor w = ops::reshape_(ops::slice_(x, {0}, {1}, {0}), {3}); // a view of a view
  CHECK_NOTHROW(v + 1.0);                                             // before the change
  const Tensor changed = ops::relu_(x);
  CHECK_THROWS_WITH_AS(
      ops::exp(v),
      Contains(("Exp: input 0 '" + v.id() + "', a view made by TransposeInplace").c_str()),
      GraphError);
  CHECK_THROWS_WITH_AS(ops::exp(v),
                       Contains(("of '" + x.id() + "', is read after ReluInplace").c_str()),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::mul(w, w), Contains("a view made by ReshapeInplace"), GraphError);
  CHECK_THROWS_WITH_AS(ops::mul(w, w), Contains("take the view after the update"), GraphError);
  // A view of the updated tensor, taken after the update, is current.
  CHECK_NOTHROW(ops::exp(ops::transpose_(changed)));
  CHECK_NOTHROW(ops::exp(ops::transpose_(x)));
}

TEST_CASE("dynamic_update_: in place, later readers see the update; the errors name it") {
  const auto out = evaluate(
      [](const T& t) {
        const Tensor off = constant(HostTensor(std::vector<std::int32_t>{5, -1}, {2}), "off");
        const Tensor r = ops::dynamic_update_(
            t[0], off, constant(HostTensor({10.f, 11.f}, {1, 2}), "w"), {0, 1});
        CHECK(r.spec() == t[0].spec());
        CHECK(is_inplace(r.producer()->kind()));
        return T{ops::identity(t[0])};
      },
      {iota({2, 3})});
  // Offsets clamp into range: (5, -1) becomes (1, 0).
  CHECK(out[0] == HostTensor({0.f, 1.f, 2.f, 10.f, 11.f, 5.f}, {2, 3}));
  Fixture f;
  auto t = graph_input({2, 3}, float32, "t");
  const Tensor row = constant(HostTensor(std::vector<std::int32_t>{1}, {1}), "row");
  CHECK_THROWS_WITH_AS(
      ops::dynamic_update_(t, row, constant(iota({1, 2}), "u3"), {0}),
      Contains("DynamicUpdateInplace: update 'g/u3' [(1, 2) float32] must have "
               "the shape of 'g/t' [(2, 3) float32] except on the updated axes [0]"),
      ShapeError);
  CHECK_THROWS_WITH_AS(ops::dynamic_update_(t, row, constant(iota({1, 3}, float16), "u5"), {0}),
                       Contains("DynamicUpdateInplace: operands must have the same dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(
      ops::dynamic_update_(t, ops::cast(row, float32), constant(iota({1, 3}), "u6"), {0}),
      Contains("DynamicUpdateInplace: the index must be int32"), DTypeError);
}
} // namespace test_shape_views
