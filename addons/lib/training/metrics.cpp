// Metrics: argmax against the labels, counted or averaged; metric names both ways.
#include "pxl/addons/training/metrics.hpp"

#include "pxl/addons/ops/cross_entropy.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/reduce.hpp"

#include <array>
#include <string>
#include <utility>

namespace pxl::addons {
namespace {

constexpr std::array<std::pair<Metric, std::string_view>, 3> names{{
    {Metric::accuracy, "accuracy"},
    {Metric::sparse_categorical_accuracy, "sparse_categorical_accuracy"},
    {Metric::mean_loss, "loss"},
}};

/// 1.0 where the argmax of a sample's logits is its label, else 0.0 (float32, labels' shape).
Tensor hits(std::string_view fn, const Tensor& logits, const Tensor& labels) {
  // The operands are those of the cross-entropy loss the metric sits next to; one check and
  // one wording for both.
  ops::cross_entropy_detail::check_operands(fn, logits, labels);
  const Tensor predicted = pxl::ops::argmax(logits, logits.rank() - 1);
  return pxl::ops::cast(pxl::ops::equal(predicted, labels), float32);
}

} // namespace

Tensor correct_predictions(const Tensor& logits, const Tensor& labels) {
  return pxl::ops::sum(hits("correct_predictions", logits, labels));
}

Tensor sparse_categorical_accuracy(const Tensor& logits, const Tensor& labels) {
  return pxl::ops::mean(hits("sparse_categorical_accuracy", logits, labels));
}

std::string_view metric_name(Metric metric) {
  for (const auto& [m, name] : names)
    if (m == metric)
      return name;
  PXL_ASSERT(false && "metric_name: a Metric without a name");
  return {};
}

Metric parse_metric(std::string_view name) {
  if (name == "acc")
    return Metric::accuracy;
  std::string known;
  for (const auto& [m, n] : names) {
    if (n == name)
      return m;
    known += (known.empty() ? "'" : ", '") + std::string(n) + "'";
  }
  throw ValueError("parse_metric: unknown metric '" + std::string(name) + "'; expected one of " +
                   known + " (or 'acc' for accuracy)");
}

} // namespace pxl::addons
