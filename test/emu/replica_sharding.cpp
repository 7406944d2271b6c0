// Replicated tensor sharding on the emulator: replica-sharded variables on the IPU and in
// Streaming Memory, each replica holding its padded shard while the session reads and writes
// the whole value; gathers against the reference evaluator, bitwise for any worker count;
// value groupings with shard_over; the memory each replica keeps; the errors.
#include "helpers.hpp"
#include "replicated_reference.hpp"

#include "pxl/addons/checkpoint.hpp"
#include "pxl/addons/rts.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <string>

using namespace pxl;
using doctest::Contains;
using test_emu::iota;

namespace {

/// What each replica holds of `t`, from a d2h stream of one transfer: (replicas, *t.shape).
HostTensor per_replica(const HostTensor& out, std::int64_t replicas, const Shape& shape) {
  Shape s = shape;
  s.insert(s.begin(), replicas);
  return out.reshaped(s);
}

/// Replica `r`'s value of a tensor of `shape` in `out` (as per_replica gives it).
HostTensor replica_value(const HostTensor& out, std::int64_t r, const Shape& shape) {
  HostTensor v(shape, out.dtype());
  std::memcpy(v.bytes().data(), out.bytes().data() + static_cast<std::size_t>(r) * v.nbytes(),
              v.nbytes());
  return v;
}

/// A replica-sharded weight of 10 elements over 3 replicas (shards of 4, the last padded with
/// two zeros): every run emits each replica's shard and the gathered whole, then adds 1 to
/// the shard in place.
struct Sharded {
  Ir ir{3};
  Tensor w;
  DeviceToHostStream shard, whole;

  Sharded() {
    auto in_main = ir.main_graph().scope();
    w = replica_sharded_variable(iota({2, 5}, 1.f), "w");
    shard = d2h_stream({4}, float32, "shard");
    whole = d2h_stream({2, 5}, float32, "whole");
    ops::host_store(shard, w);
    ops::host_store(whole, addons::rts::gather(w));
    ops::add_(w, constant(1.0, float32));
  }
};

} // namespace

TEST_CASE("A replica-sharded variable: padded shards on the replicas, the whole on the host") {
  Sharded p;
  CHECK(p.w.shape() == Shape{4});
  CHECK(p.w.meta_shape() == Shape{2, 5});
  const auto sharding = replica_sharding(p.w);
  REQUIRE(sharding);
  CHECK(sharding->shards() == 3);
  CHECK(sharding->shard_elements() == 4);
  const auto reference = testing::run_replicated(p.ir, {});
  std::optional<HostTensor> first;
  for (unsigned workers : {1u, 2u, 3u}) {
    CAPTURE(workers);
    Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    auto out = s.run({});
    const HostTensor shards = per_replica(out.at(p.shard), 3, {4});
    CHECK(shards ==
          HostTensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, 0.f, 0.f}, {3, 4}));
    CHECK(per_replica(out.at(p.whole), 3, {2, 5}).reshaped({3, 10}) ==
          HostTensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, //
                      1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, //
                      1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f},
                     {3, 10}));
    CHECK(out.at(p.whole) == reference.at("whole"));
    // The session reads the whole, unpadded value (the padding went up by 1 too, unseen).
    const HostTensor w = s.get_tensor_data(p.w);
    CHECK(w == iota({2, 5}, 2.f));
    CHECK(s.check_replicas_in_sync().empty());
    if (first)
      CHECK(w == *first);
    else
      first = w;
  }
}

TEST_CASE("Writing a replica-sharded variable: the whole value, split on the device") {
  Sharded p;
  Session s(p.ir, "ipu_model", {.workers = 2});
  s.write_variable_data(p.w, iota({2, 5}, 100.f));
  auto attached = s.attach();
  auto out = s.run({});
  CHECK(per_replica(out.at(p.shard), 3, {4}).reshaped({12}).data<float>()[9] == 109.f);
  s.write_variable_data(p.w, iota({2, 5}, -3.f));
  out = s.run({});
  CHECK(replica_value(out.at(p.whole), 2, {2, 5}) == iota({2, 5}, -3.f));
  // Checkpoints hold the whole value.
  const auto path = std::filesystem::temp_directory_path() / "pxl_rts_checkpoint.safetensors";
  const auto named = addons::NamedTensors::from_dict({{"w", p.w}});
  addons::save_checkpoint(s, named, path);
  s.write_variable_data(p.w, HostTensor({2, 5}, float32));
  addons::load_checkpoint(s, named, path);
  CHECK(s.get_tensor_data(p.w) == iota({2, 5}, -2.f));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH_AS(s.write_variable_data(p.w, HostTensor({4}, float32)),
                       Contains("(2, 5) (the whole replica-sharded value), got (4,)"), ShapeError);
}

