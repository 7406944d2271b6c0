// Lesson 10: a convolutional network. First as PyTorch users write one, module classes (a conv
// block of Conv2D, BatchNorm2D, ReLU and MaxPool2D, and a network of two blocks and a dense
// head), trained on Fashion-MNIST with addons::Trainer, evaluated, saved and loaded. Then as
// Keras with IPUs' guide pipelines a convolutional model over IPUs (§4.4, there ResNet-50):
//
//     model = keras.Sequential([Conv2D(8, 3, activation="relu"), MaxPooling2D(),
//                               BatchNormalization(), ..., Flatten(), Dense(10, "softmax")])
//     model.set_pipeline_stage_assignment([0, 0, 0, 1, 1, 1, 1, 1])
//     model.set_pipelining_options(gradient_accumulation_steps_per_replica=8)
//
// Training depends on the CPU's rounding, so the numbers come last, after the lines the golden
// file holds; the lesson fails by itself unless the loss fell and every check holds.
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace addons = pxl::addons;
namespace data = pxl::addons::data;
using addons::Activation;

namespace {

constexpr std::int64_t batch = 32, train_images = 2048, test_images = 1000;
constexpr std::int64_t micro_batches = 8; // per update of the pipelined model

// Conv, batch norm, ReLU, max pool. Channels first is ops::conv's own layout: no transposes.
// The convolution has no bias: the batch norm subtracts the mean, which would cancel it.
struct ConvBlock : addons::Module<ConvBlock> {
  explicit ConvBlock(std::int64_t channels)
      : conv(addons::named_module<addons::Conv2D>(
            "conv", channels, std::vector<std::int64_t>{3},
            addons::ConvLayerOptions{.padding = addons::Padding::same,
                                     .data_format = addons::DataFormat::channels_first,
                                     .use_bias = false})) {}
  addons::Conv2D conv;
  PXL_SUBMODULE(addons::BatchNorm2D, norm);
  PXL_SUBMODULE(addons::MaxPool2D, pool, std::vector<std::int64_t>{2});
  pxl::Tensor build(const pxl::Tensor& x) { return pool(pxl::ops::relu(norm(conv(x)))); }
};

// (N, 1, 28, 28) → block1 (N, 8, 14, 14) → block2 (N, 16, 7, 7) → head: logits (N, 10).
// A member built with arguments other than constants is named with named_module, as
// PXL_SUBMODULE names its member.
struct Cnn : addons::Module<Cnn> {
  ConvBlock block1 = addons::named_module<ConvBlock>("block1", 8);
  ConvBlock block2 = addons::named_module<ConvBlock>("block2", 16);
  PXL_SUBMODULE(addons::Dense, head, 10);
  pxl::Tensor build(const pxl::Tensor& x) {
    const pxl::Tensor h = block2(block1(x));
    return head(h.reshape({h.shape()[0], -1}));
  }
};

// The same kinds of layers as Keras names them, channels last (Keras's default), in two
// pipeline stages: the first block on IPU 0, the rest on IPU 1.
addons::Sequential keras_cnn() {
  addons::Sequential model{addons::Conv2D(8, {3}, {.activation = Activation::relu}),
                           addons::MaxPooling2D(),
                           addons::BatchNormalization(),
                           addons::Conv2D(16, {3}, {.activation = Activation::relu}),
                           addons::MaxPooling2D(),
                           addons::BatchNormalization(),
                           addons::Flatten{},
                           addons::Dense(10, Activation::softmax)};
  model.set_pipeline_stage_assignment({0, 0, 0, 1, 1, 1, 1, 1});
  return model;
}

// Images normalised as float32, reshaped to `shape` (the batch axis first), and int32 labels.
data::Batch as_arrays(const data::Dataset& d, pxl::Shape shape) {
  data::Batch all = *data::batches(d, {.batch_size = d.size(), .shuffle = false}).begin();
  all.images = all.images.reshaped(std::move(shape));
  return all;
}

const char* yes_no(bool b) { return b ? "yes" : "no"; }

} // namespace

