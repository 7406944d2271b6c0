// Remote buffers, remote variables and the Streaming Memory ops: construction, errors, and
// evaluation by the reference evaluator.
#include "reference.hpp"

#include "pxl/transforms/autodiff.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace pxl;
using doctest::Contains;
using pxl::testing::ReferenceEvaluator;

TEST_CASE("remote_buffer and remote_variable: handles and records") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const RemoteBuffer b = remote_buffer({2, 3}, float32, 4, "state");
  CHECK(b.valid());
  CHECK(b.name() == "state");
  CHECK(b.spec() == TensorSpec{{2, 3}, float32});
  CHECK(b.entries() == 4);
  CHECK(RemoteBuffer{} != b);
  CHECK(remote_buffer({1}, int32).name() == "remote_buffer1");
  const Tensor v = remote_variable(HostTensor::full({2, 3}, float32, 1.0), b, 2, "m");
  CHECK(v.is_variable());
  const IrView view(ir);
  const RemoteLocation* at = view.remote_location(IrView::id(v));
  REQUIRE(at != nullptr);
  CHECK(at->buffer == IrView::id(b));
  CHECK(at->entry == 2);
  CHECK(view.num_remote_buffers() == 2);
  CHECK(view.entries(IrView::id(b)) == 4);

  const Tensor x = ops::remote_load(b, 2, "x");
  CHECK(x.spec() == b.spec());
  const Op load = *x.producer();
  CHECK(load.kind() == OpKind::RemoteLoad);
  CHECK(load.num_inputs() == 0);
  CHECK(load.attrs_as<RemoteAttrs>() == RemoteAttrs{b.index(), 2, false});
  const Tensor k = constant(HostTensor::scalar(std::int32_t{1}));
  const Tensor y = ops::remote_load_(b, k, x + 1.0);
  CHECK(y.producer()->kind() == OpKind::RemoteLoadInplace);
  CHECK(y.producer()->attrs_as<RemoteAttrs>().runtime_offset);
  ops::remote_store(b, k, y);
  const Op store = ir.main_graph().ops().back();
  CHECK(store.kind() == OpKind::RemoteStore);
  CHECK(store.num_outputs() == 0);
  CHECK(store.inputs() == std::vector<Tensor>{y, k});
}

