// Session lifecycle: devices, attachment, moves and weights.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

using namespace pxl;
using test_emu::AddProgram;

TEST_CASE("Session rejects ipu_hw and unknown devices, pointing to ipu_model") {
  AddProgram p;
  CHECK_THROWS_WITH_AS(Session(p.ir, "ipu_hw"), doctest::Contains("\"ipu_model\""), SessionError);
  CHECK_THROWS_WITH_AS(Session(p.ir, "tpu"), doctest::Contains("unknown device \"tpu\""),
                       SessionError);
}

TEST_CASE("Session presets describe the GC200 and Bow") {
  CHECK(emu::ipu2().tiles_per_ipu == 1472);
  CHECK(emu::ipu2().bytes_per_ipu() == 1472 * 638976);
  CHECK(emu::bow().clock_hz == doctest::Approx(1.85e9));
  AddProgram p;
  Session s(p.ir, emu::bow(), {.workers = 2});
  CHECK(s.target().name == "bow");
  CHECK(s.num_workers() == 2);
  CHECK(&s.ir() == &p.ir);
}

TEST_CASE("Runtime calls need an attachment") {
  AddProgram p;
  Session s(p.ir);
  CHECK_FALSE(s.is_attached());
  CHECK_THROWS_WITH_AS(s.run({{p.x, HostTensor({2, 3}, float32)}}),
                       doctest::Contains("Session::run: the session must be attached"),
                       SessionError);
  auto outs = s.create_host_outputs();
  CHECK_THROWS_WITH_AS(s.run_with_outputs({{p.x, HostTensor({2, 3}, float32)}}, outs),
                       doctest::Contains("must be attached"), SessionError);
  CHECK_THROWS_WITH_AS(s.weights_to_host(), doctest::Contains("Session::weights_to_host"),
                       SessionError);
  CHECK_THROWS_WITH_AS(s.weights_from_host(), doctest::Contains("Session::weights_from_host"),
                       SessionError);
  {
    auto attached = s.attach();
    CHECK(s.is_attached());
    {
      auto nested = s.attach();
      CHECK(s.is_attached());
    }
    CHECK(s.is_attached());
  }
  CHECK_FALSE(s.is_attached());
}

TEST_CASE("A run adds the variable; moved sessions keep working") {
  AddProgram p;
  Session s0(p.ir);
  Session s = std::move(s0);
  auto attached = s.attach();
  const auto out = s.run({{p.x, test_emu::iota({2, 3}, 1.f)}});
  REQUIRE(out.size() == 1);
  CHECK(out.at(p.y) == HostTensor({1.f, 2.5f, 4.f, 5.5f, 7.f, 8.5f}, {2, 3}));
}

TEST_CASE("Weights: host copies, write-through, staleness after a run") {
  Ir ir;
  Tensor w, c;
  DeviceToHostStream out;
  {
    auto in_main = ir.main_graph().scope();
    w = variable(HostTensor({1.f, 2.f}, {2}), "w");
    c = constant(HostTensor({10.f, 20.f}, {2}), "c");
    // w += c each run; the old w goes to the host.
    out = d2h_stream({2}, float32, "out");
    ops::host_store(out, w + 0.0);
    ops::add_(w, c);
  }
  Session s(ir, "ipu_model", {.workers = 2});
  CHECK(s.get_tensor_data(w) == HostTensor({1.f, 2.f}, {2}));
  CHECK(s.get_tensor_data(c) == HostTensor({10.f, 20.f}, {2}));
  s.write_variable_data(w, HostTensor({3.f, 4.f}, {2})); // detached: host copy only
  {
    auto attached = s.attach(); // weights go to the device
    CHECK(s.run().at(out) == HostTensor({3.f, 4.f}, {2}));
    // The host copy is stale; reading it fetches the device values first.
    CHECK(s.get_tensor_data(w) == HostTensor({13.f, 24.f}, {2}));
    s.write_variable_data(w, HostTensor({0.f, 1.f}, {2})); // attached: reaches the device
    CHECK(s.run().at(out) == HostTensor({0.f, 1.f}, {2}));
    const auto both = s.get_tensors_data({w, c});
    CHECK(both.at(w) == HostTensor({10.f, 21.f}, {2}));
    CHECK(both.at(c) == HostTensor({10.f, 20.f}, {2}));
    s.run();
  }
  // Detaching brought the weights back.
  CHECK(s.get_tensor_data(w) == HostTensor({20.f, 41.f}, {2}));
  {
    auto attached = s.attach(); // and attaching sends them again
    CHECK(s.run().at(out) == HostTensor({20.f, 41.f}, {2}));
  }
}

