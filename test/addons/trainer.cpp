// addons::Trainer: fit over device loops equals one step per run bitwise; accumulation,
// replication and pipelining against the simpler runs they equal; evaluate and predict
// against each other; callbacks, the history and the errors.
#include "trainer_fixture.hpp"

#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace pxl;
using namespace pxl::test_trainer; // Classifier, data, fit, CompileOptions, FitOptions, Trainer
using doctest::Contains;

TEST_CASE("fit with a device loop of 50 steps trains bitwise as one step per run") {
  const FitOptions options{.epochs = 2, .batch_size = 8};
  const addons::optimizers::SGDOptions sgd{.lr = 0.1};
  const Fitted one = fit({.optimizer = sgd, .metrics = {"accuracy"}}, options);
  const Fitted loop =
      fit({.optimizer = sgd, .metrics = {"accuracy"}, .steps_per_execution = 50}, options);
  CHECK(loop.weights == one.weights);
  CHECK(loop.history.history == one.history.history);
  REQUIRE(one.history.epochs() == 2);
  CHECK(one.history.history.at("loss")[1] < one.history.history.at("loss")[0]);
  CHECK(one.history.history.at("accuracy")[1] > one.history.history.at("accuracy")[0]);
  CHECK(one.history.history.at("lr") == std::vector<double>{0.1, 0.1});
}

TEST_CASE("fit with accumulation, replicas and pipelining equals the simpler runs") {
  const FitOptions options{.epochs = 1, .batch_size = 8, .shuffle = false};
  SUBCASE("pipelined over two IPUs: bitwise the unpipelined accumulation") {
    const CompileOptions accumulate{
        .from_logits = true, .steps_per_execution = 4, .gradient_accumulation = 4};
    CompileOptions piped = accumulate;
    piped.pipeline = true;
    const Fitted plain = fit(accumulate, options, true);
    const Fitted pipelined = fit(piped, options, true);
    CHECK(pipelined.weights == plain.weights);
    CHECK(pipelined.history.history == plain.history.history);
  }
  SUBCASE("two replicas on halves of each batch: one replica, to float rounding") {
    const Fitted one = fit({.optimizer = addons::optimizers::AdamOptions{}}, options);
    const Fitted two =
        fit({.optimizer = addons::optimizers::AdamOptions{}, .replicas = 2}, options);
    for (const auto& [key, w] : one.weights) {
      const auto a = w.data<float>();
      const auto b = two.weights.at(key).data<float>();
      for (std::size_t i = 0; i < a.size(); ++i)
        CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-4).scale(1));
    }
  }
  SUBCASE("accumulating 2 micro-batches of 4: one batch of 8, to float rounding") {
    const Fitted whole = fit({}, options);
    const Fitted halves = fit({.steps_per_execution = 2, .gradient_accumulation = 2},
                              {.batch_size = 4, .shuffle = false});
    for (const auto& [key, w] : whole.weights) {
      const auto a = w.data<float>();
      const auto b = halves.weights.at(key).data<float>();
      for (std::size_t i = 0; i < a.size(); ++i)
        CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-4).scale(1));
    }
  }
}

