// The dtypes on the device: PopXL's downcast of 64-bit host data, the 64-bit dtypes refused
// everywhere a device tensor is made, and int8, int16 and uint16 taken only by the ops that
// move data.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

using namespace pxl;

namespace test_dtypes {

TEST_CASE("variable and constant downcast 64-bit data as PopXL does, by default") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const Tensor i = variable(HostTensor({std::int64_t{-2147483648}, std::int64_t{2147483647}}), "i");
  const Tensor u = variable(HostTensor({std::uint64_t{4294967295u}, std::uint64_t{3}}), "u");
  const Tensor f = variable(HostTensor({0.1, 1e300, -2.5}), "f");
  const Tensor c = constant(HostTensor({std::int64_t{-7}}), "c");
  CHECK(i.dtype() == int32);
  CHECK(u.dtype() == uint32);
  CHECK(f.dtype() == float32);
  CHECK(c.dtype() == int32);
  // What the device holds, read back: float64 rounds to nearest, overflowing to inf as NumPy's
  // astype does.
  Session session(ir, "ipu_model");
  CHECK(session.get_tensor_data(f) ==
        HostTensor({0.1f, std::numeric_limits<float>::infinity(), -2.5f}));
  CHECK(session.get_tensor_data(i) ==
        HostTensor({std::int32_t{-2147483647 - 1}, std::int32_t{2147483647}}));
  CHECK(session.get_tensor_data(u) == HostTensor({std::uint32_t{4294967295u}, std::uint32_t{3}}));
}

TEST_CASE("a constant's value reaches ops as its downcast") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const Tensor c = constant(HostTensor({std::int64_t{40}, std::int64_t{-2}}), "c");
  const Tensor y = ops::cast(c + constant(2.0, int32), float32);
  const auto out = d2h_stream(y.shape(), y.dtype(), "y");
  ops::host_store(out, y);
  Session session(ir, "ipu_model");
  auto attached = session.attach();
  CHECK(session.run().at(out) == HostTensor({42.f, 0.f}));
}

