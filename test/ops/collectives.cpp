// Collective ops and replica groupings: construction, shapes, dtypes and errors.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

using namespace pxl;
using namespace pxl::ops::collectives;

TEST_CASE("ReplicaGrouping assigns replicas as PopXL does, and transposes") {
  Ir ir(8);
  using V = std::vector<std::int64_t>;
  CHECK(ir.replica_grouping().assignment() == V{0, 0, 0, 0, 0, 0, 0, 0});
  CHECK(ir.replica_grouping(1, 1).assignment() == V{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(ir.replica_grouping(1, 2).assignment() == V{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(ir.replica_grouping(2, 2).assignment() == V{0, 1, 0, 1, 2, 3, 2, 3});
  CHECK(ir.replica_grouping(1, 4).assignment() == V{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(ir.replica_grouping(2, 4).assignment() == V{0, 1, 0, 1, 0, 1, 0, 1});
  const auto g = ir.replica_grouping(2, 2);
  CHECK(g.num_groups() == 4);
  CHECK(g.replicas(2) == V{4, 6});
  CHECK(g.index_in_group(6) == 1);
  CHECK(ir.replica_grouping(1, 4).transpose() == ir.replica_grouping(4, 2));
  CHECK(ir.replica_grouping(2, 4).transpose() == ir.replica_grouping(1, 2));
  CHECK(ir.replica_grouping().transpose() == ir.replica_grouping(1, 1));
  CHECK(ir.replica_grouping(1, 1).transpose() == ir.replica_grouping());
  // [0, 1, 0, 1, 2, 3, 2, 3] transposes to [0, 0, 1, 1, 0, 0, 1, 1]: no stride and size.
  CHECK_THROWS_WITH_AS(g.transpose(), doctest::Contains("is not a grouping by stride"), ValueError);
  CHECK_THROWS_WITH_AS(ir.replica_grouping(1, 3),
                       doctest::Contains("stride 1 x group_size 3 must be positive and divide "
                                         "the replication factor 8"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ir.replica_grouping(3, 2), doctest::Contains("left out"), ValueError);
  CHECK_THROWS_AS(ir.replica_grouping(0, 2), ValueError);
}

TEST_CASE("Collectives infer their output specs") {
  Ir ir(4);
  auto main = ir.main_graph().scope();
  const Tensor x = constant(HostTensor::full({3, 5}, float32, 1.0), "x");
  CHECK(replicated_all_reduce(x).spec() == x.spec());
  CHECK(replicated_all_reduce(x, CollectiveOperator::max, ir.replica_grouping(1, 2)).spec() ==
        x.spec());
  CHECK(replicated_reduce_scatter(x).shape() == Shape{4}); // ceil(15 / 4)
  CHECK(replicated_reduce_scatter(x, CollectiveOperator::add, ir.replica_grouping(2, 2)).shape() ==
        Shape{8});
  CHECK(replicated_all_gather(x).shape() == Shape{4, 3, 5});
  CHECK(replicated_all_gather(x, 1, std::nullopt, GatherShape::concat).shape() == Shape{3, 20});
  CHECK(replicated_all_gather(x, -2, ir.replica_grouping(1, 2), GatherShape::concat).shape() ==
        Shape{6, 5});
  const Tensor y = constant(HostTensor::full({4, 6}, float32, 1.0), "y");
  CHECK(replicated_slice(y).shape() == Shape{1, 6});
  CHECK(replicated_slice(y, 1, ir.replica_grouping(1, 2)).shape() == Shape{4, 3});
  CHECK(replica_sharded_slice(x).shape() == Shape{4});
  const Tensor r = replicated_all_reduce_(y);
  CHECK(r.producer()->kind() == OpKind::ReplicatedAllReduceInplace);
  CHECK(is_inplace(OpKind::ReplicatedAllReduceInplace));
}

TEST_CASE("Collective errors name the tensor, the grouping and the fix") {
  Ir ir(4), other(4);
  auto main = ir.main_graph().scope();
  const Tensor x = constant(HostTensor::full({3, 5}, float32, 1.0), "x");
  CHECK_THROWS_WITH_AS(replicated_all_reduce(x, CollectiveOperator::add, other.replica_grouping()),
                       doctest::Contains("was made by another Ir"), ValueError);
  CHECK_THROWS_WITH_AS(replicated_all_reduce(x, CollectiveOperator::logical_and),
                       doctest::Contains("operator 'logical_and' cannot reduce 'x'"), DTypeError);
  const Tensor b = constant(HostTensor::full({2}, bool_, 1.0), "b");
  CHECK_THROWS_WITH_AS(replicated_all_reduce(b),
                       doctest::Contains("takes float32, float16 or int32"), DTypeError);
  CHECK(replicated_all_reduce(b, CollectiveOperator::logical_or).dtype() == bool_);
  CHECK_THROWS_WITH_AS(replicated_slice(x), doctest::Contains("group size 4 does not divide"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(replicated_slice(x, 2), doctest::Contains("axis 2 is out of range"),
                       ValueError);
  const Tensor scalar = constant(1.0, float32, "s");
  CHECK_THROWS_WITH_AS(replicated_all_gather(scalar, 0, std::nullopt, GatherShape::concat),
                       doctest::Contains("cannot concatenate scalars"), ValueError);
  CHECK(replicated_all_gather(scalar).shape() == Shape{4});
  const auto stale = ir.replica_grouping(1, 2);
  ir.set_replication_factor(8);
  CHECK_THROWS_WITH_AS(replicated_all_reduce(x, CollectiveOperator::add, stale),
                       doctest::Contains("made for replication factor 4"), ValueError);
}

TEST_CASE("all_reduce across IPUs: one output per IPU, placed there; errors name the tensor") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const Tensor a = constant(HostTensor::full({2, 3}, float32, 1.0), "a");
  Tensor b, c, wrong_shape, wrong_dtype;
  {
    auto on = ipu(1);
    b = constant(HostTensor::full({2, 3}, float32, 2.0), "b");
    wrong_shape = constant(HostTensor::full({3, 2}, float32, 2.0), "wrong_shape");
    wrong_dtype = constant(HostTensor::full({2, 3}, float16, 2.0), "wrong_dtype");
  }
  {
    auto on = ipu(2);
    c = constant(HostTensor::full({2, 3}, float32, 3.0), "c");
  }
  const auto ys = all_reduce({a, b, c});
  REQUIRE(ys.size() == 3);
  for (std::int64_t i = 0; i < 3; ++i) {
    CHECK(ys[static_cast<std::size_t>(i)].ipu() == i);
    CHECK(ys[static_cast<std::size_t>(i)].spec() == a.spec());
  }
  const Op op = *ys[0].producer();
  CHECK(op.kind() == OpKind::AllReduce);
  CHECK(op.ipu() == 0);
  CHECK(op.attrs<OpKind::AllReduce>().variant == AllReduceVariant::none);
  CHECK(all_reduce_identical_inputs({b, c})[0].producer()->attrs<OpKind::AllReduce>().variant ==
        AllReduceVariant::identical_inputs);
  CHECK(all_reduce_identical_grad_inputs({c, a}, std::vector<std::int64_t>{2, 0})[1].ipu() == 0);
  CHECK(all_reduce({c, a})[0].producer()->ipu() == 2); // placed on the first tensor's IPU
  CHECK(all_reduce({a})[0].ipu() == 0);

  CHECK_THROWS_WITH_AS(all_reduce({}), doctest::Contains("no tensors to reduce"), ValueError);
  CHECK_THROWS_WITH_AS(all_reduce({a, b}, std::vector<std::int64_t>{0}),
                       doctest::Contains("2 tensors but 1 IPUs given"), ValueError);
  CHECK_THROWS_WITH_AS(all_reduce({a, b}, std::vector<std::int64_t>{0, 2}),
                       doctest::Contains("is on IPU 1, not on IPU 2 as `ipus` says"), GraphError);
  CHECK_THROWS_WITH_AS(all_reduce({a, a}), doctest::Contains("which an earlier tensor is on too"),
                       GraphError);
  CHECK_THROWS_WITH_AS(all_reduce({a, wrong_shape}),
                       doctest::Contains("has another shape than tensor 0"), ShapeError);
  CHECK_THROWS_WITH_AS(all_reduce({a, wrong_dtype}), doctest::Contains("same dtype"), DTypeError);
  CHECK_THROWS_WITH_AS(all_reduce({a, b}, std::nullopt, CollectiveOperator::logical_or),
                       doctest::Contains("operator 'logical_or' cannot reduce 'a'"), DTypeError);
  CHECK_THROWS_WITH_AS(all_reduce({a, Tensor{}}), doctest::Contains("AllReduce: tensor 1"),
                       GraphError);
}

TEST_CASE("Autodiff refuses an all_reduce across IPUs whose operator has no gradient") {
  Ir ir;
  auto main = ir.main_graph().scope();
  Graph g = ir.create_graph(
      "f",
      [](Tensor t) {
        return all_reduce({t, ops::ipu_copy(t, 1)}, std::nullopt, CollectiveOperator::max)[0];
      },
      TensorSpec{{2}, float32});
  CHECK_THROWS_WITH_AS(transforms::autodiff(g), doctest::Contains("other than add or mean"),
                       GraphError);
}
