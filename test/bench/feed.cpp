// Benchmark, after TensorFlow's dataset_benchmark: how many samples/s a host feed (a
// range-v3 pipeline making batches of 8x784 float32) delivers on its own, how many a device
// loop (host_load + a sum) consumes from arrays, and how many it consumes when fed by the
// pipeline through Session::set_h2d_source, with the device's wait time from feed_stats().
// Prints figures; asserts nothing.
#include <pxl/pxl.hpp>

#include "sgemm_peak.hpp"
#include "timing.hpp"

#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {
using Clock = std::chrono::steady_clock;
constexpr std::int64_t batch = 8, features = 784;
constexpr std::int64_t steps = 100; ///< device-loop steps (host transfers) per run
constexpr int runs = 20;

/// The feed: batch k holds k + 0.001 * i, made fresh for every element as a data
/// pipeline would (normalising decoded images, say).
auto pipeline() {
  return ranges::views::iota(std::int64_t{0}) | ranges::views::transform([](std::int64_t k) {
           pxl::HostTensor t({batch, features}, pxl::float32);
           auto d = t.data<float>();
           for (std::size_t i = 0; i < d.size(); ++i)
             d[i] = static_cast<float>(k) + 0.001f * static_cast<float>(i % 1000);
           return t;
         });
}

/// The device loop: `steps` times, load a batch and store its sum.
struct Consumer {
  pxl::Ir ir;
  pxl::HostToDeviceStream x;
  pxl::DeviceToHostStream y;
  Consumer() {
    auto in_main = ir.main_graph().scope();
    x = pxl::h2d_stream({batch, features}, pxl::float32, "x");
    y = pxl::d2h_stream({}, pxl::float32, "sum");
    auto body =
        ir.create_graph([&] { pxl::ops::host_store(y, pxl::ops::sum(pxl::ops::host_load(x))); });
    pxl::ops::repeat(body, steps, {});
    ir.set_num_host_transfers(steps);
  }
};
} // namespace

int main() {
  pxl::bench::print_sgemm_peak(); // for comparing machines: feeding is not a fraction of it
  const double samples = static_cast<double>(batch * steps * runs);
  std::printf("feed benchmark: batches of %lldx%lld float32, %lld steps per run, %d runs\n",
              static_cast<long long>(batch), static_cast<long long>(features),
              static_cast<long long>(steps), runs);

  // 1. The host feed alone.
  {
    auto feed = pipeline();
    double checksum = 0;
    const auto t0 = Clock::now();
    auto it = feed.begin();
    for (std::int64_t k = 0; k < steps * runs; ++k, ++it)
      checksum += static_cast<double>((*it).data<float>()[0]);
    const double s = bench::seconds_since(t0);
    std::printf("  host feed alone:            %10.0f samples/s  (checksum %.0f)\n", samples / s,
                checksum);
  }

  for (unsigned workers : {1u, 2u}) {
    Consumer c;
    // 2. The device loop fed from arrays (no feed): what the device can consume.
    {
      pxl::Session session(c.ir, "ipu_model", {.workers = workers});
      auto attached = session.attach();
      pxl::HostTensor data({steps, batch, features}, pxl::float32);
      const pxl::StreamInputs in{{c.x, data}};
      auto out = session.create_host_outputs();
      const double s =
          bench::time_calls(1, runs, [&](std::int64_t) { session.run_with_outputs(in, out); });
      std::printf("  device from arrays (%u wkr): %10.0f samples/s\n", workers, samples / s);
    }
    // 3. The device loop fed by the pipeline: the slower of the two sets the pace.
    for (std::int64_t depth : {1, 4, 16}) {
      pxl::Session session(c.ir, "ipu_model", {.workers = workers});
      session.set_h2d_source(c.x, pipeline(), {.depth = depth});
      auto attached = session.attach();
      const auto t0 = Clock::now();
      for (int r = 0; r < runs; ++r)
        session.run();
      const double s = bench::seconds_since(t0);
      const auto st = session.feed_stats().front();
      std::printf("  device from feed (%u wkr, depth %2lld): %10.0f samples/s, device waited "
                  "%.1f ms of %.1f ms (%.0f%%), max queued %zu\n",
                  workers, static_cast<long long>(depth), samples / s,
                  std::chrono::duration<double, std::milli>(st.device_wait).count(), s * 1e3,
                  100.0 * std::chrono::duration<double>(st.device_wait).count() / s,
                  st.max_occupancy);
    }
  }
}
