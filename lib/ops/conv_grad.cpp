// Gradient rules of the convolutions: conv's data gradient is a ConvTranspose with its geometry,
// conv_transpose's a Conv; both weight gradients are a ConvWeightsGrad.
#include "ops/grad_rule.hpp"
#include "pxl/ops/conv.hpp"

namespace pxl::detail {

namespace {

/// The options that rebuild a convolution of attributes `a`, its padding explicit.
ops::ConvOptions conv_options(const ConvAttrs& a) {
  std::vector<std::int64_t> padding = a.pads_begin;
  padding.insert(padding.end(), a.pads_end.begin(), a.pads_end.end());
  return {.stride = a.strides,
          .padding = padding,
          .dilation = a.dilations,
          .groups = a.groups,
          .available_memory_proportion = a.available_memory_proportion,
          .partials_type = a.partials_type};
}

} // namespace

std::vector<Tensor> grad_Conv(GradContext& c) {
  const ConvAttrs& a = c.op().attrs<OpKind::Conv>();
  const Tensor x = c.fwd_input(0), w = c.fwd_input(1), g = c.grad_output(0);
  const ops::ConvOptions o = conv_options(a);
  std::vector<Tensor> r(2);
  if (c.needs_grad(0)) {
    // The rows a stride skips at the end of each axis come back as output padding.
    std::vector<std::int64_t> skipped;
    for (std::size_t i = 0; i < a.strides.size(); ++i) {
      const std::int64_t span = a.dilations[i] * (a.kernel[i] - 1) + 1;
      skipped.push_back((x.shape()[i + 2] + a.pads_begin[i] + a.pads_end[i] - span) % a.strides[i]);
    }
    r[0] = ops::conv_transpose(g, w,
                               {.stride = o.stride,
                                .padding = o.padding,
                                .dilation = o.dilation,
                                .groups = o.groups,
                                .output_padding = skipped,
                                .available_memory_proportion = o.available_memory_proportion,
                                .partials_type = o.partials_type});
  }
  if (c.needs_grad(1))
    r[1] = ops::conv_weights_grad(g, x, w.shape(), o);
  return r;
}

std::vector<Tensor> grad_ConvTranspose(GradContext& c) {
  const ConvAttrs& a = c.op().attrs<OpKind::ConvTranspose>();
  const Tensor x = c.fwd_input(0), w = c.fwd_input(1), g = c.grad_output(0);
  const ops::ConvOptions o = conv_options(a);
  std::vector<Tensor> r(2);
  if (c.needs_grad(0))
    r[0] = ops::conv(g, w, o);
  if (c.needs_grad(1))
    r[1] = ops::conv_weights_grad(x, g, w.shape(), o);
  return r;
}

} // namespace pxl::detail
