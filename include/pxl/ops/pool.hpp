// Pooling over 1, 2 or 3 spatial axes (ONNX's MaxPool, AveragePool and their global forms, as
// PopXL has them), and roi_align.
#pragma once

#include "pxl/ir/tensor.hpp"
#include "pxl/ops/conv.hpp"

#include <cstdint>
#include <vector>

namespace pxl::ops {

/// The geometry of a pool besides its window. Every list has one entry per spatial axis, except
/// `padding`, which holds the padding before each axis, then the padding after each (ONNX's
/// `pads`); an empty list means stride 1, no padding and dilation 1 on every axis.
///
/// Along an axis of size `in`, with the window's extent `span = dilation·(kernel - 1) + 1`, the
/// output has `floor((in + pad_before + pad_after - span) / stride) + 1` positions, or with
/// `ceil_mode` the ceiling, less one when the last window would start past the input and its
/// padding before (ONNX's and PyTorch's rule: every window starts inside the input or the
/// padding before it). A window of ceil_mode may run past the padding after: it is clipped.
/// Each padding must be smaller than `span`, and every window must hold an input element.
struct PoolOptions {
  std::vector<std::int64_t> stride;
  std::vector<std::int64_t> padding;
  std::vector<std::int64_t> dilation;
  PadType pad_type = PadType::not_set; ///< other than not_set: `padding` must be empty or zero
  bool ceil_mode = false;
  /// average_pool only: divide by the window's elements inside the input and its explicit
  /// padding (the padding counts as zeros), instead of by those inside the input alone. A
  /// ceil_mode window's part past the padding never counts.
  bool count_include_pad = false;
};

/// PopXL `max_pool`: `t` is (N, C, spatial...) with 1 to 3 spatial axes; the result is
/// (N, C, out...), each element the largest of its window's input elements (padding never
/// wins). float32 or float16. The gradient goes to the window's largest element and, on ties,
/// to the first of them in the window's row-major order (of the kernel's taps); where windows
/// overlap, an input element receives the sum of what each window sends it.
Tensor max_pool(const Tensor& t, const std::vector<std::int64_t>& kernel_size,
                const PoolOptions& options = {});

/// PopXL `average_pool`: as max_pool, each element the mean of its window: the sum of its input
/// elements divided by their count (or, with `count_include_pad`, by the count of its elements
/// inside the input and its padding). The gradient spreads each output's gradient evenly over
/// the elements the divisor counted (those in the padding are dropped).
Tensor average_pool(const Tensor& t, const std::vector<std::int64_t>& kernel_size,
                    const PoolOptions& options = {});

/// ONNX GlobalAveragePool: the mean over every spatial axis of (N, C, spatial...), kept as
/// axes of size 1: (N, C, 1...). An average_pool whose window is the whole image.
Tensor global_average_pool(const Tensor& t);

/// ONNX GlobalMaxPool: the largest element of each (image, channel), as (N, C, 1...). A
/// max_pool whose window is the whole image.
Tensor global_max_pool(const Tensor& t);

/// The gradient of `max_pool(t, kernel_size, options)` with respect to `t`, given `grad`, the
/// gradient of its result: a tensor of `t`'s shape. What autodiff emits for max_pool.
Tensor max_pool_grad(const Tensor& grad, const Tensor& t,
                     const std::vector<std::int64_t>& kernel_size, const PoolOptions& options = {});

/// The gradient of `average_pool` over an input of shape `input_shape` with respect to its
/// input, given `grad`, the gradient of its result. What autodiff emits for average_pool.
Tensor average_pool_grad(const Tensor& grad, const Shape& input_shape,
                         const std::vector<std::int64_t>& kernel_size,
                         const PoolOptions& options = {});

/// PopXL's roi_align (PopART's RoiAlign on PopLibs' roiAlignFwd, average pooling,
/// aligned = false): t is (N, C, H, W), rois (R, 4) rows [x1, y1, x2, y2] of t's dtype,
/// batch_index (R,) int32; the result is (R, C, output_size[0], output_size[1]). For ROI r
/// on image batch_index[r], with every step in float32: start = (x1, y1)·spatial_scale,
/// extent = max((x2, y2)·spatial_scale - start, 1), bins of extent / output_size, each
/// sampled on a sampling_ratio × sampling_ratio grid at start + (k + 0.5)·bin/sampling_ratio,
/// advanced by one bin per output index (by repeated addition, as PopLibs). A sample with
/// y > H or x > W adds 0; others are clamped to >= 0 and read bilinearly, the neighbour past
/// the last row or column being the last one. Each output is its samples' sum divided by
/// sampling_ratio². A batch_index outside [0, N) gives that ROI zeros (PopLibs reads out of
/// range). float32 or float16 (computed in float). DTypeError for other dtypes, rois of
/// another dtype or a non-int32 batch_index; ShapeError for ranks or extents other than the
/// above; ValueError for an output_size not of two entries >= 1, a spatial_scale <= 0 or not
/// finite, a sampling_ratio < 1 (PopLibs rejects 0, ONNX's adaptive count). Differentiable
/// with respect to t (not rois or batch_index): the adjoint, gathered per element of t.
Tensor roi_align(const Tensor& t, const Tensor& rois, const Tensor& batch_index,
                 const std::vector<std::int64_t>& output_size, float spatial_scale,
                 std::int64_t sampling_ratio);

/// The gradient of `roi_align(t, rois, batch_index, ...)` with respect to t, of shape
/// `input_shape`, given `grad`, the gradient of its result. What autodiff emits for roi_align.
Tensor roi_align_grad(const Tensor& grad, const Tensor& rois, const Tensor& batch_index,
                      const Shape& input_shape, const std::vector<std::int64_t>& output_size,
                      float spatial_scale, std::int64_t sampling_ratio);

} // namespace pxl::ops