TEST_CASE("remote buffers: bad buffers, offsets, tensors and variables are clear errors") {
  Ir ir, other;
  RemoteBuffer foreign;
  {
    auto in_other = other.main_graph().scope();
    foreign = remote_buffer({2}, float32);
  }
  auto in_main = ir.main_graph().scope();
  const RemoteBuffer b = remote_buffer({2}, float32, 3, "b");
  CHECK_THROWS_WITH_AS(remote_buffer({2}, float32, 0, "none"), Contains("at least one entry"),
                       ValueError);
  CHECK_THROWS_WITH_AS(remote_buffer({2}, float32, 1, "b"), Contains("already exists"), ValueError);
  CHECK_THROWS_WITH_AS(ops::remote_load(b, 3), Contains("offset 3 is out of range"), ValueError);
  CHECK_THROWS_WITH_AS(ops::remote_store(b, -1, constant(HostTensor({2}, float32))),
                       Contains("offset -1"), ValueError);
  CHECK_THROWS_WITH_AS(ops::remote_load(RemoteBuffer{}, 0), Contains("handle is empty"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::remote_load(b, constant(HostTensor::scalar(1.f))),
                       Contains("int32 scalar"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::remote_load(b, constant(HostTensor({2}, int32))),
                       Contains("int32 scalar"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::remote_store(b, 0, constant(HostTensor({3}, float32))),
                       Contains("entries of remote buffer 'b' are [(2,) float32]"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::remote_load_(b, 0, constant(HostTensor({2}, int32))),
                       Contains("entries of remote buffer 'b'"), DTypeError);
  CHECK_THROWS_WITH_AS(ops::remote_load(foreign, 0), Contains("belongs to another Ir"), GraphError);
  CHECK_THROWS_WITH_AS(remote_variable(HostTensor({2}, float32), foreign),
                       Contains("belongs to another Ir"), GraphError);

  CHECK_THROWS_WITH_AS(remote_variable(HostTensor({3}, float32), b), Contains("shape (3,)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(remote_variable(HostTensor({2}, int32), b), Contains("int32 data"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(remote_variable(HostTensor({2}, float32), b, 5), Contains("entry 5"),
                       ValueError);
  const Tensor v = remote_variable(HostTensor({2}, float32), b, 1, "v");
  CHECK_THROWS_WITH_AS(remote_variable(HostTensor({2}, float32), b, 1),
                       Contains("already holds remote variable 'v'"), ValueError);
  // A remote variable is not on the IPU: ops must load it.
  CHECK_THROWS_WITH_AS(v + 1.0, Contains("remote variable, stored in entry 1 of remote buffer 'b'"),
                       GraphError);
  // Not differentiable: a gradient through a remote load names it.
  Graph h = ir.create_empty_graph("h");
  {
    auto in_h = h.scope();
    auto w = graph_input({2}, float32, "w");
    auto loaded = ops::remote_load_(b, 0, w);
    graph_output(loaded * 2.0);
  }
  CHECK_THROWS_WITH_AS(transforms::autodiff(h), Contains("RemoteLoadInplace"), GraphError);
}

TEST_CASE("remote ops on the reference evaluator: stores, loads and remote variables") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const RemoteBuffer b = remote_buffer({3}, float32, 2, "b");
  const Tensor v = remote_variable(HostTensor({1.f, 2.f, 3.f}, {3}), b, 1, "v");
  auto out = d2h_stream({3}, float32, "out");
  // v *= 2 through Streaming Memory; entry 0 gets v + 10; then read entry 0 back.
  const Tensor loaded = ops::remote_load(b, 1);
  ops::remote_store(b, 1, loaded * 2.0);
  const Tensor index = constant(HostTensor::scalar(std::int32_t{0}));
  ops::remote_store(b, index, ops::remote_load(b, 1) + 10.0);
  ops::host_store(out, ops::remote_load(b, index));
  ReferenceEvaluator ev(ir);
  auto r = ev.run({});
  CHECK(r.at("out") == HostTensor({12.f, 14.f, 16.f}, {3}));
  CHECK(ev.variable(v) == HostTensor({2.f, 4.f, 6.f}, {3}));
  r = ev.run({});
  CHECK(r.at("out") == HostTensor({14.f, 18.f, 22.f}, {3}));
  CHECK(ev.variable(v) == HostTensor({4.f, 8.f, 12.f}, {3}));
}

TEST_CASE("remote_code_load: a graph's code loaded before its call changes no result") {
  Ir ir, other;
  Graph foreign;
  {
    auto in_other = other.main_graph().scope();
    foreign = other.create_graph(
        "g", [](Tensor t) { return t; }, TensorSpec{{2}, float32});
  }
  auto in_main = ir.main_graph().scope();
  const Graph twice = ir.create_graph(
      "twice", [](Tensor t) { return t * 2.0; }, TensorSpec{{2}, float32});
  auto in = h2d_stream({2}, float32, "in");
  auto out = d2h_stream({2}, float32, "out");
  ops::remote_code_load(twice);
  ops::host_store(out, ops::call(twice, {ops::host_load(in)})[0]);
  const Op load = ir.main_graph().ops()[0];
  CHECK(load.kind() == OpKind::RemoteCodeLoad);
  CHECK(load.attrs<OpKind::RemoteCodeLoad>() ==
        CodeLoadAttrs{IrView::id(twice).value, CodeLocation::executable});
  CHECK(load.num_inputs() == 0);
  CHECK(load.num_outputs() == 0);
  Session s(ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  CHECK(s.run({{in, HostTensor({1.f, -3.f}, {2})}}).at(out) == HostTensor({2.f, -6.f}, {2}));

  CHECK_THROWS_WITH_AS(ops::remote_code_load(twice, CodeLocation::io_buffer),
                       Contains("destination 'io_buffer' for graph 'twice_subgraph(0)' is not "
                                "supported"),
                       ValueError);
  CHECK_THROWS_WITH_AS(ops::remote_code_load(foreign), Contains("belongs to another Ir"),
                       GraphError);
  CHECK_THROWS_WITH_AS(ops::remote_code_load(Graph{}), Contains("RemoteCodeLoad: the graph"),
                       GraphError);
  auto in_twice = twice.scope();
  CHECK_THROWS_WITH_AS(ops::remote_code_load(twice), Contains("which it is in"), ValueError);
}
