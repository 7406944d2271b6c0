// Instances joined by MPI, run as `mpirun -np 2` (test/dist/mpirun.sh): each instance runs a
// distributed session on its half of the replicas and, beside it, a session holding every
// replica in this process; the two must agree bitwise on every output and weight.
#include "../emu/helpers.hpp"

#include "pxl/dist.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace pxl;

namespace {

constexpr std::int64_t total_replicas = 4;
constexpr std::int64_t transfers = 3;

/// Deterministic, replica-dependent data: element i of array `seed`.
HostTensor pattern(Shape shape, int seed) {
  HostTensor t(std::move(shape), float32);
  auto d = t.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>((static_cast<int>(i) * 37 + seed * 11) % 23) / 7.f - 1.5f;
  return t;
}

/// A data-parallel step with every collective, in a device loop of `transfers` steps: the
/// gradient-like product is mean-all-reduced into an SGD update of w (fused by the
/// compiler), reduce-scattered and all-gathered; h is all-reduced over groups inside one
/// instance and across instances, its argmax max-reduced as int32. v is grouped (replicas
/// {0, 1} and {2, 3}: one group per instance), u has a value per replica (all_replicas), and
/// both follow each replica's own data.
struct Program {
  Ir ir{total_replicas};
  HostToDeviceStream x;
  DeviceToHostStream loss, scattered, gathered, across, within, top;
  Tensor w, v, u;

