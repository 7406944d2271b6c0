// run_with_outputs allocates nothing: every buffer is planned and preallocated. This file
// replaces the global operator new of the test binary to count allocations.
#include "helpers.hpp"

#include "../support/allocation_counter.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

using namespace pxl;

TEST_CASE("run_with_outputs allocates nothing: replicas, transfers, inlined and outlined calls") {
  Ir ir(2);
  HostToDeviceStream x;
  DeviceToHostStream y;
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({4, 8}, float32, "x");
    y = d2h_stream({4, 8}, float32, "y");
    auto w = variable(HostTensor({4, 8}, float32), "w");
    Graph f = ir.create_graph([](Tensor t) { return ops::gelu(t * 2.0) + 1.0; },
                              TensorSpec{{4, 8}, float32});
    Graph body = ir.create_empty_graph("body");
    {
      auto in_body = body.scope();
      auto wi = graph_input({4, 8}, float32, "w", /*by_ref=*/true);
      auto h = ops::call(f, {ops::host_load(x)}, {}, {.inline_graph = true})[0];
      ops::host_store(y, ops::call(f, {h + wi})[0]);
      ops::add_(wi, h);
    }
    ops::repeat(body, 3, {w});
    ir.set_num_host_transfers(3);
  }
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
    auto attached = s.attach();
    const StreamInputs in{{x, test_emu::iota({3, 2, 4, 8}, -30.f)}};
    auto out = s.create_host_outputs();
    s.run_with_outputs(in, out); // warm-up: thread-local state of the workers and libraries
    const long before = testing::process_allocations.load();
    s.run_with_outputs(in, out);
    s.run_with_outputs(in, out);
    CHECK(testing::process_allocations.load() - before == 0);
    CHECK(out.at(y).shape() == Shape{3, 2, 4, 8});
    // The runs did something: the last run's outputs are not all zero.
    CHECK(std::any_of(out.at(y).data<float>().begin(), out.at(y).data<float>().end(),
                      [](float v) { return v != 0.f; }));
  }
}

TEST_CASE("emu::estimate allocates none of a model's 40 GiB of tensors") {
  // 40 tensors of 1 GiB, each summed: the estimate plans and prices them; all it allocates
  // in all (the Ir's view, the plan, the report) is far below one tensor's storage.
  Ir ir;
  test_emu::sums_of_large_tensors(ir, 40);
  const long long before = testing::process_allocated_bytes.load();
  const emu::IrEstimate e = emu::estimate(ir, emu::ipu2());
  const long long allocated = testing::process_allocated_bytes.load() - before;
  CHECK(allocated < (std::int64_t{16} << 20));
  CHECK_FALSE(e.memory.fits());
  CHECK(e.memory.ipus[0].not_always_live_peak >= std::int64_t{1} << 30);
}
