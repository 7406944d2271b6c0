// How the Trainer's programs meet the model: the input cast to the model's dtype, the output as
// the loss and the metrics see it, and the loss with its gradient.
#pragma once

#include "pxl/addons/ops/cross_entropy.hpp"
#include "pxl/addons/training/trainer.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/host_io.hpp"
#include "pxl/ops/reduce.hpp"

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

/// The loss and its gradient with respect to the output, times `scale` (loss scaling).
inline std::pair<Tensor, Tensor> loss_with_grad(TrainingLoss loss, const Tensor& out,
                                                const Tensor& y, double scale = 1.0) {
  if (loss == TrainingLoss::sparse_categorical_crossentropy)
    return ops::cross_entropy_with_grad(out, y, scale);
  const Tensor diff = out - y;
  const auto n = static_cast<double>(out.nelms());
  return {pxl::ops::mean(diff * diff), diff * (2.0 * scale / n)};
}

} // namespace pxl::addons::trainer_detail