int main() try {
  const data::Dataset train_set =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train, train_images);
  const data::Dataset test_set =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::test, test_images);
  const data::Batch train = as_arrays(train_set, {train_images, 1, 28, 28});
  const data::Batch test = as_arrays(test_set, {test_images, 1, 28, 28});
  std::cout << "Fashion-MNIST: " << train_images << " training and " << test_images
            << " test images, " << pxl::to_string(train.images.shape()) << " channels first\n\n";

  // Tracing shows the variables. BatchNorm2D builds the form a TrainingMode asks for; the
  // training form's running statistics are state variables: updated in place by the forward
  // pass, never differentiated nor optimised, yet saved with the weights.
  {
    pxl::Ir ir;
    auto in_main = ir.main_graph().scope();
    const addons::TrainingMode training;
    const auto traced = Cnn{}.create_graph(pxl::TensorSpec{{batch, 1, 28, 28}, pxl::float32});
    std::cout << "Cnn variables, traced for a batch of " << batch << ":\n";
    int trainable = 0;
    for (const auto& key : traced.first.keys_flat()) {
      const addons::VariableFactory& f = traced.first.at(key);
      trainable += f.trainable ? 1 : 0;
      std::cout << "  " << key << ": " << f << "\n";
    }
    std::cout << trainable << " trainable of " << traced.first.keys_flat().size()
              << " variables; logits " << pxl::to_string(traced.second.graph().outputs()[0].shape())
              << "\n\n";
  }

  // Trainer traces the training program in TrainingMode(true) (batch statistics) and its
  // evaluation program in TrainingMode(false) (the running statistics).
  const addons::CompileOptions compile{.optimizer = addons::optimizers::AdamOptions{.lr = 2e-3},
                                       .from_logits = true, // the head's output is logits
                                       .metrics = {"accuracy"},
                                       .steps_per_execution = 16,
                                       .seed = 1};
  addons::Trainer trainer(Cnn{});
  trainer.compile(compile);
  const addons::History history =
      trainer.fit(train.images, train.labels, {.epochs = 2, .batch_size = batch});
  const std::vector<double>& loss = history.history.at("loss");
  const bool fell = loss.back() < loss.front();
  std::cout << "Trained " << history.epochs() << " epochs of " << train_images / batch
            << " batches of " << batch << "; loss fell: " << yes_no(fell) << "\n";
  const auto weights = trainer.weights();
  bool moved = false;
  for (const float m : weights.at("block1.norm.running_mean").data<float>())
    moved = moved || m != 0.0f;
  std::cout << "Running statistics updated by training: " << yes_no(moved) << "\n";
  const addons::Logs scores = trainer.evaluate(test.images, test.labels, 100);
  const bool learned = scores.at("accuracy") > 0.5; // chance is 0.1
  std::cout << "Evaluated " << test_images << " test images with the running statistics; "
            << "accuracy above 50%: " << yes_no(learned) << "\n";

  // Saved (safetensors: the weights and the running statistics by name), then loaded into a
  // fresh Trainer, which needs its training program built to load into.
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("pxl_10_cnn_" + std::to_string(getpid()) + ".safetensors");
  trainer.save_weights(path, {{"model", "10_cnn.Cnn"}});
  addons::Trainer fresh(Cnn{});
  fresh.compile(compile);
  fresh.build({.features = pxl::TensorSpec{{batch, 1, 28, 28}, pxl::float32},
               .labels = pxl::TensorSpec{{batch}, pxl::int32}});
  fresh.load_weights(path);
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  const addons::Logs reloaded = fresh.evaluate(test.images, test.labels, 100);
  const bool same = reloaded == scores;
  std::cout << "Saved " << weights.size() << " tensors; loaded into a fresh Trainer, "
            << "test loss and accuracy equal: " << yes_no(same) << "\n\n";

  // Pipelining: each update's micro-batches flow through the stages at once, IPU 0 on the
  // forward of micro-batch m + 1 while IPU 1 works on m. It must train as accumulation does.
  const data::Batch keras_train = as_arrays(train_set, {train_images, 28, 28, 1});
  std::map<std::string, pxl::HostTensor> keras_weights[2];
  for (const bool pipeline : {false, true}) {
    addons::Trainer keras(keras_cnn());
    keras.compile({.optimizer = addons::optimizers::SGDOptions{.lr = 0.05},
                   .metrics = {"accuracy"},
                   .steps_per_execution = 16,
                   .gradient_accumulation = micro_batches,
                   .pipeline = pipeline});
    keras.fit(keras_train.images, keras_train.labels, {.epochs = 1, .batch_size = 16});
    keras_weights[pipeline ? 1 : 0] = keras.weights(); // the running statistics too
    const pxl::transforms::PipelinedGraph* piped = keras.pipelined();
    if (piped == nullptr)
      continue;
    const pxl::transforms::PipelinedGraph& p = *piped;
    const addons::Sequential model = keras_cnn();
    std::cout << "Keras Sequential of " << model.size() << " layers in stages";
    for (const std::int64_t stage : model.pipeline_stage_assignment())
      std::cout << " " << stage;
    std::cout << ", " << micro_batches << " micro-batches per update\n"
              << "Pipeline stages: " << p.stages << ", on IPUs";
    for (const auto& ipus : p.stage_ipus)
      std::cout << " " << ipus.front();
    std::cout << "  (forward 0 | forward 1, loss, backward 1 | backward 0)\n"
              << "Cycles per update: " << p.cycles << " = " << p.ramp_up_cycles << " to fill + "
              << p.main_cycles << " in the loop + " << p.ramp_down_cycles << " to drain\n";
  }
  const bool bitwise = keras_weights[1] == keras_weights[0];
  std::cout << "Pipelined weights bitwise equal to unpipelined accumulation's: " << yes_no(bitwise)
            << "\n";

  // The numbers of this run: they vary with the CPU, so the golden file ends above.
  std::printf("\nThis run: training loss per epoch %.4f %.4f; test accuracy %.2f%% (loss %.4f)\n",
              loss.front(), loss.back(), 100.0 * scores.at("accuracy"), scores.at("loss"));
  return fell && moved && learned && same && bitwise ? 0 : 1;
} catch (const pxl::Error& e) {
  std::cerr << "10_cnn: " << e.what() << "\n";
  return 1;
}
