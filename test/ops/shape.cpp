// Shape and data-movement ops: inference, reference results and every user error (the
// indexed ops, the views and interpolate have files of their own).
#include "shape_helpers.hpp"

#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

#include <numeric>

using namespace pxl;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

using namespace pxl::test_ops_shape;

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

TEST_CASE("io_tile_copy: a copy of the tensor to the other tile set of its IPU") {
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
  CHECK(y.tile_set() == TileSet::io);
  CHECK(ops::io_tile_copy(y).tile_set() == TileSet::compute);
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
