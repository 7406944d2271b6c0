// Lesson 8: data parallelism in two lines, as Keras with IPUs does it (§4.5):
//
//     config.auto_select_ipus = 2              # two replicas of the model
//     model.compile(..., steps_per_execution=16)
//     model.fit(dataset.batch(64), epochs=3)   # each replica takes half of every batch
//
// `.replicas = 2` replicates the Trainer's training program: each replica trains on its half of
// every batch (the batch size must divide by the replicas), the replicas' gradients are
// averaged by an all-reduce before each update, and so every replica applies the same update
// and the training equals one replica's on the whole batch, to float rounding. With gradient
// accumulation as well, an update sees replicas × micro-batches × rows examples.
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include "synthetic_images.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace addons = pxl::addons;
using addons::Activation;

// Trains a fresh model for 3 epochs: `replicas` replicas, `accumulation` micro-batches of
// `batch` examples (over all replicas) per update.
addons::Trainer train(const addons::data::TensorDataset& examples, std::int64_t replicas,
                      std::int64_t accumulation, std::int64_t batch) {
  addons::Trainer trainer(addons::Sequential{addons::Flatten{}, addons::Dense(64, Activation::relu),
                                             addons::Dense(10, Activation::softmax)});
  trainer.compile({.optimizer = addons::optimizers::SGDOptions{.lr = 0.5},
                   .metrics = {"accuracy"},
                   .steps_per_execution = 16,
                   .gradient_accumulation = accumulation,
                   .replicas = replicas});
  trainer.fit(examples.batch(batch), {.epochs = 3});
  return trainer;
}

// The largest difference between two trainers' weights, relative to the weights' scale.
double max_difference(addons::Trainer& a, addons::Trainer& b) {
  const auto a_weights = a.weights(), b_weights = b.weights();
  double worst = 0;
  for (const auto& [name, w] : a_weights) {
    const auto x = w.data<float>();
    const auto y = b_weights.at(name).data<float>();
    for (std::size_t i = 0; i < x.size(); ++i)
      worst =
          std::max(worst, std::abs(double{x[i]} - double{y[i]}) / (std::abs(double{y[i]}) + 1e-2));
  }
  return worst;
}

int main() {
  const auto [x, y] = samples::images({2048}, 1);
  const auto [x_test, y_test] = samples::images({512}, 2);
  const auto examples =
      addons::data::TensorDataset::from_tensor_slices(x, y).shuffle(x.shape()[0], 3);

  // Two replicas, 32 rows each of every batch of 64.
  addons::Trainer two = train(examples, 2, 1, 64);
  std::printf("2 replicas, batches of 64: 32 rows per replica and step, %lld steps per epoch\n",
              static_cast<long long>(examples.batch(64).batches_per_epoch()));
  for (const pxl::FeedStats& s : two.feed_stats())
    if (s.host_to_device)
      std::printf("Infeed '%s' gave the device %lld elements in 3 epochs (one per replica and "
                  "step)\n",
                  s.stream.c_str(), static_cast<long long>(s.elements));

  // One replica on the whole batches: the same training, to float rounding.
  addons::Trainer one = train(examples, 1, 1, 64);
  std::printf("Weights equal 1 replica's on the whole batches to float rounding: %s\n",
              max_difference(two, one) < 1e-3 ? "yes" : "no");

  // Replicas and accumulation together: 2 micro-batches of 32 (16 rows per replica) make an
  // update of 64 examples, the same as one replica's on a batch of 64.
  addons::Trainer both = train(examples, 2, 2, 32);
  std::printf("2 replicas x 2 micro-batches of 32 equal 1 replica on batches of 64: %s\n",
              max_difference(both, one) < 1e-3 ? "yes" : "no");

  const addons::Logs test = two.evaluate(x_test, y_test, 64);
  std::printf("Test accuracy above chance (10%%): %s\n", test.at("accuracy") > 0.2 ? "yes" : "no");
}
