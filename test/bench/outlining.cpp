// Outlining against inlining, as Graphcore's outlined-functions guide weighs them: a stack of
// identical layers (x = gelu(x @ w_k + b_k)) built from one graph called once per layer,
// compiled outlined (the graph's code once, its arguments copied in and out at every call,
// where they cannot alias) or inlined (the graph's steps expanded at every call site). Prints
// the memory report's code and peak and the cost model's estimated device time per run for
// both, and their ratios; then the emulator's host time per run. Asserts nothing.
//
//     build/test/bench/outlining [--layers 8] [--width 256] [--batch 16] [--reps 5]
#include "flags.hpp"
#include "sgemm_peak.hpp"

#include "pxl/pxl.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

struct Result {
  pxl::emu::IpuMemory memory;
  double device_us = 0; ///< estimated, per run
  double host_us = 0;   ///< measured, median per run
};

Result measure(bool inlined, std::int64_t layers, std::int64_t width, std::int64_t batch,
               int reps) {
  using namespace pxl;
  Ir ir;
  HostToDeviceStream x;
  DeviceToHostStream y;
  {
    auto in_main = ir.main_graph().scope();
    x = h2d_stream({batch, width}, float32, "x");
    y = d2h_stream({batch, width}, float32, "y");
    const TensorSpec act{{batch, width}, float32}, w{{width, width}, float32}, b{{width}, float32};
    Graph layer = ir.create_graph(
        "layer", [](Tensor t, Tensor wt, Tensor bt) { return ops::gelu(ops::matmul(t, wt) + bt); },
        act, w, b);
    Tensor h = ops::host_load(x);
    for (std::int64_t k = 0; k < layers; ++k) {
      auto wk = variable(HostTensor::full(w.shape, float32, 0.01), "w" + std::to_string(k));
      auto bk = variable(HostTensor(b), "b" + std::to_string(k));
      h = ops::call(layer, {h, wk, bk}, {}, {.inline_graph = inlined})[0];
    }
    ops::host_store(y, h);
  }
  Session s(ir, "ipu_model", {.workers = 1, .profile = true});
  auto attached = s.attach();
  const StreamInputs in{{x, HostTensor::full({batch, width}, float32, 0.5)}};
  s.run(in); // warm-up
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    s.run(in);
    times.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::ranges::sort(times);
  const emu::Profile p = s.profile();
  return {s.memory_report().ipus[0], p.seconds() * 1e6 / static_cast<double>(p.runs),
          times[times.size() / 2]};
}

} // namespace

int main(int argc, char** argv) {
  std::int64_t layers = 8, width = 256, batch = 16;
  int reps = 5;
  bench::Flags flags("Outlined against inlined calls: code, memory and estimated time");
  flags.option("--layers", layers, "Calls of the layer graph", 1)
      .option("--width", width, "Features per layer", 1)
      .option("--batch", batch, "Rows per run", 1)
      .option("--reps", reps, "Timed runs (the median is printed)", 1);
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;
  pxl::bench::print_sgemm_peak();
  const Result out = measure(false, layers, width, batch, reps);
  const Result in = measure(true, layers, width, batch, reps);
  std::printf("%lld calls of gelu(x @ w + b), x (%lld, %lld) float32, on ipu2:\n",
              static_cast<long long>(layers), static_cast<long long>(batch),
              static_cast<long long>(width));
  std::printf("%-9s %6s %12s %12s %12s %14s %12s %12s\n", "", "steps", "code B", "vertex st B",
              "control B", "not-alw-live B", "device us", "host us");
  for (const auto& [name, r] : {std::pair{"outlined", out}, std::pair{"inlined", in}})
    std::printf("%-9s %6lld %12lld %12lld %12lld %14lld %12.2f %12.1f\n", name,
                static_cast<long long>(r.memory.steps), static_cast<long long>(r.memory.code()),
                static_cast<long long>(r.memory.vertex_state),
                static_cast<long long>(r.memory.control_code),
                static_cast<long long>(r.memory.not_always_live_peak), r.device_us, r.host_us);
  std::printf("outlined / inlined: code %.2f, not-always-live peak %.2f, estimated device time "
              "%.2f, host time %.2f\n",
              static_cast<double>(out.memory.code()) / static_cast<double>(in.memory.code()),
              static_cast<double>(out.memory.not_always_live_peak) /
                  static_cast<double>(in.memory.not_always_live_peak),
              out.device_us / in.device_us, out.host_us / in.host_us);
  return 0;
}
