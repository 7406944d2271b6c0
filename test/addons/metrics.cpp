// Metrics: accuracy and correct counts against hand-computed values on the emulator, ties,
// labels out of range, any leading axes, float16 logits; metric names; errors.
#include "pxl/addons.hpp"
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

using namespace pxl;
using addons::Metric;

// Named: in a unity build this file shares its unit with others of the suite.
namespace test_metrics {

/// `metric(logits, labels)` built in a main graph over constants, run on the emulator.
HostTensor evaluate(const std::function<Tensor(const Tensor&, const Tensor&)>& metric,
                    const HostTensor& logits, const HostTensor& labels) {
  Ir ir;
  DeviceToHostStream out;
  {
    auto main = ir.main_graph().scope();
    const Tensor result = metric(constant(logits, "logits"), constant(labels, "labels"));
    out = d2h_stream(result.shape(), result.dtype(), "metric");
    ops::host_store(out, result);
  }
  Session session{ir, "ipu_model", {.workers = 1}};
  auto attached = session.attach();
  return session.run().at(out);
}

HostTensor labels_of(std::vector<std::int32_t> values, Shape shape) {
  return HostTensor(values, std::move(shape));
}

// Row argmaxes 1, 0 (a tie: the first maximum wins), 2, 2.
const HostTensor logits({0.1f, 2.f, -1.f, 3.f, 3.f, 0.f, -1.f, -2.f, -0.5f, 0.f, 0.f, 5.f}, {4, 3});

TEST_CASE("sparse_categorical_accuracy and correct_predictions: argmax against the labels") {
  // Rows 0, 1 and 2 are right; row 3's label is out of range, never right.
  const auto labels = labels_of({1, 0, 2, 7}, {4});
  const HostTensor count = evaluate(addons::correct_predictions, logits, labels);
  CHECK(count.spec() == TensorSpec{{}, float32});
  CHECK(count.item() == 3.0);
  const HostTensor accuracy = evaluate(addons::sparse_categorical_accuracy, logits, labels);
  CHECK(accuracy.spec() == TensorSpec{{}, float32});
  CHECK(accuracy.item() == 0.75);

  CHECK(
      evaluate(addons::sparse_categorical_accuracy, logits, labels_of({1, 0, 2, 2}, {4})).item() ==
      1.0);
  CHECK(
      evaluate(addons::sparse_categorical_accuracy, logits, labels_of({0, 1, 1, -1}, {4})).item() ==
      0.0);
  // Probabilities give the accuracy of their logits.
  CHECK(evaluate(
            [](const Tensor& l, const Tensor& y) {
              return addons::sparse_categorical_accuracy(ops::softmax(l), y);
            },
            logits, labels)
            .item() == 0.75);
}

TEST_CASE("sparse_categorical_accuracy: leading axes, float16 logits, a single sample") {
  // [2, 2, 3]: the same four rows, labels [2, 2].
  const auto labels = labels_of({1, 1, 2, 2}, {2, 2});
  CHECK(evaluate(addons::correct_predictions, logits.reshaped({2, 2, 3}), labels).item() == 3.0);
  CHECK(evaluate(addons::sparse_categorical_accuracy, logits.astype(float16).reshaped({2, 2, 3}),
                 labels)
            .item() == 0.75);
  const HostTensor one({0.5f, -3.f, 4.f}, {3});
  CHECK(evaluate(addons::sparse_categorical_accuracy, one, HostTensor::scalar(std::int32_t{2}))
            .item() == 1.0);
  // Zero samples: a mean of nothing.
  CHECK(std::isnan(evaluate(addons::sparse_categorical_accuracy, HostTensor({0, 3}, float32),
                            HostTensor({0}, int32))
                       .item()));
}

TEST_CASE("Metric names as Keras logs them, parsed back; unknown names listed") {
  CHECK(addons::metric_name(Metric::accuracy) == "accuracy");
  CHECK(addons::metric_name(Metric::sparse_categorical_accuracy) == "sparse_categorical_accuracy");
  CHECK(addons::metric_name(Metric::mean_loss) == "loss");
  for (const Metric m : {Metric::accuracy, Metric::sparse_categorical_accuracy, Metric::mean_loss})
    CHECK(addons::parse_metric(addons::metric_name(m)) == m);
  CHECK(addons::parse_metric("acc") == Metric::accuracy);
  CHECK_THROWS_WITH_AS(addons::parse_metric("mae"),
                       "parse_metric: unknown metric 'mae'; expected one of 'accuracy', "
                       "'sparse_categorical_accuracy', 'loss' (or 'acc' for accuracy)",
                       ValueError);
}

TEST_CASE("Metrics reject operands of the wrong dtype or shape, naming them") {
  Ir ir;
  auto main = ir.main_graph().scope();
  const Tensor l = constant(logits, "logits");
  const Tensor y = constant(labels_of({1, 0, 2, 7}, {4}), "labels");
  CHECK_THROWS_WITH_AS(addons::sparse_categorical_accuracy(ops::cast(l, int32), y),
                       doctest::Contains("sparse_categorical_accuracy: logits must be float32 or "
                                         "float16"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(addons::correct_predictions(l, ops::cast(y, float32)),
                       doctest::Contains("correct_predictions: labels must be int32 class "
                                         "indices"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(addons::sparse_categorical_accuracy(l, y.reshape({4, 1})),
                       doctest::Contains("sparse_categorical_accuracy: labels must have shape "
                                         "(4,) (the logits' shape without the class axis)"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(addons::sparse_categorical_accuracy(constant(HostTensor::scalar(1.f)), y),
                       doctest::Contains("logits must have a class axis of size >= 1"), ShapeError);
}

} // namespace test_metrics
