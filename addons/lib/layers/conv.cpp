// Convolution layers.
#include "pxl/addons/layers/conv.hpp"

#include "pxl/ops/conv.hpp"
#include "pxl/ops/shape.hpp"

#include <cstring>
#include <numeric>
#include <string>
#include <utility>

namespace pxl::addons {

namespace {

std::string layer_name(int axes) { return "Conv" + std::to_string(axes) + "D"; }

/// `values` as one entry per spatial axis: a single value spread, an empty list as 1s.
std::vector<std::int64_t> per_axis(std::vector<std::int64_t> values, int axes, const char* what,
                                   int layer_axes) {
  if (values.empty())
    values.assign(static_cast<std::size_t>(axes), 1);
  else if (values.size() == 1)
    values.assign(static_cast<std::size_t>(axes), values[0]);
  if (values.size() != static_cast<std::size_t>(axes))
    throw ValueError(layer_name(layer_axes) + ": " + what + " needs 1 or " + std::to_string(axes) +
                     " values, got " + std::to_string(values.size()));
  for (const std::int64_t v : values)
    if (v < 1)
      throw ValueError(layer_name(layer_axes) + ": every " + what + " must be at least 1, got " +
                       std::to_string(v));
  return values;
}

/// The permutation taking a tensor of `rank` from channels-last to channels-first, or back.
std::vector<std::int64_t> channels_first_perm(std::int64_t rank) {
  std::vector<std::int64_t> perm{0, rank - 1};
  for (std::int64_t i = 1; i < rank - 1; ++i)
    perm.push_back(i);
  return perm;
}
std::vector<std::int64_t> channels_last_perm(std::int64_t rank) {
  std::vector<std::int64_t> perm{0};
  for (std::int64_t i = 2; i < rank; ++i)
    perm.push_back(i);
  perm.push_back(1);
  return perm;
}

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
  kernel_size = per_axis(std::move(kernel), SpatialAxes, "kernel size", SpatialAxes);
  options.strides = per_axis(std::move(options.strides), SpatialAxes, "stride", SpatialAxes);
  options.dilation_rate =
      per_axis(std::move(options.dilation_rate), SpatialAxes, "dilation rate", SpatialAxes);
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
  const Tensor xf = last ? ops::transpose(x, channels_first_perm(rank)) : x;
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

  ops::ConvOptions conv_options{
      .stride = options.strides, .dilation = options.dilation_rate, .groups = options.groups};
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
    y = ops::transpose(y, channels_last_perm(rank));
  return activate(options.activation, y);
}

template class Conv<1>;
template class Conv<2>;
template class Conv<3>;

} // namespace pxl::addons