TEST_CASE("downcast = false keeps 64-bit data off the device with a DTypeError") {
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(variable(HostTensor({std::int64_t{1}}), "w", /*downcast=*/false),
                       "variable 'w' holds [(1,) int64] data with downcast = false, but PopXL's "
                       "devices hold no 64-bit tensors; pass downcast = true (PopXL's default) to "
                       "store it as int32, or convert it with HostTensor::astype",
                       DTypeError);
  CHECK_THROWS_WITH_AS(constant(HostTensor({1.0}), "k", false),
                       doctest::Contains("constant 'k' holds [(1,) float64] data with downcast = "
                                         "false"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(
      variable(HostTensor({std::uint64_t{1}}), "g", VariableOptions{.downcast = false}),
      doctest::Contains("store it as uint32"), DTypeError);
  // 32-bit and narrower data is unaffected by the flag.
  CHECK(variable(HostTensor({std::int16_t{1}}), "s", false).dtype() == int16);
}

TEST_CASE("an explicit 64-bit dtype is refused, as PopXL does not downcast one") {
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(variable(HostTensor({1.f, 2.f}), int64, "w"),
                       "variable 'w' would be [(2,) int64], a host dtype: PopXL's devices hold no "
                       "64-bit tensors (int64, uint64, float64); use int32, the dtype PopXL's "
                       "downcast stores it as",
                       DTypeError);
  CHECK_THROWS_WITH_AS(constant(1.0, float64, "k"),
                       doctest::Contains("constant 'k' would be [() float64], a host dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(constant(HostTensor({1.f}), uint64, "k"),
                       doctest::Contains("use uint32, the dtype PopXL's downcast stores it as"),
                       DTypeError);
}

TEST_CASE("an int64 value outside int32's range is a ValueError, where PopXL would wrap it") {
  Ir ir;
  auto main = ir.main_graph().scope();
  CHECK_THROWS_WITH_AS(
      variable(HostTensor({std::int64_t{1}, std::int64_t{3'000'000'000}}), "w"),
      "variable 'w' holds int64 value 3000000000 at element 1, outside int32's range "
      "[-2147483648, 2147483647]: downcasting it would wrap it to -1294967296 (PopXL's NumPy "
      "cast does so silently); convert it with HostTensor::astype to keep the wrapped value",
      ValueError);
  CHECK_THROWS_WITH_AS(constant(HostTensor({std::int64_t{-2147483649}}), "k"),
                       doctest::Contains("int64 value -2147483649 at element 0"), ValueError);
  CHECK_THROWS_WITH_AS(
      constant(HostTensor({std::uint64_t{1} << 32}), "k"),
      doctest::Contains("uint64 value 4294967296 at element 0, outside uint32's "
                        "range [0, 4294967295]: downcasting it would wrap it to 0"),
      ValueError);
  // The wrap, asked for explicitly.
  const HostTensor big({std::int64_t{3'000'000'000}});
  CHECK(constant(big.astype(int32), "wrapped").dtype() == int32);
}

TEST_CASE("no op, input, stream or buffer of the device is 64-bit") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const Tensor x = constant(HostTensor({1.f, 2.f}), "x");
  CHECK_THROWS_WITH_AS(
      ops::cast(x, int64),
      doctest::Contains("Cast: output 'Cast.0' would be [(2,) int64], a host dtype: "
                        "PopXL's devices hold no 64-bit tensors"),
      DTypeError);
  CHECK_THROWS_WITH_AS(ops::init({2}, float64),
                       doctest::Contains("would be [(2,) float64], a host dtype"), DTypeError);
  CHECK_THROWS_WITH_AS(h2d_stream({2}, uint64, "in"),
                       doctest::Contains("h2d_stream 'in' would be [(2,) uint64], a host dtype"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(d2h_stream({2}, float64, "out"),
                       doctest::Contains("d2h_stream 'out' would be [(2,) float64]"), DTypeError);
  CHECK_THROWS_WITH_AS(remote_buffer({2}, int64, 1, "rb"),
                       doctest::Contains("remote_buffer 'rb' would be [(2,) int64], a host dtype"),
                       DTypeError);
  Graph g = ir.create_empty_graph("sub");
  auto in_g = g.scope();
  CHECK_THROWS_WITH_AS(graph_input({3}, int64, "a"),
                       doctest::Contains("graph_input 'a' would be [(3,) int64], a host dtype"),
                       DTypeError);
}

TEST_CASE("remote and replica-sharded variables take downcast too") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const RemoteBuffer rb = remote_buffer({2}, int32, 2, "rb");
  const Tensor r = remote_variable(HostTensor({std::int64_t{5}, std::int64_t{-6}}), rb, 0, "r");
  CHECK(r.dtype() == int32);
  CHECK_THROWS_WITH_AS(
      remote_variable(HostTensor({std::int64_t{5}, std::int64_t{6}}), rb, 1, "r1", false),
      doctest::Contains("remote_variable 'r1' holds [(2,) int64] data with downcast = false"),
      DTypeError);
  const Tensor s = replica_sharded_variable(HostTensor({1.5, 2.5}), "s");
  CHECK(s.dtype() == float32);
  CHECK_THROWS_WITH_AS(replica_sharded_variable(HostTensor({1.5}), "s2", {}, false),
                       doctest::Contains("replica_sharded_variable 's2' holds [(1,) float64] data"),
                       DTypeError);
  Session session(ir, "ipu_model");
  CHECK(session.get_tensor_data(r) == HostTensor({std::int32_t{5}, std::int32_t{-6}}));
  CHECK(session.get_tensor_data(s) == HostTensor({1.5f, 2.5f}));
}

TEST_CASE("int8, int16 and uint16 move and convert, and ops that compute refuse them") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const Tensor a = constant(HostTensor(std::vector<std::int8_t>{1, -2, 3, -4}, {2, 2}), "a");
  const Tensor b = constant(HostTensor(std::vector<std::uint16_t>{1, 2}, {2}), "b");
  CHECK(ops::reshape(a, {4}).dtype() == int8);
  CHECK(ops::cast(a, float32).dtype() == float32);
  CHECK(ops::concat({b, b}, 0).shape() == Shape{4});
  CHECK_THROWS_WITH_AS(a + a,
                       "Add: input 0 'a' [(2, 2) int8] is int8, which Add does not compute on: "
                       "int8, int16 and uint16 are storage dtypes on the device, taken only by "
                       "the ops that move or convert data (cast, copies, reshapes, slices, concat, "
                       "gathers, where, streams, remote buffers); cast to int32 or a float with "
                       "ops::cast to compute",
                       DTypeError);
  // Builders with a dtype rule of their own say it first.
  CHECK_THROWS_WITH_AS(ops::sum(b),
                       "ReduceSum: expected a float32, float16 or int32 tensor, got 'b' [(2,) "
                       "uint16]",
                       DTypeError);
  CHECK_THROWS_WITH_AS(ops::equal(b, b), doctest::Contains("Equal: input 0 'b'"), DTypeError);
  const Tensor x = constant(HostTensor({1.f, 2.f}), "x");
  CHECK_THROWS_WITH_AS(ops::greater(ops::cast(x, int16), ops::cast(x, int16)),
                       doctest::Contains("is int16, which Greater does not compute on"),
                       DTypeError);
}

} // namespace test_dtypes

namespace test_dtypes {

TEST_CASE("int8, int16 and uint16 travel through streams, variables and remote buffers") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const auto in = h2d_stream({2, 3}, int8, "in");
  const auto out = d2h_stream({3, 2}, int8, "out");
  const auto wide = d2h_stream({6}, int16, "wide");
  const RemoteBuffer rb = remote_buffer({6}, int16, 1, "rb");
  const Tensor v = variable(HostTensor({6}, int16), "v");
  const Tensor counts = variable(HostTensor(std::vector<std::uint16_t>{65535, 1}, {2}), "counts");
  const Tensor x = ops::host_load(in);
  ops::host_store(out, ops::transpose(x));
  ops::remote_store(rb, 0, ops::cast(ops::reshape(x, {6}), int16));
  const Tensor loaded = ops::remote_load(rb, 0);
  ops::var_updates::copy_var_update_(v, loaded);
  ops::host_store(wide, loaded);
  Session session(ir, "ipu_model", {.workers = 2});
  auto attached = session.attach();
  const HostTensor data(std::vector<std::int8_t>{-128, -1, 0, 1, 2, 127}, {2, 3});
  const auto got = session.run({{in, data}});
  CHECK(got.at(out) == HostTensor(std::vector<std::int8_t>{-128, 1, -1, 2, 0, 127}, {3, 2}));
  const HostTensor as_int16(std::vector<std::int16_t>{-128, -1, 0, 1, 2, 127}, {6});
  CHECK(got.at(wide) == as_int16);
  CHECK(session.get_tensor_data(v) == as_int16);
  CHECK(session.get_tensor_data(counts) == HostTensor(std::vector<std::uint16_t>{65535, 1}, {2}));
  CHECK_THROWS_WITH_AS(session.run({{in, data.astype(int32)}}),
                       doctest::Contains("input stream 'in' needs int8 data, got int32"),
                       DTypeError);
}

} // namespace test_dtypes