TEST_CASE("CompileOptions::recompute: pipelined, bitwise as keeping the activations, with less "
          "memory for a forward pass more") {
  const FitOptions options{.epochs = 1, .batch_size = 8, .shuffle = false};
  const CompileOptions kept{.steps_per_execution = 4, .gradient_accumulation = 4, .pipeline = true};
  CompileOptions recomputed = kept;
  recomputed.recompute = true;
  const Fitted a = fit(kept, options, true), b = fit(recomputed, options, true);
  CHECK(b.weights == a.weights);
  CHECK(b.history.history == a.history.history);

  const addons::data::LabelledBatchSpec batch{.features = {{256, features}, float32},
                                              .labels = {{256}, int32}};
  Classifier model;
  model.stages = true;
  Trainer keeps(model), recomputes(model);
  keeps.compile({.from_logits = true,
                 .steps_per_execution = 8,
                 .gradient_accumulation = 8,
                 .pipeline = true});
  recomputes.compile({.from_logits = true,
                      .steps_per_execution = 8,
                      .gradient_accumulation = 8,
                      .pipeline = true,
                      .recompute = true});
  emu::Target two = emu::ipu2();
  two.ipus = 2;
  const emu::IrEstimate e_kept = keeps.estimate(batch, two);
  const emu::IrEstimate e_recomputed = recomputes.estimate(batch, two);
  CHECK(e_recomputed.run.compute > e_kept.run.compute);
  CHECK(e_recomputed.memory.ipus.at(0).not_always_live_peak <
        e_kept.memory.ipus.at(0).not_always_live_peak);

  Trainer unpipelined(Classifier{});
  CHECK_THROWS_WITH_AS(unpipelined.compile({.recompute = true}),
                       doctest::Contains("recompute recomputes each pipeline stage's activations "
                                         "and needs pipeline = true"),
                       ValueError);
}

TEST_CASE("CompileOptions::matmul_defaults: float16 partials reach the model's matmuls") {
  // Batches of 32: the weight gradients contract over 32 rows, two runs of 16 products, so a
  // float16 accumulator rounds where float32 partials do not (a contraction of 16 or fewer is
  // one run, rounded once either way).
  const FitOptions options{.epochs = 2, .batch_size = 32};
  const addons::optimizers::SGDOptions sgd{.lr = 0.1};
  const Fitted plain = fit({.optimizer = sgd, .dtype = float16}, options);
  const Fitted partials = fit(
      {.optimizer = sgd, .dtype = float16, .matmul_defaults = {.partials_type = float16}}, options);
  CHECK(partials.weights != plain.weights);
  const auto& loss = partials.history.history.at("loss");
  CHECK(loss[1] < loss[0]);
  CHECK(std::abs(loss[1] - plain.history.history.at("loss")[1]) < 0.02);
  // The memory proportion changes the plan, never the result.
  const Fitted tight =
      fit({.optimizer = sgd,
           .dtype = float16,
           .matmul_defaults = {.partials_type = float16, .available_memory_proportion = 0.05}},
          options);
  CHECK(tight.weights == partials.weights);
}

TEST_CASE("evaluate and predict see the trained weights and agree with each other") {
  Trainer trainer(Classifier{});
  trainer.compile({.from_logits = true, .metrics = {"accuracy"}});
  const auto [x, y] = data(examples, 1);
  const auto [xt, yt] = data(80, 2);
  const addons::Logs before = trainer.evaluate(xt, yt, 16);
  trainer.fit(x, y, {.epochs = 3, .batch_size = 8});
  const addons::Logs after = trainer.evaluate(xt, yt, 16);
  CHECK(after.at("loss") < before.at("loss"));
  const HostTensor logits = trainer.predict(xt, 16);
  REQUIRE(logits.shape() == Shape{80, classes});
  // The accuracy of the predictions, computed on the host.
  double correct = 0, loss = 0;
  const auto l = logits.data<float>();
  const auto labels = yt.data<std::int32_t>();
  for (std::int64_t i = 0; i < 80; ++i) {
    std::int64_t best = 0;
    double norm = 0;
    for (std::int64_t k = 0; k < classes; ++k) {
      norm += std::exp(l[static_cast<std::size_t>(i * classes + k)]);
      if (l[static_cast<std::size_t>(i * classes + k)] >
          l[static_cast<std::size_t>(i * classes + best)])
        best = k;
    }
    correct += best == labels[static_cast<std::size_t>(i)] ? 1 : 0;
    loss += std::log(norm) -
            l[static_cast<std::size_t>(i * classes + labels[static_cast<std::size_t>(i)])];
  }
  CHECK(after.at("accuracy") == doctest::Approx(correct / 80));
  CHECK(after.at("loss") == doctest::Approx(loss / 80).epsilon(1e-5));
}

