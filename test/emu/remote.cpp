// Streaming Memory on the emulator: remote loads and stores (constant and runtime offsets)
// against the reference evaluator, bitwise for any worker count and per replica; remote
// variables through the session; a runtime offset out of range; the memory report's
// Streaming Memory tier and the cost of remote traffic.
#include "helpers.hpp"
#include "replicated_reference.hpp"

#include "pxl/addons/checkpoint.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

using namespace pxl;
using doctest::Contains;
using test_emu::iota;

namespace {

/// A device loop of `transfers` steps over a remote buffer of 4 entries: step k loads entry
/// (k mod 4) (a runtime offset from an int32 stream), adds the step's x to it, stores it back
/// and emits it; a remote variable `v` (entry 3 of another buffer) is scaled in Streaming
/// Memory every step (load_, scale, store).
struct Offloaded {
  Ir ir;
  HostToDeviceStream x, index;
  DeviceToHostStream y;
  RemoteBuffer table, state;
  Tensor v;

  Offloaded(std::int64_t replicas, std::int64_t transfers) : ir(replicas) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({8}, float32, "x");
    index = h2d_stream({}, int32, "index");
    y = d2h_stream({8}, float32, "y");
    table = remote_buffer({8}, float32, 4, "table");
    state = remote_buffer({2, 2}, float32, 4, "state");
    v = remote_variable(HostTensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), state, 3, "v");
    Graph body = ir.create_empty_graph("step");
    {
      auto in_body = body.scope();
      const Tensor k = ops::host_load(index);
      const Tensor updated = ops::remote_load(table, k) + ops::host_load(x);
      ops::remote_store(table, k, updated);
      ops::host_store(y, updated);
      const Tensor s = ops::remote_load_(state, 3, ops::init({2, 2}, float32));
      ops::remote_store(state, 3, s * 1.5);
    }
    ops::repeat(body, transfers, {});
    ir.set_num_host_transfers(transfers);
  }
};

HostTensor indices(std::int64_t transfers, std::int64_t replicas) {
  HostTensor t({transfers, replicas}, int32);
  auto d = t.data<std::int32_t>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<std::int32_t>((i / static_cast<std::size_t>(replicas)) % 4);
  if (replicas == 1)
    return t.reshaped({transfers});
  return t;
}

} // namespace

TEST_CASE("Remote loads and stores equal the reference, bitwise for any worker count") {
  constexpr std::int64_t transfers = 6;
  for (std::int64_t replicas : {1, 2}) {
    CAPTURE(replicas);
    Offloaded p(replicas, transfers);
    Shape xs{transfers, replicas, 8};
    if (replicas == 1)
      xs = {transfers, 8};
    const HostTensor x = iota(xs, -5.f), k = indices(transfers, replicas);
    const auto reference = testing::run_replicated(p.ir, {{"x", x}, {"index", k}});
    std::optional<HostTensor> first;
    for (unsigned workers : {1u, 2u, 3u}) {
      CAPTURE(workers);
      Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
      auto attached = s.attach();
      auto out = s.run({{p.x, x}, {p.index, k}});
      CHECK(out.at(p.y) == reference.at("y"));
      // A second run reads what the first stored (Streaming Memory persists across runs).
      out = s.run({{p.x, x}, {p.index, k}});
      if (first)
        CHECK(out.at(p.y) == *first);
      else
        first = out.at(p.y);
      // v was scaled 12 times in Streaming Memory: read back like any variable.
      const HostTensor v = s.get_tensor_data(p.v);
      CHECK(v.data<float>()[0] == doctest::Approx(std::pow(1.5, 12)));
    }
  }
}

TEST_CASE("Remote variables: written at attach, read and written by the session, checkpoints") {
  Offloaded p(1, 2);
  Session s(p.ir, "ipu_model", {.workers = 1});
  s.write_variable_data(p.v, HostTensor({2.f, 0.f, 0.f, 0.f}, {2, 2}));
  {
    auto attached = s.attach(); // weights to the device: v into entry 3 of 'state'
    s.run({{p.x, HostTensor({2, 8}, float32)}, {p.index, indices(2, 1)}});
    CHECK(s.get_tensor_data(p.v).data<float>()[0] == 2.f * 1.5f * 1.5f);
    const auto path = std::filesystem::temp_directory_path() / "pxl_remote_checkpoint.safetensors";
    addons::NamedTensors named = addons::NamedTensors::from_dict({{"v", p.v}});
    addons::save_checkpoint(s, named, path);
    s.write_variable_data(p.v, HostTensor({2, 2}, float32));
    s.run({{p.x, HostTensor({2, 8}, float32)}, {p.index, indices(2, 1)}});
    CHECK(s.get_tensor_data(p.v) == HostTensor({2, 2}, float32));
    addons::load_checkpoint(s, named, path);
    CHECK(s.get_tensor_data(p.v).data<float>()[0] == 2.f * 1.5f * 1.5f);
    std::filesystem::remove(path);
  }
  // Detached: the host copy holds what the device had.
  CHECK(s.get_tensor_data(p.v).data<float>()[0] == 2.f * 1.5f * 1.5f);
}

