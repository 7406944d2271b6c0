// Benchmark, after TensorFlow's ipu.dataset_benchmark: how many batches a TensorDataset of
// Fashion-MNIST's size (60000 random 28x28 float32 images, int32 labels) yields per second,
// shuffled, in batches of 32, next to how many a device loop running Keras's MLP on them
// (Flatten, Dense 256 relu, Dense 128 relu, Dense 10, and the accuracy) consumes from arrays.
// When the first figure is not well above the second, the host would starve the device. Then
// the same pipeline feeds Trainer::fit of that MLP through its infeeds, and the infeeds'
// feed_stats tell what the device took and how long it waited for the host. Prints the
// reports as JSON lines; asserts nothing.
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include "sgemm_peak.hpp"
#include "timing.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {
namespace addons = pxl::addons;
using Clock = std::chrono::steady_clock;
constexpr std::int64_t examples = 60000, rows = 28, cols = 28, classes = 10, batch = 32;
constexpr std::int64_t steps = 50; ///< device-loop steps (batches) per run
constexpr int runs = 10;

/// Pixels uniform in [0, 1) and labels in [0, 10), from a fixed xorshift64 stream (fast, and
/// the same on every machine).
addons::data::TensorDataset random_fashion_mnist() {
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  pxl::HostTensor images({examples, rows, cols}, pxl::float32);
  for (float& p : images.data<float>())
    p = static_cast<float>(next() >> 40) / static_cast<float>(1 << 24);
  pxl::HostTensor labels({examples}, pxl::int32);
  for (std::int32_t& l : labels.data<std::int32_t>())
    l = static_cast<std::int32_t>(next() % classes);
  return addons::data::TensorDataset::from_tensor_slices(std::move(images), std::move(labels));
}

/// Keras's MLP for Fashion-MNIST.
addons::Sequential keras_mlp() {
  return addons::Sequential{addons::Flatten{}, addons::Dense(256, addons::Activation::relu),
                            addons::Dense(128, addons::Activation::relu), addons::Dense(classes)};
}

/// The device loop: `steps` times, load a batch of images and labels, run the MLP forward and
/// store the batch's accuracy.
struct Consumer {
  pxl::Ir ir;
  pxl::HostToDeviceStream images, labels;
  pxl::DeviceToHostStream accuracy;
  Consumer() {
    auto in_main = ir.main_graph().scope();
    images = pxl::h2d_stream({batch, rows, cols}, pxl::float32, "images");
    labels = pxl::h2d_stream({batch}, pxl::int32, "labels");
    accuracy = pxl::d2h_stream({}, pxl::float32, "accuracy");
    auto [facts, fwd] =
        keras_mlp().create_graph(pxl::TensorSpec{{batch, rows, cols}, pxl::float32});
    const addons::NamedTensors vars = facts.init();
    pxl::Graph step = ir.create_empty_graph("step");
    {
      auto in_step = step.scope();
      const auto w = addons::named_graph_inputs(vars);
      const pxl::Tensor logits = fwd.bind(w).call({pxl::ops::host_load(images)})[0];
      pxl::ops::host_store(
          accuracy, addons::sparse_categorical_accuracy(logits, pxl::ops::host_load(labels)));
    }
    pxl::ops::repeat(step, steps, vars.values_flat());
    ir.set_num_host_transfers(steps);
  }
};

} // namespace

int main() {
  pxl::bench::print_sgemm_peak();
  const auto train = random_fashion_mnist().shuffle(examples, 0).batch(batch).repeat().prefetch(4);
  const std::int64_t elements = 2 * train.batches_per_epoch(); // two epochs: two shuffles
  const auto host = addons::data::dataset_benchmark(train, elements);
  std::printf("dataset_benchmark (%lld examples, batch %lld, shuffled): %s\n",
              static_cast<long long>(examples), static_cast<long long>(batch), host.json().c_str());

  // What the device consumes, fed from arrays of `steps` batches (no pipeline in the way).
  Consumer c;
  pxl::Session session(c.ir, "ipu_model", {.workers = 1});
  auto attached = session.attach();
  pxl::HostTensor images({steps, batch, rows, cols}, pxl::float32);
  pxl::HostTensor labels({steps, batch}, pxl::int32);
  const pxl::StreamInputs in{{c.images, images}, {c.labels, labels}};
  auto out = session.create_host_outputs();
  const double s =
      bench::time_calls(1, runs, [&](std::int64_t) { session.run_with_outputs(in, out); });
  const double consumed = static_cast<double>(steps * runs);
  const nlohmann::ordered_json device = {
      {"elements", steps * runs},
      {"seconds", s},
      {"elements_per_second", consumed / s},
      {"examples_per_second", consumed * batch / s},
  };
  std::printf("device consumption (Keras MLP forward + accuracy, 1 worker): %s\n",
              device.dump().c_str());
  std::printf("host pipeline / device: %.1fx\n", host.elements_per_second() / (consumed / s));

  // Training, fed through the Trainer's infeeds from the pipeline (one epoch; the program is
  // built by a fit of no epochs first, so that only training is timed).
  addons::Trainer trainer(keras_mlp());
  trainer.compile({.from_logits = true, .metrics = {"accuracy"}, .steps_per_execution = steps});
  trainer.fit(train, {.epochs = 0});
  const auto t1 = Clock::now();
  trainer.fit(train, {.epochs = 1});
  const double fit_seconds = bench::seconds_since(t1);
  for (const pxl::FeedStats& f : trainer.feed_stats()) {
    if (!f.host_to_device)
      continue;
    const double wait = std::chrono::duration<double>(f.device_wait).count();
    const nlohmann::ordered_json stats = {
        {"stream", f.stream},
        {"elements", f.elements},
        {"seconds", fit_seconds},
        {"elements_per_second", static_cast<double>(f.elements) / fit_seconds},
        {"device_wait_seconds", wait},
        {"device_wait_fraction", wait / fit_seconds},
        {"max_occupancy", f.max_occupancy},
        {"depth", f.depth},
    };
    std::printf("Trainer::fit infeed (training, 1 worker): %s\n", stats.dump().c_str());
  }
}