namespace {
struct CountingCallback : addons::Callback {
  std::int64_t batches = 0;
  std::vector<addons::Logs> epochs;
  std::set<std::thread::id> threads; ///< where on_batch_end ran
  void on_batch_end(std::int64_t batch, const addons::Logs& logs) override {
    CHECK(batch == batches);
    CHECK(logs.contains("loss"));
    threads.insert(std::this_thread::get_id());
    ++batches;
  }
  bool on_epoch_end(int, const addons::Logs& logs) override {
    epochs.push_back(logs);
    return false;
  }
};
} // namespace

TEST_CASE("Callbacks: per batch and epoch, early stopping, learning-rate schedule, checkpoints") {
  const auto [x, y] = data(examples, 1);
  const auto [xv, yv] = data(80, 2);
  Trainer trainer(Classifier{});
  trainer.compile({.optimizer = addons::optimizers::SGDOptions{.lr = 0.1},
                   .from_logits = true,
                   .steps_per_execution = 10});
  auto counting = std::make_shared<CountingCallback>();
  auto stopping = std::make_shared<addons::EarlyStopping>("val_loss", 0, 10.0);
  auto schedule = std::make_shared<addons::LearningRateScheduler>(
      trainer, [](int epoch, double lr) { return epoch == 1 ? lr / 2 : lr; });
  const auto dir = std::filesystem::temp_directory_path() / "pxl_trainer_test";
  std::filesystem::create_directories(dir);
  auto checkpoint =
      std::make_shared<addons::ModelCheckpoint>(trainer, (dir / "w{epoch}.safetensors").string());
  const addons::History h = trainer.fit(x, y,
                                        {.epochs = 5,
                                         .batch_size = 8,
                                         .validation_data = std::pair(xv, yv),
                                         .callbacks = {counting, stopping, schedule, checkpoint}});
  // A min_delta of 10 never counts as an improvement: training stops after epoch 2.
  CHECK(stopping->stopped_epoch() == 1);
  CHECK(h.epochs() == 2);
  CHECK(counting->batches == 2 * examples / 8);
  // Asynchronous, as Keras with IPUs' callbacks: on the outfeed's thread, not the caller's.
  CHECK_FALSE(counting->threads.contains(std::this_thread::get_id()));
  REQUIRE(counting->epochs.size() == 2);
  CHECK(counting->epochs[0].contains("val_loss"));
  CHECK(h.history.at("lr") == std::vector<double>{0.1, 0.05});
  CHECK(trainer.learning_rate() == 0.05);
  CHECK(std::filesystem::exists(dir / "w1.safetensors"));
  CHECK(std::filesystem::exists(dir / "w2.safetensors"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Trainer refuses what it cannot train") {
  Trainer trainer(Classifier{});
  const auto [x, y] = data(examples, 1);
  CHECK_THROWS_WITH_AS(trainer.fit(x, y, {}), Contains("call compile first"), ValueError);
  CHECK_THROWS_WITH_AS(trainer.compile({.from_logits = true, .metrics = {"f1"}}),
                       Contains("unknown metric 'f1'"), ValueError);
  CHECK_THROWS_WITH_AS(trainer.compile({.from_logits = true, .metrics = {"loss"}}),
                       Contains("the loss is always reported"), ValueError);
  CHECK_THROWS_WITH_AS(trainer.compile({.from_logits = true, .steps_per_execution = 0}),
                       Contains("must be at least 1, got 0"), ValueError);
  CHECK_THROWS_WITH_AS(trainer.compile({.from_logits = true, .pipeline = true}),
                       Contains("needs gradient_accumulation of at least 2"), ValueError);
  CHECK_THROWS_WITH_AS(trainer.compile({.from_logits = true, .stochastic_rounding = true}),
                       "Trainer::compile: stochastic_rounding rounds float16 updates and needs "
                       "dtype float16, got float32",
                       ValueError);
  CHECK_THROWS_WITH_AS(
      trainer.compile({.from_logits = true, .matmul_defaults = {.partials_type = float16}}),
      "Trainer::compile: matmul_defaults.partials_type float16 accumulates float16 products and "
      "needs dtype float16, got float32",
      ValueError);
  CHECK_THROWS_WITH_AS(
      trainer.compile({.from_logits = true, .matmul_defaults = {.partials_type = int32}}),
      Contains("matmul_defaults.partials_type must be float32 or float16, got int32"), DTypeError);
  CHECK_THROWS_WITH_AS(
      trainer.compile({.from_logits = true, .matmul_defaults = {.available_memory_proportion = 2}}),
      Contains("matmul_defaults.available_memory_proportion must be in (0, 1], got 2"), ValueError);
  trainer.compile({.from_logits = true, .steps_per_execution = 100});
  CHECK_THROWS_WITH_AS(trainer.fit(x, y, {.batch_size = 8}),
                       "Trainer::fit: 400 examples in batches of 8 make 50 batches per pass, 1 "
                       "pass(es) per epoch, which do not fill one run of 100 batches "
                       "(steps_per_execution)",
                       ValueError);
  // Keras with IPUs: steps_per_execution counts batches, and a run ends on an update.
  CHECK_THROWS_WITH_AS(
      trainer.compile({.from_logits = true, .steps_per_execution = 6, .gradient_accumulation = 4}),
      "Trainer::compile: steps_per_execution counts batches, and a run must end "
      "on an optimizer step: it must be a multiple of gradient_accumulation 4, "
      "got 6",
      ValueError);
  const auto [x2, y2] = data(10, 3);
  CHECK_THROWS_WITH_AS(trainer.fit(x, y2, {}), Contains("as many of each"), ShapeError);
  trainer.compile({.from_logits = true, .replicas = 3});
  CHECK_THROWS_WITH_AS(trainer.fit(x, y, {.batch_size = 8}),
                       Contains("a positive multiple of the 3 replica(s) as its examples"),
                       ValueError);
  CHECK_THROWS_WITH_AS(trainer.weights(), Contains("no weights yet"), ValueError);
  // What a batch-end callback throws ends fit with it.
  struct Throwing : addons::Callback {
    void on_batch_end(std::int64_t batch, const addons::Logs&) override {
      if (batch == 3)
        throw ValueError("stop at batch 3");
    }
  };
  trainer.compile({.from_logits = true, .steps_per_execution = 10});
  CHECK_THROWS_WITH_AS(
      trainer.fit(x, y, {.batch_size = 8, .callbacks = {std::make_shared<Throwing>()}}),
      Contains("stop at batch 3"), ValueError);
  // A learning rate built into the program cannot change.
  trainer.compile({.from_logits = true, .constant_learning_rate = true});
  CHECK(trainer.learning_rate() == doctest::Approx(0.01));
  CHECK_THROWS_WITH_AS(trainer.set_learning_rate(0.1),
                       Contains("compiled with constant_learning_rate"), ValueError);
}

TEST_CASE("A constant learning rate trains as the variable one, to the update's rounding") {
  const FitOptions options{.epochs = 2, .batch_size = 8};
  const addons::optimizers::AdamOptions adam{.lr = 0.01};
  const Fitted variable = fit({.optimizer = adam}, options);
  const Fitted constant = fit({.optimizer = adam, .constant_learning_rate = true}, options);
  for (const auto& [key, w] : variable.weights) {
    const auto a = w.data<float>();
    const auto b = constant.weights.at(key).data<float>();
    for (std::size_t i = 0; i < a.size(); ++i)
      CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-4).scale(1));
  }
  CHECK(constant.history.history.at("lr") == std::vector<double>{0.01, 0.01});
}

