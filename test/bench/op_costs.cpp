// Benchmark: where the MLP forward's time goes. Runs chains of one op kind (matmul at the MLP's
// layer shapes, gelu, the bias add) and the MLP itself on one worker, and prints the median
// cost per op both as wall time and as the calling thread's CPU time (the single worker is the
// calling thread, so CPU time is the work itself, free of time lost to other processes on a
// shared machine). Prints; asserts nothing.
#include <pxl/pxl.hpp>

#include "sgemm_peak.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <vector>

namespace {

double seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Timing {
  double wall_us, cpu_us;
};

/// Medians over `reps` calls of `fn`, after a warm-up.
Timing measure(int reps, const std::function<void()>& fn) {
  for (int i = 0; i < 5; ++i)
    fn();
  std::vector<double> wall, cpu;
  for (int i = 0; i < reps; ++i) {
    const double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_THREAD_CPUTIME_ID);
    fn();
    cpu.push_back(1e6 * (seconds(CLOCK_THREAD_CPUTIME_ID) - c0));
    wall.push_back(1e6 * (seconds(CLOCK_MONOTONIC) - w0));
  }
  const auto mid = static_cast<std::ptrdiff_t>(reps / 2);
  std::nth_element(wall.begin(), wall.begin() + mid, wall.end());
  std::nth_element(cpu.begin(), cpu.begin() + mid, cpu.end());
  return {wall[static_cast<std::size_t>(mid)], cpu[static_cast<std::size_t>(mid)]};
}

/// The SGEMM peak per worker the GFLOP/s figures are compared with (set by main).
double peak_gflops = 0;

pxl::HostTensor filled(pxl::Shape shape, float v) {
  pxl::HostTensor t(std::move(shape), pxl::float32);
  for (auto& x : t.data<float>())
    x = v;
  return t;
}

/// Runs a main graph built by `build` (returning the tensor to store) on one worker; prints
/// the time per op for a graph holding `ops` ops of interest and `flop` float operations each.
void report(const char* what, int ops, double flop, const std::function<pxl::Tensor()>& build) {
  pxl::Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    const pxl::Tensor out = build();
    pxl::ops::host_store(pxl::d2h_stream(out.shape(), out.dtype(), "out"), out);
  }
  pxl::Session s(ir, "ipu_model", {.workers = 1});
  auto attached = s.attach();
  auto out = s.create_host_outputs();
  const Timing t = measure(100, [&] { s.run_with_outputs({}, out); });
  std::printf("%-34s %9.1f us wall %9.1f us cpu", what, t.wall_us / ops, t.cpu_us / ops);
  if (flop > 0)
    std::printf("  %6.1f GFLOP/s (cpu), %5.1f%% of peak", flop / (t.cpu_us / ops) * 1e-3,
                pxl::bench::percent_of_peak(flop / (t.cpu_us / ops) * 1e6, peak_gflops, 1));
  std::printf("\n");
}

void matmul_chain(std::int64_t m, std::int64_t k, std::int64_t n) {
  char what[64];
  std::snprintf(what, sizeof what, "matmul %lldx%lldx%lld", static_cast<long long>(m),
                static_cast<long long>(k), static_cast<long long>(n));
  // Independent products of one variable pair, summed by nothing: each is a full matmul.
  constexpr int reps = 8;
  report(what, reps, 2.0 * static_cast<double>(m * k * n), [&] {
    const pxl::Tensor a = pxl::variable(filled({m, k}, 0.01f));
    const pxl::Tensor b = pxl::variable(filled({k, n}, 0.02f));
    pxl::Tensor last;
    for (int i = 0; i < reps; ++i)
      last = pxl::ops::matmul(a, b);
    return last;
  });
}

void unary_chain(const char* what, pxl::Shape shape,
                 const std::function<pxl::Tensor(pxl::Tensor)>& op) {
  constexpr int reps = 8;
  report(what, reps, 0, [&] {
    pxl::Tensor h = pxl::variable(filled(shape, 0.5f));
    for (int i = 0; i < reps; ++i)
      h = op(h);
    return h;
  });
}

void mlp(std::int64_t batch) {
  char what[64];
  std::snprintf(what, sizeof what, "MLP forward, batch %lld", static_cast<long long>(batch));
  const double flop = 2.0 * static_cast<double>(batch) * (784 * 512 + 2 * 512 * 512 + 512 * 10);
  report(what, 1, flop, [&] {
    pxl::Tensor h = pxl::variable(filled({batch, 784}, 0.5f));
    const std::int64_t sizes[] = {784, 512, 512, 512, 10};
    for (int l = 0; l < 4; ++l) {
      h = pxl::ops::matmul(h, pxl::variable(filled({sizes[l], sizes[l + 1]}, 0.01f))) +
          pxl::variable(filled({sizes[l + 1]}, 0.f));
      if (l < 3)
        h = pxl::ops::gelu(h);
    }
    return h;
  });
}

} // namespace

int main() {
  peak_gflops = pxl::bench::print_sgemm_peak();
  for (std::int64_t batch : {8, 128}) {
    matmul_chain(batch, 784, 512);
    matmul_chain(batch, 512, 512);
    matmul_chain(batch, 512, 10);
    unary_chain(batch == 8 ? "gelu (8, 512)" : "gelu (128, 512)", {batch, 512},
                [](pxl::Tensor t) { return pxl::ops::gelu(t); });
    unary_chain(batch == 8 ? "bias add (8, 512) + (512)" : "bias add (128, 512) + (512)",
                {batch, 512},
                [](pxl::Tensor t) { return t + pxl::variable(filled({t.shape().back()}, 0.25f)); });
    mlp(batch);
  }
}
