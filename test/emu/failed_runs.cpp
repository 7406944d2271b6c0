// Failed runs: a run whose step fails stops after that step, on every replica, for every
// runtime check (remote offsets, callbacks that throw, observers); the error names the op and
// the step; the variables hold what the steps before it wrote; the session runs on.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>

using namespace pxl;
using namespace std::chrono_literals;
using doctest::Contains;
using test_emu::finishes_within;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_failed_runs {

HostTensor scalar(std::int32_t v) { return HostTensor::scalar(v); }
HostTensor one(float v) { return HostTensor({v}, {1}); }

/// int32 offsets shaped [transfers, replicas] (dims of 1 dropped).
HostTensor offsets(const std::vector<std::int32_t>& values, std::int64_t transfers,
                   std::int64_t replicas) {
  Shape shape;
  if (transfers > 1)
    shape.push_back(transfers);
  if (replicas > 1)
    shape.push_back(replicas);
  return HostTensor(values, shape);
}

/// Outputs of `s` filled with -1, so that the elements a run did not store stand out.
StreamOutputs unwritten(Session& s) {
  StreamOutputs out = s.create_host_outputs();
  for (auto& [stream, array] : out)
    array = HostTensor::full(array.shape(), float32, -1.0);
  return out;
}

/// The program: w (5) += 1; w += remote_load(buf, offset); w += 100, where entry 0 of
/// the 2-entry buffer holds 5.
struct LoadThenAdd {
  Ir ir;
  HostToDeviceStream offset;
  Tensor w;

  LoadThenAdd() {
    auto in_main = ir.main_graph().scope();
    offset = h2d_stream({}, int32, "offset");
    auto buf = remote_buffer({1}, float32, 2, "buf");
    remote_variable(one(5.f), buf, 0, "r");
    w = variable(one(5.f), "w");
    Tensor t = w;
    t += 1.0;
    t += ops::remote_load(buf, ops::host_load(offset));
    t += 100.0;
  }
};

/// A device loop of `steps`: k = the step's offset; w += 1; w += remote_load(buf, k); y = w,
/// over `replicas` replicas, entry 0 of the 2-entry buffer holding 5.
struct LoopedLoad {
  Ir ir;
  HostToDeviceStream offset;
  DeviceToHostStream y;
  Tensor w;

  LoopedLoad(std::int64_t steps, std::int64_t replicas) : ir(replicas) {
    auto in_main = ir.main_graph().scope();
    offset = h2d_stream({}, int32, "offset");
    y = d2h_stream({1}, float32, "y");
    auto buf = remote_buffer({1}, float32, 2, "buf");
    remote_variable(one(5.f), buf, 0, "r");
    w = variable(one(5.f), "w");
    Graph body = ir.create_empty_graph("step");
    {
      auto in_body = body.scope();
      Tensor wb = graph_input(w.spec(), "w", /*by_ref=*/true);
      const Tensor k = ops::host_load(offset);
      wb += 1.0;
      wb += ops::remote_load(buf, k);
      ops::host_store(y, wb);
    }
    ops::repeat(body, steps, {w});
    ir.set_num_host_transfers(steps);
  }
};

TEST_CASE("A remote load out of range stops the run at that step: no later step runs") {
  LoadThenAdd p;
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    try {
      s.run({{p.offset, scalar(7)}});
      FAIL("an offset of 7 into a buffer of 2 entries was accepted");
    } catch (const ValueError& e) {
      const std::string message = e.what();
      CHECK(message.find("Session::run: RemoteLoad.") == 0);
      CHECK(message.find(" of the main graph): offset 7 (replica 0) is out of range for its "
                         "remote buffer of 2 entries; nothing was loaded. The run stopped "
                         "after this step: no later step ran") != std::string::npos);
    }
    // w += 1 ran, the load added nothing, and w += 100 did not run (it used to: 105 or 106).
    CHECK(s.get_tensor_data(p.w) == one(6.f));
    // The session runs on.
    s.run({{p.offset, scalar(0)}});
    CHECK(s.get_tensor_data(p.w) == one(6.f + 1.f + 5.f + 100.f));
  }
}

