// pxl::addons pooling layers: MaxPool2D, AvgPool2D and GlobalAvgPool2D as PyTorch defines them
// (channels first), MaxPooling2D, AveragePooling2D and GlobalAveragePooling2D as Keras does.
#pragma once

#include "pxl/addons/layers/conv.hpp"
#include "pxl/addons/module/module.hpp"

#include <cstdint>
#include <vector>

namespace pxl::addons {

/// MaxPool2D's and AvgPool2D's arguments after the kernel size, PyTorch's names and defaults.
/// Each list holds one value for both spatial axes or one per axis.
struct Pool2DOptions {
  /// Empty: the kernel size (PyTorch's `stride=None`).
  std::vector<std::int64_t> stride;
  /// Zeros added on both sides of each axis (at most half the window).
  std::vector<std::int64_t> padding;
  /// MaxPool2D only: the spacing of the window's taps.
  std::vector<std::int64_t> dilation;
  /// Round the output size up (a last, partial window), as ops::PoolOptions::ceil_mode.
  bool ceil_mode = false;
  /// AvgPool2D only: the padding counts in the divisor (PyTorch's default).
  bool count_include_pad = true;
};

/// PyTorch's `MaxPool2d` over (N, C, H, W): each output the largest of its window (ops::max_pool;
/// the gradient goes to the first largest on ties).
///
///     Sequential{Conv2D(32, {3}, {.data_format = DataFormat::channels_first}), MaxPool2D({2})}
class MaxPool2D : public Module<MaxPool2D> {
public:
  /// ValueError for a size below 1 (below 0 for padding) or a list of other than 1 or 2 values.
  explicit MaxPool2D(std::vector<std::int64_t> kernel_size, Pool2DOptions options = {});
  /// x: (N, C, H, W) (ShapeError otherwise); ops::max_pool's errors.
  Tensor build(const Tensor& x);

  std::vector<std::int64_t> kernel_size; ///< one per spatial axis
  Pool2DOptions options;                 ///< each list one per spatial axis
};

/// PyTorch's `AvgPool2d` over (N, C, H, W): each output the mean of its window (ops::average_pool).
/// `options.dilation` must be empty or 1s (PyTorch's has none).
class AvgPool2D : public Module<AvgPool2D> {
public:
  explicit AvgPool2D(std::vector<std::int64_t> kernel_size, Pool2DOptions options = {});
  Tensor build(const Tensor& x);

  std::vector<std::int64_t> kernel_size;
  Pool2DOptions options;
};

/// The mean over H and W of (N, C, H, W): (N, C), or (N, C, 1, 1) with `keepdims` (PyTorch's
/// AdaptiveAvgPool2d(1)).
class GlobalAvgPool2D : public Module<GlobalAvgPool2D> {
public:
  explicit GlobalAvgPool2D(bool keepdims = false);
  Tensor build(const Tensor& x);

  bool keepdims;
};

/// Keras's pooling layers' arguments after `pool_size`.
struct KerasPoolOptions {
  /// Empty: the pool size (Keras's `strides=None`).
  std::vector<std::int64_t> strides;
  /// valid: no padding; same: the output keeps ceil(input / stride), the padding never counts.
  Padding padding = Padding::valid;
  DataFormat data_format = DataFormat::channels_last;
};

/// Keras's `MaxPooling2D(pool_size=(2, 2), strides=None, padding="valid", data_format)`.
class MaxPooling2D : public Module<MaxPooling2D> {
public:
  explicit MaxPooling2D(std::vector<std::int64_t> pool_size = {2, 2},
                        KerasPoolOptions options = {});
  /// x of rank 4, laid out as `data_format` says.
  Tensor build(const Tensor& x);

  std::vector<std::int64_t> pool_size;
  KerasPoolOptions options;
};

/// Keras's `AveragePooling2D`: as MaxPooling2D, each output the mean of its window's input
/// elements (with `same`, the padding never counts, as in Keras).
class AveragePooling2D : public Module<AveragePooling2D> {
public:
  explicit AveragePooling2D(std::vector<std::int64_t> pool_size = {2, 2},
                            KerasPoolOptions options = {});
  Tensor build(const Tensor& x);

  std::vector<std::int64_t> pool_size;
  KerasPoolOptions options;
};

/// Keras's `GlobalAveragePooling2D(data_format, keepdims=False)`: the mean over the spatial
/// axes, (N, C), or with `keepdims` the input's rank with spatial sizes of 1.
class GlobalAveragePooling2D : public Module<GlobalAveragePooling2D> {
public:
  explicit GlobalAveragePooling2D(DataFormat data_format = DataFormat::channels_last,
                                  bool keepdims = false);
  Tensor build(const Tensor& x);

  DataFormat data_format;
  bool keepdims;
};

} // namespace pxl::addons
