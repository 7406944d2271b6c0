// Benchmark: float16 kernels against the same ops in float32 on one worker (median thread CPU
// time per op over 100 runs of a chain of 8): the kernels of the MNIST MLP's mixed-precision
// training step (forward, backward, SGD update, the casts around the float32 loss). float16
// computes in float, so the ratio is the cost of the half conversions. Prints; asserts
// nothing.
#include <pxl/pxl.hpp>
#include <pxl/session.hpp>

#include "sgemm_peak.hpp"

#include <algorithm>
#include <cstdint>
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

constexpr int chain = 8;

/// Median CPU time in µs per op of a main graph of `chain` ops built by `op` from a variable of
/// `shape` and `dtype`.
double time_chain(pxl::Shape shape, pxl::DType dtype,
                  const std::function<pxl::Tensor(pxl::Tensor)>& op) {
  pxl::Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    pxl::Tensor h = pxl::variable(pxl::HostTensor::full(shape, dtype, 0.5));
    for (int i = 0; i < chain; ++i)
      h = op(h);
    pxl::ops::host_store(pxl::d2h_stream(h.shape(), h.dtype(), "out"), h);
  }
  pxl::Session s(ir, "ipu_model", {.workers = 1});
  auto attached = s.attach();
  auto out = s.create_host_outputs();
  for (int i = 0; i < 5; ++i)
    s.run_with_outputs({}, out);
  std::vector<double> cpu;
  for (int i = 0; i < 100; ++i) {
    const double c0 = seconds(CLOCK_THREAD_CPUTIME_ID);
    s.run_with_outputs({}, out);
    cpu.push_back(1e6 * (seconds(CLOCK_THREAD_CPUTIME_ID) - c0) / chain);
  }
  std::nth_element(cpu.begin(), cpu.begin() + 50, cpu.end());
  return cpu[50];
}

/// Times `op` in both dtypes; with `flops` (per op), also the fraction of `peak` each reaches.
void compare(const char* what, pxl::Shape shape, const std::function<pxl::Tensor(pxl::Tensor)>& op,
             double flops = 0, double peak = 0) {
  const double f32 = time_chain(shape, pxl::float32, op);
  const double f16 = time_chain(shape, pxl::float16, op);
  std::printf("%-28s float32 %8.1f us  float16 %8.1f us  ratio %5.2f", what, f32, f16, f16 / f32);
  if (flops > 0)
    std::printf("  %%peak float32 %5.1f%%  float16 %5.1f%%",
                pxl::bench::percent_of_peak(flops / (f32 * 1e-6), peak, 1),
                pxl::bench::percent_of_peak(flops / (f16 * 1e-6), peak, 1));
  std::printf("\n");
}

} // namespace

int main() {
  const double peak = pxl::bench::print_sgemm_peak();
  compare("gelu (128, 512)", {128, 512}, [](pxl::Tensor t) { return pxl::ops::gelu(t); });
  compare("tanh (128, 512)", {128, 512}, [](pxl::Tensor t) { return pxl::ops::tanh(t); });
  compare("cast there and back (128, 512)", {128, 512}, [](pxl::Tensor t) {
    const pxl::DType other = t.dtype() == pxl::float32 ? pxl::float16 : pxl::float32;
    return pxl::ops::cast(pxl::ops::cast(t, other), t.dtype());
  });
  compare("sum axis 0, add (128, 512)", {128, 512},
          [](pxl::Tensor t) { return t + pxl::ops::sum(t, std::vector<std::int64_t>{0}, true); });
  compare("sum axis 1, add (128, 512)", {128, 512},
          [](pxl::Tensor t) { return t + pxl::ops::sum(t, std::vector<std::int64_t>{1}, true); });
  compare("scaled_add (512, 512)", {512, 512},
          [](pxl::Tensor t) { return pxl::ops::scaled_add(t, t, {.a = 0.5, .b = 0.25}); });
  compare("add (128, 512) + (128, 512)", {128, 512}, [](pxl::Tensor t) { return t + t; });
  compare("mul by scalar (128, 512)", {128, 512}, [](pxl::Tensor t) { return t * 0.5; });
  compare(
      "matmul 128x512x512", {128, 512},
      [](pxl::Tensor t) {
        return pxl::ops::matmul(
            t, pxl::variable(pxl::HostTensor::full({512, 512}, t.dtype(), 1.0 / 512)));
      },
      2.0 * 128 * 512 * 512, peak);
  compare(
      "matmul 128x512x512, B^T", {128, 512},
      [](pxl::Tensor t) {
        auto w = pxl::variable(pxl::HostTensor::full({512, 512}, t.dtype(), 1.0 / 512));
        return pxl::ops::matmul(t, pxl::ops::transpose(w, {1, 0}));
      },
      2.0 * 128 * 512 * 512, peak);
  compare(
      "matmul 512x128x512, A^T", {128, 512},
      [](pxl::Tensor t) {
        auto m = pxl::ops::matmul(pxl::ops::transpose(t, {1, 0}), t); // [512, 512]
        return pxl::ops::slice(m, {0, 0}, {128, 512});
      },
      2.0 * 128 * 512 * 512, peak);
  // The main job's batch-8 layers (784 -> 512 -> 784 ...): the product is small, so the
  // weight's conversion to float for sgemm is most of a float16 matmul's time.
  // The layer's weight [k, n], or stored transposed [n, k].
  const auto batch8_weight = [](pxl::Tensor t, bool transposed) {
    const std::int64_t k = t.shape()[1], n = k == 784 ? 512 : 784;
    pxl::Tensor w = pxl::variable(pxl::HostTensor::full(
        transposed ? pxl::Shape{n, k} : pxl::Shape{k, n}, t.dtype(), 1.0 / static_cast<double>(k)));
    return transposed ? pxl::ops::transpose(w, {1, 0}) : w;
  };
  compare(
      "matmul 8x784x512, batch 8", {8, 784},
      [&](pxl::Tensor t) { return pxl::ops::matmul(t, batch8_weight(t, false)); },
      2.0 * 8 * 784 * 512, peak);
  compare(
      "matmul 8x784x512, B^T", {8, 784},
      [&](pxl::Tensor t) { return pxl::ops::matmul(t, batch8_weight(t, true)); },
      2.0 * 8 * 784 * 512, peak);
}