  Program() {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({3, 8}, float32, "x");
    loss = d2h_stream({}, float32, "loss");
    scattered = d2h_stream({10}, float32, "scattered");
    gathered = d2h_stream({4, 10}, float32, "gathered");
    across = d2h_stream({3, 5}, float32, "across");
    within = d2h_stream({3, 5}, float32, "within");
    top = d2h_stream({3}, int32, "top");
    w = variable(pattern({8, 5}, 1), "w");
    v = variable(pattern({2, 3, 5}, 2), "v", {.replica_grouping = ir.replica_grouping(1, 2)});
    u = variable(pattern({total_replicas, 3, 8}, 3), "u",
                 {.replica_grouping = ir.replica_grouping(1, 1),
                  .retrieval_mode = RetrievalMode::all_replicas});
    namespace c = ops::collectives;
    Graph body = ir.create_empty_graph("step");
    {
      auto in_body = body.scope();
      auto wi = graph_input({8, 5}, float32, "w", /*by_ref=*/true);
      auto vi = graph_input({3, 5}, float32, "v", /*by_ref=*/true);
      auto ui = graph_input({3, 8}, float32, "u", /*by_ref=*/true);
      auto xi = ops::host_load(x);
      auto h = ops::tanh(ops::matmul(xi, wi));
      ops::host_store(loss, ops::mean(h * h));
      auto g = ops::matmul(ops::transpose(xi), h);
      ops::host_store(scattered, c::replicated_reduce_scatter(g));
      ops::host_store(gathered, c::replicated_all_gather(c::replicated_reduce_scatter(g)));
      ops::host_store(
          across, c::replicated_all_reduce(h, CollectiveOperator::max, ir.replica_grouping(2, 2)));
      ops::host_store(
          within, c::replicated_all_reduce(h, CollectiveOperator::add, ir.replica_grouping(1, 2)));
      ops::host_store(top, c::replicated_all_reduce(ops::argmax(h, 1), CollectiveOperator::max));
      ops::scaled_add_(wi, c::replicated_all_reduce(g, CollectiveOperator::mean), {.b = -0.1});
      ops::add_(vi, h);
      ops::add_(ui, xi);
    }
    ops::repeat(body, transfers, {w, v, u});
    ir.set_num_host_transfers(transfers);
  }
};

/// Replicas [first, first + count) of an array shaped [transfers, replicas, *element].
HostTensor replicas_of(const HostTensor& a, std::int64_t first, std::int64_t count) {
  Shape shape = a.shape();
  const std::int64_t all = shape.at(1);
  shape.at(1) = count;
  HostTensor r(shape, a.dtype());
  const std::size_t row = a.nbytes() / static_cast<std::size_t>(shape.at(0) * all);
  for (std::int64_t k = 0; k < shape.at(0); ++k)
    std::memcpy(r.bytes().data() + static_cast<std::size_t>(k * count) * row,
                a.bytes().data() + static_cast<std::size_t>(k * all + first) * row,
                static_cast<std::size_t>(count) * row);
  return r;
}

/// Runs of one program: the full session's outputs cut to this instance's replicas, or the
/// distributed session's.
struct Runs {
  /// Each run's outputs by stream name: every run builds its program in an Ir of its own, gone
  /// with it, and handles of different Irs never compare equal.
  std::vector<std::map<std::string, HostTensor>> outputs;
  std::map<std::string, HostTensor> weights;
  std::vector<ReplicaDrift> drift;
};

Runs run(bool distributed, unsigned workers) {
  Program p;
  Session s(p.ir, "ipu_model",
            {.workers = workers, .oversubscribe = true, .distributed = distributed});
  auto attached = s.attach();
  const std::int64_t first = distributed ? dist::replica_offset() : 0;
  const std::int64_t count = distributed ? dist::num_local_replicas() : total_replicas;
  Runs r;
  for (int k = 0; k < 3; ++k) {
    const HostTensor x = pattern({transfers, total_replicas, 3, 8}, 10 + k);
    StreamOutputs out = s.run({{p.x, replicas_of(x, first, count)}});
    auto& by_name = r.outputs.emplace_back();
    for (auto& [stream, array] : out)
      by_name.emplace(stream.name(),
                      // cut to the replicas the distributed session of this instance runs
                      distributed
                          ? std::move(array)
                          : replicas_of(array, dist::replica_offset(), dist::num_local_replicas()));
    if (k == 1) // a value written mid-way reaches every replica of every instance
      s.write_variable_data(p.w, pattern({8, 5}, 4));
  }
  r.weights = {
      {"w", s.get_tensor_data(p.w)}, {"v", s.get_tensor_data(p.v)}, {"u", s.get_tensor_data(p.u)}};
  r.drift = s.check_replicas_in_sync();
  return r;
}

void check_equal(const Runs& a, const Runs& b) {
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (std::size_t k = 0; k < a.outputs.size(); ++k) {
    REQUIRE(a.outputs[k].size() == b.outputs[k].size());
    // Named copies: CAPTURE's lambda cannot capture a structured binding in clang 14.
    for (const auto& output : a.outputs[k]) {
      const std::string& stream = output.first;
      CAPTURE(stream);
      REQUIRE(b.outputs[k].contains(stream));
      CHECK(output.second == b.outputs[k].at(stream));
    }
  }
  for (const auto& weight : a.weights) {
    const std::string& variable = weight.first;
    CAPTURE(variable);
    CHECK(weight.second == b.weights.at(variable));
  }
  REQUIRE(a.drift.size() == b.drift.size());
  for (std::size_t i = 0; i < a.drift.size(); ++i) {
    CHECK(a.drift[i].variable == b.drift[i].variable);
    CHECK(a.drift[i].replica == b.drift[i].replica);
    CHECK(a.drift[i].max_abs_difference == b.drift[i].max_abs_difference);
  }
}

struct Distributed {
  Distributed() {
    dist::configure({.num_total_replicas = total_replicas, .timeout = std::chrono::seconds(60)});
  }
};

} // namespace

TEST_CASE("pxl::dist reads mpirun's environment") {
  REQUIRE(dist::mpi_enabled());
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  REQUIRE(size != nullptr);
  REQUIRE(rank != nullptr);
  dist::configure({});
  CHECK(dist::num_instances() == std::stoll(size));
  CHECK(dist::instance_index() == std::stoll(rank));
  CHECK(dist::num_total_replicas() == dist::num_instances()); // PopRun's default: one each
  CHECK(dist::num_local_replicas() == 1);
  CHECK(dist::replica_offset() == dist::instance_index());
  dist::configure({.num_total_replicas = 6});
  CHECK(dist::num_local_replicas() == 6 / dist::num_instances());
  CHECK(dist::replica_offset() == dist::instance_index() * (6 / dist::num_instances()));
  CHECK_THROWS_AS(dist::configure({.num_total_replicas = 3}), ValueError);
  CHECK_THROWS_AS(dist::configure({.instance_index = 7}), ValueError);
  CHECK(dist::num_total_replicas() == 6); // a rejected configure changes nothing
  dist::barrier();
}

