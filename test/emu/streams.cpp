// Host streams: array shapes, validation, num_host_transfers, wrap-around and callbacks.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>

using namespace pxl;
using test_emu::AddProgram;
using test_emu::iota;
using test_emu::LoopProgram;

TEST_CASE("expected_inputs and create_host_outputs follow the shape rule") {
  AddProgram p(4);
  Session s(p.ir);
  const auto expected = s.expected_inputs();
  REQUIRE(expected.size() == 1);
  CHECK(expected[0] == p.x);
  const auto outs = s.create_host_outputs();
  REQUIRE(outs.size() == 1);
  CHECK(outs.at(p.y).shape() == Shape{4, 2, 3});
  CHECK(outs.at(p.y).dtype() == float32);
}

TEST_CASE("Validation: missing and unexpected streams are listed together") {
  AddProgram p;
  AddProgram other;
  Ir ir;
  HostToDeviceStream spare;
  {
    auto in_main = ir.main_graph().scope();
    spare = h2d_stream({1}, float32, "spare");
  }
  Session s(p.ir);
  auto attached = s.attach();
  CHECK_THROWS_WITH_AS(s.run({}), doctest::Contains("missing: ['x']; unexpected: []"), StreamError);
  CHECK_THROWS_WITH_AS(s.run({{spare, HostTensor({1}, float32)}}),
                       doctest::Contains("missing: ['x']; unexpected: ['spare (of another Ir)']"),
                       StreamError);
  CHECK_THROWS_WITH_AS(
      s.run({{p.x, HostTensor({2, 3}, float32)}, {other.x, HostTensor({2, 3}, float32)}}),
      doctest::Contains("missing: []; unexpected: ['x (of another Ir)']"), StreamError);
}

TEST_CASE("Validation: shapes and dtypes, inputs and outputs") {
  AddProgram p(3);
  Session s(p.ir);
  auto attached = s.attach();
  CHECK_THROWS_WITH_AS(s.run({{p.x, HostTensor({2, 3}, float32)}}),
                       doctest::Contains("input stream 'x' [(2, 3) float32] needs an array of "
                                         "shape (3, 2, 3) ([num_host_transfers=3"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(s.run({{p.x, HostTensor({3, 2, 3}, int32)}}),
                       doctest::Contains("input stream 'x' needs float32 data, got int32"),
                       DTypeError);
  const StreamInputs good{{p.x, HostTensor({3, 2, 3}, float32)}};
  StreamOutputs none;
  CHECK_THROWS_WITH_AS(s.run_with_outputs(good, none),
                       doctest::Contains("output arrays do not match the streams the session "
                                         "expects; missing: ['y']"),
                       StreamError);
  StreamOutputs wrong_shape{{p.y, HostTensor({2, 3}, float32)}};
  CHECK_THROWS_WITH_AS(s.run_with_outputs(good, wrong_shape),
                       doctest::Contains("output stream 'y' [(2, 3) float32] needs an array of "
                                         "shape (3, 2, 3)"),
                       ShapeError);
  StreamOutputs wrong_dtype{{p.y, HostTensor({3, 2, 3}, float16)}};
  CHECK_THROWS_WITH_AS(s.run_with_outputs(good, wrong_dtype),
                       doctest::Contains("output stream 'y' needs float32 data, got float16"),
                       DTypeError);
}

TEST_CASE("num_host_transfers > 1: a host_load inside repeat takes successive elements") {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({2}, float32, "x");
    y = d2h_stream({2}, float32, "y");
    auto body = ir.create_graph(
        [&](Tensor acc) {
          auto v = ops::host_load(x);
          auto next = acc + v;
          ops::host_store(y, next);
          return next;
        },
        TensorSpec{{2}, float32});
    auto zero = constant(HostTensor({0.f, 0.f}, {2}), "zero");
    ops::repeat(body, 3, {zero});
  }
  ir.set_num_host_transfers(3);
  Session s(ir, "ipu_model", {.workers = 3, .oversubscribe = true});
  auto attached = s.attach();
  auto out = s.run({{x, iota({3, 2})}});
  // Running sums of [0,1], [2,3], [4,5].
  CHECK(out.at(y) == HostTensor({0.f, 1.f, 2.f, 4.f, 6.f, 9.f}, {3, 2}));
  // Each run starts again at element 0.
  CHECK(s.run({{x, iota({3, 2})}}).at(y) == out.at(y));
  // run_with_outputs writes into the caller's arrays.
  auto mine = s.create_host_outputs();
  s.run_with_outputs({{x, iota({3, 2}, 1.f)}}, mine);
  CHECK(mine.at(y) == HostTensor({1.f, 2.f, 4.f, 6.f, 9.f, 12.f}, {3, 2}));
}

namespace {
/// y = x + 0.5 * [0..6) once per host transfer (a repeat over num_host_transfers), for a
/// (2, 3) float32 stream x.
struct PerTransfer {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;

  explicit PerTransfer(std::int64_t transfers) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({2, 3}, float32, "x");
    y = d2h_stream({2, 3}, float32, "y");
    auto w = constant(HostTensor({0.f, .5f, 1.f, 1.5f, 2.f, 2.5f}, {2, 3}), "w");
    auto body = ir.create_graph([&](Tensor wi) { ops::host_store(y, ops::host_load(x) + wi); }, w);
    ops::repeat(body, transfers, {w});
    ir.set_num_host_transfers(transfers);
  }
};
} // namespace

