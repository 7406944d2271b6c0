// Benchmark: the fixed cost of Session::run on a trivial graph, and the forward time of a
// 784-512-512-512-10 gelu MLP at batch 8 and 128 with the fraction of the SGEMM peak it
// reaches. Prints medians and the heap allocations of one run_with_outputs (the plan
// preallocates everything, so this should be 0); asserts nothing.
#include "../support/allocation_counter.hpp"

#include <pxl/pxl.hpp>

#include "sgemm_peak.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <vector>

namespace {

/// Heap allocations made by one call of `fn`.
long allocations_of(const std::function<void()>& fn) {
  const long before = pxl::testing::process_allocations.load();
  fn();
  return pxl::testing::process_allocations.load() - before;
}

double median_us(int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  t.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[static_cast<std::size_t>(reps / 2)];
}

void trivial(unsigned workers) {
  pxl::Ir ir;
  pxl::HostToDeviceStream x;
  {
    auto in_main = ir.main_graph().scope();
    x = pxl::h2d_stream({4}, pxl::float32, "x");
    pxl::ops::host_store(pxl::d2h_stream({4}, pxl::float32, "y"), pxl::ops::host_load(x) + 1.0);
  }
  pxl::Session s(ir, "ipu_model", {.workers = workers});
  auto attached = s.attach();
  const pxl::StreamInputs in{{x, pxl::HostTensor({4}, pxl::float32)}};
  auto out = s.create_host_outputs();
  for (int i = 0; i < 200; ++i)
    s.run_with_outputs(in, out);
  std::printf("run() overhead, trivial graph, %u worker(s): %.2f us (median of 5000), %ld "
              "allocations per run_with_outputs\n",
              s.num_workers(), median_us(5000, [&] { s.run_with_outputs(in, out); }),
              allocations_of([&] { s.run_with_outputs(in, out); }));
}

void mlp(std::int64_t batch, unsigned workers, double peak) {
  pxl::Ir ir;
  pxl::HostToDeviceStream x;
  {
    auto in_main = ir.main_graph().scope();
    x = pxl::h2d_stream({batch, 784}, pxl::float32, "x");
    pxl::Tensor h = pxl::ops::host_load(x);
    const std::int64_t sizes[] = {784, 512, 512, 512, 10};
    for (int l = 0; l < 4; ++l) {
      pxl::HostTensor w({sizes[l], sizes[l + 1]}, pxl::float32);
      for (auto& v : w.data<float>())
        v = 0.01f;
      h = pxl::ops::matmul(h, pxl::variable(w)) +
          pxl::variable(pxl::HostTensor({sizes[l + 1]}, pxl::float32));
      if (l < 3)
        h = pxl::ops::gelu(h);
    }
    pxl::ops::host_store(pxl::d2h_stream({batch, 10}, pxl::float32, "y"), h);
  }
  pxl::Session s(ir, "ipu_model", {.workers = workers});
  auto attached = s.attach();
  const pxl::StreamInputs in{{x, pxl::HostTensor({batch, 784}, pxl::float32)}};
  auto out = s.create_host_outputs();
  for (int i = 0; i < 20; ++i)
    s.run_with_outputs(in, out);
  const double us = median_us(200, [&] { s.run_with_outputs(in, out); });
  const double flops =
      2.0 * static_cast<double>(batch) * (784 * 512 + 512 * 512 + 512 * 512 + 512 * 10);
  std::printf("MLP 784-512-512-512-10 forward, batch %3lld, %u worker(s): %.1f us (median of "
              "200), %.1f%% of peak\n",
              static_cast<long long>(batch), s.num_workers(), us,
              pxl::bench::percent_of_peak(flops / (us * 1e-6), peak, s.num_workers()));
}

} // namespace

int main() {
  // Overheads are not a fraction of the peak; the MLP's forward times are.
  const double peak = pxl::bench::print_sgemm_peak();
  for (unsigned w : {1u, 0u})
    trivial(w);
  for (std::int64_t batch : {8, 128})
    for (unsigned w : {1u, 0u})
      mlp(batch, w, peak);
}
