// Benchmark: how Session construction (compiling an Ir for the emulator) scales with the op
// count and with the replication factor, and how autodiff scales with the op count. Prints
// medians and the ratios the emulator is held to (100k ops under 1 s and within 5x of 25k;
// replication 8 within 1.5x of replication 1, at 5k and 25k ops); asserts nothing. Each
// configuration is built once untimed first, so that no ratio compares a cold allocator and
// cache with a warm one.
#include <pxl/pxl.hpp>
#include <pxl/session.hpp>
#include <pxl/transforms/autodiff.hpp>

#include "sgemm_peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <vector>

namespace {

double median_s(int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[static_cast<std::size_t>(reps / 2)];
}

/// A main graph of `n` element-wise ops in a chain, between a host_load and a host_store. At
/// 16 KiB of code per op, 100k ops do not fit one IPU: the sessions allow out-of-memory plans.
std::unique_ptr<pxl::Ir> chain(std::int64_t n, std::int64_t replicas) {
  auto ir = std::make_unique<pxl::Ir>(replicas);
  auto in_main = ir->main_graph().scope();
  pxl::Tensor x = pxl::ops::host_load(pxl::h2d_stream({16}, pxl::float32, "x"));
  for (std::int64_t i = 0; i < n; ++i)
    x = -x;
  pxl::ops::host_store(pxl::d2h_stream({16}, pxl::float32, "y"), x);
  return ir;
}

double compile_time(std::int64_t n, std::int64_t replicas) {
  const auto ir = chain(n, replicas);
  const auto construct = [&] {
    pxl::Session s(*ir, "ipu_model", {.workers = 1, .allow_out_of_memory = true});
  };
  construct(); // warm-up, untimed
  return median_s(5, construct);
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Times {
  double wall, cpu;
};

/// Medians of 5 autodiffs of a chain of `n` tanh ops: wall time, and this thread's CPU time
/// (the transform's own work, whatever else runs on the machine).
Times autodiff_time(std::int64_t n) {
  std::vector<double> t, cpu;
  for (int rep = 0; rep < 5; ++rep) {
    pxl::Ir ir;
    auto g = ir.create_graph(
        "chain",
        [n](pxl::Tensor x) {
          for (std::int64_t i = 0; i < n; ++i)
            x = pxl::ops::tanh(x);
          return x;
        },
        pxl::TensorSpec{{16}, pxl::float32});
    const double c0 = cpu_seconds();
    t.push_back(median_s(1, [&] { (void)pxl::transforms::autodiff(g); }));
    cpu.push_back(cpu_seconds() - c0);
  }
  std::ranges::sort(t);
  std::ranges::sort(cpu);
  return {t[2], cpu[2]};
}

} // namespace

int main() {
  pxl::bench::print_sgemm_peak(); // for comparing machines: compile times are not a fraction of it
  const double t25 = compile_time(25'000, 1), t100 = compile_time(100'000, 1);
  std::printf("Session construction, chain of  25k element-wise ops: %.3f s (median of 5)\n", t25);
  std::printf("Session construction, chain of 100k element-wise ops: %.3f s (median of 5)\n", t100);
  std::printf("  ratio 100k / 25k: %.2f (goal: <= 5; linear is 4), 100k under 1 s: %s\n",
              t100 / t25, t100 < 1.0 ? "yes" : "NO");
  for (const std::int64_t n : {5'000, 25'000}) {
    const double r1 = compile_time(n, 1), r8 = compile_time(n, 8);
    std::printf("Session construction, %lldk ops, replication 1: %.3f s, replication 8: %.3f s\n",
                static_cast<long long>(n / 1000), r1, r8);
    std::printf("  ratio replication 8 / 1: %.2f (goal: <= 1.5)\n", r8 / r1);
  }
  const Times a30 = autodiff_time(30'000);
  std::printf("autodiff of a chain of 30k tanh ops: %.3f s wall, %.3f s CPU (medians of 5; goal: "
              "< 0.3 s)\n",
              a30.wall, a30.cpu);
}
