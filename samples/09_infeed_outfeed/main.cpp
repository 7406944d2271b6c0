// Lesson 9: infeeds and outfeeds, after TensorFlow 2's infeed/outfeed tutorial. A device loop of
// `steps` training steps reads each step's batch from two host streams and writes each step's
// loss to a third. Instead of arrays handed to every run:
//
//   - the infeed: Session::set_h2d_source binds a stream to a range (here a dataset's
//     batches), which a producer thread walks ahead of the device into a bounded queue, so
//     the host prepares the next batches while the device trains on these;
//   - the outfeed: Session::outfeed_queue receives each loss as the device stores it, and the
//     host takes them from its own thread while the loop still runs (run_async), as the
//     tutorial's dequeuing thread does.
//
// Session::feed_stats then says whether the device waited for the host. (addons::Trainer does
// all of this for a Keras-style fit; lessons 7 and 8 use it.)
//
// With `--without-feeds` it trains as the tutorial's other program does: one step per run, its
// batch handed over as arrays and its loss returned, so every step pays a host round trip. Run
// both with POPLAR_ENGINE_OPTIONS='{"autoReport.all":"true", "autoReport.directory":"with_feeds"}'
// (and "without_feeds") and compare them with `pxl-report with_feeds without_feeds`
// (docs/report.md).
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include "synthetic_images.hpp"

#include <range/v3/view/transform.hpp>

#include <cstdio>
#include <string_view>
#include <vector>

namespace addons = pxl::addons;
using addons::Activation;

int main(int argc, char** argv) {
  const bool feeds = !(argc > 1 && std::string_view(argv[1]) == "--without-feeds");
  constexpr std::int64_t batch = 32, steps = 50, runs = 4;
  // Without feeds, each of runs × steps runs is one step.
  const std::int64_t steps_per_run = feeds ? steps : 1;
  const auto [x, y] = samples::images({1600}, 1);
  // tf.data's pipeline: shuffled afresh every pass, batches of 32, repeated forever.
  const auto dataset = addons::data::TensorDataset::from_tensor_slices(x, y)
                           .shuffle(x.shape()[0], 7)
                           .batch(batch)
                           .repeat();

  pxl::Ir ir;
  pxl::HostToDeviceStream x_stream, y_stream;
  pxl::DeviceToHostStream loss_stream;
  {
    auto in_main = ir.main_graph().scope();
    x_stream = pxl::h2d_stream({batch, 28, 28}, pxl::float32, "x");
    y_stream = pxl::h2d_stream({batch}, pxl::int32, "y");
    loss_stream = pxl::d2h_stream({}, pxl::float32, "loss");
    addons::Sequential model{addons::Flatten{}, addons::Dense(64, Activation::relu),
                             addons::Dense(10)};
    auto [factories, forward] = model.create_graph(pxl::TensorSpec{{batch, 28, 28}, pxl::float32});
    auto backward = forward.autodiff({.grads_required = forward.args().tensors()});
    const addons::NamedTensors weights = factories.init("", 0);

    // One training step: a batch from each infeed, the loss to the outfeed, an SGD update.
    pxl::Graph step = ir.create_empty_graph("train_step");
    {
      auto in_step = step.scope();
      const addons::NamedTensors w = addons::named_graph_inputs(weights);
      auto fwd = forward.bind(w).call_with_info({pxl::ops::host_load(x_stream)});
      auto [loss, dlogits] =
          addons::ops::cross_entropy_with_grad(fwd.outputs()[0], pxl::ops::host_load(y_stream));
      pxl::ops::host_store(loss_stream, loss);
      auto bwd =
          backward.call_with_info({dlogits}, {}, backward.grad_graph_info().inputs_dict(fwd));
      const addons::NamedTensors grads = backward.grads(bwd);
      for (const auto& [name, grad] : grads.items())
        pxl::ops::scaled_add_(w.at(name), grad, {.b = -0.1}); // w -= 0.1·grad
    }
    // The device loop: `steps` steps per run, the weights carried by reference.
    pxl::ops::repeat(step, steps_per_run, weights.values_flat());
  }
  ir.set_num_host_transfers(steps_per_run);

  pxl::Session session(ir, "ipu_model");
  if (!feeds) {
    auto attached = session.attach();
    std::vector<float> per_pass_mean(runs, 0.0f);
    auto batches = dataset.elements();
    auto next = batches.begin();
    for (std::int64_t r = 0; r < runs * steps; ++r, ++next) {
      const addons::data::LabelledBatch b = *next;
      const auto out = session.run({{x_stream, b.features}, {y_stream, b.labels}});
      per_pass_mean[static_cast<std::size_t>(r / steps)] +=
          out.at(loss_stream).data<float>()[0] / steps;
    }
    std::printf("%lld runs of one step each, the batches handed over as arrays\n",
                static_cast<long long>(runs * steps));
    std::printf("The mean loss fell from the first %lld runs to the last: %s\n",
                static_cast<long long>(steps),
                per_pass_mean.back() < per_pass_mean.front() ? "yes" : "no");
    return 0;
  }
  // The infeed: each stream walks its own view of the (deterministic) pipeline, up to 8
  // batches ahead of the device. (addons::data::BatchFanOut reads one pipeline for both.)
  auto features = [](const addons::data::LabelledBatch& b) { return b.features; };
  auto labels = [](const addons::data::LabelledBatch& b) { return b.labels; };
  session.set_h2d_source(x_stream, dataset.elements() | ranges::views::transform(features),
                         {.depth = 8});
  session.set_h2d_source(y_stream, dataset.elements() | ranges::views::transform(labels),
                         {.depth = 8});
  // The outfeed: room for one run's losses.
  const auto losses = session.outfeed_queue(loss_stream, {.depth = steps});

  auto attached = session.attach();
  std::vector<float> per_run_mean;
  for (std::int64_t r = 0; r < runs; ++r) {
    auto done = session.run_async();
    // The host takes each loss while the device loop goes on.
    float sum = 0;
    for (std::int64_t s = 0; s < steps; ++s)
      sum += losses->pop().data<float>()[0];
    done.get();
    per_run_mean.push_back(sum / steps);
  }
  std::printf("%lld runs of a %lld-step device loop: %lld losses taken from the outfeed\n",
              static_cast<long long>(runs), static_cast<long long>(steps),
              static_cast<long long>(runs * steps));
  std::printf("The mean loss fell from the first run to the last: %s\n",
              per_run_mean.back() < per_run_mean.front() ? "yes" : "no");
  for (const pxl::FeedStats& s : session.feed_stats())
    std::printf("%s '%s': %lld elements, a queue of %zu\n", s.host_to_device ? "Infeed" : "Outfeed",
                s.stream.c_str(), static_cast<long long>(s.elements), s.depth);
}
