// A Session freezes its Ir and outlives it; moved-from sessions and orphaned guards fail safe.
#include "helpers.hpp"

#include <pxl/transforms/autodiff.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <optional>

using namespace pxl;
using test_emu::AddProgram;

TEST_CASE("Changing an Ir that a Session holds is a GraphError naming the change") {
  AddProgram p;
  Graph sub = p.ir.create_graph(
      "sub", [](Tensor t) { return t * t; }, TensorSpec{{2, 3}, float32});
  auto session = std::make_unique<Session>(p.ir);
  auto prepared = doctest::Contains("already prepared");
  CHECK_THROWS_WITH_AS(p.ir.set_replication_factor(2), prepared, GraphError);
  CHECK_THROWS_WITH_AS(p.ir.set_num_host_transfers(4), prepared, GraphError);
  CHECK_THROWS_WITH_AS(p.ir.create_empty_graph("late"), prepared, GraphError);
  {
    auto in_main = p.ir.main_graph().scope();
    CHECK_THROWS_WITH_AS(ops::host_load(p.x), prepared, GraphError);
    CHECK_THROWS_WITH_AS(h2d_stream({1}, float32, "late"), prepared, GraphError);
    CHECK_THROWS_WITH_AS(variable(HostTensor({1.f}, {1}), "late"), prepared, GraphError);
  }
  CHECK_THROWS_WITH_AS(transforms::autodiff(sub), prepared, GraphError);
  // The session still runs what it compiled.
  {
    auto attached = session->attach();
    const auto out = session->run({{p.x, test_emu::iota({2, 3})}});
    CHECK(out.at(p.y) == HostTensor({0.f, 1.5f, 3.f, 4.5f, 6.f, 7.5f}, {2, 3}));
  }
  // Once no session holds the Ir, it can change again.
  session.reset();
  p.ir.set_num_host_transfers(2);
  CHECK(p.ir.num_host_transfers() == 2);
}

TEST_CASE("A Session keeps running after its Ir is destroyed") {
  auto p = std::make_unique<AddProgram>();
  const HostToDeviceStream x = p->x;
  const DeviceToHostStream y = p->y;
  const Tensor w = p->w;
  Session s(p->ir, "ipu_model", {.workers = 2});
  p.reset(); // the literal port of PopXL's tutorial returns the session from a function
  auto attached = s.attach();
  const auto out = s.run({{x, test_emu::iota({2, 3})}});
  CHECK(out.at(y) == HostTensor({0.f, 1.5f, 3.f, 4.5f, 6.f, 7.5f}, {2, 3}));
  CHECK(s.get_tensor_data(w) == HostTensor({0.f, .5f, 1.f, 1.5f, 2.f, 2.5f}, {2, 3}));
  CHECK(s.expected_inputs() == std::vector<HostToDeviceStream>{x});
  CHECK_THROWS_WITH_AS(s.ir(), doctest::Contains("has been destroyed"), SessionError);
}

TEST_CASE("A moved-from Session throws SessionError on use") {
  AddProgram p;
  Session s0(p.ir);
  Session s = std::move(s0);
  auto moved = doctest::Contains("moved from");
  // NOLINTBEGIN(bugprone-use-after-move): using a moved-from session is what is tested.
  CHECK_THROWS_WITH_AS((void)s0.attach(), moved, SessionError);
  CHECK_THROWS_WITH_AS(s0.run(), moved, SessionError);
  CHECK_THROWS_WITH_AS(s0.memory_report(), moved, SessionError);
  CHECK_THROWS_WITH_AS(s0.ir(), moved, SessionError);
  CHECK_THROWS_WITH_AS(s0.is_attached(), moved, SessionError);
  // Assigning to it makes it usable again.
  s0 = Session(p.ir);
  CHECK_FALSE(s0.is_attached());
  // NOLINTEND(bugprone-use-after-move)
}

TEST_CASE("An attachment that outlives its Session is harmless") {
  AddProgram p;
  std::optional<Session::Attachment> attached;
  {
    Session s(p.ir);
    attached.emplace(s.attach());
    CHECK(s.is_attached());
  }
  attached.reset(); // the session is gone: detaching does nothing
  // A guard moved to a new owner detaches exactly once.
  Session s(p.ir);
  {
    auto a = s.attach();
    auto b = std::move(a);
    CHECK(s.is_attached());
  }
  CHECK_FALSE(s.is_attached());
}
