// Small Irs shared by the emulator's tests.
#pragma once

#include "pxl/pxl.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pxl::test_emu {

/// y = x + w for a (2, 3) float32 stream x and variable w = 0.5 * [0..6); y goes to "y".
struct AddProgram {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;
  Tensor w;

  explicit AddProgram(std::int64_t num_host_transfers = 1) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({2, 3}, float32, "x");
    y = d2h_stream({2, 3}, float32, "y");
    w = variable(HostTensor({0.f, .5f, 1.f, 1.5f, 2.f, 2.5f}, {2, 3}), "w");
    ops::host_store(y, ops::host_load(x) + w);
    ir.set_num_host_transfers(num_host_transfers);
  }
};

/// y = the all-reduce (add) over the replicas of x, a (n) float32 stream, on `replicas`
/// replicas: the smallest program whose replicas must meet.
struct AllReduceProgram {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;

  explicit AllReduceProgram(std::int64_t replicas, std::int64_t n = 2) : ir(replicas) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({n}, float32, "x");
    y = d2h_stream({n}, float32, "y");
    ops::host_store(y, ops::collectives::replicated_all_reduce(ops::host_load(x)));
  }
};

/// What a LoopProgram builds.
struct LoopOptions {
  std::int64_t steps = 1;     ///< iterations of the device loop
  std::int64_t transfers = 0; ///< num_host_transfers; 0: one per step
  Shape shape{1};             ///< the shape of x and y
  std::int64_t replicas = 1;
  /// What a step stores to y, given what it loaded from x.
  std::function<Tensor(const Tensor&)> step = [](const Tensor& x) { return x * 10.0; };
};

/// A device loop of `options.steps` steps, each loading float32 stream x and storing
/// options.step(x) to float32 stream y: the smallest program that streams every step.
struct LoopProgram {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;

  explicit LoopProgram(const LoopOptions& options) : ir(options.replicas) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream(options.shape, float32, "x");
    y = d2h_stream(options.shape, float32, "y");
    auto body = ir.create_graph([&] { ops::host_store(y, options.step(ops::host_load(x))); });
    ops::repeat(body, options.steps, {});
    ir.set_num_host_transfers(options.transfers > 0 ? options.transfers : options.steps);
  }
};

/// Deterministic values in [-1, 1) of `spec`'s shape and dtype.
inline HostTensor pattern(const TensorSpec& spec, int salt) {
  HostTensor f(spec.shape, float32);
  auto d = f.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>((static_cast<int>(i) * 37 + salt * 11) % 41) / 20.5f - 1.0f;
  return spec.dtype == float32 ? f : f.astype(spec.dtype);
}

/// Runs `ir`'s main graph with `inputs` on `workers` workers.
inline StreamOutputs run_on(Ir& ir, unsigned workers, const StreamInputs& inputs) {
  Session s(ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  auto attached = s.attach();
  return s.run(inputs);
}

/// Whether the memory report maps a tensor of id `name`.
inline bool has_tensor(const emu::MemoryReport& r, const std::string& name) {
  return std::ranges::any_of(r.tensors, [&](const auto& t) { return t.id == name; });
}

inline HostTensor iota(Shape shape, float start = 0.f) {
  HostTensor t(std::move(shape), float32);
  auto d = t.data<float>();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = start + static_cast<float>(i);
  return t;
}

/// Runs `fn` on its own thread and waits up to `limit`; a case that does not finish has hung,
/// and the whole test binary exits with a message instead of hanging CI.
inline void finishes_within(std::chrono::seconds limit, std::function<void()> fn) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([done, fn = std::move(fn)] {
    try {
      fn();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  if (finished.wait_for(limit) == std::future_status::timeout) {
    std::fprintf(stderr, "test hung: not finished within %lld s\n",
                 static_cast<long long>(limit.count()));
    std::_Exit(1);
  }
  finished.get(); // rethrows what fn threw, for doctest to report
}

/// An observer that throws ValueError("observer gave up") when shown its second step.
struct ThrowingObserver final : emu::StepObserver {
  int calls = 0;
  void on_step(const emu::StepInfo&, const emu::StepTiming&, std::int64_t) override {
    if (++calls == 2)
      throw ValueError("observer gave up");
  }
};

/// A kernel step of `k` for the cost model: its flops, bytes read and written, and dtype.
/// A MatMul step of (m, k) @ (k, n) as compile_program describes it, with its product's shape.
inline emu::StepInfo matmul_step(std::int64_t m, std::int64_t k, std::int64_t n,
                                 DType dtype = float32) {
  const auto e = static_cast<std::int64_t>(size_of(dtype));
  emu::StepInfo i;
  i.kind = emu::StepKind::kernel;
  i.op = OpId{0};
  i.op_kind = OpKind::MatMul;
  i.flops = 2 * m * k * n;
  i.bytes_read = (m * k + k * n) * e;
  i.bytes_written = m * n * e;
  i.dtype = dtype;
  i.amp = emu::AmpShape{
      .extent = {m, n, k}, .elements = {k * n, m * k, m * n}, .contracted = 2, .operands = dtype};
  return i;
}

inline emu::StepInfo kernel_step(OpKind k, std::int64_t flops, std::int64_t read,
                                 std::int64_t written, DType dtype = float32) {
  emu::StepInfo i;
  i.kind = emu::StepKind::kernel;
  i.op = OpId{0};
  i.op_kind = k;
  i.flops = flops;
  i.bytes_read = read;
  i.bytes_written = written;
  i.dtype = dtype;
  return i;
}

/// A GC200 cut to 4 tiles of 64 KiB, each code size `code_bytes`: small enough that a test's
/// tensors fill its tiles.
inline emu::Target four_small_tiles(std::int64_t code_bytes) {
  auto target = emu::ipu2();
  target.tiles_per_ipu = 4;
  target.bytes_per_tile = 64 * 1024;
  target.vertex_code_bytes = target.vertex_state_bytes = target.control_code_bytes =
      target.exchange_code_bytes = code_bytes;
  return target;
}

/// x -> relu(x @ w) in a called graph, stored: one (8, 64) @ (64, 32) matmul per step, in a
/// loop of `steps` steps fed through the stream x.
struct MatMulProgram {
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;
  Graph layer;

  explicit MatMulProgram(std::int64_t steps = 1) {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({8, 64}, float32, "x");
    y = d2h_stream({8, 32}, float32, "y");
    auto w = variable(HostTensor::full({64, 32}, float32, 0.01), "w");
    layer = ir.create_graph(
        "layer", [](Tensor t, Tensor wt) { return ops::relu(ops::matmul(t, wt)); },
        TensorSpec{{8, 64}, float32}, w);
    Graph step = ir.create_empty_graph("step");
    {
      auto scope = step.scope();
      auto wi = graph_input(w.spec(), "w", /*by_ref=*/true);
      ops::host_store(y, ops::call(layer, {ops::host_load(x), wi})[0]);
    }
    ops::repeat(step, steps, {w});
    ir.set_num_host_transfers(steps);
  }
};

/// In the main graph of `ir`: `n` tensors of 1 GiB made by ops::init (no host data), each
/// summed to a scalar, the sums added and stored: a model larger than the host's memory.
inline void sums_of_large_tensors(Ir& ir, int n) {
  auto in_main = ir.main_graph().scope();
  Tensor acc;
  for (int i = 0; i < n; ++i) {
    auto s = ops::sum(ops::init({std::int64_t{1} << 28}, float32, "t" + std::to_string(i)));
    acc = i == 0 ? s : acc + s;
  }
  ops::host_store(d2h_stream({}, float32, "y"), acc);
}

} // namespace pxl::test_emu