TEST_CASE("A distributed session equals one process running every replica, bitwise") {
  Distributed d;
  REQUIRE(dist::num_instances() == 2);
  const Runs local = run(false, 1);
  const dist::Traffic before = dist::traffic();
  const Runs one_worker = run(true, 1);
  const dist::Traffic after = dist::traffic();
  check_equal(local, one_worker);
  // Every run exchanges: 3 runs × 3 steps × 5 exchanging collectives, plus the weights.
  CHECK(after.exchanges - before.exchanges >= 45);
  CHECK(after.bytes_sent > before.bytes_sent);
  SUBCASE("with two and three workers") {
    check_equal(local, run(true, 2));
    check_equal(local, run(true, 3));
  }
  // Replicas of a group drift when they see different data: reported for the other
  // instance's replicas too.
  CHECK(!local.drift.empty());
}

TEST_CASE("A distributed session's streams carry its local replicas only") {
  Distributed d;
  Program p;
  Session s(p.ir, "ipu_model", {.workers = 1, .distributed = true});
  auto attached = s.attach();
  // Arrays are [transfers, local replicas, *shape].
  CHECK(s.create_host_outputs().at(p.loss).shape() == Shape{transfers, 2});
  const HostTensor global = pattern({transfers, total_replicas, 3, 8}, 5);
  try {
    s.run({{p.x, global}});
    FAIL("a [transfers, total replicas, ...] array was accepted");
  } catch (const ShapeError& e) {
    CHECK(std::string(e.what()).find("local replicas=2") != std::string::npos);
  }
  // Callback-fed: the local replicas' elements, step-major.
  std::vector<float> losses;
  s.set_d2h_callback(p.loss, [&](const HostTensor& t) { losses.push_back(t.data<float>()[0]); });
  s.run({{p.x, replicas_of(global, dist::replica_offset(), 2)}});
  CHECK(losses.size() == transfers * 2);
}

TEST_CASE("A distributed session needs the Ir's replication factor to be the total") {
  Distributed d;
  test_emu::AllReduceProgram p(2);
  try {
    Session s(p.ir, "ipu_model", {.workers = 1, .distributed = true});
    FAIL("a replication factor of 2 was accepted for 4 replicas in all");
  } catch (const SessionError& e) {
    CHECK(std::string(e.what()).find("num_total_replicas() = 4") != std::string::npos);
  }
  // Not distributed, every instance runs the Ir's replicas itself.
  Session alone(p.ir, "ipu_model", {.workers = 1});
  CHECK(alone.create_host_outputs().begin()->second.shape() == Shape{2, 2});
}

TEST_CASE("A distributed session's default workers share the host's cores among its instances") {
  Distributed d;
  CHECK(dist::num_local_instances() == 2); // mpirun -np 2 on this host
  Program p;
  Session s(p.ir, "ipu_model", {.distributed = true});
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  CHECK(s.num_workers() == std::max(1u, cores / 2));
  // A count asked for is kept.
  Session two(p.ir, "ipu_model", {.workers = 2, .oversubscribe = true, .distributed = true});
  CHECK(two.num_workers() == 2);
}

TEST_CASE("Settings that disagree with mpirun are a clear error on every instance") {
  dist::configure(
      {.num_instances = 3, .instance_index = dist::instance_index(), .num_total_replicas = 3});
  test_emu::AllReduceProgram p(3);
  try {
    Session s(p.ir, "ipu_model", {.workers = 1, .distributed = true});
    FAIL("a session of 3 instances was made under mpirun -np 2");
  } catch (const SessionError& e) {
    CHECK(std::string(e.what()).find("MPI's world has 2 process(es)") != std::string::npos);
  }
  dist::configure({});
}
