// Shape and data-movement ops (interpolate too): inference, reference results and every user
// error.
#include "op_test.hpp"
#include "reference.hpp"

#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

#include <numeric>

using namespace pxl;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

namespace {
/// 0, 1, 2, ... in `shape`, as `dtype`.
HostTensor iota(Shape shape, DType dtype = float32) {
  std::vector<float> v(static_cast<std::size_t>(nelms(shape)));
  std::iota(v.begin(), v.end(), 0.f);
  return HostTensor(v, std::move(shape)).astype(dtype);
}

/// Builds a subgraph of one input of `spec` with `fn` and evaluates it on `x`.
template <typename Fn>
std::vector<HostTensor> eval1(const HostTensor& x, Fn fn) {
  Ir ir;
  Graph g = ir.create_graph(fn, x.spec());
  ReferenceEvaluator ev(ir);
  return ev.evaluate(g, {x});
}

/// An empty subgraph "g", current for the fixture's lifetime: room for graph inputs.
struct Fixture {
  Ir ir;
  Graph g = ir.create_empty_graph("g");
  GraphScope scope = g.scope();
};
} // namespace

TEST_CASE("reshape: inference, -1 and values") {
  {
    Fixture f;
    auto x = graph_input({2, 3, 4}, float32, "x");
    auto r = ops::reshape(x, {6, -1});
    CHECK(r.shape() == Shape{6, 4});
    CHECK(r.dtype() == float32);
    CHECK(r.producer()->kind() == OpKind::Reshape);
    CHECK(std::holds_alternative<NoAttrs>(r.producer()->attrs()));
    CHECK(ops::reshape(x, {-1}).shape() == Shape{24});
    CHECK(x.reshape({4, 3, 2}).shape() == Shape{4, 3, 2});
    auto s = graph_input({}, int32, "s");
    CHECK(ops::reshape(s, {1, 1}).shape() == Shape{1, 1});
  }
  auto out = eval1(iota({2, 3}, int32), [](Tensor t) { return ops::reshape(t, {3, 2}); });
  CHECK(out[0] == iota({3, 2}, int32));
}

