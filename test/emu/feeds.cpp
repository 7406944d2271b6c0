// Infeeds, outfeeds and asynchronous runs: run_async, set_h2d_source, feed depths and
// statistics, OutfeedMode.
#include "helpers.hpp"

#include <doctest/doctest.h>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

using namespace pxl;
using namespace std::chrono_literals;
using test_emu::iota;

namespace {
/// A device loop of `steps` steps: step k loads x (1 float), stores x * 10 to y and the step
/// count k + 1 (a loop-carried counter) to "count".
struct Loop {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y, count;

  explicit Loop(std::int64_t steps) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({1}, float32, "x");
    y = d2h_stream({1}, float32, "y");
    count = d2h_stream({1}, float32, "count");
    auto body = ir.create_graph(
        [&](Tensor k) {
          ops::host_store(y, ops::host_load(x) * 10.0);
          auto next = k + 1.0;
          ops::host_store(count, next);
          return next;
        },
        TensorSpec{{1}, float32});
    ops::repeat(body, steps, {constant(HostTensor({0.f}, {1}), "zero")});
    ir.set_num_host_transfers(steps);
  }
};

HostTensor one(float v) { return HostTensor({v}, {1}); }

const FeedStats& stats_of(const std::vector<FeedStats>& all, const std::string& name) {
  for (const auto& s : all)
    if (s.stream == name)
      return s;
  FAIL("no feed statistics for stream " << name);
  return all.front();
}
} // namespace

