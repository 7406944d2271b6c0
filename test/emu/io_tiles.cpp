// IO tiles (PopXL's io_tiles(), PopART's numIOTiles, emu::Target::io_tiles): where ops and
// tensors go, what the emulator refuses, that results do not change, that the IO tiles hold
// their tensors, and that their transfers overlap the compute tiles' work in the estimate.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <numeric>
#include <optional>

namespace test_io_tiles {

using namespace pxl;
using doctest::Contains;

constexpr std::int64_t elements = 1 << 16;

emu::Target with_io_tiles(std::int64_t io) {
  emu::Target t = emu::ipu2();
  t.io_tiles = io;
  return t;
}

TEST_CASE("io_tiles(): ops, their outputs and the tensors made in it are on the IO tiles") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const Tensor w = variable(HostTensor(std::vector<float>{1, 2, 3}, {3}), "w");
  CHECK(w.tile_set() == TileSet::compute);
  CHECK(current_tile_set() == TileSet::compute);
  Tensor on_io, v;
  {
    auto io = io_tiles();
    CHECK(current_tile_set() == TileSet::io);
    v = variable(HostTensor(std::vector<float>{4, 5, 6}, {3}), "v");
    on_io = v * 2.0;
  }
  CHECK(current_tile_set() == TileSet::compute);
  CHECK(v.tile_set() == TileSet::io);
  CHECK(on_io.tile_set() == TileSet::io);
  CHECK(on_io.producer()->tile_set() == TileSet::io);
  CHECK(tile_set_name(on_io.tile_set()) == "io");
  // io_tile_copy goes to the other tile set, whatever scope is open (as PopXL places it).
  const Tensor back = ops::io_tile_copy(on_io);
  CHECK(back.tile_set() == TileSet::compute);
  CHECK(back.producer()->tile_set() == TileSet::compute);
  {
    auto io = io_tiles();
    CHECK(ops::io_tile_copy(back).tile_set() == TileSet::io);
  }
  CHECK(ops::io_tile_copy(w).tile_set() == TileSet::io);
  // An op may read a tensor of the other tile set (through a copy PopART would insert).
  CHECK((w + v).tile_set() == TileSet::compute);
}

TEST_CASE("io_tiles(): autodiff makes an op's gradient on its tile set; a call's outputs are "
          "where its graph returns them") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const Graph f = ir.create_graph(
      "f",
      [](const Tensor& x) {
        Tensor y;
        {
          auto io = io_tiles();
          y = x * x;
        }
        return ops::io_tile_copy(y) * 3.0;
      },
      TensorSpec{{4}, float32});
  CHECK(f.outputs()[0].tile_set() == TileSet::compute);
  const auto info = transforms::autodiff(f);
  bool io_grad = false;
  for (const Op& op : info.graph().ops())
    if (op.kind() == OpKind::Mul && op.tile_set() == TileSet::io)
      io_grad = true;
  CHECK(io_grad); // the gradient of x·x, on the IO tiles as x·x is

  const Graph g = ir.create_graph(
      "g",
      [](const Tensor& x) {
        auto io = io_tiles();
        return x + 1.0;
      },
      TensorSpec{{4}, float32});
  const Tensor y = ops::call(g, {ops::init({4}, float32)})[0];
  CHECK(y.tile_set() == TileSet::io);
}

/// The next element of `in`, loaded on the IO tiles or on the compute tiles.
Tensor load(const HostToDeviceStream& in, bool on_io) {
  std::optional<TileSetScope> io;
  if (on_io)
    io.emplace(io_tiles());
  return ops::host_load(in);
}

/// Loads a vector and stores its double: on the IO tiles, copied to the compute tiles for the
/// product, or on the compute tiles throughout.
struct Program {
  Ir ir;
  HostToDeviceStream in;
  DeviceToHostStream out;
  explicit Program(bool on_io) {
    auto in_main = ir.main_graph().scope();
    in = h2d_stream({elements}, float32, "in");
    out = d2h_stream({elements}, float32, "out");
    const Tensor x = load(in, on_io);
    ops::host_store(out, (on_io ? ops::io_tile_copy(x) : x) * 2.0);
  }
};

