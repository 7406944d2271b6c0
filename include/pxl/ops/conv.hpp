// Convolutions over 1, 2 or 3 spatial axes (ONNX's Conv and ConvTranspose, as PopXL has them).
#pragma once

#include "pxl/ir/tensor.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace pxl::ops {

/// How the padding of a convolution is chosen (ONNX's `auto_pad`, PopXL's `pad_type`).
enum class PadType : std::uint8_t {
  not_set,    ///< the explicit `padding`
  same_upper, ///< output size ceil(input / stride); an odd total padding's extra at the end
  same_lower, ///< as same_upper, the extra at the beginning
  valid,      ///< no padding
};

/// The geometry of `conv`. Every list has one entry per spatial axis, except `padding`, which
/// holds the padding before each axis, then the padding after each (ONNX's `pads`); an empty
/// list means stride 1, no padding and dilation 1 on every axis.
struct ConvOptions {
  std::vector<std::int64_t> stride;
  std::vector<std::int64_t> padding;
  std::vector<std::int64_t> dilation;
  std::int64_t groups = 1;
  PadType pad_type = PadType::not_set; ///< other than not_set: `padding` must be empty or zero
  /// The share of each tile's memory, in (0, 1], that PopLibs' planner may give the
  /// convolution's operand blocks and partials (PopXL's `available_memory_proportions`, one
  /// value; PopLibs' 0.6 when unset). It changes the estimated plan, never the result; the
  /// gradients' convolutions take it too. ValueError outside (0, 1].
  std::optional<double> available_memory_proportion;
  /// The type the partial sums accumulate in (PopXL's `partials_types`, one type): float32
  /// (unset), or float16 for float16 operands: runs of 16 products summed in float32 and added
  /// into a float16 accumulator, as a matmul's (docs/semantics.md, "Matmul partials"). The
  /// gradients' convolutions take it too. DTypeError for another type or float32 operands.
  std::optional<DType> partials_type;
};

/// The geometry of `conv_transpose`: as ConvOptions, with ONNX ConvTranspose's
/// `output_padding` (added after each spatial axis of the output, each smaller than its
/// stride) and `output_shape` (the output's spatial sizes; the padding is then derived from
/// them, and `padding` must be empty or zero).
struct ConvTransposeOptions {
  std::vector<std::int64_t> stride;
  std::vector<std::int64_t> padding;
  std::vector<std::int64_t> dilation;
  std::int64_t groups = 1;
  PadType pad_type = PadType::not_set;
  std::vector<std::int64_t> output_padding;
  std::vector<std::int64_t> output_shape;
  /// As ConvOptions::available_memory_proportion.
  std::optional<double> available_memory_proportion;
  /// As ConvOptions::partials_type.
  std::optional<DType> partials_type;
};

/// PopXL `conv`: `t` is (N, C_in, spatial...) with 1 to 3 spatial axes, `weight` is
/// (C_out, C_in / groups, kernel...); the result is (N, C_out, out...) with
/// out = floor((in + pad_before + pad_after - dilation·(kernel - 1) - 1) / stride) + 1. Groups
/// divide C_in and C_out (groups = C_in = C_out is a depthwise convolution). float32 or
/// float16, both operands alike. No bias: add one to the result.
Tensor conv(const Tensor& t, const Tensor& weight, const ConvOptions& options = {});

/// PopXL `conv_transpose` (ONNX ConvTranspose): `t` is (N, C_in, spatial...), `weight` is
/// (C_in, C_out / groups, kernel...); the result is (N, C_out, out...) with
/// out = stride·(in - 1) + output_padding + dilation·(kernel - 1) + 1 - pad_before - pad_after,
/// or `output_shape`. It is the gradient of `conv` with respect to its input.
Tensor conv_transpose(const Tensor& t, const Tensor& weight,
                      const ConvTransposeOptions& options = {});

/// PopXL `conv_pow2scaled`: `conv` of float8 operands (float8_143 or float8_152, either for
/// each), its result times 2^log2_scale as float16. Computed as pxl computes float16: the
/// operands widened to float32 exactly, products and sums in float32, rounded once to float16
/// (so with float32's range for the sums, where the IPU accumulates float16 partials).
/// `log2_scale` is an int32 scalar tensor, read when the op runs; a value outside [-32, 32)
/// stops the run with an error. Not differentiable (PopXL trains nothing in float8).
Tensor conv_pow2scaled(const Tensor& t, const Tensor& weight, const Tensor& log2_scale,
                       const ConvOptions& options = {});

/// PopXL `conv_transpose_pow2scaled`: `conv_transpose` of float8 operands, scaled and
/// computed as conv_pow2scaled.
Tensor conv_transpose_pow2scaled(const Tensor& t, const Tensor& weight, const Tensor& log2_scale,
                                 const ConvTransposeOptions& options = {});

/// The gradient of `conv(t, weight, options)` with respect to `weight`, given `grad`, the
/// gradient of its result: a tensor of `weight_shape`. What autodiff emits for conv's weight.
Tensor conv_weights_grad(const Tensor& grad, const Tensor& t, const Shape& weight_shape,
                         const ConvOptions& options = {});

} // namespace pxl::ops