TEST_CASE("run_async returns what run returns; runs on one session stay in order") {
  Loop p(4);
  Session s(p.ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  const StreamInputs in{{p.x, iota({4, 1}, 1.f)}};
  const auto expected = s.run(in);
  auto first = s.run_async(in);
  auto second = s.run_async({{p.x, iota({4, 1}, 5.f)}}); // waits for the first
  const auto a = first.get();
  CHECK(a.at(p.y) == expected.at(p.y));
  CHECK(a.at(p.y) == HostTensor({10.f, 20.f, 30.f, 40.f}, {4, 1}));
  CHECK(a.at(p.count) == HostTensor({1.f, 2.f, 3.f, 4.f}, {4, 1}));
  CHECK(second.get().at(p.y) == HostTensor({50.f, 60.f, 70.f, 80.f}, {4, 1}));
}

TEST_CASE("run borrows lvalue arrays and owns temporaries; run_async copies borrowed ones") {
  // y = x + gate * 0, where the callback-fed gate is loaded first: holding the gate holds
  // the run before it reads x.
  Ir ir;
  HostToDeviceStream gate, x;
  DeviceToHostStream y;
  {
    auto in_main = ir.main_graph().scope();
    gate = h2d_stream({1}, float32, "gate");
    x = h2d_stream({2}, float32, "x");
    y = d2h_stream({2}, float32, "y");
    auto g = ops::host_load(gate);
    ops::host_store(y, ops::host_load(x) + g * 0.0);
  }
  Session s(ir, "ipu_model", {.workers = 2});
  std::promise<void> release;
  auto released = release.get_future().share();
  s.set_h2d_callback(gate, [released](HostTensor& e) {
    released.wait();
    e.data<float>()[0] = 0.f;
  });
  auto attached = s.attach();

  HostTensor data({1.f, 2.f}, {2});
  const StreamInputs borrowed{{x, data}};
  CHECK(borrowed.at(x).borrowed());
  CHECK(&borrowed.at(x).get() == &data); // no copy
  const StreamInputs owned{{x, HostTensor({1.f, 2.f}, {2})}};
  CHECK_FALSE(owned.at(x).borrowed());

  auto held = s.run_async(borrowed);
  data.data<float>()[0] = 100.f; // after run_async took its copy, before the run reads x
  release.set_value();
  CHECK(held.get().at(y) == HostTensor({1.f, 2.f}, {2}));
  // run itself reads the caller's array as it is when the run happens.
  CHECK(s.run(borrowed).at(y) == HostTensor({100.f, 2.f}, {2}));
  CHECK(s.run(owned).at(y) == HostTensor({1.f, 2.f}, {2}));
}

TEST_CASE("run_async checks its arguments before it returns") {
  Loop p(2);
  Session s(p.ir, "ipu_model", {.workers = 1});
  CHECK_THROWS_WITH_AS(s.run_async({{p.x, iota({2, 1})}}),
                       doctest::Contains("Session::run_async: the session must be attached"),
                       SessionError);
  auto attached = s.attach();
  CHECK_THROWS_WITH_AS(s.run_async({}),
                       doctest::Contains("Session::run_async: the input arrays do not match the "
                                         "streams the session expects; missing: ['x']"),
                       StreamError);
  CHECK_THROWS_WITH_AS(s.run_async({{p.x, iota({1, 1})}}),
                       doctest::Contains("input stream 'x' [(1,) float32] needs an array of shape "
                                         "(2, 1)"),
                       ShapeError);
}

TEST_CASE("An h2d stream fed from a range-v3 pipeline; a producer slower than the device "
          "loses nothing") {
  Loop p(6);
  Session s(p.ir, "ipu_model", {.workers = 2});
  // A slow pipeline: each element takes 5 ms to make, far longer than a step takes even in a
  // sanitizer build.
  s.set_h2d_source(p.x, ranges::views::iota(0, 100) | ranges::views::transform([](int k) {
                          std::this_thread::sleep_for(5ms);
                          return one(static_cast<float>(k));
                        }),
                   {.depth = 3});
  CHECK(s.expected_inputs().empty());
  auto attached = s.attach();
  auto out = s.run_async().get();
  CHECK(out.at(p.y) == HostTensor({0.f, 10.f, 20.f, 30.f, 40.f, 50.f}, {6, 1}));
  out = s.run();
  CHECK(out.at(p.y) == HostTensor({60.f, 70.f, 80.f, 90.f, 100.f, 110.f}, {6, 1}));
  const auto st = s.feed_stats();
  REQUIRE(st.size() == 1);
  CHECK(st[0].stream == "x");
  CHECK(st[0].host_to_device);
  CHECK(st[0].elements == 12);
  CHECK(st[0].depth == 3);
  CHECK(st[0].max_occupancy >= 1);
  CHECK(st[0].max_occupancy <= 3);
  // The device outruns a 5 ms producer: it waited for most of the 12 elements (60 ms of
  // production, of which at most 3 elements were made ahead).
  CHECK(st[0].device_wait > 20ms);
}

TEST_CASE("A fast producer fills the queue to its depth; the device hardly waits") {
  Loop p(4);
  Session s(p.ir, "ipu_model", {.workers = 1, .stream_queue_depth = 5});
  std::vector<HostTensor> data;
  for (int k = 0; k < 8; ++k)
    data.push_back(one(static_cast<float>(k)));
  s.set_h2d_source(p.x, data); // a copy: the session owns it
  data.clear();
  auto attached = s.attach();
  std::this_thread::sleep_for(50ms); // the producer runs ahead
  CHECK(s.run().at(p.y) == HostTensor({0.f, 10.f, 20.f, 30.f}, {4, 1}));
  const auto st = stats_of(s.feed_stats(), "x");
  CHECK(st.depth == 5); // SessionOptions::stream_queue_depth
  CHECK(st.max_occupancy == 5);
  CHECK(st.elements == 4);
  // Exactly the eight elements: the second run needs the last four and the prefetch of a
  // ninth one, which does not exist, raises nothing.
  CHECK(s.run().at(p.y) == HostTensor({40.f, 50.f, 60.f, 70.f}, {4, 1}));
}

TEST_CASE("A range that ends while the device needs more fails the run cleanly") {
  Loop p(4);
  Session s(p.ir, "ipu_model", {.workers = 2});
  s.set_h2d_source(p.x, std::vector<HostTensor>{one(1.f), one(2.f), one(3.f)});
  auto attached = s.attach();
  CHECK_THROWS_WITH_AS(s.run(),
                       "Session::set_h2d_source: the range feeding stream 'x' ended after 3 "
                       "elements, but the device needs more",
                       StreamError);
  // The range is exhausted: every later run that needs elements fails the same way, also
  // through run_async.
  auto f = s.run_async();
  CHECK_THROWS_WITH_AS(f.get(), doctest::Contains("ended after 3 elements"), StreamError);
  // Binding a new source starts again.
  s.set_h2d_source(p.x, std::vector<HostTensor>(4, one(2.f)));
  CHECK(s.run().at(p.y) == HostTensor({20.f, 20.f, 20.f, 20.f}, {4, 1}));
}

TEST_CASE("A range element of the wrong shape is a StreamError naming it") {
  Loop p(2);
  Session s(p.ir, "ipu_model", {.workers = 1});
  s.set_h2d_source(p.x, std::vector<HostTensor>{one(1.f), HostTensor({1.f, 2.f}, {2})});
  auto attached = s.attach();
  CHECK_THROWS_WITH_AS(s.run(),
                       "Session::set_h2d_source: element 1 of the range feeding stream 'x' is "
                       "[(2,) float32], the stream needs [(1,) float32]",
                       StreamError);
}

TEST_CASE("Outfeed elements arrive complete and in order while run_async is in flight") {
  constexpr int steps = 40;
  Loop p(steps);
  Session s(p.ir, "ipu_model", {.workers = 2});
  std::mutex m;
  std::vector<float> counts;
  std::atomic<int> seen{0};
  std::promise<void> release;
  auto released = release.get_future().share();
  s.set_d2h_callback(p.count,
                     [&](const HostTensor& e) {
                       {
                         std::lock_guard lock(m);
                         counts.push_back(e.data<float>()[0]);
                       }
                       if (seen++ == 0)
                         released.wait(); // hold the device back until the test has looked
                     },
                     {.depth = 2});
  CHECK(s.create_host_outputs().size() == 1); // y still fills an array
  auto attached = s.attach();
  auto run = s.run_async({{p.x, iota({steps, 1})}});
  while (seen.load() == 0)
    std::this_thread::sleep_for(1ms);
  // The first element is out, and the device loop is still running (back-pressure holds it).
  CHECK(run.wait_for(20ms) == std::future_status::timeout);
  {
    std::lock_guard lock(m);
    CHECK(counts == std::vector<float>{1.f});
  }
  // Held 50 ms in all: the device blocks on the full queue within a few steps of the first
  // element, so it waits for most of that (checked below with a wide margin).
  std::this_thread::sleep_for(30ms);
  release.set_value();
  const auto out = run.get();
  REQUIRE(counts.size() == steps);
  for (int k = 0; k < steps; ++k)
    CHECK(counts[static_cast<std::size_t>(k)] == static_cast<float>(k + 1));
  CHECK(out.at(p.y).data<float>()[steps - 1] == 10.f * (steps - 1));
  const auto st = stats_of(s.feed_stats(), "count");
  CHECK_FALSE(st.host_to_device);
  CHECK(st.elements == steps);
  CHECK(st.max_occupancy == 2);
  CHECK(st.device_wait >= 20ms); // the device waited while the callback was held
}

TEST_CASE("OutfeedMode::last delivers one element per run to a callback") {
  Loop p(5);
  Session s(p.ir, "ipu_model", {.workers = 2});
  std::vector<float> got;
  s.set_d2h_callback(p.count, [&](const HostTensor& e) { got.push_back(e.data<float>()[0]); },
                     {.mode = OutfeedMode::last});
  auto attached = s.attach();
  s.run({{p.x, iota({5, 1})}});
  s.run({{p.x, iota({5, 1})}});
  CHECK(got == std::vector<float>{5.f, 5.f});
  CHECK(stats_of(s.feed_stats(), "count").elements == 2);
}

TEST_CASE("OutfeedMode::last makes an array output hold just the last element") {
  Loop p(5);
  Session s(p.ir, "ipu_model", {.workers = 2});
  s.set_outfeed_mode(p.y, OutfeedMode::last);
  CHECK(s.create_host_outputs().at(p.y).shape() == Shape{1});
  CHECK(s.create_host_outputs().at(p.count).shape() == Shape{5, 1});
  auto attached = s.attach();
  const StreamInputs in{{p.x, iota({5, 1}, 1.f)}};
  auto out = s.run(in);
  CHECK(out.at(p.y) == HostTensor({50.f}, {1}));
  CHECK(out.at(p.count) == HostTensor({1.f, 2.f, 3.f, 4.f, 5.f}, {5, 1}));
  CHECK(s.run_async(in).get().at(p.y) == HostTensor({50.f}, {1}));
  StreamOutputs wrong = s.create_host_outputs();
  wrong.at(p.y) = HostTensor({5, 1}, float32);
  CHECK_THROWS_WITH_AS(s.run_with_outputs(in, wrong),
                       doctest::Contains("output stream 'y' [(1,) float32] needs an array of shape "
                                         "(1,) (OutfeedMode::last: [replication_factor=1, *stream "
                                         "shape] with dims of 1 dropped), got (5, 1)"),
                       ShapeError);
  // Back to every element.
  s.set_outfeed_mode(p.y, OutfeedMode::all);
  CHECK(s.run(in).at(p.y).shape() == Shape{5, 1});
}

TEST_CASE("OutfeedMode::last with replication keeps each replica's last element") {
  test_emu::LoopProgram p(
      {.steps = 3, .replicas = 2, .step = [](const Tensor& x) { return x + 1.0; }});
  Session s(p.ir, "ipu_model", {.workers = 2});
  s.set_outfeed_mode(p.y, OutfeedMode::last);
  auto attached = s.attach();
  // x[k][r] = 2k + r: replica r's last element is x[2][r] + 1.
  const auto out = s.run({{p.x, iota({3, 2, 1})}});
  CHECK(out.at(p.y) == HostTensor({5.f, 6.f}, {2, 1}));
}

TEST_CASE("An OutfeedQueue is polled from another thread while the run goes on") {
  constexpr int steps = 30;
  Loop p(steps);
  Session s(p.ir, "ipu_model", {.workers = 2});
  auto queue = s.outfeed_queue(p.count, {.depth = 3});
  CHECK(queue->capacity() == 3);
  CHECK_FALSE(queue->try_pop().has_value());
  auto attached = s.attach();
  // 30 elements through a queue of 3 (plus the stream's 3): the run can only finish if the
  // elements are taken while it goes on.
  auto run = s.run_async({{p.x, iota({steps, 1})}});
  std::vector<float> got;
  while (got.size() < 5)
    if (auto e = queue->try_pop())
      got.push_back(e->data<float>()[0]);
  while (got.size() < steps) {
    const HostTensor e = queue->pop();
    CHECK(e.shape() == Shape{1});
    got.push_back(e.data<float>()[0]);
  }
  run.get();
  CHECK(queue->size() == 0);
  for (int k = 0; k < steps; ++k)
    CHECK(got[static_cast<std::size_t>(k)] == static_cast<float>(k + 1));
  // OutfeedMode::last: one element per run.
  auto last = s.outfeed_queue(p.count, {.mode = OutfeedMode::last});
  s.run({{p.x, iota({steps, 1})}});
  CHECK(last->size() == 1);
  CHECK(last->pop() == HostTensor({30.f}, {1}));
}
