// Benchmark: the three convolution kernels (forward, data gradient, weight gradient) and their
// fused forms (forward with bias and ReLU, weight gradient with an SGD update) on the layers of a
// small CNN, float32 and float16, on 1 and 2 workers: median wall time per run of a main graph
// holding the one op (its result summed and stored, a pass over the output), and the fraction of
// the SGEMM peak the convolution's flops reach. Prints; asserts nothing.
#include <pxl/pxl.hpp>
#include <pxl/session.hpp>

#include "sgemm_peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

using Build = std::function<pxl::Tensor(pxl::Tensor x, pxl::Tensor w, pxl::Tensor dy)>;

/// Median wall time in ms of a run of the op `build` makes from variables of the given shapes.
double time_op(const pxl::Shape& xs, const pxl::Shape& ws, const pxl::Shape& ys, pxl::DType d,
               unsigned workers, const Build& build) {
  pxl::Ir ir;
  {
    auto in_main = ir.main_graph().scope();
    const auto x = pxl::variable(pxl::HostTensor::full(xs, d, 0.5));
    const auto w = pxl::variable(pxl::HostTensor::full(ws, d, 0.01));
    const auto dy = pxl::variable(pxl::HostTensor::full(ys, d, 0.25));
    const pxl::Tensor r = pxl::ops::sum(build(x, w, dy));
    pxl::ops::host_store(pxl::d2h_stream(r.shape(), r.dtype(), "out"), r);
  }
  pxl::Session s(ir, "ipu_model", {.workers = workers});
  auto attached = s.attach();
  auto out = s.create_host_outputs();
  for (int i = 0; i < 3; ++i)
    s.run_with_outputs({}, out);
  std::vector<double> ms;
  for (int i = 0; i < 21; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    s.run_with_outputs({}, out);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + 10, ms.end());
  return ms[10];
}

struct Layer {
  const char* name;
  pxl::Shape x, w;
  pxl::ops::ConvOptions o;
};

} // namespace

int main() {
  const double peak = pxl::bench::print_sgemm_peak();
  const std::vector<Layer> layers = {
      {"conv 1->32 3x3, 28x28, batch 32",
       {32, 1, 28, 28},
       {32, 1, 3, 3},
       {.padding = {1, 1, 1, 1}}},
      {"conv 32->64 3x3, 14x14, batch 32",
       {32, 32, 14, 14},
       {64, 32, 3, 3},
       {.padding = {1, 1, 1, 1}}},
      {"conv 64->64 3x3, 56x56, batch 8",
       {8, 64, 56, 56},
       {64, 64, 3, 3},
       {.padding = {1, 1, 1, 1}}},
  };
  for (const auto& l : layers) {
    pxl::Shape ys;
    {
      pxl::Ir ir;
      auto scratch = ir.create_empty_graph("shape");
      auto in_scratch = scratch.scope();
      ys = pxl::ops::conv(pxl::graph_input(l.x, pxl::float32), pxl::graph_input(l.w, pxl::float32),
                          l.o)
               .shape();
    }
    double flops = 2.0 * static_cast<double>(pxl::nelms(ys));
    for (std::size_t i = 1; i < l.w.size(); ++i)
      flops *= static_cast<double>(l.w[i]);
    const auto o = l.o;
    const std::vector<std::pair<const char*, Build>> passes = {
        {"forward",
         [o](pxl::Tensor x, pxl::Tensor w, pxl::Tensor) { return pxl::ops::conv(x, w, o); }},
        {"data gradient",
         [o](pxl::Tensor, pxl::Tensor w, pxl::Tensor dy) {
           return pxl::ops::conv_transpose(dy, w, {.padding = o.padding});
         }},
        {"weight gradient",
         [o, &l](pxl::Tensor x, pxl::Tensor, pxl::Tensor dy) {
           return pxl::ops::conv_weights_grad(dy, x, l.w, o);
         }},
        // The fused forms (the emulator's fused_conv steps): a layer's bias and ReLU applied as
        // the convolution writes, and an SGD update folded into the weight gradient.
        {"fwd+bias+ReLU",
         [o, &l](pxl::Tensor x, pxl::Tensor w, pxl::Tensor) {
           const pxl::Tensor b = pxl::variable(pxl::HostTensor::full({l.w[0]}, w.dtype(), 0.1));
           return pxl::ops::relu(pxl::ops::conv(x, w, o) + pxl::ops::reshape(b, {l.w[0], 1, 1}));
         }},
        {"wgrad+SGD",
         [o, &l](pxl::Tensor x, pxl::Tensor w, pxl::Tensor dy) {
           return pxl::ops::scaled_add_(w, pxl::ops::conv_weights_grad(dy, x, l.w, o),
                                        {.a = 1.0, .b = -0.01});
         }},
    };
    for (const auto& [pass, build] : passes)
      for (const pxl::DType d : {pxl::float32, pxl::float16})
        for (const unsigned workers : {1u, 2u}) {
          const double t = time_op(l.x, l.w, ys, d, workers, build);
          std::printf("%-34s %-15s %-7s %u worker%s %8.2f ms  %6.1f GFLOP/s  %5.1f%% of peak\n",
                      l.name, pass, d == pxl::float32 ? "float32" : "float16", workers,
                      workers == 1 ? " " : "s", t, flops / t * 1e-6,
                      pxl::bench::percent_of_peak(flops / t * 1e3, peak, workers));
        }
  }
}
