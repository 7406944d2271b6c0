// Tearing a session down while something waits: each point where a run, a feed or the host can
// block (the device on a full outfeed, behind a held consumer or on an empty infeed, the run's
// future, a user waiting on an OutfeedQueue, a producer running ahead, the attachment, a long
// loop on replicas)
// ends within a bounded time, the run with SessionError. Each case runs under a watchdog
// (finishes_within), so a regression fails instead of hanging CI.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

using namespace pxl;
using namespace std::chrono_literals;
using test_emu::finishes_within;
using test_emu::iota;
using test_emu::LoopProgram;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_teardown {
HostTensor one(float v) { return HostTensor({v}, {1}); }

/// Waits until `queue` holds `n` elements: a run that nobody drains is then blocked.
void wait_for_size(const OutfeedQueue& queue, std::size_t n) {
  while (queue.size() < n)
    std::this_thread::sleep_for(1ms);
}

TEST_CASE("Destroying a session cancels a run blocked on an undrained outfeed queue") {
  finishes_within(20s, [] {
    LoopProgram p({.steps = 50});
    std::future<StreamOutputs> run;
    std::shared_ptr<OutfeedQueue> queue;
    {
      Session s(p.ir, "ipu_model", {.workers = 1});
      queue = s.outfeed_queue(p.y, {.depth = 2});
      auto attached = s.attach();
      run = s.run_async({{p.x, iota({50, 1})}});
      // Nobody pops: the run fills the queue and the stream's own slots, then blocks.
      while (queue->size() < 2)
        std::this_thread::sleep_for(1ms);
      CHECK(run.wait_for(20ms) == std::future_status::timeout);
    } // the session goes while the run is blocked
    CHECK_THROWS_WITH_AS(run.get(),
                         doctest::Contains("the session was destroyed while the run was "
                                           "pending or in flight; the run was cancelled"),
                         SessionError);
    // What the queue received stays, then it reports that nothing more will come.
    CHECK(queue->closed());
    CHECK(queue->pop() == one(0.f));
    CHECK(queue->pop() == one(10.f));
    CHECK_THROWS_WITH_AS(queue->pop(), doctest::Contains("the queue is empty and closed"),
                         SessionError);
  });
}

TEST_CASE("Destroying a session cancels a run blocked behind a held d2h callback") {
  finishes_within(20s, [] {
    LoopProgram p({.steps = 20});
    std::promise<void> release;
    auto released = release.get_future().share();
    std::atomic<int> delivered{0};
    std::future<StreamOutputs> run;
    std::thread releaser;
    {
      Session s(p.ir, "ipu_model", {.workers = 2});
      s.set_d2h_callback(p.y,
                         [released, &delivered](const HostTensor&) {
                           released.wait();
                           ++delivered;
                         },
                         {.depth = 1});
      auto attached = s.attach();
      run = s.run_async({{p.x, iota({20, 1})}});
      std::this_thread::sleep_for(10ms);
      // A callback is user code and must return by itself: release it once destruction has
      // begun. The device's remaining elements then go nowhere.
      releaser = std::thread([&release] {
        std::this_thread::sleep_for(20ms);
        release.set_value();
      });
    }
    releaser.join();
    CHECK_THROWS_WITH_AS(run.get(), doctest::Contains("the run was cancelled"), SessionError);
    CHECK(delivered.load() < 20);
  });
}

TEST_CASE("Destroying a session cancels a run blocked on an empty infeed") {
  finishes_within(20s, [] {
    LoopProgram p({.steps = 5});
    std::promise<void> release;
    auto released = release.get_future().share();
    std::atomic<int> made{0};
    std::future<StreamOutputs> run;
    std::thread releaser;
    {
      Session s(p.ir, "ipu_model", {.workers = 2, .oversubscribe = true});
      // The producer makes two elements, then waits (a slow data source).
      s.set_h2d_callback(p.x, [released, &made](HostTensor& e) {
        if (made.load() == 2)
          released.wait();
        e = one(static_cast<float>(made++));
      });
      auto attached = s.attach();
      run = s.run_async();
      while (made.load() < 2)
        std::this_thread::sleep_for(1ms);
      CHECK(run.wait_for(20ms) == std::future_status::timeout);
      // The producer is user code and returns by itself once released; the device's wait for
      // its element is the session's own, and destruction ends it.
      releaser = std::thread([&release] {
        std::this_thread::sleep_for(20ms);
        release.set_value();
      });
    }
    releaser.join();
    CHECK_THROWS_WITH_AS(run.get(), doctest::Contains("the run was cancelled"), SessionError);
  });
}

TEST_CASE("A run_async future dropped before its session does not wait for the run") {
  finishes_within(20s, [] {
    LoopProgram p({.steps = 8});
    std::shared_ptr<OutfeedQueue> queue;
    {
      // Declared in the natural order: the future goes first, then the attachment, then the
      // session, while the run waits on a queue nobody drains. (std::async's future waited
      // for the run in its destructor: this scope never ended.)
      Session s(p.ir, "ipu_model", {.workers = 1});
      queue = s.outfeed_queue(p.y, {.depth = 2});
      auto attached = s.attach();
      auto run = s.run_async({{p.x, iota({8, 1})}});
      wait_for_size(*queue, 2);
    }
    CHECK(queue->closed());
    // A future dropped at once does not wait either; the session still runs it.
    LoopProgram q({.steps = 2});
    Session s(q.ir, "ipu_model", {.workers = 1});
    auto drained = s.outfeed_queue(q.y, {.depth = 1});
    auto attached = s.attach();
    (void)s.run_async({{q.x, iota({2, 1})}});
    CHECK(drained->pop() == one(0.f));
    CHECK(drained->pop() == one(10.f));
  });
}

TEST_CASE("Ending the attachment while a run_async is blocked returns at once; the run drains") {
  finishes_within(20s, [] {
    LoopProgram p({.steps = 6});
    Session s(p.ir, "ipu_model", {.workers = 2, .oversubscribe = true});
    auto queue = s.outfeed_queue(p.y, {.depth = 1});
    std::future<StreamOutputs> run;
    {
      auto attached = s.attach();
      run = s.run_async({{p.x, iota({6, 1})}});
      wait_for_size(*queue, 1);
    } // does not wait for the run, which goes on as the host drains its stream
    for (int k = 0; k < 6; ++k)
      CHECK(queue->pop() == one(10.f * static_cast<float>(k)));
    CHECK_NOTHROW(run.get());
    CHECK_FALSE(s.is_attached()); // the detach was applied when the run ended
  });
}

TEST_CASE("Destroying a session wakes a host thread waiting on its OutfeedQueue") {
  finishes_within(20s, [] {
    LoopProgram p({.steps = 2});
    std::shared_ptr<OutfeedQueue> queue;
    std::future<void> waiter;
    {
      Session s(p.ir, "ipu_model", {.workers = 1});
      queue = s.outfeed_queue(p.y);
      waiter = std::async(std::launch::async, [queue] { (void)queue->pop(); });
      CHECK(waiter.wait_for(20ms) == std::future_status::timeout);
    }
    CHECK_THROWS_WITH_AS(waiter.get(), doctest::Contains("the queue is empty and closed"),
                         SessionError);
  });
}

TEST_CASE("Destroying a session stops a producer blocked on its full infeed queue") {
  finishes_within(20s, [] {
    LoopProgram p({.steps = 2});
    std::atomic<int> made{0};
    {
      Session s(p.ir, "ipu_model", {.workers = 1, .stream_queue_depth = 3});
      s.set_h2d_callback(p.x, [&made](HostTensor& e) { e = one(static_cast<float>(made++)); });
      while (made.load() < 3) // the queue is full: the producer waits for a free slot
        std::this_thread::sleep_for(1ms);
    }
    CHECK(made.load() == 3);
  });
}

TEST_CASE("Destroying a session stops a replicated run in a long loop at once") {
  finishes_within(20s, [] {
    // A million steps on 2 replicas and 2 workers, blocked on an undrained outfeed: once the
    // session goes, the run stops after the step it is in instead of walking the rest.
    LoopProgram p({.steps = 1000000, .transfers = 1, .replicas = 2});
    std::future<StreamOutputs> run;
    {
      Session s(p.ir, "ipu_model", {.workers = 2, .oversubscribe = true});
      auto queue = s.outfeed_queue(p.y, {.depth = 1});
      auto attached = s.attach();
      run = s.run_async({{p.x, HostTensor({1.f, 2.f}, {2, 1})}});
      wait_for_size(*queue, 1);
    }
    CHECK_THROWS_WITH_AS(run.get(), doctest::Contains("the run was cancelled"), SessionError);
  });
}

} // namespace test_teardown
