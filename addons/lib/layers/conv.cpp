// Convolution layers.
#include "pxl/addons/layers/conv.hpp"

#include "spatial.hpp"

#include "pxl/ops/conv.hpp"
#include "pxl/ops/shape.hpp"

#include <cstring>
#include <numeric>
#include <string>
#include <utility>

namespace pxl::addons {

namespace {

std::string layer_name(int axes) { return "Conv" + std::to_string(axes) + "D"; }

/// `keras`'s data, of Keras's kernel shape (kernel..., in, filters), in ops::conv's layout
/// (filters, in, kernel...).
HostTensor to_conv_layout(const HostTensor& keras) {
  const Shape& k = keras.shape();
  const std::size_t axes = k.size() - 2;
  const std::int64_t in = k[axes], out = k[axes + 1];
  const std::int64_t volume =
      std::accumulate(k.begin(), k.begin() + static_cast<std::ptrdiff_t>(axes), std::int64_t{1},
                      std::multiplies<>());
  Shape conv_shape{out, in};
  conv_shape.insert(conv_shape.end(), k.begin(), k.begin() + static_cast<std::ptrdiff_t>(axes));
  HostTensor result(conv_shape, keras.dtype());
  const std::size_t size = keras.nbytes() / static_cast<std::size_t>(keras.nelms());
  const std::byte* from = keras.bytes().data();
  std::byte* to = result.bytes().data();
  // Keras's element (tap, i, o) goes to (o, i, tap).
  for (std::int64_t tap = 0; tap < volume; ++tap)
    for (std::int64_t i = 0; i < in; ++i)
      for (std::int64_t o = 0; o < out; ++o)
        std::memcpy(to + static_cast<std::size_t>((o * in + i) * volume + tap) * size,
                    from + static_cast<std::size_t>((tap * in + i) * out + o) * size, size);
  return result;
}

} // namespace

template <int SpatialAxes>
Conv<SpatialAxes>::Conv(std::int64_t output_filters, std::vector<std::int64_t> kernel,
                        ConvLayerOptions layer_options)
    : filters(output_filters), options(std::move(layer_options)) {
  const std::string name = layer_name(SpatialAxes);
  if (filters < 1)
    throw ValueError(name + ": filters must be at least 1, got " + std::to_string(filters));
  if (options.groups < 1)
    throw ValueError(name + ": groups must be at least 1, got " + std::to_string(options.groups));
  if (kernel.empty())
    throw ValueError(name + ": kernel_size needs 1 or " + std::to_string(SpatialAxes) +
                     " values, got none");
  kernel_size = layers_detail::per_axis(std::move(kernel), SpatialAxes, name, "kernel size");
  options.strides =
      layers_detail::per_axis(std::move(options.strides), SpatialAxes, name, "stride");
  options.dilation_rate =
      layers_detail::per_axis(std::move(options.dilation_rate), SpatialAxes, name, "dilation rate");
}

template <int SpatialAxes>
Tensor Conv<SpatialAxes>::build(const Tensor& x) {
  const std::string name = layer_name(SpatialAxes);
  const std::int64_t rank = SpatialAxes + 2;
  const bool last = options.data_format == DataFormat::channels_last;
  if (x.rank() != rank)
    throw ShapeError(name + ": expected an input of rank " + std::to_string(rank) +
                     (last ? " (batch, spatial..., channels)" : " (batch, channels, spatial...)") +
                     ", got shape " + to_string(x.shape()));
  const Tensor xf = last ? ops::transpose(x, layers_detail::to_channels_first(rank)) : x;
  const std::int64_t in = xf.shape()[1];
  if (in % options.groups != 0 || filters % options.groups != 0)
    throw ValueError(name + ": groups (" + std::to_string(options.groups) +
                     ") must divide both the input's channels (" + std::to_string(in) +
                     ") and filters (" + std::to_string(filters) + ")");

  Shape keras_shape(kernel_size.begin(), kernel_size.end());
  keras_shape.push_back(in / options.groups);
  keras_shape.push_back(filters);
  init::Initializer keras_init = options.kernel_initializer(keras_shape);
  Shape conv_shape{filters, in / options.groups};
  conv_shape.insert(conv_shape.end(), kernel_size.begin(), kernel_size.end());
  init::Initializer weight_init{
      conv_shape,
      [fill = keras_init.fill, keras_shape](const Shape&, DType dtype, std::uint64_t seed) {
        return to_conv_layout(fill(keras_shape, dtype, seed));
      },
      keras_init.description};

  ops::ConvOptions conv_options{.stride = options.strides,
                                .dilation = options.dilation_rate,
                                .groups = options.groups,
                                .available_memory_proportion = options.available_memory_proportion};
  if (options.padding == Padding::same)
    conv_options.pad_type = ops::PadType::same_upper;
  Tensor y =
      ops::conv(xf, this->add_variable_input("weight", weight_init, x.dtype()), conv_options);
  if (options.use_bias) {
    // (filters) as (filters, 1, ...) to broadcast over the spatial axes.
    Shape bias_shape(static_cast<std::size_t>(SpatialAxes + 1), 1);
    bias_shape[0] = filters;
    y = y + ops::reshape(
                this->add_variable_input("bias", options.bias_initializer({filters}), x.dtype()),
                bias_shape);
  }
  // In the input's layout, so that softmax is over the last axis whatever the layout, as Keras.
  if (last)
    y = ops::transpose(y, layers_detail::to_channels_last(rank));
  return activate(options.activation, y);
}

template class Conv<1>;
template class Conv<2>;
template class Conv<3>;

} // namespace pxl::addons
