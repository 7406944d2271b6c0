// Negative log-likelihood loss, alone and fused with the gradient of softmax + nll.
#include "common.hpp"

#include <cmath>

namespace pxl::emu::detail {

namespace {

/// probs viewed as [samples, classes]; labels as [samples].
struct NllPlan {
  std::int64_t samples = 0, classes = 0;
  NllAttrs attrs;
  /// Whether a sample with `label` is left out of the mean's divisor: only ignored ones are.
  bool ignored(std::int32_t label) const {
    return attrs.ignore_index && label == *attrs.ignore_index;
  }
  /// Whether it adds to the loss and has a gradient: not ignored, and a class in
  /// [0, classes). As in PopART, a label out of that range adds nothing but still counts in
  /// the divisor (the gradient rule of nll_loss divides the same way).
  bool contributes(std::int32_t label) const {
    return !ignored(label) && label >= 0 && label < classes;
  }
  /// The mean's divisor: the samples not ignored.
  std::int64_t divisor(const std::int32_t* labels) const {
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < samples; ++i)
      count += ignored(labels[i]) ? 0 : 1;
    return count;
  }
};

NllPlan plan_nll(const KernelOp& op) {
  NllPlan p;
  p.attrs = op.attrs_as<NllAttrs>();
  const Shape& shape = op.input(0).shape();
  p.classes = shape.empty() ? 1 : shape.back();
  p.samples = op.input(1).nelms();
  return p;
}

/// -log p(label) of one sample, in the accumulator type.
template <typename T, typename A = accum_t<T>>
A sample_loss(const NllPlan& p, const T* probs, std::int64_t i, std::int32_t label) {
  const A v = static_cast<A>(probs[i * p.classes + label]);
  return p.attrs.log_prob ? -v : -std::log(v);
}

/// Writes the loss output: per sample (split by sample) or its sum or mean (one worker, as
/// a reduction is never split).
template <typename T>
void write_loss(const NllPlan& p, const T* probs, const std::int32_t* labels, T* loss, unsigned w,
                unsigned nw) {
  using A = accum_t<T>;
  if (p.attrs.reduction == Reduction::none) {
    const auto [begin, end] = worker_range(p.samples, w, nw);
    for (std::int64_t i = begin; i < end; ++i)
      loss[i] =
          p.contributes(labels[i]) ? static_cast<T>(sample_loss<T>(p, probs, i, labels[i])) : T(0);
    return;
  }
  if (w != 0)
    return;
  A total = 0;
  for (std::int64_t i = 0; i < p.samples; ++i)
    if (p.contributes(labels[i]))
      total += sample_loss<T>(p, probs, i, labels[i]);
  const std::int64_t count = p.divisor(labels);
  // The mean over no counted sample is 0 rather than 0/0.
  if (p.attrs.reduction == Reduction::mean && count > 0)
    total /= static_cast<A>(count);
  loss[0] = static_cast<T>(total);
}

} // namespace

StepFn compile_NllLoss(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const NllPlan p = plan_nll(op);
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    const T* probs = typed<const T>(buffers.inputs[0]);
    const std::int32_t* labels = typed<const std::int32_t>(buffers.inputs[1]);
    T* loss = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) { write_loss(p, probs, labels, loss, w, nw); };
  });
}

StepFn compile_NllLossWithSoftmaxGrad(CompileContext&, const KernelOp& op,
                                      const OpBuffers& buffers) {
  const NllPlan p = plan_nll(op);
  return dispatch_float(op, op.input(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    using A = accum_t<T>;
    const T* probs = typed<const T>(buffers.inputs[0]);
    const std::int32_t* labels = typed<const std::int32_t>(buffers.inputs[1]);
    T* loss = typed<T>(buffers.outputs[0]);
    T* dlogits = typed<T>(buffers.outputs[1]);
    return [=](unsigned w, unsigned nw) {
      write_loss(p, probs, labels, loss, w, nw);
      // Every worker needs the mean's divisor; counting the labels again is cheaper than a
      // barrier.
      A scale = static_cast<A>(p.attrs.loss_grad);
      if (const std::int64_t count = p.divisor(labels);
          p.attrs.reduction == Reduction::mean && count > 0)
        scale /= static_cast<A>(count);
      const auto [begin, end] = worker_range(p.samples, w, nw);
      for (std::int64_t i = begin; i < end; ++i) {
        const T* pr = probs + i * p.classes;
        T* dr = dlogits + i * p.classes;
        const std::int32_t label = labels[i];
        if (!p.contributes(label)) {
          for (std::int64_t c = 0; c < p.classes; ++c)
            dr[c] = T(0);
          continue;
        }
        for (std::int64_t c = 0; c < p.classes; ++c) {
          A prob = static_cast<A>(pr[c]);
          if (p.attrs.log_prob)
            prob = std::exp(prob);
          dr[c] = static_cast<T>((prob - (c == label ? A{1} : A{0})) * scale);
        }
      }
    };
  });
}

} // namespace pxl::emu::detail