TEST_CASE("A Sequential in pipeline stages trains with compile and fit as unpipelined") {
  auto model = [] {
    addons::Sequential m{addons::Flatten{}, addons::Dense(16, addons::Activation::relu),
                         addons::Dense(16, addons::Activation::relu), addons::Dense(classes)};
    m.set_pipeline_stage_assignment({0, 0, 1, 1});
    return m;
  };
  const auto [x, y] = data(examples, 1);
  const HostTensor images = x.reshaped({examples, 3, 4});
  std::map<std::string, HostTensor> weights[2];
  addons::History histories[2];
  for (const bool pipeline : {false, true}) {
    Trainer trainer(model());
    trainer.compile({.from_logits = true,
                     .metrics = {"accuracy"},
                     .steps_per_execution = 10,
                     .gradient_accumulation = 5,
                     .pipeline = pipeline});
    histories[pipeline ? 1 : 0] = trainer.fit(images, y, {.epochs = 2, .batch_size = 8});
    weights[pipeline ? 1 : 0] = trainer.weights();
  }
  CHECK(weights[1] == weights[0]);
  CHECK(histories[1].history == histories[0].history);
  CHECK(weights[0].contains("layers.1.weight"));
}

TEST_CASE("Stages sharing one IPU, scheduled sequentially and recomputed, train as unpipelined "
          "with a lower peak") {
  auto model = [] {
    addons::Sequential m{addons::Flatten{}, addons::Dense(16, addons::Activation::relu),
                         addons::Dense(16, addons::Activation::relu), addons::Dense(classes)};
    m.set_pipeline_stage_assignment({0, 0, 1, 2}, {0, 0, 0});
    return m;
  };
  const auto [x, y] = data(examples, 1);
  const HostTensor images = x.reshaped({examples, 3, 4});
  const CompileOptions plain{.from_logits = true,
                             .metrics = {"accuracy"},
                             .steps_per_execution = 10,
                             .gradient_accumulation = 2};
  CompileOptions checkpointed = plain;
  checkpointed.pipeline = true;
  checkpointed.pipeline_schedule = transforms::PipelineSchedule::sequential;
  checkpointed.recompute = true;
  std::map<std::string, HostTensor> weights[2];
  addons::History histories[2];
  for (const int k : {0, 1}) {
    Trainer trainer(model());
    trainer.compile(k == 0 ? plain : checkpointed);
    histories[k] = trainer.fit(images, y, {.epochs = 2, .batch_size = 8});
    weights[k] = trainer.weights();
  }
  CHECK(weights[1] == weights[0]);
  CHECK(histories[1].history == histories[0].history);

  // On the one IPU: a forward pass more, fewer activations live at once.
  const addons::data::LabelledBatchSpec batch{.features = {{256, 3, 4}, float32},
                                              .labels = {{256}, int32}};
  CompileOptions kept = checkpointed;
  kept.recompute = false;
  Trainer keeps(model()), recomputes(model());
  keeps.compile(kept);
  recomputes.compile(checkpointed);
  const emu::IrEstimate e_kept = keeps.estimate(batch, emu::ipu2());
  const emu::IrEstimate e_recomputed = recomputes.estimate(batch, emu::ipu2());
  CHECK(e_recomputed.run.compute > e_kept.run.compute);
  CHECK(e_recomputed.memory.ipus.at(0).not_always_live_peak <
        e_kept.memory.ipus.at(0).not_always_live_peak);

  Trainer unpipelined(model());
  CHECK_THROWS_WITH_AS(
      unpipelined.compile({.pipeline_schedule = transforms::PipelineSchedule::sequential}),
      doctest::Contains("pipeline_schedule sequential schedules a pipeline's stages and needs "
                        "pipeline = true"),
      ValueError);
}

