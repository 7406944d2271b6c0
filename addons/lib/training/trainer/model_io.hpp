// How the Trainer's programs meet the model: the input cast to the model's dtype, the output as
// the loss and the metrics see it, and the loss with its gradient.
#pragma once

#include "pxl/addons/ops/cross_entropy.hpp"
#include "pxl/addons/training/trainer.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/host_io.hpp"
#include "pxl/ops/reduce.hpp"

#include <optional>
#include <utility>

namespace pxl::addons::trainer_detail {

/// The spec the model is traced for: a float input in the model's dtype.
inline TensorSpec model_spec(TensorSpec x, DType dtype) {
  if (is_floating_point(x.dtype))
    x.dtype = dtype;
  return x;
}

/// The model's input as it computes: a float input cast to the model's dtype on the device.
inline Tensor model_input(const HostToDeviceStream& stream, DType dtype) {
  const Tensor x = pxl::ops::host_load(stream);
  return is_floating_point(x.dtype()) && x.dtype() != dtype ? pxl::ops::cast(x, dtype) : x;
}

/// The model's output as the loss and the metrics see it: float32.
inline Tensor loss_input(const Tensor& out) {
  return is_floating_point(out.dtype()) && out.dtype() != float32 ? pxl::ops::cast(out, float32)
                                                                  : out;
}

/// The logits of the model's output `out` that the loss reads instead of it: the input of the
/// Softmax that produced it, with sparse_categorical_crossentropy on probabilities. None for
/// any other output or loss; ValueError for a Softmax output taken for logits.
inline std::optional<Tensor> loss_logits(const CompileOptions& o, const Tensor& out) {
  if (o.loss != TrainingLoss::sparse_categorical_crossentropy)
    return std::nullopt;
  const std::optional<Tensor> logits = ops::cross_entropy_detail::softmax_logits(out);
  if (logits && o.from_logits)
    throw ValueError("Trainer: CompileOptions::from_logits is true, but the model's output " +
                     to_string(out) + " is the output of " + out.producer()->debug_name() +
                     ", probabilities rather than logits (a second softmax in the loss would "
                     "train poorly); set from_logits = false, and the loss reads the softmax's "
                     "input as Keras does, or drop the softmax from the model");
  return logits;
}

/// The loss and its gradient with respect to `out` (the model's output as loss_input makes
/// it, or the logits loss_logits found), times `scale` (loss scaling).
inline std::pair<Tensor, Tensor> loss_with_grad(const CompileOptions& o, const Tensor& out,
                                                const Tensor& y, double scale = 1.0,
                                                bool logits = false) {
  if (o.loss == TrainingLoss::sparse_categorical_crossentropy)
    return o.from_logits || logits ? ops::cross_entropy_with_grad(out, y, scale)
                                   : ops::sparse_categorical_crossentropy_with_grad(out, y, scale);
  const Tensor diff = out - y;
  const auto n = static_cast<double>(out.nelms());
  return {pxl::ops::mean(diff * diff), diff * (2.0 * scale / n)};
}

} // namespace pxl::addons::trainer_detail
