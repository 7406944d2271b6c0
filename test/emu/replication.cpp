// Replication: replicas with their own variables and their own slice of every stream array,
// stepped in lockstep; bitwise equal to single-replica runs.
#include "helpers.hpp"
#include "replicated_reference.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

using namespace pxl;
using test_emu::iota;

namespace {
/// Per host transfer: y = x + w, then w += x (so each replica's variable follows its own data).
/// x and y are (2, 3) float32; w starts at 0.5 * [0..6). The body runs in a repeat over the
/// transfers so each transfer is one element.
struct Accumulate {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;
  Tensor w;

  Accumulate(std::int64_t replicas, std::int64_t transfers) : ir(replicas) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({2, 3}, float32, "x");
    y = d2h_stream({2, 3}, float32, "y");
    w = variable(HostTensor({0.f, .5f, 1.f, 1.5f, 2.f, 2.5f}, {2, 3}), "w");
    Graph body = ir.create_empty_graph("body");
    {
      auto in_body = body.scope();
      auto wi = graph_input({2, 3}, float32, "w", /*by_ref=*/true);
      auto xi = ops::host_load(x);
      ops::host_store(y, xi + wi);
      ops::add_(wi, xi);
    }
    ops::repeat(body, transfers, {w});
    ir.set_num_host_transfers(transfers);
  }
};

/// Replica r's part of an array shaped [transfers, replicas, *element] (leading 1s dropped,
/// `transfers` and `replicas` as the session sees them), shaped for a single-replica run.
HostTensor replica_slice(const HostTensor& a, std::int64_t transfers, std::int64_t replicas,
                         std::int64_t r, const Shape& element) {
  Shape shape;
  if (transfers != 1)
    shape.push_back(transfers);
  shape.insert(shape.end(), element.begin(), element.end());
  HostTensor s(shape, a.dtype());
  const std::size_t bytes = s.nbytes() / static_cast<std::size_t>(transfers);
  for (std::int64_t k = 0; k < transfers; ++k)
    std::memcpy(s.bytes().data() + static_cast<std::size_t>(k) * bytes,
                a.bytes().data() + static_cast<std::size_t>(k * replicas + r) * bytes, bytes);
  return s;
}
} // namespace

TEST_CASE("Replicas: arrays shaped [replicas, *shape], own variables, replica 0's weights") {
  Accumulate p(2, 1);
  Session s(p.ir, "ipu_model", {.workers = 2});
  CHECK(s.create_host_outputs().at(p.y).shape() == Shape{2, 2, 3});
  auto attached = s.attach();
  const HostTensor x = iota({2, 2, 3});
  auto out = s.run({{p.x, x}});
  // y[r] = x[r] + w0.
  const auto y = out.at(p.y).data<float>();
  for (std::size_t i = 0; i < 12; ++i)
    CHECK(y[i] == static_cast<float>(i) + 0.5f * static_cast<float>(i % 6));
  // get_tensor_data returns replica 0's variable: w0 + x[0].
  CHECK(s.get_tensor_data(p.w) == HostTensor({0.f, 1.5f, 3.f, 4.5f, 6.f, 7.5f}, {2, 3}));
  // Replica 1 kept its own: its next y is x[1] + w0 + x[1].
  out = s.run({{p.x, x}});
  CHECK(out.at(p.y).data<float>()[6] == 6.f + 6.f + 0.f);
  CHECK(out.at(p.y).data<float>()[11] == 11.f + 11.f + 2.5f);

  // write_variable_data writes every replica.
  s.write_variable_data(p.w, HostTensor({2, 3}, float32));
  out = s.run({{p.x, x}});
  CHECK(out.at(p.y) == x);
}