TEST_CASE("fit on a shuffled, batched TensorDataset trains as fit on the arrays") {
  const auto [x, y] = data(examples, 1);
  const CompileOptions compile{
      .from_logits = true, .metrics = {"accuracy"}, .steps_per_execution = 5, .seed = 9};
  const Fitted arrays = fit(compile, {.epochs = 2, .batch_size = 8});
  Trainer trainer(Classifier{});
  trainer.compile(compile);
  // Shuffled with the compile seed, each epoch afresh: the arrays' order.
  const auto dataset = addons::data::TensorDataset::from_tensor_slices(x, y)
                           .shuffle(x.shape()[0], 9)
                           .batch(8)
                           .prefetch(4);
  const addons::History h = trainer.fit(dataset, {.epochs = 2});
  CHECK(trainer.weights() == arrays.weights);
  CHECK(h.history == arrays.history.history);
  CHECK_THROWS_WITH_AS(trainer.fit(addons::data::TensorDataset::from_tensor_slices(x, y), {}),
                       Contains("must be batched with drop_remainder"), ValueError);
}

namespace {

/// Rows `order` of `t` (first axis), in that order.
HostTensor rows_of(const HostTensor& t, const std::vector<std::int64_t>& order) {
  Shape shape = t.shape();
  const auto row = t.bytes().size() / static_cast<std::size_t>(shape[0]);
  shape[0] = static_cast<std::int64_t>(order.size());
  HostTensor out(shape, t.dtype());
  for (std::size_t i = 0; i < order.size(); ++i)
    std::copy_n(t.bytes().begin() +
                    static_cast<std::ptrdiff_t>(order[i]) * static_cast<std::ptrdiff_t>(row),
                row, out.bytes().begin() + static_cast<std::ptrdiff_t>(i * row));
  return out;
}

} // namespace