TEST_CASE("Arrays may have a first dim larger than num_host_transfers; extra rows are unused") {
  PerTransfer p(3);
  Session s(p.ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  // Five elements given for three transfers: elements 3 and 4 are not read.
  const auto out = s.run({{p.x, iota({5, 2, 3})}});
  REQUIRE(out.at(p.y).shape() == Shape{3, 2, 3});
  for (std::size_t i = 0; i < 18; ++i)
    CHECK(out.at(p.y).data<float>()[i] == static_cast<float>(i) + 0.5f * static_cast<float>(i % 6));
  // A larger output array: the rows past num_host_transfers are left as they were.
  StreamOutputs mine{{p.y, HostTensor({4, 2, 3}, float32)}};
  std::fill(mine.at(p.y).data<float>().begin(), mine.at(p.y).data<float>().end(), -1.f);
  s.run_with_outputs({{p.x, iota({3, 2, 3})}}, mine);
  CHECK(mine.at(p.y).data<float>()[17] == 17.f + 2.5f);
  CHECK(mine.at(p.y).data<float>()[18] == -1.f);
  CHECK(mine.at(p.y).data<float>()[23] == -1.f);
  // Fewer elements than transfers, or another element shape, are errors that say the rule.
  CHECK_THROWS_WITH_AS(
      s.run({{p.x, iota({2, 2, 3})}}),
      doctest::Contains("needs an array of shape (3, 2, 3) ([num_host_transfers=3, "
                        "replication_factor=1, *stream shape] with dims of 1 "
                        "dropped; dim 0 may also be larger than "
                        "num_host_transfers), got (2, 2, 3)"),
      ShapeError);
  CHECK_THROWS_WITH_AS(s.run({{p.x, iota({5, 3, 2})}}), doctest::Contains("got (5, 3, 2)"),
                       ShapeError);
}

TEST_CASE("With num_host_transfers 1 the array has exactly the stream's shape") {
  AddProgram p(1);
  Session s(p.ir);
  auto attached = s.attach();
  const std::string rule = "needs an array of shape (2, 3) ([num_host_transfers=1, "
                           "replication_factor=1, *stream shape] with dims of 1 dropped), got "
                           "(2, 2, 3)";
  CHECK_THROWS_WITH_AS(s.run({{p.x, iota({2, 2, 3})}}), doctest::Contains(rule.c_str()),
                       ShapeError);
}

TEST_CASE("A stream read more often than num_host_transfers wraps around") {
  LoopProgram p({.steps = 5, .transfers = 2});
  Session s(p.ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  // Loads read elements 0,1,0,1,0; stores 3 and 4 overwrite elements 0 and 1.
  const auto out = s.run({{p.x, HostTensor({1.f, 2.f}, {2, 1})}});
  CHECK(out.at(p.y) == HostTensor({10.f, 20.f}, {2, 1}));
}

TEST_CASE("Callbacks feed and drain streams through bounded queues") {
  LoopProgram p({.steps = 4, .shape = {2}, .step = [](const Tensor& x) { return x + 1.0; }});
  // Declared before the Session: its callback threads may run ahead (prefetching the next
  // run's element) until the Session is destroyed, so what they capture must outlive it.
  std::atomic<int> produced{0};
  std::vector<float> received;
  std::mutex m;
  Session s(p.ir, "ipu_model", {.workers = 2, .stream_queue_depth = 1});
  s.set_h2d_callback(p.x, [&](HostTensor& e) {
    const int k = produced++;
    e.data<float>()[0] = static_cast<float>(k);
    e.data<float>()[1] = static_cast<float>(-k);
  });
  s.set_d2h_callback(p.y, [&](const HostTensor& e) {
    std::lock_guard lock(m);
    received.push_back(e.data<float>()[0]);
    received.push_back(e.data<float>()[1]);
  });
  CHECK(s.expected_inputs().empty());
  CHECK(s.create_host_outputs().empty());
  auto attached = s.attach();
  CHECK(s.run().empty());
  {
    std::lock_guard lock(m);
    CHECK(received == std::vector<float>{1, 1, 2, 0, 3, -1, 4, -2});
  }
  s.run(); // elements continue where the last run stopped; nothing is dropped
  std::lock_guard lock(m);
  REQUIRE(received.size() == 16);
  CHECK(received[8] == 5.f);
  CHECK(received[15] == -6.f);
  CHECK(produced.load() >= 8);
}

TEST_CASE("A failing h2d callback makes the run throw its error") {
  AddProgram p;
  Session s(p.ir, "ipu_model", {.workers = 1});
  s.set_h2d_callback(p.x, [](HostTensor&) { throw ValueError("no more data"); });
  auto attached = s.attach();
  CHECK_THROWS_WITH_AS(s.run(), "no more data", ValueError);
}

TEST_CASE("An h2d callback must keep the element's shape") {
  AddProgram p;
  Session s(p.ir, "ipu_model", {.workers = 1});
  s.set_h2d_callback(p.x, [](HostTensor& e) { e = HostTensor({1}, float32); });
  auto attached = s.attach();
  CHECK_THROWS_WITH_AS(s.run(), doctest::Contains("the element must stay [(2, 3) float32]"),
                       StreamError);
}