TEST_CASE("In a device loop the run stops in the failing iteration, which the error names") {
  LoopedLoad p(4, 1);
  for (unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    StreamOutputs out = unwritten(s);
    CHECK_THROWS_WITH_AS(s.run_with_outputs({{p.offset, offsets({0, 0, 9, 0}, 4, 1)}}, out),
                         Contains("of graph 'step', iteration 2 of 4 of Loop."), ValueError);
    // Iterations 0 and 1 ran whole (w = 5 + 6 + 6), iteration 2 up to its load (w + 1, nothing
    // loaded, nothing stored), iteration 3 not at all.
    CHECK(s.get_tensor_data(p.w) == one(18.f));
    CHECK(out.at(p.y) == HostTensor({11.f, 17.f, -1.f, -1.f}, {4, 1}));
    // The next run starts afresh from there.
    CHECK(s.run({{p.offset, offsets({0, 0, 0, 0}, 4, 1)}}).at(p.y) ==
          HostTensor({24.f, 30.f, 36.f, 42.f}, {4, 1}));
  }
}

TEST_CASE("With replicas every replica stops at the failing step, none waits in a collective") {
  // r (entry 0, 1.0 on each replica) doubles every step through an all-reduce; replica 1's
  // offset at step 2 is out of range. The steps of both replicas stop there: the all-reduce
  // after the load does not run on stale data (r used to reach values like 3073).
  Ir ir(2);
  HostToDeviceStream offset;
  DeviceToHostStream y;
  Tensor r;
  {
    auto in_main = ir.main_graph().scope();
    offset = h2d_stream({}, int32, "offset");
    y = d2h_stream({1}, float32, "y");
    auto buf = remote_buffer({1}, float32, 2, "buf");
    r = remote_variable(one(1.f), buf, 0, "r");
    Graph body = ir.create_empty_graph("step");
    {
      auto in_body = body.scope();
      const Tensor total =
          ops::collectives::replicated_all_reduce(ops::remote_load(buf, ops::host_load(offset)));
      ops::remote_store(buf, 0, total);
      ops::host_store(y, total);
    }
    ops::repeat(body, 4, {});
    ir.set_num_host_transfers(4);
  }
  for (unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    finishes_within(20s, [&] {
      Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      auto attached = s.attach();
      StreamOutputs out = unwritten(s);
      CHECK_THROWS_WITH_AS(
          s.run_with_outputs({{offset, offsets({0, 0, 0, 0, 0, 9, 0, 0}, 4, 2)}}, out),
          Contains("iteration 2 of 4 of Loop."), ValueError);
      CHECK(s.get_tensor_data(r) == one(4.f)); // steps 0 and 1: 1 -> 2 -> 4
      CHECK(s.check_replicas_in_sync().empty());
      CHECK(out.at(y) == HostTensor({2.f, 2.f, 4.f, 4.f, -1.f, -1.f, -1.f, -1.f}, {4, 2, 1}));
      // The next run goes on from 4 on both replicas.
      s.run({{offset, offsets({0, 0, 0, 0, 0, 0, 0, 0}, 4, 2)}});
      CHECK(s.get_tensor_data(r) == one(64.f));
      CHECK(s.check_replicas_in_sync().empty());
    });
  }
}