TEST_CASE("reshape: errors name both shapes") {
  {
    Fixture f;
    auto x = graph_input({2, 3}, float32, "x");
    CHECK_THROWS_WITH_AS(ops::reshape(x, {4, 2}),
                         Contains("cannot reshape 'g/x' [(2, 3) float32] (6 elements) to (4, 2)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::reshape(x, {4, -1}), Contains("to (4, -1)"), ShapeError);
    CHECK_THROWS_WITH_AS(ops::reshape(x, {-1, -1}), Contains("only one dimension may be -1"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::reshape(x, {-2, -3}), Contains("negative dimension in (-2, -3)"),
                         ShapeError);
  }
}

TEST_CASE("flatten, squeeze, unsqueeze lower to Reshape") {
  {
    Fixture f;
    auto x = graph_input({2, 1, 3, 1}, float32, "x");
    CHECK(ops::flatten(x).shape() == Shape{6});
    CHECK(x.flatten().producer()->kind() == OpKind::Reshape);
    CHECK(ops::squeeze(x).shape() == Shape{2, 3});
    CHECK(ops::squeeze(x, {1}).shape() == Shape{2, 3, 1});
    CHECK(ops::squeeze(x, {-1, 1}).shape() == Shape{2, 3});
    CHECK(ops::squeeze(x, {1}).producer()->kind() == OpKind::Reshape);
    CHECK(ops::unsqueeze(x, {0}).shape() == Shape{1, 2, 1, 3, 1});
    CHECK(ops::unsqueeze(x, {-1}).shape() == Shape{2, 1, 3, 1, 1});
    CHECK(ops::unsqueeze(x, {0, 2}).shape() == Shape{1, 2, 1, 1, 3, 1});
    CHECK(ops::unsqueeze(x, {1}).producer()->kind() == OpKind::Reshape);

    CHECK_THROWS_WITH_AS(ops::squeeze(x, {0}),
                         Contains("Squeeze: axis 0 of 'g/x' [(2, 1, 3, 1) float32] has size 2, "
                                  "expected 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::squeeze(x, {4}), Contains("axis 4 is out of range"), ValueError);
    CHECK_THROWS_WITH_AS(ops::unsqueeze(x, {6}), Contains("axis 6 is out of range"), ValueError);
  }
  auto out = eval1(iota({2, 1, 3}), [](Tensor t) { return ops::squeeze(t); });
  CHECK(out[0] == iota({2, 3}));
}

TEST_CASE("transpose: inference, reversed default, values") {
  {
    Fixture f;
    auto x = graph_input({2, 3, 4}, float32, "x");
    auto t = ops::transpose(x, {1, 2, 0});
    CHECK(t.shape() == Shape{3, 4, 2});
    CHECK(t.producer()->kind() == OpKind::Transpose);
    CHECK(t.producer()->attrs_as<TransposeAttrs>().perm == std::vector<std::int64_t>{1, 2, 0});
    CHECK(x.T().shape() == Shape{4, 3, 2});
    CHECK(x.T().producer()->attrs_as<TransposeAttrs>().perm == std::vector<std::int64_t>{2, 1, 0});
    CHECK(ops::transpose(x, {-1, 0, 1}).shape() == Shape{4, 2, 3});

    CHECK_THROWS_WITH_AS(ops::transpose(x, {0, 1}),
                         Contains("permutation [0, 1] has 2 entries but 'g/x' [(2, 3, 4) float32] "
                                  "has rank 3"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::transpose(x, {0, 1, 1}), Contains("is not a permutation"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::transpose(x, {0, 1, 3}), Contains("axis 3 is out of range"),
                         ValueError);
  }
  // [[0 1 2] [3 4 5]]^T = [[0 3] [1 4] [2 5]]
  auto out = eval1(iota({2, 3}), [](Tensor a) { return a.T(); });
  CHECK(out[0] == HostTensor({0.f, 3.f, 1.f, 4.f, 2.f, 5.f}, {3, 2}));
  auto out3 = eval1(iota({2, 3, 4}, int32), [](Tensor a) { return ops::transpose(a, {1, 2, 0}); });
  CHECK(out3[0].at<std::int32_t>({2, 3, 1}) == 1 * 12 + 2 * 4 + 3);
  CHECK(out3[0].at<std::int32_t>({0, 1, 0}) == 1);
}

TEST_CASE("slice: NumPy clamping and negative indices") {
  {
    Fixture f;
    auto x = graph_input({4, 5}, float32, "x");
    auto s = ops::slice(x, {1}, {3}, {1});
    CHECK(s.shape() == Shape{4, 2});
    CHECK(s.producer()->kind() == OpKind::Slice);
    const auto& a = s.producer()->attrs_as<SliceAttrs>();
    CHECK(a.start == std::vector<std::int64_t>{0, 1});
    CHECK(a.stop == std::vector<std::int64_t>{4, 3});
    CHECK(ops::slice(x, {-3}, {-1}, {-1}).producer()->attrs_as<SliceAttrs>().start ==
          std::vector<std::int64_t>{0, 2});
    CHECK(ops::slice(x, {-100, 2}, {100, 100}).shape() == Shape{4, 3}); // clamped, all axes
    CHECK(ops::slice(x, {3}, {1}).shape() == Shape{0, 5});              // NumPy: empty
    CHECK(ops::slice(x, {5}, {9}).shape() == Shape{0, 5});
    CHECK(x.slice(1, -1).shape() == Shape{2, 5});
    CHECK(x[-1].shape() == Shape{5});

    CHECK_THROWS_WITH_AS(ops::slice(x, {0, 0}, {1}, {}), Contains("must have the same length"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::slice(x, {0, 0}, {1, 1}, {1, -1}), Contains("listed twice"),
                         ValueError);
    CHECK_THROWS_WITH_AS(ops::slice(x, {0}, {1}, {2}), Contains("axis 2 is out of range"),
                         ValueError);
    CHECK_THROWS_WITH_AS(x[4], Contains("index 4 out of range"), ValueError);
  }
  // iota(3, 4)[1:3, -3:] = [[5 6 7] [9 10 11]]
  auto out = eval1(iota({3, 4}), [](Tensor t) { return ops::slice(t, {1, -3}, {3, 100}); });
  CHECK(out[0] == HostTensor({5.f, 6.f, 7.f, 9.f, 10.f, 11.f}, {2, 3}));
  auto row = eval1(iota({3, 4}, int32), [](Tensor t) { return t[1]; });
  CHECK(row[0] == HostTensor({4, 5, 6, 7}, {4}));
}

TEST_CASE("concat: inference, values and errors") {
  {
    Fixture f;
    auto a = graph_input({2, 3}, float32, "a");
    auto b = graph_input({2, 1}, float32, "b");
    auto c = ops::concat({a, b}, -1);
    CHECK(c.shape() == Shape{2, 4});
    CHECK(c.producer()->kind() == OpKind::Concat);
    CHECK(c.producer()->attrs_as<AxisAttrs>().axis == 1);
    CHECK(ops::concat({a, a, a}).shape() == Shape{6, 3});
    CHECK(ops::concat({a}).shape() == Shape{2, 3});

    auto i = graph_input({2, 3}, int32, "i");
    CHECK_THROWS_WITH_AS(ops::concat({}), Contains("at least one tensor"), ValueError);
    CHECK_THROWS_WITH_AS(ops::concat({a, i}), Contains("'g/i' [(2, 3) int32]"), DTypeError);
    CHECK_THROWS_WITH_AS(ops::concat({a, b}, 0),
                         Contains("tensor 1 'g/b' [(2, 1) float32] does not match 'g/a' [(2, 3) "
                                  "float32] on every axis except the concatenation axis 0"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::concat({a, b}, 2), Contains("axis 2 is out of range"), ValueError);
  }
  Ir ir;
  Graph g = ir.create_graph(
      [](Tensor x, Tensor y) {
        return ops::concat({x, y, x}, 1);
      },
      TensorSpec{{2, 2}, int32}, TensorSpec{{2, 1}, int32});
  ReferenceEvaluator ev(ir);
  auto out = ev.evaluate(g, {HostTensor({1, 2, 3, 4}, {2, 2}), HostTensor({9, 8}, {2, 1})});
  CHECK(out[0] == HostTensor({1, 2, 9, 1, 2, 3, 4, 8, 3, 4}, {2, 5}));
}

TEST_CASE("split: one op with several outputs") {
  {
    Fixture f;
    auto x = graph_input({6, 4}, float32, "x");
    auto parts = ops::split(x, 3);
    REQUIRE(parts.size() == 3);
    for (const auto& p : parts)
      CHECK(p.shape() == Shape{2, 4});
    CHECK(parts[0].producer() == parts[2].producer());
    CHECK(parts[0].producer()->kind() == OpKind::Split);
    CHECK(parts[0].producer()->attrs_as<SplitAttrs>().sizes == std::vector<std::int64_t>{2, 2, 2});
    auto sized = ops::split(x, std::vector<std::int64_t>{1, 3}, -1);
    CHECK(sized[0].shape() == Shape{6, 1});
    CHECK(sized[1].shape() == Shape{6, 3});
    CHECK(sized[0].producer()->attrs_as<SplitAttrs>().axis == 1);

    CHECK_THROWS_WITH_AS(ops::split(x, 4), Contains("cannot split axis 0 of size 6"), ValueError);
    CHECK_THROWS_WITH_AS(ops::split(x, 0), Contains("into 0 equal parts"), ValueError);
    CHECK_THROWS_WITH_AS(ops::split(x, std::vector<std::int64_t>{1, 2}, 1),
                         Contains("part sizes [1, 2] sum to 3 but axis 1 of 'g/x' [(6, 4) float32] "
                                  "has size 4"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::split(x, std::vector<std::int64_t>{5, -1}),
                         Contains("negative part size"), ValueError);
  }
  auto out = eval1(iota({2, 3}), [](Tensor t) {
    return ops::split(t, std::vector<std::int64_t>{2, 1}, 1);
  });
  REQUIRE(out.size() == 2);
  CHECK(out[0] == HostTensor({0.f, 1.f, 3.f, 4.f}, {2, 2}));
  CHECK(out[1] == HostTensor({2.f, 5.f}, {2, 1}));
}

TEST_CASE("gather: shape, values, out-of-range zeros") {
  {
    Fixture f;
    auto x = graph_input({4, 3}, float32, "x");
    auto idx = graph_input({2, 2}, int32, "idx");
    CHECK(ops::gather(x, idx).shape() == Shape{2, 2, 3});
    CHECK(ops::gather(x, idx, -1).shape() == Shape{4, 2, 2});
    CHECK(ops::gather(x, idx, 1).producer()->attrs_as<AxisAttrs>().axis == 1);
    auto fidx = graph_input({2}, float32, "fidx");
    CHECK_THROWS_WITH_AS(ops::gather(x, fidx), Contains("Gather: indices must be int32"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(ops::gather(x, idx, 2), Contains("axis 2 is out of range"), ValueError);
  }
  Ir ir;
  Graph g = ir.create_graph(
      [](Tensor t, Tensor i) {
        return std::vector<Tensor>{ops::gather(t, i), ops::gather(t, i, 1)};
      },
      TensorSpec{{3, 2}, float32}, TensorSpec{{3}, int32});
  ReferenceEvaluator ev(ir);
  // rows of [[0 1] [2 3] [4 5]] picked by [2, 7, 0]; 7 is out of range for both axes.
  auto out = ev.evaluate(g, {iota({3, 2}), HostTensor({2, 7, 0})});
  CHECK(out[0] == HostTensor({4.f, 5.f, 0.f, 0.f, 0.f, 1.f}, {3, 2}));
  CHECK(out[1] == HostTensor({0.f, 0.f, 0.f, 0.f, 0.f, 2.f, 0.f, 0.f, 4.f}, {3, 3}));
}

TEST_CASE("onehot: shape, dtype from values, axis") {
  {
    Fixture f;
    auto idx = graph_input({3}, int32, "idx");
    auto vals = graph_input({2}, float32, "vals");
    auto o = ops::onehot(idx, 4, vals);
    CHECK(o.shape() == Shape{3, 4});
    CHECK(o.dtype() == float32);
    CHECK(o.producer()->attrs_as<OneHotAttrs>() == OneHotAttrs{4, 1});
    CHECK(ops::onehot(idx, 4, vals, 0).shape() == Shape{4, 3});
    auto ivals = graph_input({2}, int32, "ivals");
    CHECK(ops::onehot(idx, 5, ivals).dtype() == int32);

    CHECK_THROWS_WITH_AS(ops::onehot(vals, 4, vals), Contains("indices must be int32"), DTypeError);
    CHECK_THROWS_WITH_AS(ops::onehot(idx, 0, vals), Contains("num_classes must be >= 1, got 0"),
                         ValueError);
    auto bad = graph_input({3}, float32, "bad");
    CHECK_THROWS_WITH_AS(ops::onehot(idx, 4, bad),
                         Contains("values must have shape (2,) holding [off, on], got 'g/bad'"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(ops::onehot(idx, 4, vals, 2), Contains("axis 2 is out of range"),
                         ValueError);
  }
  Ir ir;
  Graph g = ir.create_graph(
      [](Tensor i, Tensor v) {
        return std::vector<Tensor>{ops::onehot(i, 3, v), ops::onehot(i, 3, v, 0)};
      },
      TensorSpec{{2}, int32}, TensorSpec{{2}, float32});
  ReferenceEvaluator ev(ir);
  auto out = ev.evaluate(g, {HostTensor({2, 0}), HostTensor({-1.f, 5.f})});
  CHECK(out[0] == HostTensor({-1.f, -1.f, 5.f, 5.f, -1.f, -1.f}, {2, 3}));
  CHECK(out[1] == HostTensor({-1.f, 5.f, -1.f, -1.f, 5.f, -1.f}, {3, 2}));
}

TEST_CASE("init: a fresh zero tensor") {
  Ir ir;
  Tensor t;
  {
    auto in_main = ir.main_graph().scope();
    t = ops::init({2, 3}, int32, "buf");
    CHECK(t.spec() == TensorSpec{{2, 3}, int32});
    CHECK(t.name() == "buf");
    CHECK(t.producer()->num_inputs() == 0);
    CHECK(t.producer()->attrs_as<CreateAttrs>().spec == t.spec());
    CHECK(ops::init({4}, float32, "", InitType::undef).producer()->attrs_as<CreateAttrs>().init ==
          InitType::undef);
    CHECK_THROWS_WITH_AS(ops::init({2, -1}, float32),
                         Contains("shape (2, -1) has a negative dimension (-1)"), ShapeError);
  }
  Graph g = ir.create_graph([] { return ops::init({2, 2}, float32); });
  ReferenceEvaluator ev(ir);
  CHECK(ev.evaluate(g)[0] == HostTensor({2, 2}, float32));
}

TEST_CASE("arange, stack, tril, triu, pad and tile: shapes, values and errors") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  CHECK(ops::arange(0, 5).spec() == TensorSpec{{5}, int32});
  CHECK(ops::arange(1, 2, 0.25, float32).spec() == TensorSpec{{4}, float32});
  CHECK(ops::arange(3, 0, -1).shape() == Shape{3});
  CHECK(ops::arange(3, 5, -1).shape() == Shape{0}); // empty, as in NumPy
  CHECK_THROWS_WITH_AS(ops::arange(0, 3, 0),
                       Contains("Arange: start 0.000000, stop 3.000000 and "
                                "step 0.000000 must be finite"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::arange(0.5, 3), Contains("an int32 range needs an integral start"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::arange(0, 3, 1, bool_), Contains("Arange: the dtype must be"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::arange(0, 3e9), Contains("leaves int32"), ValueError);

  const Tensor a = constant(iota({2, 3}), "a");
  const Tensor b = constant(iota({2, 3}), "b");
  CHECK(ops::stack({a, b}).shape() == Shape{2, 2, 3});
  CHECK(ops::stack({a, b}, -1).shape() == Shape{2, 3, 2});
  CHECK_THROWS_WITH_AS(ops::stack({}), Contains("Stack: expected at least one tensor"), ValueError);
  CHECK_THROWS_WITH_AS(ops::stack({a, ops::transpose(b)}), Contains("Stack: tensor 1 'Transpose."),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::stack({a}, 3), Contains("Stack: axis 3 is out of range"), ValueError);

  CHECK(ops::tril(a).spec() == a.spec());
  CHECK(ops::triu(a, 1).producer()->attrs<OpKind::Triu>().k == 1);
  CHECK_THROWS_WITH_AS(ops::tril(constant(iota({3}), "v")),
                       Contains("Tril: expected a tensor of rank 2 or more"), ShapeError);

  CHECK(ops::pad(a, {{1, 2}, {0, 3}}).shape() == Shape{5, 6});
  CHECK_THROWS_WITH_AS(ops::pad(a, {{1, 2}}),
                       Contains("Pad: expected one {before, after} pair "
                                "per axis of 'a' [(2, 3) float32], got 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::pad(a, {{1, 2}, {-1, 0}}),
                       Contains("Pad: the widths of axis 1 must be >= 0, got {-1, 0}"), ValueError);

  CHECK(ops::tile(a, {3, 2}).shape() == Shape{6, 6});
  CHECK(ops::tile(a, {0, 2}).shape() == Shape{0, 6});
  CHECK_THROWS_WITH_AS(ops::tile(a, {2}), Contains("Tile: expected one repeat count per axis"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::tile(a, {2, -1}), Contains("Tile: repeat counts must be >= 0"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::tile(a, {std::int64_t{1} << 62, 4}), Contains("Tile: axis 0"),
                       ShapeError);

  Graph g = ir.create_graph([&] {
    const Tensor x = constant(iota({2, 3}), "x");
    return std::vector<Tensor>{ops::arange(2, -1, -1),
                               ops::stack({x, x}, 1),
                               ops::tril(x),
                               ops::triu(x, 1),
                               ops::pad(x, {{1, 0}, {0, 1}}, -1),
                               ops::tile(x, {1, 2})};
  });
  ReferenceEvaluator ev(ir);
  const auto r = ev.evaluate(g);
  CHECK(r[0] == HostTensor(std::vector<std::int32_t>{2, 1, 0}, {3}));
  CHECK(r[1] ==
        HostTensor({0.f, 1.f, 2.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 3.f, 4.f, 5.f}, {2, 2, 3}));
  CHECK(r[2] == HostTensor({0.f, 0.f, 0.f, 3.f, 4.f, 0.f}, {2, 3}));
  CHECK(r[3] == HostTensor({0.f, 1.f, 2.f, 0.f, 0.f, 5.f}, {2, 3}));
  CHECK(r[4] ==
        HostTensor({-1.f, -1.f, -1.f, -1.f, 0.f, 1.f, 2.f, -1.f, 3.f, 4.f, 5.f, -1.f}, {3, 4}));
  CHECK(r[5] == HostTensor({0.f, 1.f, 2.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 3.f, 4.f, 5.f}, {2, 6}));
}

TEST_CASE("take_along_axis, scatter, scatter_add, dynamic_slice, dynamic_update") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const Tensor t = constant(iota({2, 3}), "t");
  const Tensor idx = constant(HostTensor(std::vector<std::int32_t>{2, 0, 1, 1}, {2, 2}), "idx");
  const Tensor upd = constant(HostTensor({10.f, 20.f, 30.f, 40.f}, {2, 2}), "upd");
  CHECK(ops::take_along_axis(t, idx, 1).spec() == TensorSpec{{2, 2}, float32});
  CHECK(ops::scatter(t, idx, upd, 1).spec() == t.spec());
  const Tensor at = constant(HostTensor(std::vector<std::int32_t>{1, 2}, {2}), "at");
  CHECK(ops::dynamic_slice(t, at, {0, 1}, {1, 1}).shape() == Shape{1, 1});
  CHECK_THROWS_WITH_AS(ops::take_along_axis(t, ops::cast(idx, float32), 1),
                       Contains("GatherElements: indices must be int32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::take_along_axis(t, idx, 0),
                       Contains("GatherElements: indices 'idx' [(2, 2) int32] must have the rank "
                                "of 't' [(2, 3) float32] and its extent on every axis but 0"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::scatter(t, idx, constant(iota({2, 1}), "u1"), 1),
                       Contains("ScatterElements: updates 'u1' [(2, 1) float32] must have the "
                                "shape of the indices"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::scatter_add(t, idx, ops::cast(upd, int32), 1),
                       Contains("ScatterReduce: operands must have the same dtype"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::dynamic_slice(t, at, {0}, {1}),
                       Contains("DynamicSlice: axes [0], sizes [1] and the index 'at' [(2,) "
                                "int32] must have one entry per axis"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::dynamic_slice(t, at, {0, 1}, {3, 1}),
                       Contains("DynamicSlice: size 3 on axis 0 does not fit"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::dynamic_slice(t, at, {1, -1}, {1, 1}),
                       Contains("DynamicSlice: axis 1 listed twice"), ValueError);
  CHECK_THROWS_WITH_AS(ops::dynamic_update(t, at, constant(iota({3, 1}), "u2"), {0, 1}),
                       Contains("DynamicUpdate: size 3 on axis 0 does not fit"), ShapeError);
  const Tensor row = constant(HostTensor(std::vector<std::int32_t>{1}, {1}), "row");
  CHECK_THROWS_WITH_AS(ops::dynamic_update(t, row, constant(iota({1, 2}), "u3"), {0}),
                       Contains("DynamicUpdate: update 'u3' [(1, 2) float32] must have the shape "
                                "of 't' [(2, 3) float32] except on the updated axes [0]"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::dynamic_update(t, row, constant(iota({3}), "u4"), {0}),
                       Contains("DynamicUpdate: update 'u4' [(3,) float32] must have the rank"),
                       ShapeError);

  Graph g = ir.create_graph([] {
    const Tensor x = constant(iota({2, 3}), "x");
    const Tensor i = constant(HostTensor(std::vector<std::int32_t>{2, 0, 9, 1}, {2, 2}), "i");
    const Tensor u = constant(HostTensor({10.f, 20.f, 30.f, 40.f}, {2, 2}), "u");
    const Tensor same = constant(HostTensor(std::vector<std::int32_t>{1, 1, 0, 0}, {2, 2}), "s");
    const Tensor off = constant(HostTensor(std::vector<std::int32_t>{5, -1}, {2}), "off");
    return std::vector<Tensor>{ops::take_along_axis(x, i, 1),
                               ops::scatter(x, i, u, 1),
                               ops::scatter(x, same, u, 1),
                               ops::scatter_add(x, same, u, 1),
                               ops::dynamic_slice(x, off, {0, 1}, {1, 2}),
                               ops::dynamic_update(x, off, constant(iota({1, 2}), "w"), {0, 1})};
  });
  ReferenceEvaluator ev(ir);
  const auto r = ev.evaluate(g);
  // Index 9 is out of range: a zero when taking, skipped when scattering.
  CHECK(r[0] == HostTensor({2.f, 0.f, 0.f, 4.f}, {2, 2}));
  CHECK(r[1] == HostTensor({20.f, 1.f, 10.f, 3.f, 40.f, 5.f}, {2, 3}));
  // Repeated indices: the last along the axis wins, or they add up.
  CHECK(r[2] == HostTensor({0.f, 20.f, 2.f, 40.f, 4.f, 5.f}, {2, 3}));
  CHECK(r[3] == HostTensor({0.f, 31.f, 2.f, 73.f, 4.f, 5.f}, {2, 3}));
  // Offsets clamp into range: (5, -1) becomes (1, 0).
  CHECK(r[4] == HostTensor({3.f, 4.f}, {1, 2}));
  CHECK(r[5] == HostTensor({0.f, 1.f, 2.f, 0.f, 1.f, 5.f}, {2, 3}));
}

TEST_CASE("sizes: shape inference that would overflow is a ShapeError, not a wrapped count") {
  constexpr std::int64_t big = std::int64_t{1} << 62;
  pxl::testing::ScratchGraph s;
  const Tensor a = s.input({big}, uint8);
  CHECK_THROWS_WITH_AS(ops::concat({a, a}, 0),
                       Contains("Concat: axis 0 of the result would be longer than a 64-bit "
                                "count can hold"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::split(a, std::vector<std::int64_t>{big, big, big, big, 1}),
                       Contains("Split: part sizes"), ShapeError);
  const Tensor empty = s.input({0}, float32);
  CHECK_THROWS_WITH_AS(ops::reshape(empty, {big, big, -1}), Contains("Reshape of '"), ShapeError);
  CHECK(ops::reshape(empty, {big, big, 0}).shape() == Shape{big, big, 0});
  CHECK_THROWS_WITH_AS(ops::onehot(s.input({big / 8}, int32), 8, s.input({2}, float32)),
                       Contains("OneHot: output"), ShapeError);
}

namespace test_shape_scatter_reduce {
using R = ScatterReduction;

/// scatter_reduce of `data` along axis 1 of [[0 2 0 9] [1 1 2 -1]] (9 and -1 out of range) into
/// 3 positions, with `init` as initial values when it is given.
HostTensor scatter_rows(const HostTensor& data, R r, const std::optional<HostTensor>& init) {
  Ir ir;
  const HostTensor idx(std::vector<std::int32_t>{0, 2, 0, 9, 1, 1, 2, -1}, {2, 4});
  Graph g = ir.create_graph([&] {
    const Tensor d = constant(data, "d"), i = constant(idx, "i");
    if (init)
      return std::vector<Tensor>{ops::scatter_reduce(d, i, r, constant(*init, "v"), 1)};
    return std::vector<Tensor>{ops::scatter_reduce(d, i, r, std::nullopt, 1, 3)};
  });
  ReferenceEvaluator ev(ir);
  return ev.evaluate(g)[0];
}

TEST_CASE("scatter_reduce: every reduction, with and without initial values, closed forms") {
  const HostTensor data({1.f, 5.f, 2.f, 7.f, 3.f, -1.f, 4.f, 0.f}, {2, 4});
  const HostTensor init({10.f, -10.f, 1.f, -5.f, 2.5f, 6.f}, {2, 3});
  // Positions no index names are 0 without initial values; they keep them otherwise.
  CHECK(scatter_rows(data, R::sum, {}) == HostTensor({3.f, 0.f, 5.f, 0.f, 2.f, 4.f}, {2, 3}));
  CHECK(scatter_rows(data, R::max, {}) == HostTensor({2.f, 0.f, 5.f, 0.f, 3.f, 4.f}, {2, 3}));
  CHECK(scatter_rows(data, R::min, {}) == HostTensor({1.f, 0.f, 5.f, 0.f, -1.f, 4.f}, {2, 3}));
  // none: the last along the axis wins.
  CHECK(scatter_rows(data, R::none, {}) == HostTensor({2.f, 0.f, 5.f, 0.f, -1.f, 4.f}, {2, 3}));
  CHECK(scatter_rows(data, R::sum, init) ==
        HostTensor({13.f, -10.f, 6.f, -5.f, 4.5f, 10.f}, {2, 3}));
  CHECK(scatter_rows(data, R::max, init) == HostTensor({10.f, -10.f, 5.f, -5.f, 3.f, 6.f}, {2, 3}));
  CHECK(scatter_rows(data, R::min, init) == HostTensor({1.f, -10.f, 1.f, -5.f, -1.f, 4.f}, {2, 3}));
  CHECK(scatter_rows(data, R::none, init) ==
        HostTensor({2.f, -10.f, 5.f, -5.f, -1.f, 4.f}, {2, 3}));
  // int32, and a float16 sum rounded once: 2048 + 1 + 1 is 2050, where rounding after each
  // addition would stay at 2048 (2049 rounds to even).
  CHECK(scatter_rows(data.astype(int32), R::sum, init.astype(int32)) ==
        HostTensor(std::vector<std::int32_t>{13, -10, 6, -5, 4, 10}, {2, 3}));
  Ir ir;
  Graph g = ir.create_graph([] {
    const Tensor d = constant(HostTensor({2048.f, 1.f, 1.f}, {3}).astype(float16), "d");
    const Tensor i = constant(HostTensor(std::vector<std::int32_t>{0, 0, 0}, {3}), "i");
    return std::vector<Tensor>{ops::scatter_reduce(d, i, R::sum, std::nullopt, 0, 1)};
  });
  ReferenceEvaluator ev(ir);
  CHECK(ev.evaluate(g)[0] == HostTensor({2050.f}, {1}).astype(float16));
}

TEST_CASE("scatter_reduce: vector indices broadcast along the axis") {
  Ir ir;
  Graph g = ir.create_graph([] {
    const Tensor d = constant(iota({4, 2}), "d");
    const Tensor i = constant(HostTensor(std::vector<std::int32_t>{1, 0, 1, 1}, {4}), "i");
    const Tensor column = constant(HostTensor(std::vector<std::int32_t>{1, 0, 1, 1}, {4, 1}), "c");
    return std::vector<Tensor>{ops::scatter_reduce(d, i, R::sum, std::nullopt, 0, 2),
                               ops::scatter_reduce(d, column, R::max, std::nullopt, 0, 3)};
  });
  ReferenceEvaluator ev(ir);
  const auto r = ev.evaluate(g);
  // Rows [0 1] [2 3] [4 5] [6 7] to positions 1, 0, 1, 1.
  CHECK(r[0] == HostTensor({2.f, 3.f, 10.f, 13.f}, {2, 2}));
  CHECK(r[1] == HostTensor({2.f, 3.f, 6.f, 7.f, 0.f, 0.f}, {3, 2}));
}

TEST_CASE("scatter_reduce: output specs and every error") {
  Fixture f;
  const auto d = graph_input({2, 4}, float32, "d");
  const auto i = graph_input({2, 4}, int32, "i");
  const auto v = graph_input({2, 3}, float32, "v");
  const auto y = ops::scatter_reduce(d, i, R::max, std::nullopt, -1, 5);
  CHECK(y.spec() == TensorSpec{{2, 5}, float32});
  CHECK(y.producer()->kind() == OpKind::ScatterReduce);
  CHECK(y.producer()->attrs<OpKind::ScatterReduce>() == ScatterReduceAttrs{1, R::max});
  CHECK(ops::scatter_reduce(d, i, R::sum, v, 1).spec() == v.spec());
  CHECK(ops::scatter_reduce(d, i, R::sum, v, 1, 3).producer()->num_inputs() == 3);
  CHECK(
      ops::scatter_reduce(d, graph_input({4}, int32, "vec"), R::none, std::nullopt, 1, 2).shape() ==
      Shape{2, 2});
  CHECK(
      ops::scatter_reduce(d, graph_input({2}, int32, "col"), R::none, std::nullopt, 0, 1).shape() ==
      Shape{1, 4});
  CHECK_THROWS_WITH_AS(ops::scatter_reduce(graph_input({}, float32, "s"), i, R::sum, {}, 0, 2),
                       Contains("ScatterReduce: cannot scatter the scalar data 'g/s'"), ShapeError);
  CHECK_THROWS_WITH_AS(
      ops::scatter_reduce(graph_input({2, 4}, bool_, "b"), i, R::max, {}, 1, 2),
      Contains("ScatterReduce: data 'g/b' [(2, 4) bool] must be float32, float16 or int32"),
      DTypeError);
  CHECK_THROWS_WITH_AS(ops::scatter_reduce(d, graph_input({2, 4}, float32, "fi"), R::sum, {}, 1, 2),
                       Contains("ScatterReduce: indices must be int32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::scatter_reduce(d, i, R::sum, std::nullopt, 1),
                       Contains("ScatterReduce: one of initial_values and axis_size must be given"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::scatter_reduce(d, i, R::sum, std::nullopt, 1, 0),
                       Contains("ScatterReduce: axis_size must be >= 1, got 0"), ValueError);
  CHECK_THROWS_WITH_AS(ops::scatter_reduce(d, i, R::sum, std::nullopt, 2, 3),
                       Contains("axis 2 is out of range"), ValueError);
  CHECK_THROWS_WITH_AS(
      ops::scatter_reduce(d, graph_input({2, 2}, int32, "part"), R::sum, {}, 1, 3),
      Contains(
          "ScatterReduce: indices 'g/part' [(2, 2) int32] must have the shape of data 'g/d' [(2, "
          "4) float32], or be a vector of its extent on axis 1"),
      ShapeError);
  CHECK_THROWS_WITH_AS(ops::scatter_reduce(d, graph_input({3}, int32, "short"), R::sum, {}, 1, 3),
                       Contains("or be a vector of its extent on axis 1"), ShapeError);
  CHECK_THROWS_WITH_AS(
      ops::scatter_reduce(d, graph_input({4}, int32, "vec2"), R::sum, std::nullopt, 1, 3, false),
      Contains("ScatterReduce: indices 'g/vec2' [(4,) int32] differ from the shape "
               "of data 'g/d' [(2, 4) float32] and enable_index_broadcast is false"),
      ValueError);
  CHECK_THROWS_WITH_AS(ops::scatter_reduce(d, i, R::sum, graph_input({2, 3}, float16, "h"), 1),
                       Contains("ScatterReduce: operands must have the same dtype"), DTypeError);
  CHECK_THROWS_WITH_AS(
      ops::scatter_reduce(d, i, R::sum, graph_input({3, 3}, float32, "w"), 1),
      Contains("ScatterReduce: initial_values 'g/w' [(3, 3) float32] must have the shape of data "
               "'g/d' [(2, 4) float32] but on axis 1"),
      ShapeError);
  CHECK_THROWS_WITH_AS(ops::scatter_reduce(d, i, R::sum, v, 1, 4),
                       Contains("ScatterReduce: axis_size 4 differs from the extent of "
                                "initial_values 'g/v' [(2, 3) float32] on axis 1"),
                       ShapeError);
}

TEST_CASE("groupedgather and tied_gather: shapes, values and errors") {
  Ir ir;
  Graph g = ir.create_graph([] {
    const Tensor t = constant(iota({2, 2, 4}), "t");
    const Tensor rows = constant(HostTensor(std::vector<std::int32_t>{0, 1, 0, 1, 0, 1}, {2, 3}));
    const Tensor cols = constant(HostTensor(std::vector<std::int32_t>{3, 0, 1, 7}, {2, 2}));
    return std::vector<Tensor>{ops::groupedgather(t, rows, 1, 2),
                               ops::groupedgather(t, cols, -1, 2), ops::tied_gather(t, cols, 2)};
  });
  ReferenceEvaluator ev(ir);
  const auto r = ev.evaluate(g);
  // PopXL's example: group 0 takes rows 0 1 0 of t[0], group 1 rows 1 0 1 of t[1].
  CHECK(r[0] == HostTensor({0.f,  1.f,  2.f,  3.f,  4.f, 5.f, 6.f,  7.f,  0.f,  1.f,  2.f,  3.f,
                            12.f, 13.f, 14.f, 15.f, 8.f, 9.f, 10.f, 11.f, 12.f, 13.f, 14.f, 15.f},
                           {2, 3, 4}));
  // Columns (3, 0) in group 0 and (1, 7) in group 1, where 7 is out of range: zeros.
  CHECK(r[1] == HostTensor({3.f, 0.f, 7.f, 4.f, 9.f, 0.f, 13.f, 0.f}, {2, 2, 2}));
  // tied_gather is gather: every row of every group picks [[3 0] [1 7]].
  CHECK(r[2] == HostTensor({3.f, 0.f, 1.f, 0.f, 7.f, 4.f, 5.f, 0.f, 11.f, 8.f, 9.f, 0.f, 15.f, 12.f,
                            13.f, 0.f},
                           {2, 2, 2, 2}));

  Fixture f;
  const auto t = graph_input({2, 3, 5}, float32, "t");
  const auto idx = graph_input({2, 4}, int32, "idx");
  const auto y = ops::groupedgather(t, idx, 2, 2);
  CHECK(y.spec() == TensorSpec{{2, 3, 4}, float32});
  CHECK(y.producer()->attrs<OpKind::GroupedGather>() == GroupedGatherAttrs{2, 2});
  CHECK(ops::groupedgather(t, idx, 1).producer()->kind() == OpKind::Gather);
  CHECK(ops::groupedgather(t, idx, 1).shape() == Shape{2, 2, 4, 5});
  const auto tied = ops::tied_gather(t, idx, -1);
  CHECK(tied.shape() == Shape{2, 3, 2, 4});
  CHECK(tied.producer()->kind() == OpKind::TiedGather);
  CHECK(tied.producer()->attrs<OpKind::TiedGather>().axis == 2);
  CHECK_THROWS_WITH_AS(ops::tied_gather(t, graph_input({2}, float32, "fi")),
                       Contains("TiedGather: indices must be int32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::tied_gather(graph_input({}, float32, "s"), idx),
                       Contains("TiedGather: cannot index scalar 'g/s'"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::groupedgather(t, idx, 1, 0),
                       Contains("GroupedGather: group_size must be >= 1, got 0"), ValueError);
  CHECK_THROWS_WITH_AS(ops::groupedgather(t, graph_input({2, 4}, float32, "fj"), 1, 2),
                       Contains("GroupedGather: indices must be int32"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::groupedgather(graph_input({2}, float32, "flat"), idx, 0, 2),
                       Contains("GroupedGather: with group_size 2, t must have a group axis and an "
                                "axis to gather on, got 'g/flat' [(2,) float32]"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::groupedgather(t, idx, -3, 2),
                       Contains("GroupedGather: axis 0 is the group axis (group_size 2); gather "
                                "on an axis >= 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::groupedgather(t, idx, 3, 2), Contains("axis 3 is out of range"),
                       ValueError);
  CHECK_THROWS_WITH_AS(
      ops::groupedgather(t, idx, 1, 3),
      Contains("GroupedGather: t 'g/t' [(2, 3, 5) float32] and indices 'g/idx' [(2, "
               "4) int32] must both have group_size 3 on their axis 0"),
      ShapeError);
  CHECK_THROWS_WITH_AS(ops::groupedgather(t, graph_input({}, int32, "one"), 1, 2),
                       Contains("must both have group_size 2 on their axis 0"), ShapeError);
}
} // namespace test_shape_scatter_reduce

TEST_CASE("io_tile_copy: a copy of the tensor on its IPU") {
  CHECK(testing::evaluate1([](const std::vector<Tensor>& v) { return ops::io_tile_copy(v[0]); },
                           {HostTensor({1.f, -2.f, 3.f}, {3})}) ==
        HostTensor({1.f, -2.f, 3.f}, {3}));
  Ir ir;
  auto main = ir.main_graph().scope();
  Tensor x;
  {
    auto on = ipu(1);
    x = constant(HostTensor({1.f, -2.f, 3.f}, {3}), "x");
  }
  const Tensor y = ops::io_tile_copy(x);
  CHECK(y.spec() == x.spec());
  CHECK(y.producer()->kind() == OpKind::IoTileCopy);
  CHECK(y.ipu() == 1);
  CHECK_THROWS_WITH_AS(ops::io_tile_copy(Tensor{}), Contains("IoTileCopy"), GraphError);
}

TEST_CASE("subsample: every k-th element per axis, from the first; errors") {
  // (3, 5) with strides (2, 3): rows 0 and 2, columns 0 and 3.
  const auto out = eval1(iota({3, 5}), [](Tensor t) { return ops::subsample(t, {2, 3}); });
  CHECK(out[0] == HostTensor({0.f, 3.f, 10.f, 13.f}, {2, 2}));
  // Strides beyond the extent keep the first element; int32 and stride 1 copy.
  const auto ints = eval1(iota({4}, int32), [](Tensor t) { return ops::subsample(t, {9}); });
  CHECK(ints[0] == HostTensor(std::vector<std::int32_t>{0}, {1}));
  const auto same = eval1(iota({2, 2}, float16), [](Tensor t) {
    return ops::subsample(t, {1, 1});
  });
  CHECK(same[0] == iota({2, 2}, float16));
  Fixture f;
  auto t = graph_input({7, 6, 0}, float32, "t");
  const Tensor s = ops::subsample(t, {3, 2, 4});
  CHECK(s.shape() == Shape{3, 3, 0});
  CHECK(s.producer()->kind() == OpKind::Subsample);
  CHECK(s.producer()->attrs<OpKind::Subsample>() == SubsampleAttrs{{3, 2, 4}});
  CHECK_THROWS_WITH_AS(ops::subsample(t, {2}),
                       Contains("Subsample: expected one stride per axis of 'g/t' [(7, 6, 0) "
                                "float32], got [2]"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::subsample(t, {2, 0, 1}),
                       Contains("Subsample: strides must be >= 1, got [2, 0, 1]"), ValueError);
}

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

namespace test_shape_interpolate {
using M = ResizeMode;
using N = ResizeNearestMode;
using C = ResizeCoordinateTransformationMode;

/// interpolate of `x` (float32 values, shape `shape`) by `scales`, as the reference computes it.
HostTensor interpolated(Shape shape, const std::vector<double>& x, std::vector<float> scales,
                        M mode, N nearest, C coord, DType dtype = float32) {
  return pxl::testing::evaluate1(
      [&](std::vector<Tensor> t) { return ops::interpolate(t[0], scales, mode, nearest, coord); },
      {pxl::testing::tensor(std::move(shape), dtype, x)});
}

TEST_CASE("interpolate: output shape, nearest rounding and coordinate modes") {
  {
    Fixture f;
    const Tensor t = graph_input({1, 2, 3, 4}, float32, "t");
    const Tensor y = ops::interpolate(t, {1.f, 1.f, 2.5f, 0.5f});
    CHECK(y.spec() == TensorSpec{{1, 2, 7, 2}, float32});
    CHECK(y.producer()->kind() == OpKind::Resize);
    CHECK(y.producer()->attrs<OpKind::Resize>() ==
          ResizeAttrs{{1.f, 1.f, 2.5f, 0.5f}, M::nearest, N::round_prefer_floor, C::half_pixel});
    CHECK(ops::interpolate(graph_input({3}, float16, "h"), {0.2f}).spec() ==
          TensorSpec{{0}, float16});
  }
  const std::vector<double> x3 = {0, 1, 2}, x4 = {10, 11, 12, 13};
  using pxl::testing::check_values;
  // Integral scale, half-pixel: each element repeated (PopART's upsample).
  check_values(interpolated({3}, x3, {2.f}, M::nearest, N::round_prefer_floor, C::half_pixel),
               {{6}, float32}, {0, 0, 1, 1, 2, 2});
  check_values(interpolated({3}, x3, {2.f}, M::nearest, N::ceil, C::asymmetric), {{6}, float32},
               {0, 1, 1, 2, 2, 2});
  check_values(interpolated({3}, x3, {2.f}, M::nearest, N::floor, C::asymmetric), {{6}, float32},
               {0, 0, 1, 1, 2, 2});
  // align_corners: x = i * 3 / 5 = 0, .6, 1.2, 1.8, 2.4, 3.
  check_values(interpolated({4}, x4, {1.5f}, M::nearest, N::round_prefer_ceil, C::align_corners),
               {{6}, float32}, {10, 11, 11, 12, 12, 13});
  check_values(interpolated({4}, x4, {1.5f}, M::nearest, N::floor, C::align_corners),
               {{6}, float32}, {10, 10, 11, 11, 12, 13});
  // Downsampling, half-pixel: x = 2i + 0.5, a tie.
  check_values(interpolated({4}, x4, {0.5f}, M::nearest, N::round_prefer_floor, C::half_pixel),
               {{2}, float32}, {10, 12});
  check_values(interpolated({4}, x4, {0.5f}, M::nearest, N::round_prefer_ceil, C::half_pixel),
               {{2}, float32}, {11, 13});
  // pytorch_half_pixel reads index 0 when the scaled length is 1; half_pixel reads x = 0.5.
  check_values(interpolated({2}, {5, 6}, {0.5f}, M::nearest, N::ceil, C::pytorch_half_pixel),
               {{1}, float32}, {5});
  check_values(interpolated({2}, {5, 6}, {0.5f}, M::nearest, N::ceil, C::half_pixel),
               {{1}, float32}, {6});
  // An axis of scale 1 is left alone, the others resized.
  check_values(interpolated({2, 2}, {1, 2, 3, 4}, {1.f, 2.f}, M::nearest, N::ceil, C::asymmetric),
               {{2, 4}, float32}, {1, 2, 2, 2, 3, 4, 4, 4});
}

TEST_CASE("interpolate: linear blends the floor and ceil neighbours, float32 and float16") {
  // Per axis of scale 2, half-pixel: x = -0.25, 0.25, 0.75, 1.25 give the weights
  // a = 0, 0.25, 0.75, 1 of the second element; y[r][c] = 20 a(r) + 10 a(c).
  const double a[] = {0, 0.25, 0.75, 1};
  std::vector<double> want;
  for (double r : a)
    for (double c : a)
      want.push_back(20 * r + 10 * c);
  for (DType d : {float32, float16})
    pxl::testing::check_values(interpolated({2, 2}, {0, 10, 20, 30}, {2.f, 2.f}, M::linear,
                                            N::round_prefer_floor, C::half_pixel, d),
                               {{4, 4}, d}, want);
  // Past the last element the ceil neighbour is clamped: the output stays at it.
  pxl::testing::check_values(
      interpolated({3}, {0, 10, 20}, {2.f}, M::linear, N::ceil, C::half_pixel), {{6}, float32},
      {0, 2.5, 7.5, 12.5, 17.5, 20});
  // float16: the closed form of the float16 input (0.1 is not representable) rounded once.
  const double h1 = static_cast<double>(half(0.1)), h2 = static_cast<double>(half(0.2));
  pxl::testing::check_values(
      interpolated({2}, {0.1, 0.2}, {2.f}, M::linear, N::floor, C::asymmetric, float16),
      {{4}, float16}, {h1, static_cast<double>(half(0.5 * h1 + 0.5 * h2)), h2, h2}, 0);
}

TEST_CASE("interpolate_grad: each input element sums the gradients of its readers") {
  using pxl::testing::check_values;
  const auto grad = [](Shape in, std::vector<float> scales, N nearest, C coord,
                       std::vector<double> g, Shape g_shape) {
    return pxl::testing::evaluate1(
        [&](std::vector<Tensor> t) {
          return ops::interpolate_grad(t[0], in, scales, M::nearest, nearest, coord);
        },
        {pxl::testing::tensor(std::move(g_shape), float32, g)});
  };
  check_values(grad({3}, {2.f}, N::round_prefer_floor, C::half_pixel, {1, 2, 3, 4, 5, 6}, {6}),
               {{3}, float32}, {3, 7, 11});
  // Readers 0, 1, 1, 2, 2, 3 (align_corners, round_prefer_ceil, as above).
  check_values(grad({4}, {1.5f}, N::round_prefer_ceil, C::align_corners, {1, 2, 3, 4, 5, 6}, {6}),
               {{4}, float32}, {1, 5, 9, 6});
  // Downsampled: the unread elements get 0.
  check_values(grad({4}, {0.5f}, N::round_prefer_ceil, C::half_pixel, {1, 2}, {2}), {{4}, float32},
               {0, 1, 0, 2});
}

TEST_CASE("interpolate: every user error") {
  Fixture f;
  const Tensor t = graph_input({2, 3}, float32, "t");
  CHECK_THROWS_WITH_AS(ops::interpolate(t),
                       Contains("interpolate: expected one scale factor per axis of an input of "
                                "shape (2, 3), got 4"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {1.f, 0.f}),
                       Contains("interpolate: scale factors must be positive and finite, got "
                                "0.000000 for axis 1"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {std::nanf(""), 1.f}),
                       Contains("scale factors must be positive and finite"), ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {1e30f, 1.f}),
                       Contains("interpolate: axis 0 of shape (2, 3) scaled by"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {2.f, 2.f}, M::cubic),
                       Contains("interpolate: mode 'cubic' is not supported; pxl implements "
                                "'nearest' and 'linear'"),
                       ValueError);
  CHECK_THROWS_WITH_AS(
      ops::interpolate(t, {2.f, 2.f}, M::nearest, N::floor, C::tf_crop_and_resize),
      Contains("interpolate: coordinate_transformation_mode 'tf_crop_and_resize' is not "
               "supported (PopART's Resize has no lowering for it)"),
      ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {2.f, 2.f}, M::nearest, static_cast<N>(9)),
                       Contains("interpolate: unknown nearest_mode or "
                                "coordinate_transformation_mode"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(t, {2.f, 2.f}, static_cast<M>(7)),
                       Contains("interpolate: mode 'unknown (7)' is not supported"), ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate(graph_input({2}, int32, "i"), {2.f}),
                       Contains("interpolate"), DTypeError);

  const Tensor g = graph_input({4, 6}, float32, "g");
  CHECK(ops::interpolate_grad(g, {2, 3}, {2.f, 2.f}, M::nearest, N::floor, C::half_pixel).spec() ==
        TensorSpec{{2, 3}, float32});
  CHECK_THROWS_WITH_AS(
      ops::interpolate_grad(g, {2, 3}, {2.f, 2.f}, M::linear, N::floor, C::half_pixel),
      Contains("interpolate_grad: mode 'linear' has no gradient (PopART's Resize trains with "
               "'nearest' only)"),
      ValueError);
  CHECK_THROWS_WITH_AS(
      ops::interpolate_grad(g, {2, 3}, {2.f, 3.f}, M::nearest, N::floor, C::half_pixel),
      Contains("interpolate_grad: grad 'g/g' [(4, 6) float32] must have interpolate's output "
               "shape (4, 9) for an input of shape (2, 3)"),
      ShapeError);
  CHECK_THROWS_WITH_AS(ops::interpolate_grad(g, {2, 3}, {2.f}, M::nearest, N::floor, C::half_pixel),
                       Contains("interpolate_grad: expected one scale factor per axis"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::interpolate_grad(graph_input({4}, int32, "gi"), {2}, {2.f}, M::nearest,
                                             N::floor, C::half_pixel),
                       Contains("interpolate_grad"), DTypeError);
}

TEST_CASE("interpolate: autodiff through mode linear is a GraphError") {
  Ir ir;
  Graph fwd = ir.create_graph(
      "lin", [](Tensor x) { return ops::interpolate(x, {2.f}, M::linear); },
      TensorSpec{{3}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(fwd),
                       Contains("interpolates with mode 'linear', which has no gradient (as in "
                                "PopXL); detach its input or use mode 'nearest'"),
                       GraphError);
}
} // namespace test_shape_interpolate
