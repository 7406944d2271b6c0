// The machine's measured SGEMM peak, which every benchmark prints beside its figures so that
// figures from different machines compare: a fraction of the peak travels, steps/s do not.
#pragma once

#include <pxl/pxl.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>

namespace pxl::bench {

/// The emulator's float32 matmul throughput on one worker, in GFLOP/s of CPU time: the best
/// of `reps` runs of eight independent 512x512x512 products (oneDNN's sgemm at a size it runs at
/// its best; the MNIST MLP's hidden layers at batch 512).
inline double sgemm_peak_gflops(int reps = 10) {
  constexpr std::int64_t n = 512;
  constexpr int products = 8;
  Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    const Tensor a = variable(HostTensor::full({n, n}, float32, 0.01));
    const Tensor b = variable(HostTensor::full({n, n}, float32, 0.02));
    Tensor last;
    for (int i = 0; i < products; ++i)
      last = ops::matmul(a, b);
    ops::host_store(d2h_stream(last.shape(), last.dtype(), "out"), last);
  }
  Session s(ir, "ipu_model", {.workers = 1});
  auto attached = s.attach();
  auto out = s.create_host_outputs();
  s.run_with_outputs({}, out);
  // One worker runs on this thread, so its CPU time is the run's, however busy the machine.
  const auto cpu_seconds = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const double t0 = cpu_seconds();
    s.run_with_outputs({}, out);
    best = std::max(best, 2.0 * n * n * n * products / (cpu_seconds() - t0) * 1e-9);
  }
  return best;
}

/// Measures and prints the peak ("SGEMM peak: ... GFLOP/s per worker ..."); returns it.
inline double print_sgemm_peak(int reps = 10) {
  const double peak = sgemm_peak_gflops(reps);
  std::printf("SGEMM peak: %.1f GFLOP/s per worker (emulator float32 matmul 512x512x512, one "
              "worker, CPU time, best of %d)\n",
              peak, reps);
  return peak;
}

/// Percent of `workers` workers' peak that `flops_per_second` reaches.
inline double percent_of_peak(double flops_per_second, double peak_gflops, unsigned workers) {
  return 100.0 * flops_per_second / (peak_gflops * 1e9 * workers);
}

} // namespace pxl::bench