TEST_CASE("fit feeds the device through its infeeds, epoch after epoch, the dataset's "
          "prefetch deep") {
  const auto [x, y] = data(examples, 1);
  Trainer trainer(Classifier{});
  trainer.compile({.from_logits = true, .steps_per_execution = 3, .replicas = 2, .seed = 5});
  CHECK(trainer.feed_stats().empty());
  // 50 batches per epoch, 16 runs of 3: the last 2 batches of each epoch are left out.
  const auto dataset = addons::data::TensorDataset::from_tensor_slices(x, y)
                           .shuffle(x.shape()[0], 5)
                           .batch(8)
                           .prefetch(6);
  trainer.fit(dataset, {.epochs = 2});

  // The device took an element of x and of y per step and replica, from queues of 6 batches.
  std::set<std::string> fed;
  for (const FeedStats& s : trainer.feed_stats()) {
    if (!s.host_to_device)
      continue;
    CAPTURE(s.stream);
    fed.insert(s.stream);
    CHECK(s.elements == 2 * 48 * 2);
    CHECK(s.depth == 12);
    CHECK(s.max_occupancy <= 12);
  }
  CHECK(fed == std::set<std::string>{"x", "y"});

  // The producers ran ahead across the epoch's end: epoch 1 began with its own first batch,
  // not with epoch 0's left-over ones. One epoch of those 96 batches in that order trains the
  // same weights.
  std::vector<std::int64_t> order;
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    const auto shuffled = addons::data::shuffled_indices(examples, 5, epoch);
    order.insert(order.end(), shuffled.begin(), shuffled.begin() + 48 * 8);
  }
  Trainer once(Classifier{});
  once.compile({.from_logits = true, .steps_per_execution = 3, .replicas = 2, .seed = 5});
  once.fit(addons::data::TensorDataset::from_tensor_slices(rows_of(x, order), rows_of(y, order))
               .batch(8),
           {.epochs = 1});
  CHECK(once.weights() == trainer.weights());

  // Each fit binds the infeeds afresh: the counts start again.
  trainer.fit(dataset, {.epochs = 1});
  for (const FeedStats& s : trainer.feed_stats())
    if (s.host_to_device)
      CHECK(s.elements == 48 * 2);
}

TEST_CASE("fit shows the main job's progress bar where asked") {
  const auto [x, y] = data(examples, 1);
  Trainer trainer(Classifier{});
  trainer.compile({.from_logits = true, .steps_per_execution = 10});
  // A file is not a terminal: plain lines, a tenth of the epoch apart, the last at 50/50.
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  trainer.fit(x, y, {.epochs = 2, .batch_size = 8, .progress = out});
  std::rewind(out);
  std::string text;
  for (int c = std::fgetc(out); c != EOF; c = std::fgetc(out))
    text.push_back(static_cast<char>(c));
  std::fclose(out);
  CHECK(text.find("epoch 1/2 5/50  loss") != std::string::npos);
  CHECK(text.find("epoch 1/2 50/50  loss") != std::string::npos);
  CHECK(text.find("epoch 2/2 50/50  loss") != std::string::npos);
}
