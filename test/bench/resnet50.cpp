// Benchmark: torchvision's ResNet-50 as a pxl program on the emulated IPU, without training it:
// one training step (forward, backward, SGD) or one inference step at a batch size, compiled
// in a Session that reports its memory per IPU (whether it fits) and, after one run on
// random data, the cost model's estimated time per step and images per second. What a user
// reads before booking hardware; the fidelity checks compare these with Graphcore's results.
#include "resnet50.hpp"
#include "flags.hpp"

#include <pxl/addons/ops/cross_entropy.hpp>
#include <pxl/session.hpp>

#include <chrono>
#include <cstdio>

namespace {

using pxl::Tensor;

struct Program {
  pxl::Ir ir;
  pxl::HostToDeviceStream x, y;
  std::int64_t parameters = 0;
};

/// The step's program: `training` adds the loss's gradient through the network and an SGD
/// update of every trainable variable.
void trace(Program& p, std::int64_t batch, std::int64_t size, bool training) {
  auto in_main = p.ir.main_graph().scope();
  p.x = pxl::h2d_stream({batch, 3, size, size}, pxl::float32, "images");
  p.y = pxl::h2d_stream({batch}, pxl::int32, "labels");
  const pxl::addons::TrainingMode mode(training);
  auto [factories, fwd] =
      bench::resnet::ResNet50{}.create_graph(pxl::TensorSpec{{batch, 3, size, size}, pxl::float32});
  const auto trainable_factories = factories.trainable();
  for (const auto& [key, f] : trainable_factories.items())
    p.parameters += pxl::nelms(f.initializer.shape);
  const auto variables = factories.init();
  const Tensor images = pxl::ops::host_load(p.x);
  const Tensor labels = pxl::ops::host_load(p.y);
  if (!training) {
    const Tensor logits = fwd.bind(variables).call({images})[0];
    pxl::ops::host_store(pxl::d2h_stream({batch}, pxl::int32, "classes"),
                         pxl::ops::argmax(logits, 1));
    return;
  }
  const auto trainable = trainable_factories.keys_flat();
  auto bwd = fwd.autodiff({.grads_required = fwd.args().filter_keys(trainable).tensors()});
  auto fwd_info = fwd.bind(variables).call_with_info({images});
  auto [loss, dlogits] = pxl::addons::ops::cross_entropy_with_grad(fwd_info.outputs()[0], labels);
  auto bwd_info = bwd.call_with_info({dlogits}, {}, bwd.grad_graph_info().inputs_dict(fwd_info));
  const auto grads = bwd.grads(bwd_info);
  for (const auto& key : trainable)
    pxl::ops::scaled_add_(variables.at(key), grads.at(key), {.b = -0.01});
  pxl::ops::host_store(pxl::d2h_stream({}, pxl::float32, "loss"), loss);
}

} // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 1, size = 224;
  int inference = 0;
  unsigned workers = 0;
  bench::Flags flags("torchvision's ResNet-50 on the emulated IPU: memory and estimated step time");
  flags.option("--batch-size", batch, "Images per step", 1)
      .option("--image-size", size, "Height and width of the images", 32)
      .option("--inference", inference, "1: an inference step; 0: a training step", 0, 1)
      .option("--workers", workers, "Emulator worker threads (0: one per core)", 0);
  if (const auto exit_code = flags.parse(argc, argv))
    return *exit_code;

  Program p;
  auto t0 = std::chrono::steady_clock::now();
  trace(p, batch, size, inference == 0);
  pxl::Session session(p.ir, "ipu_model",
                       {.workers = workers, .allow_out_of_memory = true, .profile = true});
  const double compile_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ResNet-50 %s step, batch %lld of %lldx%lld images: %.1f M parameters, "
              "traced and compiled in %.1f s\n",
              inference ? "inference" : "training", static_cast<long long>(batch),
              static_cast<long long>(size), static_cast<long long>(size),
              static_cast<double>(p.parameters) / 1e6, compile_s);
  const pxl::emu::MemoryReport memory = session.memory_report();
  std::printf("%s", memory.summary().c_str());
  std::printf("fits one IPU: %s\n", memory.fits() ? "yes" : "no");

  auto attached = session.attach();
  pxl::StreamInputs feed;
  feed.emplace(p.x, pxl::addons::init::normal(0.0, 1.0, {batch, 3, size, size})(pxl::float32, 1));
  pxl::HostTensor labels({batch}, pxl::int32);
  for (std::int64_t i = 0; i < batch; ++i)
    labels.data<std::int32_t>()[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 1000);
  feed.emplace(p.y, labels);
  t0 = std::chrono::steady_clock::now();
  session.run(feed);
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const pxl::emu::Profile profile = session.profile();
  std::printf("%s", profile.summary().c_str());
  std::printf("estimated: %.3f ms per step, %.0f images/s on one IPU (the emulator took %.2f s "
              "on this host)\n",
              profile.seconds() * 1e3, static_cast<double>(batch) / profile.seconds(), run_s);
  return 0;
}