TEST_CASE("IO tiles: refused without them, and a target's count is checked") {
  Program p(true);
  CHECK_THROWS_WITH_AS(Session(p.ir, "ipu_model"),
                       Contains("runs on the IO tiles (it was created in io_tiles()), but target "
                                "'ipu2' has none; set Target::io_tiles"),
                       SessionError);
  CHECK_THROWS_WITH_AS((void)emu::estimate(p.ir, emu::ipu2()), Contains("has none"), SessionError);
  for (const std::int64_t bad : {std::int64_t{-1}, std::int64_t{1472}}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS((void)emu::estimate(p.ir, with_io_tiles(bad)),
                         Contains("Target::io_tiles must be 0 to tiles_per_ipu - 1"), SessionError);
  }
}

TEST_CASE("IO tiles: results unchanged; the IO tiles hold their tensors and code") {
  std::vector<float> values(elements);
  std::iota(values.begin(), values.end(), -100.0F);
  const HostTensor x(values, {elements});
  Program plain(false), io(true);
  Session a(plain.ir, with_io_tiles(64)), b(io.ir, with_io_tiles(64));
  auto on_a = a.attach();
  auto on_b = b.attach();
  const HostTensor ya = a.run({{plain.in, x}}).at(plain.out);
  CHECK(b.run({{io.in, x}}).at(io.out) == ya);
  CHECK(ya.data<float>()[3] == -194.0F);

  // The loaded vector (256 KiB) lives on the last 64 tiles, the IO tiles, with the IO program;
  // without it nothing does.
  const auto on_io_tiles = [](const emu::MemoryReport& r) {
    const auto& tiles = r.ipus.at(0).tiles;
    REQUIRE(tiles.size() == 1472);
    return std::accumulate(tiles.end() - 64, tiles.end(), std::int64_t{0});
  };
  CHECK(on_io_tiles(a.memory_report()) == 0);
  CHECK(on_io_tiles(b.memory_report()) >= elements * 4);
}

/// A loop of `trips` iterations, each loading the next vector while computing on the one
/// loaded before (PopXL's software-pipelined overlapped IO): the load on the IO tiles or not.
Ir overlapped_loop(bool on_io, std::int64_t trips) {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const HostToDeviceStream in = h2d_stream({elements}, float32, "in");
  const Graph body = ir.create_empty_graph("body");
  {
    auto in_body = body.scope();
    const Tensor current = graph_input({elements}, float32, "current");
    const Tensor next = load(in, on_io);
    Tensor y = current;
    for (int k = 0; k < 40; ++k)
      y = ops::tanh(y);
    graph_output(ops::io_tile_copy(next) + y * 0.0);
  }
  ops::repeat(body, trips, {ops::init({elements}, float32)});
  ir.set_num_host_transfers(trips);
  return ir;
}

TEST_CASE("IO tiles: a load on them overlaps the compute tiles' work in the estimate") {
  const emu::Target t = with_io_tiles(128);
  const emu::IrEstimate serial = emu::estimate(overlapped_loop(false, 8), t);
  const emu::IrEstimate overlapped = emu::estimate(overlapped_loop(true, 8), t);
  // The same work, but the loads' host time runs beside the tanh chain: each iteration takes
  // the longer of the two (and the copy), not their sum.
  CHECK(overlapped.run.host == serial.run.host);
  const std::int64_t loads = serial.run.host - emu::round_trip_cycles(t);
  CHECK(loads > 0);
  MESSAGE("elapsed cycles: load on the compute tiles "
          << serial.elapsed_cycles << ", on the IO tiles " << overlapped.elapsed_cycles
          << "; loads " << loads);
  CHECK(overlapped.elapsed_cycles < serial.elapsed_cycles);
  CHECK(serial.elapsed_cycles - overlapped.elapsed_cycles > loads / 2);
}

} // namespace test_io_tiles