TEST_CASE("Weights: errors name the tensor and what was expected") {
  AddProgram p;
  Tensor intermediate = p.ir.main_graph().ops()[1].output(0);
  Session s(p.ir);
  CHECK_THROWS_WITH_AS(s.get_tensor_data(intermediate),
                       doctest::Contains("neither a variable nor a constant"), ValueError);
  CHECK_THROWS_WITH_AS(s.write_variable_data(intermediate, HostTensor({2, 3}, float32)),
                       doctest::Contains("is not a variable"), ValueError);
  CHECK_THROWS_WITH_AS(s.write_variable_data(p.w, HostTensor({2, 3}, int32)),
                       doctest::Contains("needs float32 data, got int32"), DTypeError);
  CHECK_THROWS_WITH_AS(s.write_variable_data(p.w, HostTensor({3, 2}, float32)),
                       doctest::Contains("needs data of shape (2, 3), got (3, 2)"), ShapeError);
  AddProgram other;
  CHECK_THROWS_WITH_AS(s.get_tensor_data(other.w), doctest::Contains("another Ir"), ValueError);
}

TEST_CASE("Ops placed on IPUs the target lacks are refused") {
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    auto on1 = ipu(1);
    auto v = variable(HostTensor({1.f}, {1}), "v");
    ops::host_store(d2h_stream({1}, float32, "o"), v + v);
  }
  CHECK_THROWS_WITH_AS(Session(ir, emu::ipu2()), doctest::Contains("placed on IPU 1"),
                       SessionError);
  Session s(ir, "ipu_model"); // sized from the Ir
  CHECK(s.target().ipus == 2);
}

namespace test_session {

TEST_CASE("run downcasts 64-bit input arrays to their stream's 32-bit dtype, as PopXL") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const auto ints = h2d_stream({3}, int32, "ints");
  const auto floats = h2d_stream({2}, float32, "floats");
  const auto ints_out = d2h_stream({3}, int32, "ints_out");
  const auto floats_out = d2h_stream({2}, float32, "floats_out");
  ops::host_store(ints_out, ops::host_load(ints));
  ops::host_store(floats_out, ops::host_load(floats));
  Session session(ir, "ipu_model", {.workers = 1});
  auto attached = session.attach();
  const HostTensor i64({std::int64_t{-5}, std::int64_t{2147483647}, std::int64_t{0}});
  const HostTensor f64({0.1, 1e300});
  const auto out = session.run({{ints, i64}, {floats, f64}});
  CHECK(out.at(ints_out) == i64.astype(int32));
  CHECK(out.at(floats_out) == HostTensor({0.1f, std::numeric_limits<float>::infinity()}));
  CHECK(session.run_async({{ints, i64}, {floats, f64.astype(float32)}}).get().at(ints_out) ==
        i64.astype(int32));
  CHECK_THROWS_WITH_AS(
      session.run({{ints, HostTensor({std::int64_t{1}, std::int64_t{1} << 40, std::int64_t{2}})},
                   {floats, f64}}),
      "Session::run: the array of input stream 'ints' holds int64 value 1099511627776 at element "
      "1, outside int32's range [-2147483648, 2147483647]: downcasting it would wrap it to 0 "
      "(PopXL's NumPy cast does so silently); convert it with HostTensor::astype to keep the "
      "wrapped value",
      ValueError);
  // Only to the stream's own 32-bit dtype: int64 for a float32 stream is a dtype mismatch.
  CHECK_THROWS_WITH_AS(
      session.run({{ints, i64}, {floats, HostTensor({std::int64_t{1}, std::int64_t{2}})}}),
      doctest::Contains("input stream 'floats' needs float32 data, got int64"), DTypeError);
}

} // namespace test_session