TEST_CASE("A remote store out of range stops the run after it, naming the store") {
  Ir ir;
  HostToDeviceStream offset;
  Tensor w;
  {
    auto in_main = ir.main_graph().scope();
    offset = h2d_stream({}, int32, "offset");
    auto buf = remote_buffer({1}, float32, 2, "buf");
    w = variable(one(0.f), "w");
    Graph body = ir.create_empty_graph("step");
    {
      auto in_body = body.scope();
      Tensor wb = graph_input(w.spec(), "w", /*by_ref=*/true);
      ops::remote_store(buf, ops::host_load(offset), wb);
      wb += 1.0;
    }
    ops::repeat(body, 3, {w});
    ir.set_num_host_transfers(3);
  }
  Session s(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
  auto attached = s.attach();
  try {
    s.run({{offset, offsets({1, -1, 0}, 3, 1)}});
    FAIL("an offset of -1 was accepted");
  } catch (const ValueError& e) {
    const std::string message = e.what();
    CHECK(message.find("Session::run: RemoteStore.") == 0);
    CHECK(message.find("iteration 1 of 3 of Loop.") != std::string::npos);
    CHECK(message.find("offset -1 (replica 0) is out of range for its remote buffer of 2 "
                       "entries; nothing was stored") != std::string::npos);
  }
  CHECK(s.get_tensor_data(w) == one(1.f)); // iteration 0 only
}

TEST_CASE("A run_async that fails reports it through its future; the next one runs") {
  LoadThenAdd p;
  Session s(p.ir, "ipu_model", {.workers = 2, .oversubscribe = true});
  auto attached = s.attach();
  auto failed = s.run_async({{p.offset, scalar(2)}});
  auto next = s.run_async({{p.offset, scalar(1)}});
  CHECK_THROWS_WITH_AS(failed.get(), Contains("offset 2 (replica 0) is out of range"), ValueError);
  CHECK_NOTHROW(next.get());
  CHECK(s.get_tensor_data(p.w) == one(6.f + 1.f + 0.f + 100.f)); // entry 1 holds 0
}

TEST_CASE("An h2d callback that throws stops the run at the load of its element") {
  finishes_within(20s, [] {
    Tensor w;
    Ir ir;
    HostToDeviceStream x;
    DeviceToHostStream y;
    {
      auto in_main = ir.main_graph().scope();
      x = h2d_stream({1}, float32, "x");
      y = d2h_stream({1}, float32, "y");
      w = variable(one(0.f), "w");
      Graph body = ir.create_empty_graph("step");
      {
        auto in_body = body.scope();
        Tensor wb = graph_input(w.spec(), "w", /*by_ref=*/true);
        wb += ops::host_load(x) + 1.0;
        ops::host_store(y, wb);
      }
      ops::repeat(body, 4, {w});
      ir.set_num_host_transfers(4);
    }
    for (unsigned workers : {1u, 2u}) {
      CAPTURE(workers);
      std::atomic<int> made{0};
      Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      s.set_h2d_callback(x, [&](HostTensor& e) {
        const int k = made++;
        if (k == 2)
          throw IoError("element 2 is unreadable");
        e = one(static_cast<float>(k + 1));
      });
      auto attached = s.attach();
      StreamOutputs out = unwritten(s);
      // The callback's own exception, unchanged.
      CHECK_THROWS_WITH_AS(s.run_with_outputs({}, out), "element 2 is unreadable", IoError);
      // Steps 0 and 1 ran (w = 2, then 5); step 2 stopped at its load (it used to go on with
      // zeros: w = 7).
      CHECK(s.get_tensor_data(w) == one(5.f));
      CHECK(out.at(y) == HostTensor({2.f, 5.f, -1.f, -1.f}, {4, 1}));
      // The next run takes the elements the callback makes after the failure: 4, 5, 6, 7.
      CHECK(s.run().at(y) == HostTensor({10.f, 16.f, 23.f, 31.f}, {4, 1}));
    }
  });
}

TEST_CASE("A d2h callback that throws stops the run at the next store it meets") {
  finishes_within(20s, [] {
    Ir ir;
    DeviceToHostStream y;
    Tensor w;
    {
      auto in_main = ir.main_graph().scope();
      y = d2h_stream({1}, float32, "y");
      w = variable(one(0.f), "w");
      Graph body = ir.create_empty_graph("step");
      {
        auto in_body = body.scope();
        Tensor wb = graph_input(w.spec(), "w", /*by_ref=*/true);
        wb += 1.0;
        ops::host_store(y, wb);
      }
      ops::repeat(body, 50, {w});
      ir.set_num_host_transfers(50);
    }
    std::atomic<int> seen{0};
    Session s(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
    s.set_d2h_callback(y,
                       [&](const HostTensor&) {
                         if (seen++ == 0)
                           throw IoError("disk full");
                       },
                       {.depth = 1});
    auto attached = s.attach();
    CHECK_THROWS_WITH_AS(s.run(), "disk full", IoError);
    // With one slot the device can store element 1 only once the consumer has failed on
    // element 0: that store sees the failure and the run stops (it used to store all 50).
    CHECK(seen.load() == 2);
    CHECK(s.get_tensor_data(w) == one(2.f));
    s.run();
    CHECK(seen.load() == 52);
    CHECK(s.get_tensor_data(w) == one(52.f));
  });
}

TEST_CASE("An observer that throws stops the run after the step it was shown") {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;
  Tensor w;
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({4}, float32, "x");
    y = d2h_stream({4}, float32, "y");
    w = variable(HostTensor::full({4}, float32, 1.0), "w");
    Tensor t = w;
    t += ops::host_load(x); // step 1
    t *= 3.0;               // step 2
    ops::host_store(y, t);  // step 3
  }
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    test_emu::ThrowingObserver throwing;
    StreamOutputs out = unwritten(s);
    CHECK_THROWS_WITH_AS(
        s.run_with_outputs({{x, HostTensor::full({4}, float32, 1.0)}}, out, &throwing),
        "observer gave up", ValueError);
    CHECK(throwing.calls == 2);
    CHECK(s.get_tensor_data(w) == HostTensor::full({4}, float32, 2.0)); // w *= 3 did not run
    CHECK(out.at(y) == HostTensor::full({4}, float32, -1.0));
    CHECK(s.run({{x, HostTensor::full({4}, float32, 1.0)}}).at(y) ==
          HostTensor::full({4}, float32, 9.0));
  }
}

} // namespace test_failed_runs
