#include "pxl/ops/pool.hpp"
#include "ops/spatial.hpp"

#include <cmath>
#include <string>
#include <tuple>

namespace pxl::ops {

namespace {

// Named one by one, not `using namespace spatial`: in a unity batch a using-directive in an
// anonymous namespace reaches the other files' helpers (ops/shape.cpp has a list() of its own).
using spatial::check_input_rank;
using spatial::Ints;
using spatial::padding_or_pad_type;
using spatial::per_axis;
using spatial::same_padding;

/// The pool's attributes and output shape for an input of shape `t` (named `t_name` in
/// messages), checked as PoolOptions says.
std::pair<PoolAttrs, Shape> pool_geometry(const std::string& op, const Shape& t,
                                          const std::string& t_name, const Ints& kernel_size,
                                          const PoolOptions& o, bool average) {
  const std::size_t axes = t.size() - 2;
  if (o.count_include_pad && !average)
    throw ValueError(op + ": count_include_pad applies to average_pool only");
  PoolAttrs a;
  if (kernel_size.size() != axes)
    throw ValueError(op + ": kernel_size " + spatial::list(kernel_size) + " has " +
                     std::to_string(kernel_size.size()) +
                     " entries, expected one per spatial axis of the input " + t_name + " (" +
                     std::to_string(axes) + ")");
  a.kernel = per_axis(op, "kernel_size", kernel_size, axes, 1, 1);
  a.strides = per_axis(op, "stride", o.stride, axes, 1, 1);
  a.dilations = per_axis(op, "dilation", o.dilation, axes, 1, 1);
  a.ceil_mode = o.ceil_mode;
  a.count_include_pad = o.count_include_pad;
  std::tie(a.pads_begin, a.pads_end) = padding_or_pad_type(op, o.padding, o.pad_type, axes);
  Shape out{t[0], t[1]};
  for (std::size_t i = 0; i < axes; ++i) {
    const std::int64_t in = t[i + 2], s = a.strides[i], d = a.dilations[i];
    const std::int64_t span = d * (a.kernel[i] - 1) + 1;
    const std::string axis = " on spatial axis " + std::to_string(i);
    if (o.pad_type == PadType::same_upper || o.pad_type == PadType::same_lower)
      std::tie(a.pads_begin[i], a.pads_end[i]) =
          same_padding(in, s, span, o.pad_type == PadType::same_upper);
    const std::int64_t pb = a.pads_begin[i], pe = a.pads_end[i];
    if (pb >= span || pe >= span)
      throw ValueError(op + ": padding " + std::to_string(pb) + " + " + std::to_string(pe) + axis +
                       " must be smaller on each side than the window's extent " +
                       std::to_string(span) + " (kernel " + std::to_string(a.kernel[i]) +
                       ", dilation " + std::to_string(d) + "), else a window sees only padding");
    const std::int64_t padded = in + pb + pe;
    if (padded < span)
      throw ShapeError(op + ": the window spans " + std::to_string(span) + axis + " (kernel " +
                       std::to_string(a.kernel[i]) + ", dilation " + std::to_string(d) +
                       "), more than the padded input's " + std::to_string(padded) + " (" + t_name +
                       ": " + std::to_string(in) + " + padding " + std::to_string(pb) + " + " +
                       std::to_string(pe) +
                       "), so the output would have no element; pad the input or use a "
                       "smaller kernel");
    std::int64_t size = (padded - span + (o.ceil_mode ? s - 1 : 0)) / s + 1;
    // ceil_mode's extra window must start inside the input or the padding before it.
    if (o.ceil_mode && (size - 1) * s >= in + pb)
      --size;
    // With dilation, a window inside the padded input may still see padding only. Not when
    // the taps are at most `in` apart: each window overlaps the input (the padding is smaller
    // than its extent), and taps that close cannot straddle it. Otherwise each window's first
    // tap at or after the input's start is found in O(1): a model's sizes may be huge.
    for (std::int64_t p = 0; d > in && p < size; ++p) {
      const std::int64_t first = p * s - pb;
      const std::int64_t k = first >= 0 ? 0 : (-first + d - 1) / d;
      const bool sees_input = k < a.kernel[i] && first + k * d < in;
      if (!sees_input)
        throw ShapeError(op + ": window " + std::to_string(p) + axis + " (taps " +
                         std::to_string(first) + ", " + std::to_string(first + d) + ", ... every " +
                         std::to_string(d) + ") holds no element of the input " + t_name +
                         ", only padding; reduce the padding or the dilation");
    }
    out.push_back(size);
  }
  return {std::move(a), std::move(out)};
}

/// A pool's input checked: float, (N, C, spatial...) with 1 to 3 spatial axes.
void check_pool_input(const std::string& op, const Tensor& t) {
  detail::check_float(op, t);
  check_input_rank(op, t);
}

Tensor pool(OpKind kind, const Tensor& t, const Ints& kernel_size, const PoolOptions& options) {
  const std::string op(op_type_name(kind));
  check_pool_input(op, t);
  auto [attrs, out] =
      pool_geometry(op, t.shape(), to_string(t), kernel_size, options, kind == OpKind::AveragePool);
  return detail::add_op1(kind, {t}, TensorSpec{std::move(out), t.dtype()}, std::move(attrs));
}

/// `grad` checked against the output of the pool of `kind` over an input of shape `input`.
PoolAttrs pool_grad_attrs(const std::string& op, OpKind kind, const Tensor& grad,
                          const Shape& input, const std::string& input_name,
                          const Ints& kernel_size, const PoolOptions& options) {
  detail::check_float(op, grad);
  if (input.size() < 3 || input.size() > 5)
    throw ShapeError(op +
                     ": the input must be (N, C, spatial...) with 1, 2 or 3 spatial axes, got " +
                     input_name);
  auto [attrs, out] =
      pool_geometry(op, input, input_name, kernel_size, options, kind == OpKind::AveragePool);
  if (grad.shape() != out)
    throw ShapeError(op + ": the gradient " + to_string(grad) +
                     " must have the pool's output shape " + to_string(out) + " for the input " +
                     input_name);
  return std::move(attrs);
}

/// The window that covers every spatial axis of `t`.
Ints whole_image(const std::string& op, const Tensor& t) {
  check_pool_input(op, t);
  return Ints(t.shape().begin() + 2, t.shape().end());
}

} // namespace

Tensor max_pool(const Tensor& t, const std::vector<std::int64_t>& kernel_size,
                const PoolOptions& options) {
  return pool(OpKind::MaxPool, t, kernel_size, options);
}

Tensor average_pool(const Tensor& t, const std::vector<std::int64_t>& kernel_size,
                    const PoolOptions& options) {
  return pool(OpKind::AveragePool, t, kernel_size, options);
}

Tensor global_average_pool(const Tensor& t) {
  return average_pool(t, whole_image("GlobalAveragePool", t));
}

Tensor global_max_pool(const Tensor& t) { return max_pool(t, whole_image("GlobalMaxPool", t)); }

Tensor max_pool_grad(const Tensor& grad, const Tensor& t,
                     const std::vector<std::int64_t>& kernel_size, const PoolOptions& options) {
  const std::string op = "MaxPoolGrad";
  detail::check_same_dtype(op, grad, t);
  PoolAttrs attrs =
      pool_grad_attrs(op, OpKind::MaxPool, grad, t.shape(), to_string(t), kernel_size, options);
  return detail::add_op1(OpKind::MaxPoolGrad, {grad, t}, t.spec(), std::move(attrs));
}

Tensor average_pool_grad(const Tensor& grad, const Shape& input_shape,
                         const std::vector<std::int64_t>& kernel_size, const PoolOptions& options) {
  const std::string op = "AveragePoolGrad";
  PoolAttrs attrs = pool_grad_attrs(op, OpKind::AveragePool, grad, input_shape,
                                    "of shape " + to_string(input_shape), kernel_size, options);
  return detail::add_op1(OpKind::AveragePoolGrad, {grad}, TensorSpec{input_shape, grad.dtype()},
                         std::move(attrs));
}

namespace {
/// Checks roi_align's arguments for an input of shape `t` and dtype `dtype` and returns its
/// attributes and output shape.
std::pair<RoiAlignAttrs, Shape> roi_align_geometry(const std::string& op, const Shape& t,
                                                   DType dtype, const Tensor& rois,
                                                   const Tensor& batch_index,
                                                   const Ints& output_size, float spatial_scale,
                                                   std::int64_t sampling_ratio) {
  if (rois.dtype() != dtype)
    throw DTypeError(op + ": rois " + to_string(rois) + " must have the input's dtype " +
                     std::string(name(dtype)));
  detail::check_dtype(op, batch_index, int32, "batch_index");
  if (t.size() != 4)
    throw ShapeError(op + ": the input must be 4-d (N, C, H, W), got shape " + to_string(t));
  if (rois.rank() != 2 || rois.shape()[1] != 4)
    throw ShapeError(op + ": rois must be (num_rois, 4), got " + to_string(rois));
  if (batch_index.shape() != Shape{rois.shape()[0]})
    throw ShapeError(op + ": batch_index must be (" + std::to_string(rois.shape()[0]) +
                     ",), one image per ROI of " + to_string(rois) + ", got " +
                     to_string(batch_index));
  if (output_size.size() != 2 || output_size[0] < 1 || output_size[1] < 1)
    throw ValueError(op + ": output_size must be two extents >= 1 (height, width), got " +
                     spatial::list(output_size));
  if (!(spatial_scale > 0.0f) || !std::isfinite(spatial_scale))
    throw ValueError(op + ": spatial_scale must be positive and finite, got " +
                     std::to_string(spatial_scale));
  if (sampling_ratio < 1)
    throw ValueError(op + ": sampling_ratio must be >= 1 (PopLibs has no adaptive 0), got " +
                     std::to_string(sampling_ratio));
  RoiAlignAttrs a{output_size[0], output_size[1], spatial_scale, sampling_ratio};
  return {a, Shape{rois.shape()[0], t[1], output_size[0], output_size[1]}};
}
} // namespace

Tensor roi_align(const Tensor& t, const Tensor& rois, const Tensor& batch_index,
                 const std::vector<std::int64_t>& output_size, float spatial_scale,
                 std::int64_t sampling_ratio) {
  detail::check_float("roi_align", t);
  auto [attrs, shape] = roi_align_geometry("roi_align", t.shape(), t.dtype(), rois, batch_index,
                                           output_size, spatial_scale, sampling_ratio);
  nbytes(shape, t.dtype(), "roi_align of " + to_string(t));
  return detail::add_op1(OpKind::RoiAlign, {t, rois, batch_index},
                         TensorSpec{std::move(shape), t.dtype()}, attrs);
}

Tensor roi_align_grad(const Tensor& grad, const Tensor& rois, const Tensor& batch_index,
                      const Shape& input_shape, const std::vector<std::int64_t>& output_size,
                      float spatial_scale, std::int64_t sampling_ratio) {
  detail::check_float("roi_align_grad", grad);
  auto [attrs, shape] = roi_align_geometry("roi_align_grad", input_shape, grad.dtype(), rois,
                                           batch_index, output_size, spatial_scale, sampling_ratio);
  if (grad.shape() != shape)
    throw ShapeError("roi_align_grad: grad " + to_string(grad) +
                     " must have roi_align's output "
                     "shape " +
                     to_string(shape));
  nbytes(input_shape, grad.dtype(), "roi_align_grad of " + to_string(grad));
  return detail::add_op1(OpKind::RoiAlignGrad, {grad, rois, batch_index},
                         TensorSpec{input_shape, grad.dtype()}, attrs);
}

} // namespace pxl::ops
