// The op table: what is derived from its rows, and the files every family has in every layer.
#include "pxl/ir/graph.hpp"
#include "pxl/ir/ir.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/ops/var_updates.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

using namespace pxl;

TEST_CASE("the op table's rows give names, families, flags and attribute types") {
  CHECK(op_type_name(OpKind::AddInplace) == "AddLhsInplace");
  CHECK(family_of(OpKind::HostLoad) == OpFamily::host_io);
  CHECK(family_name(family_of(OpKind::ScaledAdd)) == "var_updates");
  CHECK(is_inplace(OpKind::Accumulate));
  CHECK(!is_inplace(OpKind::ScaledAdd));
  CHECK(is_differentiable(OpKind::MulInplace));
  CHECK(!is_differentiable(OpKind::ArgMax));
  static_assert(std::is_same_v<op_attrs_t<OpKind::Slice>, SliceAttrs>);
  static_assert(std::is_same_v<op_attrs_t<OpKind::MatMul>, MatMulAttrs>);
  CHECK(attrs_index(OpKind::Transpose) == OpAttrs{TransposeAttrs{}}.index());
  CHECK(attrs_index(OpKind::Call) == OpAttrs{CallAttrs{}}.index());
  CHECK(is_view(OpKind::SliceInplace));
  CHECK(!is_inplace(OpKind::SliceInplace));
  CHECK(is_inplace(OpKind::ReluInplace));
  CHECK(!is_view(OpKind::ReluInplace));
  CHECK(moves_only(OpKind::Gather));
  CHECK(moves_only(OpKind::Cast));
  CHECK(!moves_only(OpKind::Add));
  CHECK(!moves_only(OpKind::ScatterReduce)); // it computes its reductions
  std::size_t inplace = 0, views = 0, moving = 0;
  for (const OpKind k : all_op_kinds) {
    CAPTURE(op_type_name(k));
    CHECK(attrs_index(k) < std::variant_size_v<OpAttrs>);
    CHECK(!(is_inplace(k) && is_view(k))); // a view is a copy, never the input's own buffer
    CHECK((!is_view(k) || moves_only(k))); // every view only moves its data
    inplace += is_inplace(k);
    views += is_view(k);
    moving += moves_only(k);
  }
  CHECK(inplace == 23);
  CHECK(views == 5);
  CHECK(moving == 42);
}

TEST_CASE("every row names how the cost model prices the op, as its family works") {
  // The cost column is required by the table's macro, so a row without it does not compile;
  // here each op's cost is checked against what its family does on the tiles.
  CHECK(cost_of(OpKind::Add) == OpCost::local);
  CHECK(cost_of(OpKind::Exp) == OpCost::local_series);
  CHECK(cost_of(OpKind::Softmax) == OpCost::exchanged_series);
  CHECK(cost_of(OpKind::ReduceSum) == OpCost::tree_reduce);
  CHECK(cost_of(OpKind::ReduceLogSumExp) == OpCost::tree_reduce_series);
  CHECK(cost_of(OpKind::CumSum) == OpCost::exchanged);
  CHECK(cost_of(OpKind::MatMul) == OpCost::amp);
  CHECK(cost_of(OpKind::Conv) == OpCost::amp);
  CHECK(cost_of(OpKind::MaxPool) == OpCost::exchanged);
  CHECK(cost_of(OpKind::HostLoad) == OpCost::host_load);
  CHECK(cost_of(OpKind::ReplicatedAllReduce) == OpCost::ring_all_reduce);
  CHECK(cost_of(OpKind::AllReduce) == OpCost::ipu_ring);
  for (const OpKind k : all_op_kinds) {
    CAPTURE(op_type_name(k));
    const OpCost c = cost_of(k);
    switch (family_of(k)) {
    case OpFamily::elementwise:
    case OpFamily::var_updates:
    case OpFamily::random: // computed where the output lives, element by element
      CHECK((c == OpCost::local || c == OpCost::local_series));
      break;
    case OpFamily::reduce: // PopLibs' multi-stage reduce, or (cumsum, topk, median) exchanged
      CHECK(
          (c == OpCost::tree_reduce || c == OpCost::tree_reduce_series || c == OpCost::exchanged));
      break;
    case OpFamily::nn: // reads across the tiles of its input
    case OpFamily::norm:
    case OpFamily::pool: // vector work over windows that cross tiles
      CHECK((c == OpCost::exchanged || c == OpCost::exchanged_series));
      break;
    case OpFamily::matmul:
    case OpFamily::conv: // the im2col product on the AMP units
      CHECK(c == OpCost::amp);
      break;
    case OpFamily::shape: // moves data; an IpuCopy crosses IPUs, a reshape keeps the mapping
      CHECK((c == OpCost::exchanged || c == OpCost::local || c == OpCost::ipu_link));
      break;
    case OpFamily::call:
      CHECK(c == OpCost::call);
      break;
    case OpFamily::host_io:
      CHECK((c == OpCost::host_load || c == OpCost::host_store || c == OpCost::exchanged));
      break;
    case OpFamily::collectives:
      CHECK((c == OpCost::ring_all_reduce || c == OpCost::ring_one_way ||
             c == OpCost::replica_slice || c == OpCost::ipu_ring));
      break;
    case OpFamily::remote:
      CHECK((c == OpCost::remote_load || c == OpCost::remote_store));
      break;
    }
  }
}

TEST_CASE("op.attrs<K>() is typed by the row") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const Tensor x = constant(HostTensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), "x");
  const Op t = *ops::transpose(x).producer();
  CHECK(t.attrs<OpKind::Transpose>().perm == std::vector<std::int64_t>{1, 0});
}

TEST_CASE("every op family has its file in every layer") {
  // One stem per family, so an op is found without searching: see OpFamily.
  const std::filesystem::path root = PXL_SOURCE_DIR;
  std::set<OpFamily> families, differentiable;
  for (const OpKind k : all_op_kinds) {
    families.insert(family_of(k));
    if (is_differentiable(k))
      differentiable.insert(family_of(k));
  }
  CHECK(families.size() == 14);
  for (const OpFamily f : families) {
    const std::string stem(family_name(f));
    CAPTURE(stem);
    CHECK(std::filesystem::exists(root / "include/pxl/ops" / (stem + ".hpp")));
    CHECK(std::filesystem::exists(root / "lib/ops" / (stem + ".cpp")));
    CHECK(std::filesystem::exists(root / "lib/ops" / (stem + "_grad.cpp")) ==
          differentiable.contains(f));
    CHECK(std::filesystem::exists(root / "test/support" / ("ref_" + stem + ".cpp")));
    CHECK(std::filesystem::exists(root / "test/ops" / (stem + ".cpp")));
    // The Executor runs a call's callee itself: call ops have no kernels.
    const bool has_kernels = f != OpFamily::call;
    CHECK(std::filesystem::exists(root / "lib/emu/kernels" / (stem + ".cpp")) == has_kernels);
    // Kernels needing replicas, streams or Streaming Memory are tested with the emulator, in
    // test/emu.
    if (has_kernels && f != OpFamily::collectives && f != OpFamily::host_io &&
        f != OpFamily::remote)
      CHECK(std::filesystem::exists(root / "test/kernels" / (stem + ".cpp")));
  }
}