TEST_CASE("Replicas with num_host_transfers > 1 equal single-replica runs on their slices, "
          "bitwise, on 1-4 workers") {
  const std::int64_t transfers = 3, replicas = 2;
  Accumulate replicated(replicas, transfers), single(1, transfers);
  HostTensor x({transfers, replicas, 2, 3}, float32);
  auto xd = x.data<float>();
  for (std::size_t i = 0; i < xd.size(); ++i)
    xd[i] = static_cast<float>((i * 37) % 23) / 7.f - 1.3f;
  for (unsigned workers : {1u, 2u, 3u, 4u}) {
    CAPTURE(workers);
    Session s(replicated.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    CHECK(s.create_host_outputs().at(replicated.y).shape() == Shape{3, 2, 2, 3});
    auto attached = s.attach();
    const auto out = s.run({{replicated.x, x}}).at(replicated.y);
    for (std::int64_t r = 0; r < replicas; ++r) {
      CAPTURE(r);
      Session one(single.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      auto att = one.attach();
      const auto expected =
          one.run({{single.x, replica_slice(x, transfers, replicas, r, {2, 3})}}).at(single.y);
      CHECK(replica_slice(out, transfers, replicas, r, {2, 3}) == expected);
      if (r == 0)
        CHECK(s.get_tensor_data(replicated.w) == one.get_tensor_data(single.w));
    }
  }
}

TEST_CASE("Replicas: the replica dim is checked and memory is reported per replica") {
  Accumulate p(3, 1), one(1, 1);
  Session s(p.ir);
  auto attached = s.attach();
  CHECK_THROWS_WITH_AS(s.run({{p.x, HostTensor({2, 3}, float32)}}),
                       doctest::Contains("input stream 'x' [(2, 3) float32] needs an array of "
                                         "shape (3, 2, 3) ([num_host_transfers=1, "
                                         "replication_factor=3"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(s.run({{p.x, HostTensor({2, 2, 3}, float32)}}),
                       doctest::Contains("got (2, 2, 3)"), ShapeError);
  StreamOutputs small{{p.y, HostTensor({2, 3}, float32)}};
  CHECK_THROWS_WITH_AS(s.run_with_outputs({{p.x, HostTensor({3, 2, 3}, float32)}}, small),
                       doctest::Contains("output stream 'y' [(2, 3) float32] needs an array of "
                                         "shape (3, 2, 3)"),
                       ShapeError);
  const auto a = s.memory_report(), b = Session(one.ir).memory_report();
  REQUIRE(a.ipus.size() == 1);
  CHECK(a.ipus[0].total() == b.ipus[0].total());
  CHECK(a.ipus[0].variables == 2 * 3 * 4);
}

TEST_CASE("Replicas in lockstep: callback-fed streams go step-major, as [steps, replicas]") {
  // Each transfer loads x and stores x * 10; the h2d callback hands out 0, 1, 2, ... and the
  // d2h callback records what arrives.
  test_emu::LoopProgram p({.steps = 3, .replicas = 2});
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    // Before the Session, whose producer thread may run ahead until it is destroyed.
    float next = 0.f;
    std::vector<float> got;
    Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    s.set_h2d_callback(p.x, [&](HostTensor& e) { e.data<float>()[0] = next++; });
    s.set_d2h_callback(p.y, [&](const HostTensor& e) { got.push_back(e.data<float>()[0]); });
    s.run();
    // Step k of replica r takes element k * replicas + r: step-major, as concurrent replicas
    // and TensorFlow's outfeeds order them.
    CHECK(got == std::vector<float>{0.f, 10.f, 20.f, 30.f, 40.f, 50.f});
  }
}

TEST_CASE("Replicas share one compiled program: the memory report does not grow with them") {
  Accumulate eight(8, 1);
  Accumulate single(1, 1);
  Session s8(eight.ir, "ipu_model", {.workers = 1});
  Session s1(single.ir, "ipu_model", {.workers = 1});
  const auto r8 = s8.memory_report(), r1 = s1.memory_report();
  REQUIRE(r8.ipus.size() == r1.ipus.size());
  CHECK(r8.ipus[0].total() == r1.ipus[0].total());
  CHECK(r8.tensors.size() == r1.tensors.size());
}

TEST_CASE("Variables with a replica grouping: one value per group, read back as asked") {
  const std::int64_t replicas = 4;
  Ir ir(replicas);
  HostToDeviceStream x;
  Tensor per_group, every, plain;
  const auto pairs = ir.replica_grouping(1, 2); // groups {0, 1} and {2, 3}
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({2}, float32, "x");
    per_group = variable(HostTensor({1.f, 2.f, 10.f, 20.f}, {2, 2}), "per_group",
                         {.replica_grouping = pairs});
    every = variable(HostTensor({1.f, 2.f, 10.f, 20.f}, {2, 2}), "every",
                     {.replica_grouping = pairs, .retrieval_mode = RetrievalMode::all_replicas});
    plain = variable(HostTensor({0.f, 0.f}, {2}), "plain");
    const Tensor xi = ops::host_load(x);
    ops::add_(per_group, xi);
    ops::add_(every, xi);
    ops::add_(plain, xi);
  }
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    CHECK(s.get_tensor_data(per_group).shape() == Shape{2, 2});
    {
      auto attached = s.attach();
      CHECK(s.check_replicas_in_sync().empty());
      // Replica r adds r to both elements.
      HostTensor xs({replicas, 2}, float32);
      for (std::int64_t r = 0; r < replicas; ++r)
        for (std::int64_t i = 0; i < 2; ++i)
          xs.data<float>()[static_cast<std::size_t>(r * 2 + i)] = static_cast<float>(r);
      s.run({{x, xs}});
      // Each group reads back from its first replica: group 0 from replica 0, group 1 from 2.
      CHECK(s.get_tensor_data(per_group) == HostTensor({1.f, 2.f, 12.f, 22.f}, {2, 2}));
      CHECK(s.get_tensor_data(every) ==
            HostTensor({1.f, 2.f, 2.f, 3.f, 12.f, 22.f, 13.f, 23.f}, {4, 2}));
      // Replicas 1 and 3 drifted from their groups' first replicas; every replica but 0 from
      // the ungrouped variable's.
      const auto drift = s.check_replicas_in_sync();
      REQUIRE(drift.size() == 2 + 2 + 3);
      CHECK(drift[0].variable == "every");
      CHECK(drift[0].replica == 1);
      CHECK(drift[0].reference_replica == 0);
      CHECK(drift[0].max_abs_difference == 1.0);
      // Writing takes one value per group and reaches every replica of the group.
      s.write_variable_data(every, HostTensor({5.f, 5.f, 7.f, 7.f}, {2, 2}));
      CHECK(s.get_tensor_data(every) ==
            HostTensor({5.f, 5.f, 5.f, 5.f, 7.f, 7.f, 7.f, 7.f}, {4, 2}));
      CHECK_THROWS_WITH_AS(s.write_variable_data(per_group, HostTensor({1.f, 2.f}, {2})),
                           doctest::Contains("(2, 2) (one value per replica group), got (2,)"),
                           ShapeError);
    }
    CHECK_THROWS_WITH_AS(s.check_replicas_in_sync(), doctest::Contains("must be attached"),
                         SessionError);
  }
  // The reference evaluator starts each replica from its group's value too.
  HostTensor xs({replicas, 2}, float32);
  std::vector<std::unique_ptr<testing::ReferenceEvaluator>> evs;
  testing::run_replicated(ir, {{"x", xs}}, &evs);
  CHECK(evs[3]->variable(per_group) == HostTensor({10.f, 20.f}, {2}));
}

TEST_CASE("Grouped variables: mistakes are named") {
  Ir ir(4), other(4);
  auto in_main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(
      variable(HostTensor({1.f, 2.f}, {2}), "v", {.retrieval_mode = RetrievalMode::all_replicas}),
      doctest::Contains("has no replica grouping"), ValueError);
  CHECK_THROWS_WITH_AS(variable(HostTensor({1.f, 2.f, 3.f}, {3}), "v",
                                {.replica_grouping = ir.replica_grouping(1, 2)}),
                       doctest::Contains("one value per group, shaped (2, *shape); got (3,)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      variable(HostTensor({1.f}, {1}), "v", {.replica_grouping = other.replica_grouping()}),
      doctest::Contains("was not made by this Ir's replica_grouping"), ValueError);
  // One group: the data is the value itself.
  CHECK(variable(HostTensor({1.f, 2.f}, {2}), "one", {.replica_grouping = ir.replica_grouping()})
            .shape() == Shape{2});
}
