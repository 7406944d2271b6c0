// What a step computes: flops_of and amp_shape_of (step_work.hpp).
#include "step_work.hpp"

#include "pxl/ir/attrs.hpp"

#include <algorithm>
#include <span>

namespace pxl::emu::detail {

std::int64_t flops_of(const IrView& ir, OpId op) {
  const auto inputs = ir.inputs(op), outputs = ir.outputs(op);
  std::int64_t out = 0, in = 0;
  for (TensorId t : outputs)
    out += ir.spec(t).nelms();
  for (TensorId t : inputs)
    in = std::max(in, ir.spec(t).nelms());
  if (ir.kind(op) == OpKind::MatMul) {
    const Shape& a = ir.spec(inputs[0]).shape;
    const std::int64_t k = a.empty() ? 1 : a.back();
    return 2 * out * k;
  }
  if (family_of(ir.kind(op)) == OpFamily::conv) {
    // 2·N·C_out·out_spatial·(C_in / groups)·kernel, in the terms of the convolution run: its
    // output is Conv's output and the other kinds' input 0; its weights are input 1 or the
    // weight gradient.
    const OpKind k = ir.kind(op);
    const TensorSpec& dst = ir.spec(k == OpKind::Conv ? outputs[0] : inputs[0]);
    const Shape& w = ir.spec(k == OpKind::ConvWeightsGrad ? outputs[0] : inputs[1]).shape;
    return 2 * dst.nelms() * nelms(std::span(w).subspan(1));
  }
  if (ir.kind(op) == OpKind::RoiAlign || ir.kind(op) == OpKind::RoiAlignGrad) {
    // Four bilinear taps per sample, sampling_ratio² samples per pooled element: the output of
    // roi_align, input 0 (the output gradient) of its gradient.
    const auto& a = ir.attrs_as<RoiAlignAttrs>(op);
    return 4 * ir.spec(ir.kind(op) == OpKind::RoiAlign ? outputs[0] : inputs[0]).nelms() *
           a.sampling_ratio * a.sampling_ratio;
  }
  if (family_of(ir.kind(op)) == OpFamily::pool) {
    // One operation per window tap of every pooled element: the pools' output, the gradients'
    // input 0.
    const bool forward = ir.kind(op) == OpKind::MaxPool || ir.kind(op) == OpKind::AveragePool;
    const std::int64_t pooled = ir.spec(forward ? outputs[0] : inputs[0]).nelms();
    return pooled * nelms(std::span(ir.attrs_as<PoolAttrs>(op).kernel));
  }
  if (ir.kind(op) == OpKind::AllReduce) // n - 1 operations per element, each IPU's outputs alike
    return (static_cast<std::int64_t>(inputs.size()) - 1) * in;
  return std::max(out, in);
}

std::optional<AmpShape> amp_shape_of(const IrView& ir, OpId op) {
  const OpKind kind = ir.kind(op);
  if (cost_of(kind) != OpCost::amp)
    return std::nullopt;
  const auto inputs = ir.inputs(op), outputs = ir.outputs(op);
  AmpShape a;
  if (kind == OpKind::MatMul) {
    const TensorSpec &x = ir.spec(inputs[0]), &w = ir.spec(inputs[1]), &y = ir.spec(outputs[0]);
    const std::int64_t k = x.shape.empty() ? 1 : x.shape.back();
    std::int64_t m = x.shape.size() >= 2 ? x.shape[x.shape.size() - 2] : 1;
    std::int64_t n = w.shape.size() >= 2 ? w.shape.back() : 1;
    if (w.nelms() == k * n) // w shared by the batch: the batch is more rows
      m = y.nelms() / std::max<std::int64_t>(1, n);
    else if (x.nelms() == m * k) // x shared by the batch: more columns
      n = y.nelms() / std::max<std::int64_t>(1, m);
    a.groups = std::max<std::int64_t>(1, y.nelms() / std::max<std::int64_t>(1, m * n));
    a.extent = {m, n, k};
    a.elements = {w.nelms(), x.nelms(), y.nelms()};
    a.contracted = 2;
    a.operands = x.dtype;
    const auto& attrs = ir.attrs_as<MatMulAttrs>(op);
    a.partials_bytes = static_cast<std::int64_t>(size_of(attrs.partials_type));
    a.available_memory_proportion = attrs.available_memory_proportion;
    return a;
  }
  // dst: the convolution's output (Conv) or its gradient (the others' input 0); the weights
  // (or their gradient) [out channels, in channels per group, taps...]; the third tensor is
  // the images (Conv's input 0, ConvWeightsGrad's input 1) or their gradient.
  const TensorSpec& dst = ir.spec(kind == OpKind::Conv ? outputs[0] : inputs[0]);
  const TensorSpec& w = ir.spec(kind == OpKind::ConvWeightsGrad ? outputs[0] : inputs[1]);
  const TensorSpec& images = ir.spec(kind == OpKind::Conv              ? inputs[0]
                                     : kind == OpKind::ConvWeightsGrad ? inputs[1]
                                                                       : outputs[0]);
  const ConvAttrs& attrs = ir.attrs_as<ConvAttrs>(op);
  const std::int64_t groups = std::max<std::int64_t>(1, attrs.groups);
  const std::int64_t channels = dst.shape.size() > 1 ? dst.shape[1] : 1;
  a.groups = groups;
  a.extent = {dst.nelms() / std::max<std::int64_t>(1, channels),
              std::max<std::int64_t>(1, channels / groups), nelms(std::span(w.shape).subspan(1))};
  a.elements = {w.nelms(), images.nelms(), dst.nelms()};
  a.contracted = kind == OpKind::Conv ? 2 : kind == OpKind::ConvWeightsGrad ? 0 : 1;
  a.operands = w.dtype;
  a.available_memory_proportion = attrs.available_memory_proportion;
  a.partials_bytes = static_cast<std::int64_t>(size_of(attrs.partials_type));
  return a;
}

} // namespace pxl::emu::detail
