// Lesson 7: training in two lines, as Keras with IPUs does it (§4.1–4.3, and the TF2 infeed
// tutorial's device loop):
//
//     model = keras.Sequential([Flatten(), Dense(128, relu), Dense(10, softmax)])
//     model.compile(optimizer, SparseCategoricalCrossentropy(), metrics=["accuracy"],
//                   steps_per_execution=50)
//     model.fit(dataset, epochs=2)
//     model.evaluate(test_dataset)
//
// addons::Trainer builds the training program once (a device loop of steps_per_execution
// optimizer steps fed through host streams, each step's loss and accuracy stored back), and
// separate evaluation and prediction programs that share its weights.
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include "synthetic_images.hpp"

#include <cstdio>

namespace addons = pxl::addons;
using addons::Activation;

addons::History train(std::int64_t steps_per_execution, addons::Trainer& trainer,
                      const addons::data::TensorDataset& dataset) {
  trainer.compile({.optimizer = addons::optimizers::SGDOptions{.lr = 0.2},
                   .metrics = {"accuracy"},
                   .steps_per_execution = steps_per_execution});
  return trainer.fit(dataset, {.epochs = 3});
}

int main() {
  const auto [x, y] = samples::images({1600}, 1);
  const auto [x_test, y_test] = samples::images({400}, 2);
  // tf.data's pipeline: shuffled afresh every epoch, batches of 32 (the remainder dropped, as
  // a device program's shapes are fixed), prefetched.
  const auto dataset = addons::data::TensorDataset::from_tensor_slices(x, y)
                           .shuffle(x.shape()[0], 7)
                           .batch(32)
                           .prefetch(8);
  auto model = [] {
    // Keras's defaults: glorot_uniform kernels, zero biases; the softmax output is trained
    // on its logits (from_logits = false, Keras's default), exactly and stably.
    return addons::Sequential{addons::Flatten{}, addons::Dense(128, Activation::relu),
                              addons::Dense(10, Activation::softmax)};
  };

  addons::Trainer trainer(model());
  const addons::History history = train(25, trainer, dataset);
  std::printf("Batches per epoch: %lld; 25 steps per run: %lld runs per epoch\n",
              static_cast<long long>(dataset.batches_per_epoch()),
              static_cast<long long>(dataset.batches_per_epoch() / 25));
  std::printf("History: %d epochs of", history.epochs());
  for (const auto& [key, values] : history.history)
    std::printf(" %s", key.c_str());
  std::printf("\n");
  const auto& loss = history.history.at("loss");
  std::printf("Loss fell every epoch: %s\n", loss[1] < loss[0] && loss[2] < loss[1] ? "yes" : "no");
  std::printf("Weights:");
  for (const auto& [name, w] : trainer.weights())
    std::printf(" %s", name.c_str());
  std::printf("\n");

  // The same training one step per run: the device loop changes the speed, not the result.
  addons::Trainer stepwise(model());
  train(1, stepwise, dataset);
  std::printf("One step per run gives the same weights: %s\n",
              stepwise.weights() == trainer.weights() ? "yes" : "no");

  const addons::Logs test = trainer.evaluate(x_test, y_test, 40);
  std::printf("Test accuracy above chance (10%%): %s\n", test.at("accuracy") > 0.2 ? "yes" : "no");
  const pxl::HostTensor logits = trainer.predict(x_test, 40);
  std::printf("Predictions: %s\n", pxl::to_string(logits.shape()).c_str());
}
