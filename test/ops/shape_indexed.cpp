// The indexed shape ops: scatter_reduce, groupedgather and tied_gather: inference, closed
// forms and every user error.
#include "shape_helpers.hpp"

#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using namespace pxl::test_ops_shape;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

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