TEST_CASE("Sharding within replica groups: one whole value per group, shard_over") {
  // 4 replicas, value groups {0, 2} and {1, 3}; each value split over its group's 2 replicas.
  Ir ir(4);
  auto in_main = ir.main_graph().scope();
  const Tensor w = replica_sharded_variable(iota({2, 3}, 0.f), "w",
                                            {.replica_grouping = ir.replica_grouping(2, 2)});
  CHECK(w.shape() == Shape{2});
  CHECK(replica_sharding(w)->group == ir.replica_grouping(2, 2));
  // One value of 4 elements shared by all replicas, sharded over pairs of neighbours.
  const Tensor v = replica_sharded_variable(iota({4}, 10.f), "v", {.shard_over = 2});
  CHECK(replica_sharding(v)->group == ir.replica_grouping(1, 2));
  const auto shard_w = d2h_stream({2}, float32, "w"), shard_v = d2h_stream({2}, float32, "v");
  const auto whole_w = d2h_stream({3}, float32, "whole_w");
  ops::host_store(shard_w, w);
  ops::host_store(shard_v, v);
  ops::host_store(whole_w, addons::rts::gather(w));
  const auto reference = testing::run_replicated(ir, {});
  Session s(ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  auto out = s.run({});
  // Replicas 0..3 hold shards 0, 0, 1, 1 of w's groups 0, 1, 0, 1.
  CHECK(per_replica(out.at(shard_w), 4, {2}) ==
        HostTensor({0.f, 1.f, 3.f, 4.f, 2.f, 0.f, 5.f, 0.f}, {4, 2}));
  CHECK(per_replica(out.at(shard_v), 4, {2}) ==
        HostTensor({10.f, 11.f, 12.f, 13.f, 10.f, 11.f, 12.f, 13.f}, {4, 2}));
  CHECK(per_replica(out.at(whole_w), 4, {3}) ==
        HostTensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f}, {4, 3}));
  CHECK(out.at(whole_w) == reference.at("whole_w"));
  CHECK(s.get_tensor_data(w) == iota({2, 3}, 0.f));
  CHECK(s.get_tensor_data(v) == iota({4}, 10.f));
  CHECK(s.check_replicas_in_sync().empty());
}

