// Shape and data-movement ops: reshape, transpose, slicing, concat/split/stack, gather, onehot,
// pad, tile, triangles, interpolate, and the creators init and arange.
#pragma once

#include "pxl/ir/attrs.hpp"
#include "pxl/ir/tensor.hpp"

#include <optional>
#include <utility>
#include <vector>

namespace pxl::ops {

/// One dimension may be -1 (inferred). The element count must not change.
Tensor reshape(const Tensor& t, Shape shape);
/// Permute axes; empty reverses them.
Tensor transpose(const Tensor& t, std::vector<std::int64_t> perm = {});
/// To 1-d.
Tensor flatten(const Tensor& t);
/// Removes the given size-1 axes, or every size-1 axis when none are given.
Tensor squeeze(const Tensor& t, std::vector<std::int64_t> axes = {});
/// Inserts size-1 axes at the given positions of the output.
Tensor unsqueeze(const Tensor& t, std::vector<std::int64_t> axes);
/// NumPy `t[start:stop]` along each listed axis (all axes if `axes` is empty); negative
/// indices count from the end and are clamped like NumPy's.
Tensor slice(const Tensor& t, std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
             std::vector<std::int64_t> axes = {});
Tensor concat(const std::vector<Tensor>& ts, std::int64_t axis = 0);
/// Into `n` equal parts along `axis`.
std::vector<Tensor> split(const Tensor& t, std::int64_t n, std::int64_t axis = 0);
/// Into parts of the given sizes along `axis`.
std::vector<Tensor> split(const Tensor& t, std::vector<std::int64_t> sizes, std::int64_t axis = 0);
/// `t` indexed along `axis` by int32 `indices`: shape t[:axis] + indices + t[axis+1:].
/// Out-of-range indices yield zeros.
Tensor gather(const Tensor& t, const Tensor& indices, std::int64_t axis = 0);
/// PopXL's tied_gather: gather's values and gradient (the gradient reaches `t` as gather's does,
/// the scatter-add of the output gradient), as an op of its own type "TiedGather". In PopXL it
/// marks the gather of a weight tied to a matmul, which only changes the IPU tile layout of
/// the indices. Out-of-range indices yield zeros (PopXL's zero_OOR; without it they are
/// undefined there).
Tensor tied_gather(const Tensor& t, const Tensor& indices, std::int64_t axis = 0);
/// PopXL's groupedgather: a gather per group. With group_size 1 it is gather. Otherwise axis 0
/// of `t` and of the int32 `indices` is the group axis, of extent `group_size`; `axis` (never
/// the group axis) is gathered on within each group: out[g, ...] = gather(t[g], indices[g],
/// axis - 1), of shape t[:axis] + indices[1:] + t[axis+1:]. Out-of-range indices yield zeros.
/// Gradient: each group's scatter-add of the output gradient.
Tensor groupedgather(const Tensor& t, const Tensor& indices, std::int64_t axis = 0,
                     std::int64_t group_size = 1);
/// One-hot of int32 `indices` with `num_classes` classes inserted at `axis`; `values` is
/// [off, on] and sets the dtype.
Tensor onehot(const Tensor& indices, std::int64_t num_classes, const Tensor& values,
              std::int64_t axis = -1);
/// A fresh tensor in the current graph: zero-filled, or with unspecified contents (`undef`).
Tensor init(Shape shape, DType dtype, std::string name = "", InitType type = InitType::zero);
/// NumPy's take_along_axis (ONNX GatherElements): int32 `indices` of t's rank, with t's extent
/// on every axis but `axis`; out[..., j, ...] = t[..., indices[..., j, ...], ...]. Out-of-range
/// indices yield zeros.
Tensor take_along_axis(const Tensor& t, const Tensor& indices, std::int64_t axis);
/// A copy of `t` with `updates` written at `indices` along `axis` (ONNX ScatterElements,
/// PyTorch's scatter): `indices` (int32) and `updates` share a shape that has t's extent on
/// every axis but `axis`. Out-of-range indices are skipped; where indices repeat, the last
/// along the axis wins (the gradient reaches every repeat, as in PyTorch).
Tensor scatter(const Tensor& t, const Tensor& indices, const Tensor& updates, std::int64_t axis);
/// As scatter, adding the updates instead (repeats add up), in order along the axis: the sum
/// scatter_reduce(updates, indices, ScatterReduction::sum, t, axis).
Tensor scatter_add(const Tensor& t, const Tensor& indices, const Tensor& updates,
                   std::int64_t axis);
/// PopXL's scatter_reduce (torch_scatter's scatter): each element of `data` goes to the
/// position its index names along `axis`, where the values sent to one position are reduced:
/// out[..., indices[..., j, ...], ...] = reduction over j of data[..., j, ...].
/// - `data`: float32, float16 or int32, rank >= 1. `indices` (int32): data's shape, or with
///   enable_index_broadcast a vector of data's extent on `axis` (rank 1, or only that extent
///   other than 1), one index per position along the axis for every other coordinate.
/// - The output has data's shape with `axis_size` on the axis, or `initial_values`' spec
///   (data's shape but on the axis; axis_size, if also given, must agree). One of the two is
///   required (ValueError otherwise).
/// - Without initial_values a position no index names is 0; with them it keeps its initial
///   value, and the initial value takes part in the reduction (`none`: is overwritten).
/// - `sum` adds in order along the axis (accumulated unrounded, then rounded once); `max`,
///   `min` keep the extreme; `none` writes, the last along the axis winning where indices
///   repeat. Out-of-range indices are skipped.
/// - Gradient (as PopART's): `sum` and `none` give data the output gradient gathered at its
///   indices (for `none` the derivative only where indices do not repeat along the axis: an
///   overwritten element gets it too); `max` and `min` only to the elements equal to the
///   result at their position (every tie gets the whole gradient, none is split).
///   initial_values get the output gradient: all of it for `sum`, where they are the result
///   for `max`/`min` (ties with data included), and where no index wrote for `none`.
/// PopXL's available_memory_proportion (a tile-memory hint) is not taken; PopART's `mul`
/// reduction is not in PopXL and not here.
Tensor scatter_reduce(const Tensor& data, const Tensor& indices, ScatterReduction reduction,
                      const std::optional<Tensor>& initial_values = std::nullopt,
                      std::int64_t axis = 0, std::optional<std::int64_t> axis_size = std::nullopt,
                      bool enable_index_broadcast = true);
/// PopXL's dynamic_slice: the `sizes[i]`-long part of each of `axes` starting at the runtime
/// offsets `index` (int32, one per axis). Offsets are clamped so the slice stays inside `t`
/// (XLA's rule).
Tensor dynamic_slice(const Tensor& t, const Tensor& index, std::vector<std::int64_t> axes,
                     std::vector<std::int64_t> sizes);
/// PopXL's aliasing forms of reshape, flatten, transpose, slice and concat (`reshape_`, ...),
/// with their shape rules and errors. PopXL returns a view sharing the input's memory; pxl
/// holds the view as a copy (op_flags::View) and refuses, with a GraphError naming both ops,
/// what would tell the two apart: modifying the view in place (which in PopXL writes through
/// to the input), and reading the view after its input was modified in place (docs/semantics.md,
/// "Views"). Not differentiable, as PopART's in-place ops, except concat_ (Concat's gradient).
Tensor reshape_(const Tensor& t, Shape shape);
Tensor flatten_(const Tensor& t);
Tensor transpose_(const Tensor& t, std::vector<std::int64_t> perm = {});
Tensor slice_(const Tensor& t, std::vector<std::int64_t> start, std::vector<std::int64_t> stop,
              std::vector<std::int64_t> axes = {});
Tensor concat_(const std::vector<Tensor>& ts, std::int64_t axis = 0);
/// PopXL's dynamic_update: a copy of `t` with `update` written where dynamic_slice(t, index,
/// axes, update's extents on axes) reads. `update` has t's shape except on `axes`.
Tensor dynamic_update(const Tensor& t, const Tensor& index, const Tensor& update,
                      std::vector<std::int64_t> axes);
/// PopXL's dynamic_update_: as dynamic_update, writing `update` into `t` in place (the result
/// aliases `t`, and later readers of `t` see the update). Not differentiable, as PopART's
/// DynamicUpdateInplace; a GraphError when `t` is a view (`reshape_`, `slice_`, ...).
Tensor dynamic_update_(const Tensor& t, const Tensor& index, const Tensor& update,
                       std::vector<std::int64_t> axes);
/// `t` copied to IPU `destination` (PopXL's `ops.ipu_copy`): the one op whose input may live
/// on another IPU than the op (it is placed on `destination`). An op reading tensors of other
/// IPUs than its own is a GraphError; copy them with this. `source`, when given, must be
/// t's IPU (GraphError otherwise, as PopXL checks it). Its bytes cross the IPU-Link and count
/// on both IPUs. Gradient: the copy back to the source.
Tensor ipu_copy(const Tensor& t, std::int64_t destination,
                std::optional<std::int64_t> source = std::nullopt);
/// PopXL's io_tile_copy: a copy of `t` to the other tile set of its IPU (compute tiles to IO
/// tiles, or back; see io_tiles()), whatever scope is open. Priced as an exchange between
/// the two sets; its gradient is the copy back.
Tensor io_tile_copy(const Tensor& t);
/// NumPy's arange: start, start + step, ... while below `stop` (above it for a negative step),
/// of `dtype` (int32, float32 or float16), computed in double per element. ValueError for a
/// step of 0 or non-integral bounds with int32; an empty range gives shape (0,).
Tensor arange(double start, double stop, double step = 1.0, DType dtype = int32);
/// Joins tensors of one shape along a new axis `axis` (NumPy's stack).
Tensor stack(const std::vector<Tensor>& ts, std::int64_t axis = 0);
/// The lower (tril) or upper (triu) triangle of the last two axes: elements with
/// column - row <= k (tril) or >= k (triu) are kept, the others are 0. Rank >= 2.
Tensor tril(const Tensor& t, std::int64_t k = 0);
Tensor triu(const Tensor& t, std::int64_t k = 0);
/// NumPy's constant pad: `widths[a]` = {before, after} elements of `value` around axis a
/// (one pair per axis, non-negative).
Tensor pad(const Tensor& t, const std::vector<std::pair<std::int64_t, std::int64_t>>& widths,
           double value = 0.0);
/// PopXL's subsample: every `strides[a]`-th element along each axis a, starting at the first
/// (t[::s0, ::s1, ...]): the output's axis a has ceil(n / strides[a]) elements. The gradient
/// spreads back to the elements taken, zero elsewhere. ValueError unless there is one stride,
/// >= 1, per axis.
Tensor subsample(const Tensor& t, const std::vector<std::int64_t>& strides);
/// NumPy's tile with one repeat count (>= 0) per axis: the output's axis a is t's repeated
/// `repeats[a]` times.
Tensor tile(const Tensor& t, const std::vector<std::int64_t>& repeats);

/// PopXL's interpolate (PopART's Resize): output axis a has floor(t.shape[a] * scale_factor[a])
/// elements (the product in float32); `scale_factor` holds one positive, finite scale per axis
/// of t. An axis of scale exactly 1 is copied; on any other axis output index i reads the input
/// at the source coordinate x (float32 arithmetic, s the axis's scale, n its input extent):
///   half_pixel (i + 0.5)/s - 0.5; pytorch_half_pixel as half_pixel when n·s > 1, else 0;
///   align_corners i·(n - 1)/(n·s - 1), or 0 when n·s == 1; asymmetric i/s.
/// `nearest` reads index round(x) by `nearest_mode` (round_prefer_floor: halves down,
/// round_prefer_ceil: halves up, floor, ceil), clamped to [0, n - 1]; with half_pixel, an
/// integral scale and a rounding (not floor/ceil) mode it is i / s, as PopART's upsample.
/// `linear` blends the clamped floor(x) and ceil(x) with weight x' - floor(x') on the ceil,
/// x' = max(x, 0), over every scaled axis at once (PopART rounds after each axis; results
/// may differ by that rounding), and ignores `nearest_mode`.
/// float32 or float16. DTypeError otherwise; ValueError for a scale count other than t's
/// rank, a scale <= 0 or not finite, mode `cubic` (not implemented in pxl) and
/// tf_crop_and_resize (PopART has no lowering for it); ShapeError when an output extent does
/// not fit in 64 bits. Differentiable in mode `nearest` (the exact adjoint: each input element
/// gets the sum of the gradients of the outputs that read it); a gradient through `linear` is
/// a GraphError, as PopART's Resize has none for it.
Tensor interpolate(const Tensor& t,
                   const std::vector<float>& scale_factor = {1.0f, 1.0f, 1.0f, 1.0f},
                   ResizeMode mode = ResizeMode::nearest,
                   ResizeNearestMode nearest_mode = ResizeNearestMode::round_prefer_floor,
                   ResizeCoordinateTransformationMode coordinate_transformation_mode =
                       ResizeCoordinateTransformationMode::half_pixel);
/// The gradient of `interpolate(t, scale_factor, mode, nearest_mode, ...)` with respect to t,
/// of shape `input_shape`, given `grad`, the gradient of its result. What autodiff emits.
/// ValueError for any mode but `nearest` (and as interpolate); ShapeError when grad's shape is
/// not interpolate's output shape for `input_shape`; DTypeError for a non-float grad.
Tensor interpolate_grad(const Tensor& grad, const Shape& input_shape,
                        const std::vector<float>& scale_factor, ResizeMode mode,
                        ResizeNearestMode nearest_mode,
                        ResizeCoordinateTransformationMode coordinate_transformation_mode);

} // namespace pxl::ops
