// pxl::addons metrics: Keras's classification metrics, built as ops in the current graph.
#pragma once

#include "pxl/ir/tensor.hpp"

#include <string_view>

namespace pxl::addons {

/// How many samples `logits` ([..., C], float32 or float16) classify as their `labels` (int32
/// class indices shaped `logits.shape[:-1]`): the count of argmax(logits, -1) == label, as a
/// float32 scalar (exact up to 2^24 samples). Summed over steps, it gives an epoch's exact
/// accuracy, where a mean of per-batch means would weigh a short last batch wrongly. The
/// first maximum wins a tie (ops::argmax); a label outside [0, C) is never correct. Not
/// differentiable (argmax has no gradient). DTypeError / ShapeError naming the operands on
/// bad input, as cross_entropy's.
///
///     Tensor hits = correct_predictions(logits, labels);  // logits [32, 10], labels [32]
Tensor correct_predictions(const Tensor& logits, const Tensor& labels);

/// Keras's `sparse_categorical_accuracy`: the fraction of samples whose argmax over the last
/// axis of `logits` equals their int32 label, a float32 scalar in [0, 1] (correct_predictions
/// over the number of samples; NaN for zero samples, as a mean of nothing). Logits and
/// probabilities give the same value, since softmax keeps the argmax. Errors as
/// correct_predictions.
///
///     Tensor acc = sparse_categorical_accuracy(logits, labels);  // 0.75 when 24 of 32 match
Tensor sparse_categorical_accuracy(const Tensor& logits, const Tensor& labels);

/// The values a training loop can report per epoch (Keras's `metrics=[...]`, and the loss).
enum class Metric {
  /// Keras's "accuracy": with int32 class-index labels and logits (a sparse categorical loss)
  /// Keras resolves it to sparse_categorical_accuracy, and so does pxl.
  accuracy,
  sparse_categorical_accuracy,
  /// The mean of the loss over the epoch's samples.
  mean_loss,
};

/// The name Keras logs the metric under: "accuracy", "sparse_categorical_accuracy", "loss".
std::string_view metric_name(Metric metric);

/// The metric named `name`, as metric_name gives it (Keras's short "acc" means accuracy too).
/// ValueError listing the known names for any other.
///
///     parse_metric("accuracy") == Metric::accuracy;
Metric parse_metric(std::string_view name);

} // namespace pxl::addons
