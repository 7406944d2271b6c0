// Lesson 11: bring a model from PyTorch. Import an ONNX file that torch.onnx.export wrote,
// fine-tune it on Fashion-MNIST with the Trainer as any pxl module, and save a checkpoint.
//
//   11_onnx [MODEL.onnx]   (default: the CNN of test/onnx/models, exported with a dynamic batch)
#include <pxl/addons.hpp>
#include <pxl/onnx/import.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

namespace addons = pxl::addons;
namespace data = pxl::addons::data;

namespace {

// Images as the CNN takes them, [N, 1, 28, 28], normalised; labels int32.
std::pair<pxl::HostTensor, pxl::HostTensor> examples(data::Split split, std::int64_t n) {
  const auto d = data::load_fashion_mnist(data::fashion_mnist_default_dir, split, n);
  pxl::HostTensor x = d.images.astype(pxl::float32).reshaped({d.size(), 1, 28, 28});
  for (float& v : x.data<float>())
    v = (v / 255.0f - data::fashion_mnist_mean) / data::fashion_mnist_std;
  return {x, d.labels.astype(pxl::int32)};
}

std::string text(const pxl::Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + ")";
}

} // namespace

int main(int argc, char** argv) {
  const std::filesystem::path path =
      argc > 1 ? argv[1] : PXL_SOURCE_DIR "/test/onnx/models/fashion_cnn.onnx";
  // Parsed and checked by ONNX's checker; nothing is built yet.
  auto model = std::make_shared<const pxl::onnx::Model>(pxl::onnx::Model::load(path));
  std::cout << "opset " << model->opset() << "\n";
  for (const auto& in : model->inputs())
    std::cout << "input  " << in.name << " " << text(in.shape) << " " << in.dtype
              << "  (-1: the batch, symbolic)\n";
  for (const auto& out : model->outputs())
    std::cout << "output " << out.name << " " << text(out.shape) << " " << out.dtype << "\n";

  // The model as a module: its initializers are trainable variables, named as in PyTorch.
  addons::Trainer trainer(pxl::onnx::OnnxModule{model});
  trainer.compile({.optimizer = addons::optimizers::SGDOptions{.lr = 0.1},
                   .from_logits = true,
                   .metrics = {"accuracy"}});
  const auto [x, y] = examples(data::Split::train, 2000);
  const auto [xt, yt] = examples(data::Split::test, 500);
  trainer.build({.features = {{16, 1, 28, 28}, pxl::float32}, .labels = {{16}, pxl::int32}});
  std::cout << "variables:";
  for (const auto& [name, w] : trainer.weights())
    std::cout << " " << name;
  std::cout << "\n";

  const auto before = trainer.evaluate(xt, yt, 100);
  trainer.fit(x, y, {.epochs = 1, .batch_size = 16, .shuffle = false});
  const auto after = trainer.evaluate(xt, yt, 100);
  std::cout << "test accuracy " << before.at("accuracy") << " -> " << after.at("accuracy")
            << ", loss " << before.at("loss") << " -> " << after.at("loss") << "\n";

  // A checkpoint of the fine-tuned weights, by their PyTorch names.
  const auto checkpoint = std::filesystem::temp_directory_path() / "11_onnx.safetensors";
  trainer.save_weights(checkpoint);
  addons::Trainer restored(pxl::onnx::OnnxModule{model});
  restored.compile({.from_logits = true, .metrics = {"accuracy"}});
  restored.build({.features = {{16, 1, 28, 28}, pxl::float32}, .labels = {{16}, pxl::int32}});
  restored.load_weights(checkpoint);
  std::filesystem::remove(checkpoint);
  const auto again = restored.evaluate(xt, yt, 100);
  std::cout << "restored from the checkpoint: test accuracy " << again.at("accuracy") << "\n";
  if (!(after.at("loss") < 0.7 * before.at("loss")) ||
      again.at("accuracy") != after.at("accuracy")) {
    std::cerr << "11_onnx: fine-tuning did not lower the loss, or the checkpoint differs\n";
    return 1;
  }
}
