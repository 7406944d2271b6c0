// pxl::dist in one process: settings, their errors, and a distributed session of one
// instance. Several instances are tested under mpirun (test/dist).
#include "helpers.hpp"

#include "pxl/dist.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace pxl;

namespace {
/// Restores the environment's settings when a test case ends.
struct Restore {
  ~Restore() { dist::configure({}); }
};

void check_value_error(const dist::Options& o, const std::string& expected) {
  try {
    dist::configure(o);
    FAIL("accepted: " << expected);
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find(expected) != std::string::npos);
  }
}
} // namespace

TEST_CASE("pxl::dist: explicit settings and their errors") {
  Restore restore;
  dist::configure({.num_instances = 4, .instance_index = 3, .num_total_replicas = 8});
  CHECK(dist::num_instances() == 4);
  CHECK(dist::is_distributed());
  CHECK(dist::instance_index() == 3);
  CHECK(dist::num_total_replicas() == 8);
  CHECK(dist::num_local_replicas() == 2);
  CHECK(dist::replica_offset() == 6);
  // No launcher says which instances share this host: all of them, as on one machine.
  CHECK(dist::num_local_instances() == 4);
  check_value_error({.num_instances = -1}, "num_instances must be at least 1");
  check_value_error({.num_instances = 2, .instance_index = 2}, "instance_index 2 is not below");
  check_value_error({.num_instances = 4, .num_total_replicas = 6},
                    "num_total_replicas = 6 cannot be shared evenly by 4 instances");
  check_value_error({.num_total_replicas = -2}, "num_total_replicas must be at least 1");
  check_value_error({.timeout = std::chrono::seconds(0)}, "timeout must be at least 1 s");
  CHECK(dist::num_total_replicas() == 8); // the rejected settings changed nothing
  dist::configure({.num_instances = 1});
  CHECK(!dist::is_distributed());
  CHECK(dist::num_local_replicas() == 1);
  CHECK(dist::num_local_instances() == 1);
  dist::barrier(); // one instance: nothing to wait for
}

TEST_CASE("A distributed session of one instance runs every replica itself") {
  Restore restore;
  dist::configure({.num_instances = 1, .num_total_replicas = 2});
  test_emu::AllReduceProgram p(2);
  Session s(p.ir, "ipu_model", {.workers = 1, .distributed = true});
  auto attached = s.attach();
  const auto out = s.run({{p.x, HostTensor({1.f, 2.f, 10.f, 20.f}, {2, 2})}});
  CHECK(out.at(p.y) == HostTensor({11.f, 22.f, 11.f, 22.f}, {2, 2}));
}

TEST_CASE("Without MPI, several instances are a clear error") {
  if (dist::mpi_enabled())
    return; // the MPI build joins them: test/dist runs it under mpirun
  Restore restore;
  dist::configure({.num_instances = 2, .instance_index = 1, .num_total_replicas = 2});
  test_emu::AllReduceProgram p(2);
  try {
    Session s(p.ir, "ipu_model", {.workers = 1, .distributed = true});
    FAIL("a session of instance 1 of 2 was made without MPI");
  } catch (const SessionError& e) {
    CHECK(std::string(e.what()).find("instance 1 of 2") != std::string::npos);
    CHECK(std::string(e.what()).find("built without MPI") != std::string::npos);
  }
  CHECK_THROWS_AS(dist::barrier(), SessionError);
  // A session that is not distributed runs as always.
  Session alone(p.ir, "ipu_model", {.workers = 1});
  CHECK(alone.create_host_outputs().begin()->second.shape() == Shape{2, 2});
}
