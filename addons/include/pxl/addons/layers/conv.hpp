// pxl::addons::Conv1D, Conv2D, Conv3D: Keras's convolution layers, over ops::conv.
#pragma once

#include "pxl/addons/layers/activation.hpp"
#include "pxl/addons/module/initializers.hpp"
#include "pxl/addons/module/module.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace pxl::addons {

/// Where a layer's input keeps its channels (Keras's `data_format`).
enum class DataFormat {
  channels_last,  ///< (batch, spatial..., channels): Keras's default
  channels_first, ///< (batch, channels, spatial...): ops::conv's own layout, no transposes
};

/// Keras's `padding` of convolution and pooling layers.
enum class Padding {
  valid, ///< none
  same,  ///< the output keeps ceil(input / stride); an odd total's extra after (TensorFlow's)
};

/// The arguments of a convolution layer after `filters` and `kernel_size`, with Keras's
/// defaults; set only what differs: `Conv2D(32, {3}, {.padding = Padding::same})`. `strides`
/// and `dilation_rate` hold one value for every spatial axis or one per axis; empty means 1.
struct ConvLayerOptions {
  std::vector<std::int64_t> strides;
  Padding padding = Padding::valid;
  DataFormat data_format = DataFormat::channels_last;
  std::vector<std::int64_t> dilation_rate;
  std::int64_t groups = 1;
  Activation activation = Activation::none;
  bool use_bias = true;
  initializers::KerasInitializer kernel_initializer = initializers::glorot_uniform();
  initializers::KerasInitializer bias_initializer = initializers::zeros();
  /// The convolution's available memory proportion (ops::ConvOptions; PopXL's Conv2D
  /// `available_memory_proportions`, one value): the estimated plan's, never the result's.
  std::optional<double> available_memory_proportion;
};

/// Keras's `Conv1D`, `Conv2D` and `Conv3D` (`SpatialAxes` = 1, 2, 3): y = activation(conv(x, W)
/// + b) over an input of rank SpatialAxes + 2, laid out as `data_format` says.
///
///     Sequential{Conv2D(32, {3}, {.data_format = DataFormat::channels_first,
///                                 .activation = Activation::relu}), ...}
///
/// Variables. `weight` is held in ops::conv's layout (filters, in_channels / groups, kernel...);
/// Keras's kernel (kernel..., in_channels / groups, filters) holds the same values permuted.
/// Its initial data is `kernel_initializer`'s for Keras's shape (so the variance-scaling
/// initialisers see Keras's fans: fan_in = in_channels / groups · kernel volume, fan_out =
/// filters · kernel volume), permuted into that layout. `bias` is (filters).
///
/// channels_last transposes the input to channels-first and the result back, around the
/// convolution; channels_first needs neither.
template <int SpatialAxes>
class Conv : public Module<Conv<SpatialAxes>> {
  static_assert(SpatialAxes >= 1 && SpatialAxes <= 3, "Conv1D, Conv2D or Conv3D");

public:
  /// `kernel_size`: one size for every spatial axis, or one per axis. ValueError for filters
  /// or groups below 1, a kernel size, stride or dilation below 1, or a list that has neither
  /// 1 nor SpatialAxes entries.
  Conv(std::int64_t filters, std::vector<std::int64_t> kernel_size, ConvLayerOptions options = {});

  /// x: (batch, spatial..., in_channels) for channels_last, (batch, in_channels, spatial...)
  /// for channels_first. ShapeError for another rank; ValueError when groups does not divide
  /// in_channels or filters; ops::conv's errors for a kernel larger than the padded input.
  Tensor build(const Tensor& x);

  std::int64_t filters;
  /// One entry per spatial axis (the constructor spreads a single value).
  std::vector<std::int64_t> kernel_size;
  ConvLayerOptions options;
};

using Conv1D = Conv<1>;
using Conv2D = Conv<2>;
using Conv3D = Conv<3>;

extern template class Conv<1>;
extern template class Conv<2>;
extern template class Conv<3>;

} // namespace pxl::addons