TEST_CASE("A runtime offset out of range ends the run with an error naming the op") {
  Offloaded p(2, 2);
  Session s(p.ir, "ipu_model", {.workers = 2});
  auto attached = s.attach();
  HostTensor k = indices(2, 2);
  k.data<std::int32_t>()[3] = 9; // step 1 of replica 1
  try {
    s.run({{p.x, HostTensor({2, 2, 8}, float32)}, {p.index, k}});
    FAIL("an offset of 9 into a buffer of 4 entries was accepted");
  } catch (const ValueError& e) {
    const std::string message = e.what();
    CHECK(message.find("offset 9 (replica 1) is out of range") != std::string::npos);
    CHECK(message.find("RemoteLoad.") != std::string::npos);
  }
  // The session goes on.
  CHECK_NOTHROW(s.run({{p.x, HostTensor({2, 2, 8}, float32)}, {p.index, indices(2, 2)}}));
}

TEST_CASE("Memory report: Streaming Memory apart from the IPU's, and its capacity") {
  // The same 1 MiB weight on the IPU, or offloaded to a remote buffer.
  auto build = [](Ir& ir, bool offload) {
    auto in_main = ir.main_graph().scope();
    const HostTensor data({256, 1024}, float32);
    auto out = d2h_stream({4}, float32, "o");
    Tensor w;
    if (offload) {
      auto buffer = remote_buffer({256, 1024}, float32, 2, "weights");
      remote_variable(data, buffer, 0, "w");
      w = ops::remote_load(buffer, 0);
    } else {
      w = variable(data, "w");
    }
    ops::host_store(out, ops::slice(ops::reshape(w, {256 * 1024}), {0}, {4}));
  };
  Ir on_chip, offloaded;
  build(on_chip, false);
  build(offloaded, true);
  const auto a = Session(on_chip).memory_report(), b = Session(offloaded).memory_report();
  CHECK(a.streaming.used == 0);
  CHECK(b.streaming.used == 2 * 1024 * 1024);
  REQUIRE(b.streaming.buffers.size() == 1);
  CHECK(b.streaming.buffers[0].name == "weights");
  CHECK(b.streaming.buffers[0].entries == 2);
  CHECK(b.streaming.capacity == std::int64_t{64} << 30);
  CHECK(a.ipus[0].variables == 1024 * 1024);
  CHECK(b.ipus[0].variables == 0);
  CHECK(b.ipus[0].always_live() < a.ipus[0].always_live());
  CHECK(b.summary().find("Streaming Memory: 2.00 MiB") != std::string::npos);
  // Of many remote buffers, the summary names the five largest.
  emu::MemoryReport many = b;
  for (int k = 1; k <= 7; ++k)
    many.streaming.buffers.push_back(
        {"state" + std::to_string(k), 1, k * std::int64_t{1024}, k * std::int64_t{1024}});
  const std::string summary = many.summary();
  CHECK(summary.find("in 8 remote buffer(s): 'weights' 2 x 1.00 MiB; 'state7' 1 x 7.00 KiB;") !=
        std::string::npos);
  CHECK(summary.find("'state4'") != std::string::npos);
  CHECK(summary.find("'state3'") == std::string::npos);
  CHECK(summary.find("and 3 smaller") != std::string::npos);
  CHECK(b.to_json().find("\"streaming_memory\"") != std::string::npos);

  auto small = emu::ipu2();
  small.streaming_memory_bytes_per_ipu = 1024 * 1024;
  CHECK_THROWS_WITH_AS(Session(offloaded, small), Contains("Streaming Memory needs 2097152 bytes"),
                       OutOfMemoryError);
  Session anyway(offloaded, small, {.allow_out_of_memory = true});
  CHECK_FALSE(anyway.memory_report().fits());
}

TEST_CASE("cost model: remote loads and stores at the Streaming Memory rate") {
  const auto t = emu::ipu2();
  emu::StepInfo load;
  load.op = OpId{0};
  load.op_kind = OpKind::RemoteLoad;
  load.bytes_written = 16 * 1024 * 1024;
  const auto c = emu::estimate(load, t);
  const double seconds = 16.0 * 1024 * 1024 / t.streaming_memory_bytes_per_second;
  CHECK(static_cast<double>(c.exchange) == doctest::Approx(seconds * t.clock_hz).epsilon(1e-6));
  CHECK(c.compute == 0);
  auto slow = t;
  slow.streaming_memory_bytes_per_second /= 2;
  CHECK(emu::estimate(load, slow).exchange > c.exchange);
}
