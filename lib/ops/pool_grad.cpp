// Gradient rules of the pools: each is one op of its own, MaxPoolGrad reading the pool's input
// to find every window's argmax again, AveragePoolGrad only the output gradient;
// RoiAlignGrad reads the ROIs again.
#include "ops/grad_rule.hpp"
#include "pxl/ops/pool.hpp"

namespace pxl::detail {

namespace {

/// The options that rebuild a pool of attributes `a`, its padding explicit.
ops::PoolOptions pool_options(const PoolAttrs& a) {
  std::vector<std::int64_t> padding = a.pads_begin;
  padding.insert(padding.end(), a.pads_end.begin(), a.pads_end.end());
  return {.stride = a.strides,
          .padding = padding,
          .dilation = a.dilations,
          .ceil_mode = a.ceil_mode,
          .count_include_pad = a.count_include_pad};
}

} // namespace

std::vector<Tensor> grad_MaxPool(GradContext& c) {
  const PoolAttrs& a = c.op().attrs<OpKind::MaxPool>();
  return {ops::max_pool_grad(c.grad_output(0), c.fwd_input(0), a.kernel, pool_options(a))};
}

std::vector<Tensor> grad_AveragePool(GradContext& c) {
  const PoolAttrs& a = c.op().attrs<OpKind::AveragePool>();
  return {
      ops::average_pool_grad(c.grad_output(0), c.fwd_input(0).shape(), a.kernel, pool_options(a))};
}

std::vector<Tensor> grad_RoiAlign(GradContext& c) {
  const RoiAlignAttrs& a = c.op().attrs<OpKind::RoiAlign>();
  return {ops::roi_align_grad(c.grad_output(0), c.fwd_input(1), c.fwd_input(2),
                              c.op().input(0).shape(), {a.aligned_height, a.aligned_width},
                              a.spatial_scale, a.sampling_ratio),
          Tensor{}, Tensor{}};
}

} // namespace pxl::detail
