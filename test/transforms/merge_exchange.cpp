// merge_exchange: the scope leaves the graph and the results as they are, and its transfers
// that run one after the other share one sync in the estimated time; outside a graph it is an
// error.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

namespace test_merge_exchange {

using namespace pxl;

struct Outcome {
  std::vector<OpKind> kinds;
  HostTensor result;
  std::int64_t cycles = 0;
};

/// Loads x and y and stores x·y + x, the loads in a merge_exchange scope or not;
/// `interrupted`: x doubled between the two loads.
Outcome run(bool scoped, bool interrupted = false) {
  Ir ir;
  HostToDeviceStream a, b;
  DeviceToHostStream out;
  {
    auto in_main = ir.main_graph().scope();
    a = h2d_stream({8}, float32, "a");
    b = h2d_stream({8}, float32, "b");
    out = d2h_stream({8}, float32, "out");
    Tensor x, y;
    {
      std::optional<transforms::MergeExchangeScope> scope;
      if (scoped) {
        scope.emplace();
        CHECK(scope->graph() == ir.main_graph());
      }
      x = ops::host_load(a);
      if (interrupted)
        x = x * 2.0;
      y = ops::host_load(b);
    }
    ops::host_store(out, x * y + x);
  }
  Outcome o;
  for (const auto& op : ir.main_graph().ops())
    o.kinds.push_back(op.kind());
  Session session{ir, "ipu_model", {.profile = true}};
  auto attached = session.attach();
  std::vector<float> av(8), bv(8);
  for (std::size_t i = 0; i < 8; ++i) {
    av[i] = static_cast<float>(i) - 3.5F;
    bv[i] = 0.25F * static_cast<float>(i);
  }
  o.result = session.run({{a, HostTensor(av, {8})}, {b, HostTensor(bv, {8})}}).at(out);
  o.cycles = session.profile().total.total();
  return o;
}

TEST_CASE("merge_exchange: the transfers stay ops and results are unchanged; consecutive ones "
          "share one sync") {
  const Outcome plain = run(false);
  const Outcome merged = run(true);
  CHECK(merged.kinds == plain.kinds);
  CHECK(merged.result == plain.result);
  CHECK(plain.cycles > 0);
  // The second load continues the first one's exchange: one sync fewer.
  CHECK(merged.cycles == plain.cycles - emu::ipu2().sync_cycles);

  // A load scheduled after other work begins an exchange of its own.
  const Outcome interrupted = run(true, true);
  const Outcome interrupted_plain = run(false, true);
  CHECK(interrupted.result == interrupted_plain.result);
  CHECK(interrupted.cycles == interrupted_plain.cycles);
}

TEST_CASE("io_tile_exchange: its transfers on the IO tiles, merged; other ops refused when it "
          "verifies the overlap") {
  Ir ir;
  auto in_main = ir.main_graph().scope();
  const HostToDeviceStream a = h2d_stream({8}, float32, "a"), b = h2d_stream({8}, float32, "b");
  Tensor x, y;
  {
    auto exchange = transforms::io_tile_exchange();
    x = ops::host_load(a);
    y = ops::host_load(b);
    CHECK(current_tile_set() == TileSet::io);
    CHECK_THROWS_WITH_AS(x + y,
                         doctest::Contains("Add: created in an io_tile_exchange() scope, which "
                                           "takes host and Streaming Memory transfers only"),
                         GraphError);
  }
  CHECK(current_tile_set() == TileSet::compute);
  CHECK(x.tile_set() == TileSet::io);
  const IrView view(ir);
  const auto group = view.exchange_group(IrView::id(*x.producer()));
  REQUIRE(group);
  CHECK(view.exchange_group(IrView::id(*y.producer())) == group);
  // The failed Add left nothing behind: the graph holds the two loads.
  CHECK(ir.main_graph().ops().size() == 2);
  {
    auto unverified = transforms::io_tile_exchange(false);
    CHECK((x * 2.0).tile_set() == TileSet::io);
  }
}

TEST_CASE("merge_exchange needs a current graph") {
  CHECK_THROWS_WITH_AS((void)transforms::merge_exchange(),
                       doctest::Contains("merge_exchange: no current graph"), GraphError);
}

} // namespace test_merge_exchange
