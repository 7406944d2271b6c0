#include "trainer_timing.hpp"

#include "model.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace mnist::bench {

NetTrainer::NetTrainer(pxl::addons::CompileOptions options, std::int64_t global_batch,
                       std::int64_t stages, Model model)
    : global_batch_(global_batch), per_run_(options.steps_per_execution),
      trainer_(compiled(std::move(options), stages, model)) {
  fit(random_dataset((3 + per_run_ - 1) / per_run_ * per_run_, global_batch));
}

FitTiming NetTrainer::fit(const pxl::addons::data::TensorDataset& dataset) {
  const std::int64_t batch = dataset.element_spec().features.shape.at(0);
  if (batch != global_batch_)
    throw std::invalid_argument("NetTrainer::fit: batches of " + std::to_string(batch) +
                                " images, but the program is built for " +
                                std::to_string(global_batch_));
  auto counter = std::make_shared<Counter>();
  const auto t0 = std::chrono::steady_clock::now();
  const pxl::addons::History history = trainer_.fit(dataset, {.callbacks = {counter}});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::int64_t trained = counter->micro_batches;
  if (trained != dataset.batches_per_epoch())
    throw std::runtime_error("NetTrainer::fit: trained " + std::to_string(trained) + " of the " +
                             std::to_string(dataset.batches_per_epoch()) +
                             " micro-batches; runs of " + std::to_string(per_run_) +
                             " must divide them");
  return {trained, seconds, history.history.at("loss").at(0)};
}

pxl::addons::Trainer NetTrainer::compiled(pxl::addons::CompileOptions options, std::int64_t stages,
                                          Model model) {
  if (model == Model::cnn)
    options.optimizer = pxl::addons::optimizers::AdamOptions{.lr = cnn_learning_rate};
  else
    options.optimizer = pxl::addons::optimizers::SGDOptions{.lr = learning_rate};
  options.from_logits = true; // both models' output: logits
  options.constant_learning_rate = true;
  options.pipeline = stages > 1;
  auto trainer = [&] {
    if (model == Model::cnn) {
      Cnn cnn;
      cnn.stages = stages;
      return pxl::addons::Trainer(cnn);
    }
    Net net;
    net.stages = stages;
    return pxl::addons::Trainer(net);
  }();
  trainer.compile(std::move(options));
  return trainer;
}

} // namespace mnist::bench