TEST_CASE("A remote replica-sharded variable: shards in Streaming Memory, loaded and stored") {
  Ir ir(2);
  auto in_main = ir.main_graph().scope();
  const RemoteBuffer buffer = replica_sharded_buffer({3, 3}, float32, {}, 2, "state");
  replica_sharded_buffer({64, 8}, float32, {}, 1, "big");
  CHECK(buffer.shape() == Shape{5});
  CHECK(replica_sharding(buffer)->meta_shape == Shape{3, 3});
  const Tensor m = remote_replica_sharded_variable(iota({3, 3}, 1.f), buffer, 1, "m");
  CHECK(m.shape() == Shape{5});
  CHECK(m.meta_shape() == Shape{3, 3});
  const auto whole = d2h_stream({3, 3}, float32, "whole");
  const Tensor loaded = ops::remote_load(buffer, 1);
  REQUIRE(replica_sharding(loaded));
  ops::host_store(whole, addons::rts::gather(loaded));
  ops::remote_store(buffer, 1, loaded * 2.0);
  const auto reference = testing::run_replicated(ir, {});
  for (unsigned workers : {1u, 3u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    auto out = s.run({});
    CHECK(out.at(whole) == reference.at("whole"));
    CHECK(replica_value(out.at(whole), 1, {3, 3}) == iota({3, 3}, 1.f));
    // The store doubled each shard in its replica's Streaming Memory.
    HostTensor doubled = iota({3, 3}, 1.f);
    for (float& x : doubled.data<float>())
      x *= 2.f;
    CHECK(s.get_tensor_data(m) == doubled);
    CHECK(s.check_replicas_in_sync().empty());
    // Each replica keeps its shards: 2 entries of 5 floats (in 64-byte aligned entries), and
    // one entry of half of a (64, 8) float32 tensor.
    const auto report = s.memory_report();
    REQUIRE(report.streaming.buffers.size() == 2);
    for (const auto& b : report.streaming.buffers)
      CHECK(b.entry_bytes == (b.name == "big" ? 64 * 8 * 4 / 2 : 64));
    CHECK(report.streaming.used == 2 * 64 + 64 * 8 * 4 / 2);
  }
}

TEST_CASE("Host-side shards: replica_shard and replica_unshard") {
  const HostTensor whole = iota({2, 5}, 1.f);
  std::vector<HostTensor> shards;
  for (std::int64_t k = 0; k < 4; ++k)
    shards.push_back(replica_shard(whole, 4, k));
  CHECK(shards[3] == HostTensor({10.f, 0.f, 0.f}, {3}));
  CHECK(replica_unshard(shards, {2, 5}) == whole);
  CHECK(replica_sharded_spec({{2, 5}, float16}, 4) == TensorSpec{{3}, float16});
  CHECK_THROWS_WITH_AS(replica_shard(whole, 4, 4), Contains("shard 4 of 4 is out of range"),
                       ValueError);
  shards.pop_back();
  CHECK_THROWS_WITH_AS(
      replica_unshard(shards, {2, 5}),
      Contains("3 shards of a tensor of shape (2, 5) are each [(4,) float32], got [(3,) float32]"),
      ShapeError);
}

TEST_CASE("Replica-sharded variables and buffers: errors") {
  Ir ir(4), other(4);
  auto in_main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(replica_sharded_variable(iota({4}), "a", {.shard_over = 3}),
                       Contains("'a' is to be sharded over 3 replicas, which must be at least 1 "
                                "and divide the 4 replicas"),
                       ValueError);
  CHECK_THROWS_WITH_AS(
      replica_sharded_variable(iota({4}), "b", {.replica_grouping = other.replica_grouping()}),
      Contains("was not made by this Ir's replica_grouping"), ValueError);
  CHECK_THROWS_WITH_AS(
      replica_sharded_variable(iota({3, 4}), "c", {.replica_grouping = ir.replica_grouping(1, 2)}),
      Contains("its data needs one value per group, shaped (2, *shape); got (3, 4)"), ShapeError);
  const RemoteBuffer plain = remote_buffer({2}, float32, 1, "plain");
  CHECK_THROWS_WITH_AS(remote_replica_sharded_variable(iota({8}), plain, 0, "d"),
                       Contains("remote buffer 'plain' is not replica-sharded"), ValueError);
  const RemoteBuffer sharded = replica_sharded_buffer({8}, float32, {}, 1, "sharded");
  CHECK_THROWS_WITH_AS(remote_replica_sharded_variable(iota({9}), sharded, 0, "e"),
                       Contains("'e' has data of shape (9,) but remote buffer 'sharded' holds "
                                "shards of tensors of shape (8,)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(remote_replica_sharded_variable(HostTensor({8}, int32), sharded, 0, "f"),
                       Contains("'f' has int32 data but remote buffer 'sharded' holds float32"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(remote_replica_sharded_variable(iota({8}), sharded, 1, "g"),
                       Contains("entry 1 of remote buffer 'sharded' is out of range"), ValueError);
  const Tensor plain_var = variable(iota({4}), "plain_var");
  CHECK_THROWS_WITH_AS(addons::rts::gather(plain_var),
                       Contains("'plain_var' is not a replica-sharded tensor"), ValueError);
  const Tensor eight = replica_sharded_variable(iota({8}), "eight");
  CHECK_THROWS_WITH_AS(
      addons::rts::gather(plain_var, *replica_sharding(eight)),
      Contains("a shard of a tensor of shape (8,) over 4 replicas is [(2,) float32], "
               "got 'plain_var' [(4,) float32]"),
      ShapeError);
}
