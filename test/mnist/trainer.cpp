// addons::Trainer on the main job's Net against the tutorial's hand-written programs: training
// is bitwise the same in every configuration the main job offers, and Trainer::evaluate scores
// the Net as the hand-written test program does.
#include "helpers.hpp"
#include "model.hpp"
#include "reference_programs.hpp"

#include "pxl/addons/training/trainer.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace mnist::test;

TEST_CASE("addons::Trainer on the Net trains bitwise as the main job's hand-written program") {
  // The Trainer's learning rate a constant, as the main job's (a variable rounds the update
  // twice). Both train one epoch of small_data()'s batches shuffled with seed 7, through
  // their infeeds: device loops, accumulation, replicas, pipelining, float16 with loss
  // scaling, and Adam's state offloaded and sharded.
  using mnist::Optimizer;
  struct Case {
    std::int64_t steps, accumulation, replicas, stages;
    Optimizer optimizer = Optimizer::adam;
    pxl::DType dtype = pxl::float32;
    bool offload = false, shard = false;
  };
  for (const Case c :
       {Case{1, 1, 1, 1}, Case{1, 1, 1, 1, Optimizer::sgd}, Case{3, 1, 1, 1}, Case{1, 4, 1, 1},
        Case{2, 1, 2, 1}, Case{1, 4, 1, 2}, Case{1, 3, 2, 2}, Case{3, 1, 1, 1, Optimizer::sgd},
        Case{1, 4, 2, 1, Optimizer::sgd}, Case{3, 1, 1, 1, Optimizer::sgd, pxl::float16},
        Case{1, 2, 2, 1, Optimizer::adam, pxl::float16},
        Case{2, 1, 1, 1, Optimizer::adam, pxl::float32, true},
        Case{1, 2, 2, 1, Optimizer::adam, pxl::float32, false, true},
        Case{2, 1, 2, 1, Optimizer::adam, pxl::float32, true, true}}) {
    CAPTURE(c.steps);
    CAPTURE(c.accumulation);
    CAPTURE(c.replicas);
    CAPTURE(c.stages);
    CAPTURE(c.optimizer == Optimizer::adam);
    const std::string dtype(pxl::name(c.dtype));
    CAPTURE(dtype);
    CAPTURE(c.offload);
    CAPTURE(c.shard);
    const std::int64_t global = 4 * c.replicas;
    LossLog log; // outlives program, whose loss stream calls it
    mnist::TrainingProgram program({.batch_size = 4,
                                    .learning_rate = 1e-3,
                                    .steps_per_execution = c.steps,
                                    .gradient_accumulation = c.accumulation,
                                    .replicas = c.replicas,
                                    .optimizer = c.optimizer,
                                    .offload_optimizer_state = c.offload,
                                    .shard_optimizer_state = c.shard,
                                    .seed = 7,
                                    .workers = 1,
                                    .dtype = c.dtype,
                                    .pipeline_stages = c.stages});
    const std::int64_t runs = small_data().size() / global / program.micro_batches_per_run();
    program.feed_from(data::batches(small_data(), batching(global)), log.callback());
    for (std::int64_t r = 0; r < runs; ++r)
      program.run();

    mnist::Net net;
    net.stages = c.stages;
    pxl::addons::Trainer trainer(net);
    const bool adam = c.optimizer == Optimizer::adam;
    trainer.compile({.optimizer = adam ? pxl::addons::TrainerOptimizer(
                                             pxl::addons::optimizers::AdamOptions{.lr = 1e-3})
                                       : pxl::addons::optimizers::SGDOptions{.lr = 1e-3},
                     .from_logits = true,
                     // Batches per run, as Keras counts them: c.steps updates.
                     .steps_per_execution = c.steps * c.accumulation,
                     .gradient_accumulation = c.accumulation,
                     .replicas = c.replicas,
                     .pipeline = c.stages > 1,
                     .dtype = c.dtype,
                     .offload_optimizer_state = c.offload,
                     .shard_optimizer_state = c.shard,
                     .constant_learning_rate = true,
                     .seed = 7});
    // The same normalised images, flattened, in the data set's order for the Trainer to shuffle.
    const data::Batch all = as_arrays(small_data());
    const auto history = trainer.fit(data::TensorDataset::from_tensor_slices(all.images, all.labels)
                                         .shuffle(all.images.shape()[0], 7)
                                         .batch(global),
                                     {.epochs = 1});

    REQUIRE(log.calls.size() == static_cast<std::size_t>(runs * program.micro_batches_per_run()));
    double loss = 0;
    for (const auto& call : log.calls)
      loss += call.second;
    CHECK(history.history.at("loss")[0] ==
          doctest::Approx(loss / static_cast<double>(log.calls.size())));
    const auto expected = program.weights().to_dict();
    const auto weights = trainer.weights();
    REQUIRE(weights.size() == expected.size());
    for (const auto& entry : expected) {
      const std::string& name = entry.first; // CAPTURE cannot capture a structured binding
      CAPTURE(name);
      CHECK(same_bits(entry.second, weights.at(name)));
    }
  }
}

TEST_CASE("Trainer::evaluate scores the Net as the hand-written test program does") {
  const data::Batch train = as_arrays(small_data());
  const data::Batch test = as_arrays(test_data());
  for (const pxl::DType dtype : {pxl::float32, pxl::float16}) {
    const std::string name(pxl::name(dtype));
    CAPTURE(name);
    pxl::addons::Trainer trainer(mnist::Net{});
    trainer.compile({.optimizer = pxl::addons::optimizers::SGDOptions{.lr = 0.05},
                     .from_logits = true,
                     .metrics = {"accuracy"},
                     .dtype = dtype,
                     .constant_learning_rate = true,
                     .seed = 7});
    trainer.fit(train.images, train.labels, {.batch_size = 8});
    // 1000 test images: in batches of 100, and of 300 with a remainder of 100, which the
    // hand-written program pads to a full batch and the Trainer runs as a shorter one.
    for (const std::int64_t batch : {100, 300}) {
      CAPTURE(batch);
      mnist::TestProgram program(batch, 0, dtype);
      program.copy_weights(trainer.weights());
      const double expected = program.accuracy(test_data());
      const double accuracy = trainer.evaluate(test.images, test.labels, batch).at("accuracy");
      // The same images right: each batch's accuracy is a float32 mean, so the fractions agree
      // to float rounding, far closer than one image in 1000.
      CHECK(std::abs(accuracy - expected) < 1e-6);
    }
  }
}
